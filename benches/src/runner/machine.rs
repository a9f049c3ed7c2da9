//! Machine facts recorded in every results file: CPU model, cores, compiler, commit, date and
//! the exact command.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::provenance::{cpu_model, git_commit};
use serde::Serialize;

/// Where and how a run happened.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// The compiler that built the runner (`rustc -V`, captured by build.rs).
    pub rustc: String,
    /// The build profile (results from a debug build are meaningless).
    pub profile: String,
    /// `git rev-parse HEAD`, with `+dirty` when tracked files outside results/ differ.
    pub commit: String,
    /// When the run started, UTC.
    pub date_utc: String,
    /// The command as typed (the program and its arguments).
    pub command: String,
    /// The same run through cargo.
    pub reproduce: String,
    /// The kernel (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// `/proc/loadavg` when the run started: other work on the machine shows here.
    pub loadavg_start: String,
    /// The TSC timer's own cost: median of back-to-back reads, nanoseconds. Every latency
    /// sample includes it once.
    pub timer_overhead_ns: u64,
}

impl Machine {
    /// Probes this machine; `argv` is the runner's command line.
    #[must_use]
    pub fn probe(argv: &[String], timer: &quanta::Clock) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new("."));
        Self {
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            rustc: env!("SLIDELIMIT_BENCH_RUSTC").to_owned(),
            profile: env!("SLIDELIMIT_BENCH_PROFILE").to_owned(),
            // Results files are outputs: a rerun that only rewrote them is not dirty.
            commit: git_commit(root, &[".", ":!results"]),
            date_utc: utc_now(),
            command: argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
            reproduce: std::iter::once("cargo run --release -p slidelimit-bench".to_owned())
                .chain((argv.len() > 1).then(|| "--".to_owned()))
                .chain(argv.iter().skip(1).map(|a| shell_quote(a)))
                .collect::<Vec<_>>()
                .join(" "),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |k| k.trim().to_owned()),
            loadavg_start: loadavg(),
            timer_overhead_ns: timer_overhead(timer),
        }
    }

    /// The facts as `(label, value)` pairs, for tables and plot footers.
    #[must_use]
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        vec![
            ("CPU", self.cpu_model.clone()),
            ("cores", self.cores.to_string()),
            ("rustc", self.rustc.clone()),
            ("commit", self.commit.clone()),
            ("date", self.date_utc.clone()),
            ("command", self.reproduce.clone()),
        ]
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
#[must_use]
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The TSC timer's cost: the median of many back-to-back read pairs.
fn timer_overhead(timer: &quanta::Clock) -> u64 {
    let mut deltas: Vec<u64> = (0..10_001)
        .map(|_| {
            let start = timer.raw();
            let end = timer.raw();
            timer.delta_as_nanos(start, end)
        })
        .collect();
    deltas.sort_unstable();
    deltas[deltas.len() / 2]
}

/// Now, as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(secs)
}

/// Seconds since the epoch as a UTC date and time (proleptic Gregorian calendar).
fn format_utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Shift the epoch to 0000-03-01 so that leap days fall at the end of a 400-year era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::{format_utc, shell_quote};

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_utc(1_709_210_096), "2024-02-29 12:34:56 UTC");
        assert_eq!(format_utc(4_102_444_799), "2099-12-31 23:59:59 UTC");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("--threads=1,2"), "--threads=1,2");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}

//! The runner's flags, parsed by clap; [`Flags`] is what the command line says, [`Args`] what
//! the run does once `--long` and the defaults are applied.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use slidelimit_trace::duration;

/// What the runner was asked to do.
#[derive(Clone, Debug)]
pub struct Args {
    /// Measured time per cell (per trial).
    pub duration: Duration,
    /// Trials per cell; the median-throughput trial is reported.
    pub trials: usize,
    /// Variant names to run (empty: all).
    pub variants: Vec<String>,
    /// Workload names to run (empty: all).
    pub workloads: Vec<String>,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Where the results go.
    pub out: PathBuf,
    /// Skip the memory measurements.
    pub skip_memory: bool,
    /// Print the variants and workloads and exit.
    pub list: bool,
}

/// The default measured time per cell: sized so that the whole default run takes about three
/// minutes on a 2-core machine.
pub const DEFAULT_DURATION: Duration = Duration::from_millis(700);
/// `--long`: per-cell time.
pub const LONG_DURATION: Duration = Duration::from_secs(2);
/// `--long`: trials per cell.
pub const LONG_TRIALS: usize = 3;

/// The command line. A repeated flag takes its last value, as `--long --duration 300ms` does.
#[derive(Debug, Parser)]
#[command(
    name = "slidelimit-bench",
    about = "Every slidelimit variant and its peers over one workload matrix.",
    long_about = "Every slidelimit variant and its peers over one workload matrix.\n\n\
        With no flags it runs the whole default matrix (about 3 minutes on 2 cores), then the \
        key pool's get_next_key cells (pool-exact, pool-ab: lock-free and mutex), and writes \
        results/comparison.{md,json} and results/*.svg.",
    args_override_self = true
)]
pub struct Flags {
    /// Measured time per cell and trial, [COUNT]UNIT as in the `slidelimit` command (ns, us,
    /// ms, s, m, h, d), e.g. 700ms, 2s [default: 700ms]
    #[arg(long, value_name = "TIME", value_parser = duration::parse)]
    duration: Option<Duration>,
    /// Run each cell N times, report the median-throughput trial [default: 1]
    #[arg(long, value_name = "N")]
    trials: Option<NonZeroUsize>,
    /// A longer, steadier run: --duration 2s --trials 3 (explicit flags still win)
    #[arg(long)]
    long: bool,
    /// Comma-separated variant names [default: all; see --list]
    #[arg(long, value_name = "LIST", value_parser = parse_names)]
    variants: Option<::std::vec::Vec<String>>,
    /// Comma-separated workload names [default: all; see --list], the key pool's included:
    /// --workloads pool-exact,pool-ab --skip-memory runs only the get_next_key cells
    #[arg(long, value_name = "LIST", value_parser = parse_names)]
    workloads: Option<::std::vec::Vec<String>>,
    /// Comma-separated thread counts
    #[arg(long, value_name = "LIST", value_parser = parse_threads, default_value = "1,2,4,8")]
    threads: ::std::vec::Vec<usize>,
    /// Where the results go [default: the workspace's results/]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Skip the memory measurements (heap and RSS bytes per key, key rotation, Zipf idle-key
    /// removal)
    #[arg(long)]
    skip_memory: bool,
    /// Print the variants and workloads, then exit
    #[arg(long)]
    list: bool,
}

impl From<Flags> for Args {
    fn from(flags: Flags) -> Self {
        let (duration, trials) = if flags.long {
            (LONG_DURATION, LONG_TRIALS)
        } else {
            (DEFAULT_DURATION, 1)
        };
        Self {
            duration: flags.duration.unwrap_or(duration),
            trials: flags.trials.map_or(trials, NonZeroUsize::get),
            variants: flags.variants.unwrap_or_default(),
            workloads: flags.workloads.unwrap_or_default(),
            threads: flags.threads,
            out: flags.out.unwrap_or_else(default_out),
            skip_memory: flags.skip_memory,
            list: flags.list,
        }
    }
}

/// `results/` at the workspace root, wherever the runner is started from.
fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("results"), |root| root.join("results"))
}

/// `a, b,,c` as `[a, b, c]`; an empty list means every name.
#[allow(clippy::unnecessary_wraps)] // clap's value parsers return a Result
fn parse_names(list: &str) -> Result<Vec<String>, String> {
    Ok(list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

/// At least one thread count, each at least 1.
fn parse_threads(list: &str) -> Result<Vec<usize>, String> {
    let threads = parse_names(list)?
        .iter()
        .map(|t| match t.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("bad thread count {t:?}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if threads.is_empty() {
        return Err("needs at least one count".to_owned());
    }
    Ok(threads)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::{CommandFactory, Parser};

    use super::{Args, Flags, DEFAULT_DURATION};

    fn args(list: &[&str]) -> Result<Args, clap::Error> {
        Flags::try_parse_from(std::iter::once("slidelimit-bench").chain(list.iter().copied()))
            .map(Args::from)
    }

    #[test]
    fn clap_accepts_the_definition() {
        Flags::command().debug_assert();
    }

    #[test]
    fn defaults_and_flags() {
        let a = args(&[]).unwrap();
        assert_eq!((a.duration, a.trials), (DEFAULT_DURATION, 1));
        assert_eq!(a.threads, vec![1, 2, 4, 8]);
        assert!(a.variants.is_empty() && a.workloads.is_empty());
        assert!(a.out.ends_with("results"));
        let a = args(&[
            "--duration",
            "2s",
            "--threads=1,16",
            "--variants",
            "lock-free, mutex,",
            "--out",
            "/tmp/x",
        ])
        .unwrap();
        assert_eq!(a.duration, Duration::from_secs(2));
        assert_eq!(a.threads, vec![1, 16]);
        assert_eq!(a.variants, vec!["lock-free", "mutex"]);
        assert_eq!(a.out, std::path::Path::new("/tmp/x"));
        let a = args(&["--long"]).unwrap();
        assert_eq!((a.duration, a.trials), (Duration::from_secs(2), 3));
        let a = args(&["--long", "--duration", "300ms"]).unwrap();
        assert_eq!((a.duration, a.trials), (Duration::from_millis(300), 3));
        let a = args(&["--threads", "1", "--threads", "2,4", "--duration", "5ms"]).unwrap();
        assert_eq!(
            (a.threads, a.duration),
            (vec![2, 4], Duration::from_millis(5))
        );
    }

    #[test]
    fn rejects_nonsense_with_status_2() {
        for bad in [
            &["--threads", "0"][..],
            &["--threads", ","],
            &["--duration", "fast"],
            &["--duration", "0s"],
            &["--duration", "1.5s"],
            &["--duration", "5"],
            &["--trials", "0"],
            &["--bogus"],
            &["--out"],
        ] {
            let err = args(bad).expect_err("must be rejected");
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        assert_eq!(args(&["--help"]).unwrap_err().exit_code(), 0);
    }
}

//! The runner's flags: a small hand-written parser (a dozen flags do not justify a parsing
//! crate's compile time on a 2-core machine).

use std::path::PathBuf;
use std::time::Duration;

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
    /// Print the help and exit.
    pub help: bool,
}

/// The default measured time per cell: sized so that the whole default run takes about three
/// minutes on a 2-core machine.
pub const DEFAULT_DURATION: Duration = Duration::from_millis(700);
/// `--long`: per-cell time.
pub const LONG_DURATION: Duration = Duration::from_secs(2);
/// `--long`: trials per cell.
pub const LONG_TRIALS: usize = 3;

impl Default for Args {
    fn default() -> Self {
        Self {
            duration: DEFAULT_DURATION,
            trials: 1,
            variants: Vec::new(),
            workloads: Vec::new(),
            threads: vec![1, 2, 4, 8],
            out: default_out(),
            skip_memory: false,
            list: false,
            help: false,
        }
    }
}

/// `results/` at the workspace root, wherever the runner is started from.
fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("results"), |root| root.join("results"))
}

/// The help text.
pub const HELP: &str = "\
slidelimit-bench: every slidelimit variant and its peers over one workload matrix.

USAGE:
    cargo run --release -p slidelimit-bench [-- FLAGS]

With no flags it runs the whole default matrix (about 3 minutes on 2 cores), then the key
pool's get_next_key cells (pool-exact, pool-ab: lock-free and mutex), and writes
results/comparison.{md,json} and results/*.svg.

FLAGS:
    --duration TIME     measured time per cell and trial, e.g. 700ms, 2s (default 700ms)
    --trials N          run each cell N times, report the median-throughput trial (default 1)
    --long              a longer, steadier run: --duration 2s --trials 3
    --variants LIST     comma-separated variant names (default: all; see --list)
    --workloads LIST    comma-separated workload names (default: all; see --list), the
                        key pool's included: --workloads pool-exact,pool-ab --skip-memory
                        runs only the get_next_key cells
    --threads LIST      comma-separated thread counts (default 1,2,4,8)
    --out DIR           where the results go (default: the workspace's results/)
    --skip-memory       skip the memory measurements (heap and RSS bytes per key, key
                        rotation, Zipf idle-key removal)
    --list              print the variants and workloads, then exit
    -h, --help          print this help, then exit
";

/// Parses `args` (without the program name).
///
/// # Errors
/// A message naming the bad flag or value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut explicit_duration = None;
    let mut explicit_trials = None;
    let mut long = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => parsed.help = true,
            "--list" => parsed.list = true,
            "--long" => long = true,
            "--skip-memory" => parsed.skip_memory = true,
            "--duration" => explicit_duration = Some(parse_duration(&value("--duration")?)?),
            "--trials" => {
                let v = value("--trials")?;
                let n: usize = v.parse().map_err(|_| format!("bad --trials value {v:?}"))?;
                if n == 0 {
                    return Err("--trials must be at least 1".to_owned());
                }
                explicit_trials = Some(n);
            }
            "--variants" => parsed.variants = split_list(&value("--variants")?),
            "--workloads" => parsed.workloads = split_list(&value("--workloads")?),
            "--threads" => {
                let v = value("--threads")?;
                parsed.threads = split_list(&v)
                    .iter()
                    .map(|t| match t.parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(format!("bad thread count {t:?} in --threads")),
                    })
                    .collect::<Result<_, _>>()?;
                if parsed.threads.is_empty() {
                    return Err("--threads needs at least one count".to_owned());
                }
            }
            "--out" => parsed.out = PathBuf::from(value("--out")?),
            other => return Err(format!("unknown flag {other:?} (see --help)")),
        }
    }
    if long {
        parsed.duration = LONG_DURATION;
        parsed.trials = LONG_TRIALS;
    }
    if let Some(duration) = explicit_duration {
        parsed.duration = duration;
    }
    if let Some(trials) = explicit_trials {
        parsed.trials = trials;
    }
    Ok(parsed)
}

fn split_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `700ms`, `2s`, `1.5s`, or a bare number of milliseconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (try 700ms or 2s)");
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else {
        (text, 1e-3)
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !(value.is_finite() && value > 0.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(value * scale))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{parse, DEFAULT_DURATION};

    fn args(list: &[&str]) -> Result<super::Args, String> {
        parse(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn defaults_and_flags() {
        let a = args(&[]).unwrap();
        assert_eq!(a.duration, DEFAULT_DURATION);
        assert_eq!(a.threads, vec![1, 2, 4, 8]);
        let a = args(&[
            "--duration",
            "2s",
            "--threads=1,16",
            "--variants",
            "lock-free,mutex",
        ])
        .unwrap();
        assert_eq!(a.duration, Duration::from_secs(2));
        assert_eq!(a.threads, vec![1, 16]);
        assert_eq!(a.variants, vec!["lock-free", "mutex"]);
        let a = args(&["--long", "--duration", "300ms"]).unwrap();
        assert_eq!((a.duration, a.trials), (Duration::from_millis(300), 3));
    }

    #[test]
    fn rejects_nonsense() {
        assert!(args(&["--threads", "0"]).is_err());
        assert!(args(&["--duration", "fast"]).is_err());
        assert!(args(&["--trials", "0"]).is_err());
        assert!(args(&["--bogus"]).is_err());
        assert!(args(&["--out"]).is_err());
    }
}

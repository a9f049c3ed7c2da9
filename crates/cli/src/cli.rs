//! The command line's shape: subcommands, flags and their help, derived with clap.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use slidelimit_trace::duration::parse as parse_duration;

use crate::spec::{parse_count, parse_rate, LimitSpec, WindowSpec};
use crate::trace::Format;
use crate::variant::Variant;

// The value grammar and the exit codes, as macros so that `concat!` can join them into the
// one string clap takes.
macro_rules! grammar {
    () => {
        "Values:
  LIMIT     N/DURATION, N whole requests per window: 100/1s, 100/500ms, 5000/1h, 3/s;
            or R/s with a decimal R, read as the exact fraction p per q seconds
            (0.5/s = 1 per 2 s, 2.5/s = 5 per 2 s). The window must be a whole number
            of ticks. Up to four joined by + are enforced at once: 10/1s+600/1h.
  DURATION  [COUNT]UNIT, COUNT whole (1 if left out), UNIT ns, us, ms, s, m, h or d.
  WINDOW    exact (the exact sliding log, single requests only) or buckets:B (B rolling
            buckets over the window: O(B) memory per key, weighted requests, may refuse
            what the exact log admits, never admits more than N per window).
  VARIANT   lock-free, mutex, per-key-lock or rwlock: the same algorithm behind
            different guards, so every variant gives the same answers to a trace."
    };
}

macro_rules! exit_codes {
    () => {
        "Exit codes:
  0  success
  1  input error: the trace cannot be opened or read, or a line is malformed (or asks a
     weight the window cannot take) and --keep-going was not given
  2  usage error: an unknown flag or a bad value, including a limit or bucket count the
     limiter refuses
  3  finished with --keep-going, but some trace lines were skipped (the report covers
     the rest; the skipped lines are listed on stderr)
  4  a sliding-window limiter admitted more than N in one window: a bug in slidelimit"
    };
}

/// The value grammar and the exit codes, after every command's long help.
pub const AFTER_HELP: &str = concat!(grammar!(), "\n\n", exit_codes!());

/// Sliding-window rate limiting from the command line: replay a trace through any limiter
/// variant, simulate a workload against candidate limits before deploying one, or run the
/// comparison benchmark.
#[derive(Debug, Parser)]
#[command(name = "slidelimit", version, after_long_help = AFTER_HELP)]
pub struct Cli {
    /// No progress bars (they are drawn on stderr only when it is a terminal, and only for
    /// work that runs longer than a second).
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a trace of requests through a limiter and report what it admits and refuses.
    #[command(long_about = REPLAY_ABOUT, after_long_help = AFTER_HELP)]
    Replay(ReplayArgs),
    /// Generate a workload and report what one or more limits would do to it.
    #[command(long_about = SIMULATE_ABOUT, after_long_help = AFTER_HELP)]
    Simulate(SimulateArgs),
    /// Run the comparison benchmark of every variant and peer (`slidelimit bench --help`
    /// lists its flags; build with --release for figures worth reading).
    #[command(disable_help_flag = true)]
    #[cfg_attr(not(feature = "bench"), command(about = BENCH_MISSING_ABOUT))]
    Bench(BenchArgs),
}

impl Command {
    /// The subcommand's name on the command line, for errors that name its usage.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Replay(_) => "replay",
            Self::Simulate(_) => "simulate",
            Self::Bench(_) => "bench",
        }
    }
}

/// How to get a build with `slidelimit bench`, as a macro for `concat!`.
#[cfg(not(feature = "bench"))]
macro_rules! install_bench {
    () => {
        "install with `cargo install --path crates/cli --features bench`"
    };
}

/// `bench`'s line in the help of a build without the runner.
#[cfg(not(feature = "bench"))]
const BENCH_MISSING_ABOUT: &str = concat!(
    "Not in this build: the comparison benchmark (cargo feature `bench`; ",
    install_bench!(),
    ")"
);

/// The usage error of `slidelimit bench` in a build without the runner.
#[cfg(not(feature = "bench"))]
pub const BENCH_MISSING: &str = concat!(
    "`slidelimit bench` is not in this build (it needs the cargo feature `bench`): ",
    install_bench!(),
    ", or run `cargo run --release -p slidelimit-bench`"
);

/// `slidelimit bench`: every argument goes to the comparison runner, `--help` included.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The runner's flags (see `slidelimit bench --help`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<String>,
}

const REPLAY_ABOUT: &str = "\
Replay a trace of requests through a limiter and report, per key and in total, how many
requests it admits and refuses and the peak window count (the most admitted in any one
window, never above N for a sliding window).

The trace has one request per line: `timestamp,key[,weight]` as CSV (an optional header line
starting with `timestamp`), or JSON lines `{\"timestamp\": T, \"key\": \"K\", \"weight\": W}`
(`key` a string or a whole number, `weight` optional, other fields ignored). Timestamps are
whole ticks of --tick (default 1ms). Blank lines and lines starting with # are skipped.
Requests are decided in file order (--sort: in timestamp order); a limiter answers an
out-of-order request conservatively (a later hit already recorded still counts).

--compare runs the exact log, rolling buckets and governor (GCRA, a token bucket, not a
sliding window) side by side and lists the requests each decides differently from the
exact log.";

const SIMULATE_ABOUT: &str = "\
Generate a workload and report what one or more limits would do to it, to choose N, W and B
before deploying.

Requests arrive in bursts of --burst requests of one key at one tick; bursts arrive as a
Poisson process at --rate / --burst per second, each for a key drawn from --keys keys by a
Zipf law of exponent --zipf (0: uniform), for --duration. The same --seed gives the same
workload. Each --limit is run with the exact log and each --window given; rolling buckets are
reported with their false negatives (requests the exact log admits and the buckets refuse)
and false positives (the reverse, after their states part ways).";

/// `slidelimit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace file; `-` reads standard input.
    pub trace: PathBuf,

    /// The limit: N requests per DURATION (see Values below).
    #[arg(long, short, value_name = "LIMIT")]
    pub limit: LimitSpec,

    /// The length of one tick of the trace's timestamps.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration)]
    pub tick: Duration,

    /// Which limiter variant decides.
    #[arg(long, value_enum, default_value_t = Variant::LockFree)]
    pub variant: Variant,

    /// The window algorithm: exact or buckets:B. With --compare, buckets:B sets the buckets'
    /// B (10 otherwise).
    #[arg(long, value_name = "WINDOW", default_value = "exact")]
    pub window: WindowSpec,

    /// How the trace is written.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,

    /// Skip malformed lines (listed on stderr) instead of stopping at the first; the exit
    /// code is then 3 when any line was skipped.
    #[arg(long)]
    pub keep_going: bool,

    /// Decide the requests in timestamp order (stable) rather than file order.
    #[arg(long)]
    pub sort: bool,

    /// Compare the exact log, rolling buckets and governor on the trace (single requests).
    #[arg(long)]
    pub compare: bool,

    /// How many keys to list, those with the most refusals first (0: all).
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub top: usize,

    /// With --compare: how many differently decided requests to show per decider.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub examples: usize,

    /// Print the report as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `slidelimit simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The offered load over all keys: R requests per DURATION (1200/s, 30/m).
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub rate: f64,

    /// Requests per burst: each burst is this many requests of one key at one tick.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub burst: u64,

    /// How many distinct keys (10k, 2M).
    #[arg(long, value_name = "COUNT", default_value = "1k", value_parser = parse_count)]
    pub keys: u64,

    /// The Zipf exponent of key popularity; 0 draws keys uniformly.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub zipf: f64,

    /// How long the workload runs.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,

    /// A limit to try (repeat to try several).
    #[arg(long, short, value_name = "LIMIT", required = true)]
    pub limit: Vec<LimitSpec>,

    /// A window to try besides the exact log (repeat: --window buckets:10 --window buckets:60).
    #[arg(long, value_name = "WINDOW")]
    pub window: Vec<WindowSpec>,

    /// The length of one tick of the generated timestamps.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration)]
    pub tick: Duration,

    /// Which limiter variant decides.
    #[arg(long, value_enum, default_value_t = Variant::LockFree)]
    pub variant: Variant,

    /// The seed of the workload: the same seed gives the same requests.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Print the report as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}

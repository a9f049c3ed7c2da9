//! `slidelimit`, the command line of the slidelimit rate limiters: replay a trace through any
//! limiter variant and window (`replay`, with `--compare` against rolling buckets and
//! governor), simulate a workload against candidate limits (`simulate`), and run the
//! comparison benchmark (`bench`, the runner of `slidelimit-bench`, only with the cargo
//! feature `bench`: without it the other commands build and run without the benchmarks).
//!
//! Every command is written once over the `RateLimiter` trait: the variant and window are
//! chosen when the limiter is built (`variant.rs`), and nothing after depends on which.
//! Reports go to stdout, errors and progress bars to stderr; the exit codes are in
//! `outcome.rs` and in `--help`.

mod audit;
mod cli;
mod decide;
mod outcome;
mod progress;
mod replay;
mod simulate;
mod spec;
mod table;
mod trace;
mod variant;

use std::io::{self, Write as _};
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};

use crate::cli::{Cli, Command};
use crate::outcome::{Done, Failure};

// The runner's heap-per-key figures read this allocator, so an installed CLI is its own memory
// child and needs no second binary. Its price: two SeqCst adds on process-wide words per
// allocation and free, which `slidelimit bench`'s multi-thread churn and Zipf cells pay (the
// comparison binary, `cargo run -p slidelimit-bench`, keeps the counter out of its timed
// cells); only a build with the runner pays it.
#[cfg(feature = "bench")]
slidelimit_bench::counting_allocator!();

/// How many skipped lines are listed on stderr before the rest are only counted.
const LISTED_FAULTS: usize = 20;

fn main() -> ExitCode {
    // The benchmark measures memory in children started as this executable with the runner's
    // own flag: serve them before anything reads the command line as ours.
    #[cfg(feature = "bench")]
    if let Some(code) = slidelimit_bench::runner::child_entry(&std::env::args().collect::<Vec<_>>())
    {
        return code;
    }
    let cli = Cli::parse();
    let allow_progress = progress::allowed(cli.quiet);
    let result = match &cli.command {
        Command::Replay(args) => replay::run(args, allow_progress),
        Command::Simulate(args) => simulate::run(args, allow_progress),
        #[cfg(feature = "bench")]
        Command::Bench(args) => return bench(&args.args),
        #[cfg(not(feature = "bench"))]
        Command::Bench(_) => Err(Failure::Usage(cli::BENCH_MISSING.to_owned())),
    };
    match result {
        Ok((report, done)) => {
            if let Err(err) = io::stdout().lock().write_all(report.as_bytes()) {
                // A reader that went away (`| head`) has all it wanted.
                if err.kind() != io::ErrorKind::BrokenPipe {
                    eprintln!("error: cannot write the report: {err}");
                    return ExitCode::from(outcome::INPUT_ERROR);
                }
            }
            if let Done::Skipped(faults) = &done {
                let mut stderr = io::stderr().lock();
                for fault in faults.iter().take(LISTED_FAULTS) {
                    let _ = writeln!(stderr, "skipped {fault}");
                }
                if faults.len() > LISTED_FAULTS {
                    let _ = writeln!(
                        stderr,
                        "skipped {} more lines",
                        faults.len() - LISTED_FAULTS
                    );
                }
                let _ = writeln!(stderr, "warning: {} lines skipped", faults.len());
            }
            done.exit_code()
        }
        Err(Failure::Usage(message)) => {
            // clap's own format and exit code (2), as for the errors it finds itself, with
            // the usage of the command that refused (`slidelimit replay ...`), not the
            // top-level one.
            let mut command = Cli::command();
            command.build();
            let name = cli.command.name();
            let mut command = match command.find_subcommand_mut(name) {
                Some(sub) => sub.clone(),
                None => command,
            };
            command
                .error(clap::error::ErrorKind::ValueValidation, message)
                .exit()
        }
        Err(failure) => {
            match &failure {
                Failure::Input(message) => eprintln!("error: {message}"),
                Failure::Bug(message) => eprintln!(
                    "error: {message}: a sliding-window limiter must never do this; please report it"
                ),
                Failure::Usage(_) => unreachable!("handled above"),
            }
            failure.exit_code()
        }
    }
}

/// `slidelimit bench ARGS...`: the comparison runner, as `cargo run -p slidelimit-bench -- ARGS`
/// runs it (it warns about a debug build itself); its exit codes are the same as ours (0, 1
/// for a failed run, 2 for bad flags).
#[cfg(feature = "bench")]
fn bench(args: &[String]) -> ExitCode {
    slidelimit_bench::runner::run_cli(
        std::iter::once("slidelimit bench".to_owned()).chain(args.iter().cloned()),
    )
}

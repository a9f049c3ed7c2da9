//! `slidelimit`, the command line of the slidelimit rate limiters: replay a trace through any
//! limiter variant and window (`replay`, with `--compare` against rolling buckets and
//! governor), and simulate a workload against candidate limits (`simulate`).
//!
//! Every command is written once over the `RateLimiter` trait: the variant and window are
//! chosen when the limiter is built (`variant.rs`), and nothing after depends on which.
//! Reports go to stdout, errors and progress bars to stderr; the exit codes are in
//! `outcome.rs` and in `--help`.

mod cli;
mod decide;
mod outcome;
mod peak;
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

/// How many skipped lines are listed on stderr before the rest are only counted.
const LISTED_FAULTS: usize = 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let allow_progress = progress::allowed(cli.quiet);
    let result = match &cli.command {
        Command::Replay(args) => replay::run(args, allow_progress),
        Command::Simulate(args) => simulate::run(args, allow_progress),
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
            // clap's own format and exit code (2), as for the errors it finds itself.
            Cli::command()
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

//! How a command ends: its exit code, for scripts to rely on (stated in `--help`).

use std::process::ExitCode;

use crate::trace::LineFault;

/// A command that finished and printed its report.
#[derive(Debug)]
pub enum Done {
    /// Every line was used.
    Clean,
    /// `--keep-going` skipped these lines.
    Skipped(Vec<LineFault>),
}

/// A command that could not finish.
#[derive(Debug)]
pub enum Failure {
    /// A flag's value is refused (by the limiter, after clap accepted its syntax).
    Usage(String),
    /// The input could not be read or used.
    Input(String),
    /// A sliding-window limiter over-admitted: a bug.
    Bug(String),
}

/// Exit code 0: success.
pub const SUCCESS: u8 = 0;
/// Exit code 1: the input could not be read or used.
pub const INPUT_ERROR: u8 = 1;
/// Exit code 2: a usage error (clap's own code for the errors it finds).
pub const USAGE_ERROR: u8 = 2;
/// Exit code 3: finished, with lines skipped under `--keep-going`.
pub const SKIPPED_LINES: u8 = 3;
/// Exit code 4: a sliding-window limiter admitted more than `N` in one window.
pub const OVER_ADMITTED: u8 = 4;

impl Done {
    /// Its exit code.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Clean => ExitCode::from(SUCCESS),
            Self::Skipped(_) => ExitCode::from(SKIPPED_LINES),
        }
    }
}

impl Failure {
    /// Its exit code.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Usage(_) => USAGE_ERROR,
            Self::Input(_) => INPUT_ERROR,
            Self::Bug(_) => OVER_ADMITTED,
        })
    }
}

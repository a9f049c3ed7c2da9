//! A trace as the commands use it: the requests `slidelimit_trace::read` reads, and every line
//! left out, whether malformed (the reader's faults) or one a limiter could not take (its
//! weight), each by its number.

use std::io::BufRead;

use slidelimit::WeightError;
pub use slidelimit_trace::read::Request;
use slidelimit_trace::read::{self, ReadError};

/// How the lines of a trace are written (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// JSON lines if the first request line starts with `{`, CSV otherwise.
    Auto,
    /// `timestamp,key[,weight]`.
    Csv,
    /// `{"timestamp": T, "key": K, "weight": W}` per line.
    Jsonl,
}

impl From<Format> for read::Format {
    fn from(format: Format) -> Self {
        match format {
            Format::Auto => Self::Auto,
            Format::Csv => Self::Csv,
            Format::Jsonl => Self::Jsonl,
        }
    }
}

/// Why a line was left out.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line is malformed.
    #[error(transparent)]
    Read(#[from] read::LineError),
    /// The window cannot take the request's weight.
    #[error("{0}{hint}", hint = weight_hint(.0))]
    Weight(#[from] WeightError),
    /// `--compare` decides single requests only.
    #[error("weight {0}: --compare decides single requests only (the exact log and governor take weight 1)")]
    CompareWeight(u64),
}

/// How to get past a weight error, where the command line has a way.
const fn weight_hint(error: &WeightError) -> &'static str {
    match error {
        WeightError::Unsupported { .. } => " (--window buckets:B)",
        _ => "",
    }
}

/// A line left out and where it is.
pub type LineFault = read::LineFault<LineError>;

/// A trace read into memory: its requests, and the lines left out, in file order.
#[derive(Debug, Default)]
pub struct Trace {
    /// The requests, in file order.
    pub requests: Vec<Request>,
    /// The lines left out.
    pub faults: Vec<LineFault>,
}

/// Reads every line of `input` (see `slidelimit_trace::read::read`).
///
/// # Errors
/// As `slidelimit_trace::read::read`.
pub fn read(
    input: impl BufRead,
    format: Format,
    keep_going: bool,
    progress: impl FnMut(u64),
) -> Result<Trace, ReadError> {
    let trace = read::read(input, format.into(), keep_going, progress)?;
    Ok(Trace {
        requests: trace.requests,
        faults: trace
            .faults
            .into_iter()
            .map(|fault| fault.map(LineError::from))
            .collect(),
    })
}

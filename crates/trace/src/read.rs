//! Reading a trace (feature `read`): one request per line, `timestamp,key[,weight]` as CSV or
//! as JSON lines, with every malformed line reported by its number.
//!
//! CSV: fields separated by commas, spaces around them ignored, no quoting (a key holding a
//! comma needs JSON lines). A first line whose first field is `timestamp` is a header. JSON
//! lines: an object per line with `timestamp` (a whole number), `key` (a string or a whole
//! number) and optionally `weight` (a whole number, 1 if absent); other fields are ignored.
//! Both: blank lines and lines starting with `#` are skipped; timestamps are whole ticks.

use std::fmt;
use std::io::{self, BufRead};

use serde::Deserialize;

/// One request of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Its line in the trace, from 1.
    pub line: usize,
    /// When, in ticks.
    pub timestamp: u64,
    /// Whose.
    pub key: String,
    /// How many hits it asks for at once (1 unless the trace says).
    pub weight: u64,
}

/// How the lines of a trace are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON lines if the first request line starts with `{`, CSV otherwise.
    Auto,
    /// `timestamp,key[,weight]`.
    Csv,
    /// `{"timestamp": T, "key": K, "weight": W}` per line.
    Jsonl,
}

/// What is wrong with one line.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line is not UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// Fewer than two CSV fields.
    #[error("expected timestamp,key[,weight], found {0} field(s)")]
    TooFewFields(usize),
    /// More than three CSV fields.
    #[error(
        "expected timestamp,key[,weight], found {0} fields (keys holding commas need JSON lines)"
    )]
    TooManyFields(usize),
    /// The timestamp is not a whole number of ticks.
    #[error("timestamp `{0}` is not a whole number of ticks")]
    BadTimestamp(String),
    /// The key is empty.
    #[error("empty key")]
    EmptyKey,
    /// The weight is not a whole number.
    #[error("weight `{0}` is not a whole number")]
    BadWeight(String),
    /// The JSON line could not be read.
    #[error("invalid JSON line: {0}")]
    Json(String),
}

/// A line left out and where it is: malformed ([`LineError`]), or, for a caller that goes on
/// to decide the requests, whatever its own `E` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineFault<E = LineError> {
    /// The line's number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub error: E,
}

impl<E> LineFault<E> {
    /// The same line with its error turned into another kind (a caller's wider error).
    pub fn map<F>(self, f: impl FnOnce(E) -> F) -> LineFault<F> {
        LineFault {
            line: self.line,
            error: f(self.error),
        }
    }
}

impl<E: fmt::Display> fmt::Display for LineFault<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

/// Why a trace could not be read at all.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Reading failed.
    #[error("cannot read the trace: {0}")]
    Io(#[from] io::Error),
    /// A malformed line, and the read stops at the first.
    #[error("{0}")]
    Malformed(LineFault),
}

/// A trace read into memory: its requests, and the malformed lines skipped (with
/// `keep_going`).
#[derive(Debug, Default)]
pub struct Trace {
    /// The requests, in file order.
    pub requests: Vec<Request>,
    /// The malformed lines skipped, in file order.
    pub faults: Vec<LineFault>,
}

#[derive(Deserialize)]
struct JsonLine {
    timestamp: u64,
    key: JsonKey,
    #[serde(default = "one")]
    weight: u64,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonKey {
    Text(String),
    Number(u64),
}

const fn one() -> u64 {
    1
}

/// Reads every line of `input`. With `keep_going`, a malformed line is recorded and skipped;
/// otherwise the first one ends the read. `progress` is told the bytes of each line.
///
/// # Errors
/// [`ReadError::Io`] when reading fails; [`ReadError::Malformed`] at the first malformed line
/// unless `keep_going`.
pub fn read(
    mut input: impl BufRead,
    format: Format,
    keep_going: bool,
    mut progress: impl FnMut(u64),
) -> Result<Trace, ReadError> {
    let mut trace = Trace::default();
    let mut format = format;
    let mut buffer = Vec::new();
    let mut line = 0;
    let mut seen_request_line = false;
    loop {
        buffer.clear();
        let read = input.read_until(b'\n', &mut buffer)?;
        if read == 0 {
            break;
        }
        progress(read as u64);
        line += 1;
        let parsed = std::str::from_utf8(&buffer)
            .map_err(|_| LineError::NotUtf8)
            .and_then(|text| {
                let text = text.trim();
                if text.is_empty() || text.starts_with('#') {
                    return Ok(None);
                }
                let first = !seen_request_line;
                seen_request_line = true;
                if format == Format::Auto {
                    format = if text.starts_with('{') {
                        Format::Jsonl
                    } else {
                        Format::Csv
                    };
                }
                if format == Format::Csv && first && is_header(text) {
                    return Ok(None);
                }
                parse_line(text, format).map(Some)
            });
        match parsed {
            Ok(None) => {}
            Ok(Some((timestamp, key, weight))) => trace.requests.push(Request {
                line,
                timestamp,
                key,
                weight,
            }),
            Err(error) => {
                let fault = LineFault { line, error };
                if !keep_going {
                    return Err(ReadError::Malformed(fault));
                }
                trace.faults.push(fault);
            }
        }
    }
    Ok(trace)
}

fn is_header(text: &str) -> bool {
    text.split(',').next().map(str::trim) == Some("timestamp")
}

/// One request line (trimmed, not blank, not a comment) in a known format.
fn parse_line(text: &str, format: Format) -> Result<(u64, String, u64), LineError> {
    if format == Format::Jsonl {
        return parse_json(text);
    }
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    match fields.len() {
        0 | 1 => return Err(LineError::TooFewFields(fields.len())),
        2 | 3 => {}
        n => return Err(LineError::TooManyFields(n)),
    }
    let timestamp = fields[0]
        .parse()
        .map_err(|_| LineError::BadTimestamp(fields[0].to_owned()))?;
    if fields[1].is_empty() {
        return Err(LineError::EmptyKey);
    }
    let weight = match fields.get(2) {
        Some(weight) => weight
            .parse()
            .map_err(|_| LineError::BadWeight((*weight).to_owned()))?,
        None => 1,
    };
    Ok((timestamp, fields[1].to_owned(), weight))
}

fn parse_json(text: &str) -> Result<(u64, String, u64), LineError> {
    let parsed: JsonLine = serde_json::from_str(text).map_err(|err| {
        // serde_json counts lines within the one line it was given; keep only the column.
        let message = err.to_string();
        let message = match message.rsplit_once(" at line 1 column ") {
            Some((what, column)) => format!("{what} (column {column})"),
            None => message,
        };
        LineError::Json(message)
    })?;
    let key = match parsed.key {
        JsonKey::Text(key) => key,
        JsonKey::Number(key) => key.to_string(),
    };
    if key.is_empty() {
        return Err(LineError::EmptyKey);
    }
    Ok((parsed.timestamp, key, parsed.weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str, format: Format, keep_going: bool) -> Result<Trace, ReadError> {
        read(text.as_bytes(), format, keep_going, |_| {})
    }

    #[test]
    fn csv_with_header_comments_weights_and_crlf() {
        let text = "timestamp,key,weight\r\n# a comment\n\n5, alice\n7,bob,3\r\n";
        let trace = read_all(text, Format::Auto, false).unwrap();
        let got: Vec<_> = trace
            .requests
            .iter()
            .map(|r| (r.line, r.timestamp, r.key.as_str(), r.weight))
            .collect();
        assert_eq!(got, [(4, 5, "alice", 1), (5, 7, "bob", 3)]);
    }

    #[test]
    fn json_lines_with_string_and_number_keys() {
        let text = "{\"timestamp\": 3, \"key\": \"a\"}\n{\"timestamp\": 4, \"key\": 17, \"weight\": 2, \"path\": \"/x\"}\n";
        let trace = read_all(text, Format::Auto, false).unwrap();
        let got: Vec<_> = trace
            .requests
            .iter()
            .map(|r| (r.timestamp, r.key.as_str(), r.weight))
            .collect();
        assert_eq!(got, [(3, "a", 1), (4, "17", 2)]);
    }

    #[test]
    fn the_first_malformed_line_stops_the_read() {
        let err = read_all("1,a\n2\n3,b,x\n", Format::Csv, false).unwrap_err();
        match err {
            ReadError::Malformed(fault) => {
                assert_eq!(fault.line, 2);
                assert_eq!(fault.error, LineError::TooFewFields(1));
            }
            ReadError::Io(err) => panic!("unexpected {err}"),
        }
    }

    #[test]
    fn keep_going_collects_every_fault_by_line() {
        let text = "1,a\n2\n-3,b\n4,,1\n5,c,x\n6,d,1,2\n7,e\n";
        let trace = read_all(text, Format::Csv, true).unwrap();
        assert_eq!(trace.requests.len(), 2);
        let faults: Vec<_> = trace.faults.iter().map(ToString::to_string).collect();
        assert_eq!(
            faults,
            [
                "line 2: expected timestamp,key[,weight], found 1 field(s)",
                "line 3: timestamp `-3` is not a whole number of ticks",
                "line 4: empty key",
                "line 5: weight `x` is not a whole number",
                "line 6: expected timestamp,key[,weight], found 4 fields (keys holding commas need JSON lines)",
            ]
        );
    }

    #[test]
    fn json_errors_name_the_column_and_bad_bytes_are_faults() {
        let mut bytes = b"{\"timestamp\": 1}\n".to_vec();
        bytes.extend_from_slice(b"{\"timestamp\": 2, \"key\": \"\xff\"}\n");
        let trace = read(&bytes[..], Format::Jsonl, true, |_| {}).unwrap();
        assert_eq!(trace.faults.len(), 2);
        assert_eq!(
            trace.faults[0].to_string(),
            "line 1: invalid JSON line: missing field `key` (column 16)"
        );
        assert_eq!(trace.faults[1].error, LineError::NotUtf8);
    }

    #[test]
    fn progress_sees_every_byte() {
        let text = "1,a\n22,bb\n";
        let mut bytes = 0;
        read(text.as_bytes(), Format::Csv, false, |n| bytes += n).unwrap();
        assert_eq!(bytes, text.len() as u64);
    }
}

//! `Error`: why a call to Redis gave no decision.
//!
//! Its `Display` and `Debug` never show a password: a URL's `user:password@` and a Unix
//! socket URL's `pass=` are hidden wherever they appear (a configuration error quotes the
//! URL it refused; `redis`'s own error texts may quote what the server or a URL said), so
//! that logging an error never leaks the credentials it was built from.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use slidelimit::{LimitError, WeightError};

/// Why a limiter call gave no decision. Every failure of the server, the network or the
/// script is one of these, never a panic and never a wait past the configured timeout.
///
/// A call that fails may still have run on the server (the reply was lost or came too late):
/// then it recorded hits that no caller was told about. That errs on the safe side (the
/// limit is never exceeded; some capacity is wasted until those hits leave the window).
///
/// Neither its `Display` nor its `Debug` shows a password (a URL's `user:password@`
/// and a `pass=` parameter are hidden wherever they appear); the
/// [`source`](std::error::Error::source) of [`Error::Connection`] and [`Error::Server`] is
/// `redis`'s own error, as `redis` reported it.
#[non_exhaustive]
pub enum Error {
    /// No reply within the configured timeout (a paused or overloaded server, a slow
    /// network). The connection is dropped, so a late reply is never read as another call's.
    Timeout {
        /// The configured timeout that ran out.
        after: Duration,
    },
    /// No connection: refused, reset, closed by a server restart, or never established.
    Connection(redis::RedisError),
    /// The server answered with an error: a script error, an out-of-memory refusal, a
    /// read-only replica, a cluster redirection.
    Server(redis::RedisError),
    /// The server's reply did not have the shape the script returns.
    Reply(String),
    /// The weight cannot be asked of this window (zero, or above `max_requests`).
    Weight(WeightError),
    /// The limiter could not be built: a malformed URL, a bucket geometry the window cannot
    /// take, a local share of zero.
    Config(String),
    /// The limit cannot be counted in the Redis limiters' microseconds: a limit built from
    /// durations whose window is not a whole number of them (`Limit::in_ticks_of`).
    Limit(LimitError),
    /// A caller-supplied tick at or above 2^53: sorted-set scores are doubles, exact only
    /// below that.
    TickOutOfRange {
        /// The tick passed.
        now: u64,
    },
}

impl Error {
    /// Whether the error says nothing about the request itself (timeout, connection, server,
    /// reply): the failures a [`FailurePolicy`](crate::FailurePolicy) stands in for.
    #[must_use]
    pub const fn is_backend_failure(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. } | Self::Connection(_) | Self::Server(_) | Self::Reply(_)
        )
    }

    pub(crate) fn from_redis(err: redis::RedisError, timeout: Duration) -> Self {
        if err.is_timeout() {
            Self::Timeout { after: timeout }
        } else if err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal() {
            Self::Connection(err)
        } else if err.code().is_some() || matches!(err.kind(), redis::ErrorKind::Server(_)) {
            Self::Server(err)
        } else {
            Self::Reply(err.to_string())
        }
    }
}

impl Error {
    /// The message before redaction: every `Display` goes through [`redact`].
    fn message(&self) -> String {
        match self {
            Self::Timeout { after } => format!("no reply from Redis within {after:?}"),
            Self::Connection(err) => format!("no connection to Redis: {err}"),
            Self::Server(err) => format!("Redis answered with an error: {err}"),
            Self::Reply(detail) => format!("unexpected reply from Redis: {detail}"),
            Self::Weight(err) => format!("{err}"),
            Self::Config(detail) => format!("invalid limiter configuration: {detail}"),
            Self::Limit(err) => {
                format!("the limit cannot be counted in the Redis limiters' microseconds: {err}")
            }
            Self::TickOutOfRange { now } => {
                format!("tick {now} is at or above 2^53, beyond a score's exact range")
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.message()))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As `#[derive(Debug)]` would write it, each field's text redacted.
        match self {
            Self::Timeout { after } => f.debug_struct("Timeout").field("after", after).finish(),
            Self::Connection(err) => f.debug_tuple("Connection").field(&Redacted(err)).finish(),
            Self::Server(err) => f.debug_tuple("Server").field(&Redacted(err)).finish(),
            Self::Reply(detail) => f.debug_tuple("Reply").field(&Redacted(detail)).finish(),
            Self::Weight(err) => f.debug_tuple("Weight").field(err).finish(),
            Self::Config(detail) => f.debug_tuple("Config").field(&Redacted(detail)).finish(),
            Self::Limit(err) => f.debug_tuple("Limit").field(err).finish(),
            Self::TickOutOfRange { now } => {
                f.debug_struct("TickOutOfRange").field("now", now).finish()
            }
        }
    }
}

/// A field whose `Debug` text is redacted.
struct Redacted<'a, T>(&'a T);

impl<T: fmt::Debug> fmt::Debug for Redacted<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if f.alternate() {
            format!("{:#?}", self.0)
        } else {
            format!("{:?}", self.0)
        };
        f.write_str(&redact(&text))
    }
}

/// `text` with every URL's credentials hidden: the user information of `scheme://user:
/// password@host` becomes `***`, and a `pass=` query parameter's value (a Unix socket URL's
/// password) becomes `***`.
///
/// The user information is taken to run to the last `@` before the next whitespace, not to
/// the first `/`: a URL that did not parse may hold a password with an unescaped `/`, `?`
/// or `#`, and hiding too much of a refused URL costs nothing.
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("://") && !text.contains("pass=") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("://") {
        let (before, after) = rest.split_at(start + 3);
        out.push_str(before);
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        match after[..end].rfind('@') {
            Some(at) => {
                out.push_str("***");
                rest = &after[at..];
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    Cow::Owned(hide_pass_parameters(&out))
}

/// `text` with the value of every `pass=` parameter (after `?`, `&` or `;`) replaced by `***`.
fn hide_pass_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("pass=") {
        let parameter = at == 0 || rest[..at].ends_with(['?', '&', ';']);
        let (before, after) = rest.split_at(at + "pass=".len());
        out.push_str(before);
        if parameter {
            let end = after
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .unwrap_or(after.len());
            out.push_str("***");
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connection(err) | Self::Server(err) => Some(err),
            Self::Weight(err) => Some(err),
            Self::Limit(err) => Some(err),
            _ => None,
        }
    }
}

impl From<WeightError> for Error {
    fn from(err: WeightError) -> Self {
        Self::Weight(err)
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn urls_lose_their_credentials() {
        for (text, expected) in [
            (
                "rediss://default:s3cr3t@127.0.0.1:7000/: bad",
                "rediss://***@127.0.0.1:7000/: bad",
            ),
            (
                "redis://:s3cr3t@h/0 and redis://h/",
                "redis://***@h/0 and redis://h/",
            ),
            ("redis://u:pa/ss@h:1/", "redis://***@h:1/"),
            ("redis://u:p@ss@h/", "redis://***@h/"),
            (
                "redis+unix:///tmp/r.sock?db=1&pass=s3cr3t&user=u",
                "redis+unix:///tmp/r.sock?db=1&pass=***&user=u",
            ),
            (
                "unix:///tmp/r.sock?pass=s3cr3t",
                "unix:///tmp/r.sock?pass=***",
            ),
            ("no url here, bypass=1", "no url here, bypass=1"),
            ("", ""),
        ] {
            assert_eq!(redact(text), expected, "{text}");
        }
    }
}

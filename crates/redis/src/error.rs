//! `Error`: why a call to Redis gave no decision.

use std::fmt;
use std::time::Duration;

use slidelimit::{LimitError, WeightError};

/// Why a limiter call gave no decision. Every failure of the server, the network or the
/// script is one of these, never a panic and never a wait past the configured timeout.
///
/// A call that fails may still have run on the server (the reply was lost or came too late):
/// then it recorded hits that no caller was told about. That errs on the safe side (the
/// limit is never exceeded; some capacity is wasted until those hits leave the window).
#[non_exhaustive]
#[derive(Debug)]
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout { after } => write!(f, "no reply from Redis within {after:?}"),
            Self::Connection(err) => write!(f, "no connection to Redis: {err}"),
            Self::Server(err) => write!(f, "Redis answered with an error: {err}"),
            Self::Reply(detail) => write!(f, "unexpected reply from Redis: {detail}"),
            Self::Weight(err) => write!(f, "{err}"),
            Self::Config(detail) => write!(f, "invalid limiter configuration: {detail}"),
            Self::Limit(err) => write!(
                f,
                "the limit cannot be counted in the Redis limiters' microseconds: {err}"
            ),
            Self::TickOutOfRange { now } => {
                write!(
                    f,
                    "tick {now} is at or above 2^53, beyond a score's exact range"
                )
            }
        }
    }
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

//! What a limiter answers when Redis cannot: fail open, fail closed, or a local limiter.
//!
//! | policy | while Redis is down | the price |
//! |---|---|---|
//! | [`FailurePolicy::FailClosed`] (default) | every request refused | an outage of Redis is an outage of the service |
//! | [`FailurePolicy::FailOpen`] | every request admitted | no limit at all until Redis answers again |
//! | [`FailurePolicy::Local`] | each process limits on its own, `max_requests` per window per key | across `P` processes the limit becomes `P · max_requests` (pick `N / P` to keep `N`); around the switch back, the remote log does not know the local admissions, so one window may see up to `N + P · max_requests` |
//!
//! Every failure still reaches the caller as a typed [`Error`] inside the [`Verdict`], so it
//! can be logged or counted. A call never waits past the configured timeout, counted from
//! its start and spent by everything it does (connecting, the connection's handshake,
//! loading the script, waiting for another caller's lease renewal), so the fallback answers
//! within it too: a server that is stopped, hung or never reached costs the timeout plus a
//! few milliseconds (blocking sockets wait at most 50 ms at a time before looking at the
//! deadline again; 401–408 ms measured at a timeout of 400 ms), a refused connection
//! nothing.

use std::sync::Arc;

use slidelimit::{Clock, Limit, LockFreeLimiter};

use crate::Error;

/// The wait a fail-closed refusal suggests (`Retry-After` of the tower layer's 503): a
/// restarting server is usually back within a second or two, and a client that retries
/// sooner only adds load to an outage.
pub const UNAVAILABLE_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// What to answer when Redis gives no decision (see the [module docs](self)).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse: never exceeds the limit, stops all traffic during an outage.
    #[default]
    FailClosed,
    /// Admit: keeps traffic flowing, enforces nothing during an outage.
    FailOpen,
    /// Decide in this process with the core's exact lock-free log at `max_requests` per
    /// window per key (this process's share of the limit). Weight 1 only: a weighted
    /// request is refused while Redis is down.
    Local {
        /// This process's share of the limit.
        max_requests: u64,
    },
}

/// Who made a [`Verdict`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Redis decided.
    Redis,
    /// Redis failed; [`FailurePolicy::FailOpen`] admitted.
    FailOpen,
    /// Redis failed; [`FailurePolicy::FailClosed`] refused.
    FailClosed,
    /// Redis failed; the local limiter of [`FailurePolicy::Local`] decided.
    Local,
}

/// A decision that always comes, within the timeout: Redis's or the failure policy's.
#[must_use]
#[derive(Debug)]
pub struct Verdict {
    /// Whether the request may go ahead.
    pub admitted: bool,
    /// Who decided.
    pub source: Source,
    /// Why Redis did not, when it did not.
    pub error: Option<Error>,
}

impl Verdict {
    pub(crate) const fn from_redis(admitted: bool) -> Self {
        Self {
            admitted,
            source: Source::Redis,
            error: None,
        }
    }
}

pub(crate) struct Fallback {
    policy: FailurePolicy,
    local: Option<LockFreeLimiter<String>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Fallback {
    pub(crate) fn new(
        policy: FailurePolicy,
        limit: Limit,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        let local = match policy {
            FailurePolicy::Local { max_requests } => {
                let share = Limit::new(max_requests, limit.window_ticks())
                    .map_err(|err| Error::Config(format!("local share: {err}")))?;
                Some(LockFreeLimiter::new(share))
            }
            FailurePolicy::FailClosed | FailurePolicy::FailOpen => None,
        };
        Ok(Self {
            policy,
            local,
            clock,
        })
    }

    pub(crate) const fn policy(&self) -> FailurePolicy {
        self.policy
    }

    /// The policy's answer to one request of weight 1 on `key`, for middleware: fail open
    /// admits with no window to report, fail closed refuses as unavailable, the local share
    /// decides and reports its own window.
    #[cfg(feature = "tokio")]
    pub(crate) fn answer(&self, key: &str) -> slidelimit::Answer {
        use slidelimit::{Answer, RateLimiter};
        match (&self.local, self.policy) {
            (Some(local), _) => {
                let (key, now) = (key.to_owned(), self.clock.now_ticks());
                let admitted = local.check_and_hit(&key, now);
                crate::metrics::fallback("local", admitted);
                let windows = local.window_statuses(&key, now);
                Answer::Decided {
                    admitted,
                    limit: local.limit(),
                    status: Some(windows.tightest()),
                    windows: Some(windows),
                }
            }
            (None, FailurePolicy::FailOpen) => {
                crate::metrics::fallback("fail_open", true);
                Answer::Undecided {
                    admitted: true,
                    retry_after: std::time::Duration::ZERO,
                }
            }
            (None, _) => {
                crate::metrics::fallback("fail_closed", false);
                Answer::Undecided {
                    admitted: false,
                    retry_after: UNAVAILABLE_RETRY,
                }
            }
        }
    }

    /// The policy's answer for middleware after `err`; an error that is not the backend's (a
    /// caller clock out of range) refuses as unavailable.
    #[cfg(feature = "tokio")]
    pub(crate) fn answer_after(&self, key: &str, err: &Error) -> slidelimit::Answer {
        if err.is_backend_failure() {
            self.answer(key)
        } else {
            slidelimit::Answer::Undecided {
                admitted: false,
                retry_after: UNAVAILABLE_RETRY,
            }
        }
    }

    pub(crate) fn decide(&self, key: &str, n: u64, error: Error) -> Verdict {
        let (admitted, source) = match (&self.local, self.policy) {
            (Some(local), _) => {
                let admitted =
                    n == 1 && local.check_and_hit(&key.to_owned(), self.clock.now_ticks());
                (admitted, Source::Local)
            }
            (None, FailurePolicy::FailOpen) => (true, Source::FailOpen),
            (None, _) => (false, Source::FailClosed),
        };
        let policy = match source {
            Source::Local => "local",
            Source::FailOpen => "fail_open",
            _ => "fail_closed",
        };
        crate::metrics::fallback(policy, admitted);
        Verdict {
            admitted,
            source,
            error: Some(error),
        }
    }
}

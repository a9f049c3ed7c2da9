//! `Options`: how a Redis limiter talks to Redis and what it does when Redis fails, apart
//! from the limiters that read them (so that the connection's modules, which read them too,
//! and the limiters do not import each other).

use std::time::Duration;

use crate::failure::FailurePolicy;
use crate::time::TimeSource;
use crate::tls::TlsChoice;

/// How a [`RedisLimiter`](crate::RedisLimiter) talks to Redis and what it does when Redis fails.
///
/// ```
/// use std::time::Duration;
/// use slidelimit_redis::{FailurePolicy, Options};
/// let options = Options::new()
///     .prefix("api")
///     .timeout(Duration::from_millis(50))
///     .buckets(10)
///     .failure(FailurePolicy::Local { max_requests: 25 });
/// assert_eq!(options.timeout_value(), Duration::from_millis(50));
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) prefix: String,
    pub(crate) timeout: Duration,
    pub(crate) time: TimeSource,
    pub(crate) buckets: Option<u64>,
    pub(crate) lateness_ticks: Option<u64>,
    pub(crate) expiry_slack: Duration,
    pub(crate) failure: FailurePolicy,
    pub(crate) refusal_cache: bool,
    /// The TLS (`rediss://`) of every single-server limiter, blocking and async.
    pub(crate) tls: TlsChoice,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// Defaults: prefix `slidelimit`, timeout 100 ms, the server's `TIME`, the exact log,
    /// lateness W/16 (server clock) or W (caller clock), expiry slack 1 s, fail closed.
    #[must_use]
    pub fn new() -> Self {
        Self {
            prefix: "slidelimit".to_owned(),
            timeout: Duration::from_millis(100),
            time: TimeSource::Server,
            buckets: None,
            lateness_ticks: None,
            expiry_slack: Duration::from_secs(1),
            failure: FailurePolicy::FailClosed,
            refusal_cache: true,
            tls: TlsChoice::default(),
        }
    }

    /// The prefix of every Redis key this limiter writes (`{` and `}` become `_`).
    #[must_use]
    pub fn prefix(mut self, prefix: &str) -> Self {
        prefix.clone_into(&mut self.prefix);
        self
    }

    /// The configured key prefix.
    #[must_use]
    pub fn prefix_value(&self) -> &str {
        &self.prefix
    }

    /// The longest a call may take, connecting included; past it the call answers
    /// [`Error::Timeout`](crate::Error::Timeout).
    #[must_use]
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The configured timeout.
    #[must_use]
    pub const fn timeout_value(&self) -> Duration {
        self.timeout
    }

    /// Whose clock decides (see [`TimeSource`]).
    #[must_use]
    pub fn time(mut self, time: TimeSource) -> Self {
        self.time = time;
        self
    }

    /// Rolling buckets (`B` of them, the core's [`RollingBuckets`](slidelimit::RollingBuckets) geometry, lateness one
    /// bucket) instead of the exact log.
    #[must_use]
    pub const fn buckets(mut self, buckets: u64) -> Self {
        self.buckets = Some(buckets);
        self
    }

    /// Exact log: how far behind a key's newest call another call may be and still be
    /// answered in full (default: one window with the caller's clock, a sixteenth of it
    /// with the server's, whose calls arrive in time order unless its clock steps back). Hits older than the newest call's window by
    /// more than this are removed; a call reaching below them is refused.
    #[must_use]
    pub const fn lateness_ticks(mut self, ticks: u64) -> Self {
        self.lateness_ticks = Some(ticks);
        self
    }

    /// How much longer than the window (and the lateness) a key lives after its last
    /// write (default 1 s). Must cover the callers' clock disagreement in
    /// [`TimeSource::Caller`] mode.
    #[must_use]
    pub const fn expiry_slack(mut self, slack: Duration) -> Self {
        self.expiry_slack = slack;
        self
    }

    pub(crate) const fn expiry_slack_value(&self) -> Duration {
        self.expiry_slack
    }

    /// What [`RedisLimiter::decide`](crate::RedisLimiter::decide) answers when Redis fails.
    #[must_use]
    pub fn failure(mut self, failure: FailurePolicy) -> Self {
        self.failure = failure;
        self
    }

    /// Whether the async limiter, asked as middleware (its `slidelimit::Decide`, what the
    /// tower layer calls), remembers its refusals: a key refused with a retry-after of `r` is
    /// refused again in this process until `r` has passed, without a round trip (on by
    /// default; see `slidelimit::decide::RefusalMemory` for what it can and cannot change).
    /// Its own `check_and_hit` always asks Redis.
    #[must_use]
    pub fn refusal_cache(mut self, on: bool) -> Self {
        self.refusal_cache = on;
        self
    }

    /// Whether the refusal cache is on.
    #[must_use]
    pub const fn refusal_cache_value(&self) -> bool {
        self.refusal_cache
    }

    /// How [`RedisLimiter`](crate::RedisLimiter), [`LeasedLimiter`](crate::LeasedLimiter) and
    /// `AsyncRedisLimiter::new` (feature `tokio`) connect to a `rediss://` URL (feature
    /// `tls`): the CA to trust instead of the system's roots, a client certificate. Only for
    /// `rediss://`: with any other URL the limiter is refused ([`Error::Config`](crate::Error::Config)) rather
    /// than connect in plain text. `AsyncRedisLimiter::cluster` does not take TLS yet.
    ///
    /// ```no_run
    /// use slidelimit::Limit;
    /// use slidelimit_redis::{Options, RedisLimiter, Tls};
    ///
    /// let ca = std::fs::read("/etc/redis/tls/ca.crt")?;
    /// let options = Options::new().tls(Tls::ca_pem(&ca)?);
    /// let limit = Limit::new(100, 1_000_000)?;
    /// let limiter = RedisLimiter::new("rediss://redis.internal:6380/", limit, options)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::Tls) -> Self {
        self.tls = TlsChoice::given(tls);
        self
    }

    /// The TLS options given, if any (see [`TlsChoice`]).
    pub(crate) const fn tls_value(&self) -> &TlsChoice {
        &self.tls
    }
}

//! `RedisLimiter`: the exact log or the rolling buckets, decided by one script per call.

use std::sync::Arc;
use std::time::Duration;

use slidelimit::{Clock, Limit, RollingBuckets, Status, WindowStatuses};

use crate::buckets::{self, BucketOp};
use crate::exact::{self, ExactOp, ExactParams};
use crate::failure::{Fallback, Verdict};
use crate::keys::KeySpace;
use crate::options::Options;
use crate::pool::Pool;
use crate::reply::{check_weight, tick_arg, Reply};
use crate::scripts::{LuaScript, BUCKETS, EXACT};
use crate::time::{TimeSource, UnixMicros};
use crate::Error;

#[derive(Debug)]
enum Algorithm {
    Exact(ExactParams),
    Buckets { window: RollingBuckets, ttl_ms: u64 },
}

/// The answer to a [`RedisLimiter::check_and_hit`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request was admitted (and recorded).
    pub admitted: bool,
    /// The key's window after the call: for a limit of several windows, the binding one
    /// ([`WindowStatuses::tightest`]).
    pub status: Status,
    /// Every window after the call, narrowest first (one for a single-window limit).
    pub windows: WindowStatuses,
    /// The tick the call was decided at: the server's `TIME` or the caller's tick.
    pub now: u64,
}

/// A sliding-window limiter whose state lives in Redis, shared by every process that uses
/// the same server, prefix and limit. Each call is one atomic script run (one round trip).
///
/// See the [crate documentation](crate) for an example and the guarantees.
pub struct RedisLimiter {
    pool: Pool,
    setup: Setup,
}

/// What a limiter is, apart from how it talks to Redis: shared by the blocking and the
/// async limiter.
pub(crate) struct Setup {
    keys: KeySpace,
    limit: Limit,
    algorithm: Algorithm,
    clock: Option<Arc<dyn Clock>>,
    fallback: Fallback,
}

/// One script call: which script, its keys, its arguments.
pub(crate) struct Request {
    pub(crate) script: &'static LuaScript,
    pub(crate) keys: Vec<String>,
    pub(crate) args: Vec<String>,
}

impl std::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("pool", &self.pool)
            .field("setup", &self.setup)
            .finish()
    }
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("keys", &self.keys)
            .field("limit", &self.limit)
            .field("algorithm", &self.algorithm)
            .field("caller_clock", &self.clock.is_some())
            .field("failure", &self.fallback.policy())
            .finish()
    }
}

fn ttl_ms(window_ticks: u64, slack: Duration) -> u64 {
    // Ticks are microseconds; round the window up to whole milliseconds.
    window_ticks
        .div_ceil(1000)
        .saturating_add(u64::try_from(slack.as_millis()).unwrap_or(u64::MAX))
        .max(1)
}

/// The Redis limiters' tick: `TIME`'s resolution, and the unit of every score and window.
pub(crate) const MICROSECOND: Duration = Duration::from_micros(1);

/// `limit` in the Redis limiters' microseconds: a limit built from durations
/// ([`Limit::tick`]) is rescaled exactly, one of raw ticks is taken to be in microseconds.
///
/// # Errors
/// [`Error::Limit`] for a window that is not a whole number of microseconds (or holds more
/// than `u64::MAX` of them).
pub(crate) fn in_micros(limit: Limit) -> Result<Limit, Error> {
    limit.in_ticks_of(MICROSECOND).map_err(Error::Limit)
}

impl RedisLimiter {
    /// A limiter of `limit` on the server at `url` (`redis://host:port/db`, `unix:///path`,
    /// or `rediss://host:port/db` with the feature `tls`). Connects lazily, on the first
    /// call.
    ///
    /// The limiter counts in microseconds. A limit built from durations
    /// (`Limit::per_minute(100, Duration::from_nanos(1))`, say) is converted to them
    /// ([`Limit::in_ticks_of`], exactly); a limit of raw ticks ([`Limit::new`]) is taken to
    /// be in microseconds already. [`RedisLimiter::limit`] is the converted limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use slidelimit::Limit;
    /// use slidelimit_redis::{Error, Options, RedisLimiter};
    ///
    /// // The nanosecond limit of the in-process limiters means the same minute here.
    /// let limit = Limit::per_minute(100, Duration::from_nanos(1))?;
    /// let limiter = RedisLimiter::new("redis://127.0.0.1:1/", limit, Options::new())?;
    /// assert_eq!(limiter.limit().window_ticks(), 60_000_000);
    /// // 1.5 µs is no whole number of microseconds: refused, not rounded.
    /// let short = Limit::per(1, Duration::from_nanos(1_500), Duration::from_nanos(1))?;
    /// let err = RedisLimiter::new("redis://127.0.0.1:1/", short, Options::new()).unwrap_err();
    /// assert!(matches!(err, Error::Limit(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] for a malformed URL, a bucket count the window cannot take, a
    /// local fallback share of zero, or a `rediss://` URL that cannot be used: without the
    /// feature `tls`, with `#insecure`, or with no system roots to trust (see
    /// `Options::tls`); [`Error::Limit`] for a limit whose windows are not whole numbers of
    /// microseconds.
    pub fn new(url: &str, limit: Limit, options: Options) -> Result<Self, Error> {
        let pool = Pool::new(url, &options).map_err(|err| match err {
            Error::Timeout { .. } | Error::Config(_) => err,
            other => Error::Config(other.to_string()),
        })?;
        Ok(Self {
            pool,
            setup: Setup::new(limit, &options)?,
        })
    }
}

impl Setup {
    /// Every Redis limiter is built here, so each converts its limit to microseconds
    /// ([`in_micros`]) before anything reads its windows.
    pub(crate) fn new(limit: Limit, options: &Options) -> Result<Self, Error> {
        let limit = in_micros(limit)?;
        // The server's clock serializes calls in time order (unless it steps back), so a
        // small tolerance suffices and keeps the log near `N` members; callers' clocks
        // disagree, so they get a whole window.
        let lateness = options.lateness_ticks.unwrap_or(match options.time {
            TimeSource::Server => limit.window_ticks() / 16,
            TimeSource::Caller(_) => limit.window_ticks(),
        });
        let algorithm = match options.buckets {
            None => Algorithm::Exact(ExactParams {
                window_ticks: limit.window_ticks(),
                max_requests: limit.max_requests(),
                ttl_ms: ttl_ms(
                    limit.window_ticks().saturating_add(lateness),
                    options.expiry_slack,
                ),
                lateness_ticks: lateness,
                limit,
            }),
            Some(b) => {
                let window = RollingBuckets::new(limit, b)
                    .map_err(|err| Error::Config(format!("{err:?}")))?;
                let retained = window
                    .physical_buckets()
                    .saturating_mul(window.bucket_ticks());
                Algorithm::Buckets {
                    window,
                    ttl_ms: ttl_ms(retained, options.expiry_slack),
                }
            }
        };
        let clock = match &options.time {
            TimeSource::Server => None,
            TimeSource::Caller(clock) => Some(Arc::clone(clock)),
        };
        let local_clock = clock
            .clone()
            .unwrap_or_else(|| Arc::new(UnixMicros::new()) as Arc<dyn Clock>);
        let fallback = Fallback::new(options.failure, limit, local_clock)?;
        Ok(Self {
            keys: KeySpace::new(&options.prefix),
            limit,
            algorithm,
            clock,
            fallback,
        })
    }

    pub(crate) const fn limit(&self) -> Limit {
        self.limit
    }

    pub(crate) fn fallback(&self) -> &Fallback {
        &self.fallback
    }

    /// The script call for `op` on `key` now, weight `n` (checked).
    pub(crate) fn request(&self, key: &str, op: Op, n: u64) -> Result<Request, Error> {
        check_weight(self.limit, n)?;
        let now = tick_arg(self.clock.as_ref().map(|clock| clock.now_ticks()))?;
        Ok(match &self.algorithm {
            Algorithm::Exact(params) => {
                let op = match op {
                    Op::Check => ExactOp::Check,
                    Op::Hit => ExactOp::Hit,
                    Op::Status => ExactOp::Status,
                };
                Request {
                    script: &EXACT,
                    keys: self.keys.exact(key).to_vec(),
                    args: exact::args(*params, op, &now, n),
                }
            }
            Algorithm::Buckets { window, ttl_ms } => {
                let op = match op {
                    Op::Check => BucketOp::Check,
                    Op::Hit => BucketOp::Hit,
                    Op::Status => BucketOp::Status,
                };
                Request {
                    script: &BUCKETS,
                    keys: vec![self.keys.buckets(key)],
                    args: buckets::args(window, *ttl_ms, op, &now, n),
                }
            }
        })
    }

    /// The decision a check's reply gives.
    pub(crate) fn decision(&self, reply: &Reply) -> Decision {
        let windows = reply.window_statuses(self.limit);
        Decision {
            admitted: reply.granted > 0,
            status: windows.tightest(),
            windows,
            now: reply.now,
        }
    }

    /// Whether `n` more fit, from a status reply: in every window.
    pub(crate) fn allows(&self, reply: &Reply, n: u64) -> bool {
        !reply.too_late
            && self
                .limit
                .windows()
                .zip(reply.window_counts(self.limit))
                .all(|(window, count)| count + n <= window.max_requests())
    }
}

impl RedisLimiter {
    /// The limit enforced per key, across every process sharing the server, in microseconds
    /// (converted from the limit given to [`RedisLimiter::new`]).
    #[must_use]
    pub const fn limit(&self) -> Limit {
        self.setup.limit()
    }

    /// `"exact"` or `"buckets"`.
    #[must_use]
    pub const fn algorithm(&self) -> &'static str {
        match self.setup.algorithm {
            Algorithm::Exact(_) => "exact",
            Algorithm::Buckets { .. } => "buckets",
        }
    }

    /// Commands this limiter has sent to Redis (each a round trip; a script's first call on
    /// a server adds its `SCRIPT LOAD`).
    #[must_use]
    pub fn round_trips(&self) -> u64 {
        self.pool.round_trips()
    }

    /// The configured timeout of one call.
    #[must_use]
    pub const fn timeout(&self) -> Duration {
        self.pool.timeout()
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    pub(crate) fn key_space(&self) -> &KeySpace {
        &self.setup.keys
    }

    pub(crate) fn exact_params(&self) -> Option<ExactParams> {
        match self.setup.algorithm {
            Algorithm::Exact(params) => Some(params),
            Algorithm::Buckets { .. } => None,
        }
    }

    /// The failure policy's answer for middleware after `err` (see [`crate::decide`]).
    #[cfg(feature = "tokio")]
    pub(crate) fn fallback_answer(&self, key: &str, err: &Error) -> slidelimit::Answer {
        self.setup.fallback().answer_after(key, err)
    }

    pub(crate) fn fallback_decide(&self, key: &str, n: u64, err: Error) -> Verdict {
        self.setup.fallback().decide(key, n, err)
    }

    pub(crate) fn caller_clock(&self) -> Option<&Arc<dyn Clock>> {
        self.setup.clock.as_ref()
    }

    fn run(&self, key: &str, op: Op, n: u64) -> Result<Reply, Error> {
        let result = self.run_uncounted(key, op, n);
        crate::metrics::result(&result);
        result
    }

    fn run_uncounted(&self, key: &str, op: Op, n: u64) -> Result<Reply, Error> {
        let request = self.setup.request(key, op, n)?;
        let keys: Vec<&str> = request.keys.iter().map(String::as_str).collect();
        let args: Vec<&str> = request.args.iter().map(String::as_str).collect();
        let values: Vec<i64> = self.pool.eval(request.script, &keys, &args)?;
        Reply::parse(&values)
    }

    /// Atomically, on the server: if `key` has room for one more hit now, records it.
    /// A refusal records nothing.
    ///
    /// # Errors
    /// [`Error::Timeout`], [`Error::Connection`], [`Error::Server`], [`Error::Reply`] when
    /// Redis gave no decision; [`Error::TickOutOfRange`] for a caller tick at or above 2^53.
    pub fn check_and_hit(&self, key: &str) -> Result<Decision, Error> {
        self.check_and_hit_n(key, 1)
    }

    /// [`Self::check_and_hit`] for `n` hits, all or nothing.
    ///
    /// # Errors
    /// As [`Self::check_and_hit`], and [`Error::Weight`] for `n = 0` or `n > max_requests`.
    pub fn check_and_hit_n(&self, key: &str, n: u64) -> Result<Decision, Error> {
        let reply = self.run(key, Op::Check, n)?;
        Ok(self.setup.decision(&reply))
    }

    /// Records a hit of `key` now, unconditionally.
    ///
    /// # Errors
    /// As [`Self::check_and_hit`].
    pub fn hit(&self, key: &str) -> Result<(), Error> {
        self.hit_n(key, 1)
    }

    /// Records `n` hits of `key` now, unconditionally and at once.
    ///
    /// # Errors
    /// As [`Self::check_and_hit_n`].
    pub fn hit_n(&self, key: &str, n: u64) -> Result<(), Error> {
        self.run(key, Op::Hit, n).map(|_| ())
    }

    /// Whether one more hit of `key` would be admitted now. Records nothing.
    ///
    /// # Errors
    /// As [`Self::check_and_hit`].
    pub fn allowed(&self, key: &str) -> Result<bool, Error> {
        self.allowed_n(key, 1)
    }

    /// Whether `n` more hits of `key` would be admitted now. Records nothing.
    ///
    /// # Errors
    /// As [`Self::check_and_hit_n`].
    pub fn allowed_n(&self, key: &str, n: u64) -> Result<bool, Error> {
        let reply = self.run(key, Op::Status, n)?;
        Ok(self.setup.allows(&reply, n))
    }

    /// What `key`'s window holds now: live count, remaining, retry-after (ticks until one
    /// more hit would fit). Records nothing and creates no key.
    ///
    /// # Errors
    /// As [`Self::check_and_hit`].
    pub fn status(&self, key: &str) -> Result<Status, Error> {
        self.window_statuses(key).map(|windows| windows.tightest())
    }

    /// What every window of `key`'s limit holds now, narrowest first (one for a
    /// single-window limit). Records nothing and creates no key.
    ///
    /// # Errors
    /// As [`Self::check_and_hit`].
    pub fn window_statuses(&self, key: &str) -> Result<WindowStatuses, Error> {
        self.run(key, Op::Status, 1)
            .map(|reply| reply.window_statuses(self.setup.limit))
    }

    /// [`Self::check_and_hit_n`] with the configured [`FailurePolicy`](crate::FailurePolicy) standing in when
    /// Redis fails: never an error for a backend failure, and never longer than the timeout.
    ///
    /// # Errors
    /// Only [`Error::Weight`] and [`Error::TickOutOfRange`]: the request itself is invalid.
    pub fn decide(&self, key: &str, n: u64) -> Result<Verdict, Error> {
        match self.check_and_hit_n(key, n) {
            Ok(decision) => Ok(Verdict::from_redis(decision.admitted)),
            Err(err) if err.is_backend_failure() => Ok(self.setup.fallback.decide(key, n, err)),
            Err(err) => Err(err),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Check,
    Hit,
    Status,
}

//! The slidelimit sliding-window limiters on Redis: one exact limit per key across many
//! processes and hosts, each decision one atomic server-side script, plus quota leasing that
//! decides locally and still never over-admits.
//!
//! This example needs a Redis server at `127.0.0.1:6379`, so the doc tests compile it but do
//! not run it (the crate's integration tests start a `redis-server` of their own).
//!
//! ```no_run
//! use slidelimit::Limit;
//! use slidelimit_redis::{FailurePolicy, LeasedLimiter, Options, RedisLimiter};
//!
//! // 100 requests per second per key (ticks are microseconds), shared by every process that
//! // uses this server and prefix. The server's TIME decides: no client clock is trusted.
//! let limit = Limit::new(100, 1_000_000)?;
//! let options = Options::new().prefix("api").failure(FailurePolicy::Local { max_requests: 25 });
//! let limiter = RedisLimiter::new("redis://127.0.0.1:6379/", limit, options.clone())?;
//! let decision = limiter.check_and_hit("user:42")?;
//! if !decision.admitted {
//!     println!("retry in {} µs", decision.status.retry_after_ticks);
//! }
//! // With the failure policy: never an error for a Redis failure, never past the timeout.
//! let verdict = limiter.decide("user:42", 1)?;
//! println!("{} (decided by {:?})", verdict.admitted, verdict.source);
//!
//! // Leases: 10 permits per round trip, each lease usable for 100 ms.
//! let leased = LeasedLimiter::new("redis://127.0.0.1:6379/", limit, options, 10, 100_000)?;
//! let _ = leased.check_and_hit("user:42")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Guarantees
//! - **Never over-admits, across all processes**: for every key and every window
//!   `(x - W, x]` of the deciding clock, at most `N` admitted hits ([`RedisLimiter`] with
//!   the exact log or the rolling buckets, and [`LeasedLimiter`]; the proofs are in the
//!   [`exact`], [`buckets`] and [`lease`] module docs). Weighted hits are all or nothing.
//! - **Decided, then recorded**: one script per call; a refusal writes nothing.
//! - **Exact**: with the server's clock (non-decreasing), the exact log's answers equal a
//!   full sorted log's. A call more than the lateness tolerance behind the key's newest call
//!   is refused (callers' clocks disagree; the server's only if it steps back).
//! - **Memory follows active keys**: every write sets `PEXPIRE` to the window plus the
//!   lateness and a slack; the exact log keeps at most `N` members (a lease log: those of
//!   one lease window plus the lateness), the buckets `B + L + 3` fields.
//! - **Failures are typed and bounded**: a timeout, a lost connection, a restart or a
//!   script error is an [`Error`] within the configured timeout; [`RedisLimiter::decide`]
//!   applies a [`FailurePolicy`] instead.
//! - Not covered: a Redis restart without persistence forgets every window (the next window
//!   may admit up to `N` more); a failover to a replica that missed the last writes forgets
//!   them. A call that times out may still have been recorded (safe, it wastes capacity).
//!
//! # Implementation
//! Ticks are microseconds. The exact log is a sorted set per key scored by tick, with
//! unique members (a per-key sequence number); the buckets are a hash of counters plus a running
//! total, with the core's [`RollingBuckets`](slidelimit::RollingBuckets) geometry. The
//! scripts (`src/scripts/*.lua`) are loaded once and called by SHA, loaded again on
//! `NOSCRIPT`. All keys of one limiter key share a cluster hash tag. Connections are
//! blocking, pooled, with socket timeouts set to each call's deadline; with the `tls`
//! feature, a `rediss://` URL runs them over rustls (the `Tls` options). With the `tokio`
//! feature, `AsyncRedisLimiter` (module `asynchronous`) runs the same scripts over one
//! multiplexed async connection (with `tls` too, over `redis`'s own rustls client for a
//! single server's `rediss://`).

#[cfg(feature = "tokio")]
pub mod asynchronous;
pub mod buckets;
#[cfg(feature = "tokio")]
pub mod decide;
mod error;
pub mod exact;
pub mod failure;
mod keys;
pub mod lease;
mod limiter;
pub mod metrics;
mod options;
mod pool;
mod reply;
mod scripts;
mod time;
mod tls;

#[cfg(feature = "tokio")]
pub use asynchronous::AsyncRedisLimiter;
pub use error::Error;
pub use failure::{FailurePolicy, Source, Verdict};
pub use lease::{LeaseDecision, LeasedLimiter};
pub use limiter::{Decision, RedisLimiter};
pub use options::Options;
pub use time::{TimeSource, UnixMicros};
#[cfg(feature = "tls")]
pub use tls::Tls;

/// The user guide (`docs/`), compiled and run as doc tests.
#[cfg(doctest)]
mod guide;

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

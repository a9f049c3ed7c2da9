//! Sliding-window rate limiters that never admit more than `max_requests` hits in any window,
//! with a lock-free core decided by CAS and lock-based siblings running the same algorithm.
//!
//! # Use cases
//!
//! **Limit requests per key** (an API key, a user, an IP): `check_and_hit` decides and records
//! in one atomic step; `status` says how long to wait. Keys may be asked by any borrowed form.
//!
//! ```
//! use slidelimit::{Limit, LockFreeLimiter};
//!
//! // 3 requests per 10 ticks (the caller picks the unit: here, seconds).
//! let limiter: LockFreeLimiter<String> = LockFreeLimiter::new(Limit::new(3, 10)?);
//! for now in [1, 2, 3] {
//!     assert!(limiter.check_and_hit("user-1", now));
//! }
//! assert!(!limiter.check_and_hit("user-1", 4), "three hits in (-6, 4]");
//! assert_eq!(limiter.status("user-1", 4).retry_after_ticks, 7, "the hit at 1 leaves at 11");
//! assert!(limiter.check_and_hit("user-2", 4), "keys are independent");
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! **Real time**: a [`MonotonicClock`] gives nanosecond ticks, and `Limit` takes real units.
//!
//! ```
//! use std::time::Duration;
//! use slidelimit::{Clock, Limit, LockFreeLimiter, MonotonicClock, RateLimiter};
//!
//! let limit = Limit::per_second(100, Duration::from_nanos(1))?;
//! let limiter: LockFreeLimiter<u64> = LockFreeLimiter::new(limit);
//! let clock = MonotonicClock::new();
//! assert!(limiter.check_and_hit_now(&42, &clock));
//! // A request stamped by its sender counts at most at our `now` (a fast clock gains nothing).
//! assert!(limiter.check_and_hit_stamped(&42, u64::MAX, &clock));
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! **Weighted usage in `O(B)` memory per key** (tokens per hours): the rolling buckets.
//!
//! ```
//! use slidelimit::{Limit, LockFreeLimiter, RollingBuckets};
//!
//! // 100,000 tokens per 5 hours (ticks in seconds), 60 buckets of 5 minutes.
//! let limiter = LockFreeLimiter::<u64, RollingBuckets>::bucketed(Limit::new(100_000, 18_000)?, 60)?;
//! assert_eq!(limiter.check_and_hit_n(&7, 1_000, 60_000), Ok(true));
//! assert_eq!(limiter.check_and_hit_n(&7, 1_060, 50_000), Ok(false), "all or nothing");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Limits that change at run time, and per-key limits** ([`LimitControl`]).
//!
//! ```
//! use slidelimit::{Limit, LimitControl, LockFreeLimiter};
//!
//! let limiter = LockFreeLimiter::<u64>::new(Limit::new(2, 10)?)
//!     .with_limit_resolver(|key| (*key >= 1_000).then(|| Limit::new(10, 10).unwrap()));
//! assert_eq!(limiter.limit_for(&1_000), Limit::new(10, 10)?);
//! limiter.set_limit(Limit::new(1, 10)?);
//! assert!(limiter.check_and_hit(&1, 0));
//! assert!(!limiter.check_and_hit(&1, 1), "the new default holds at once");
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! **State that survives a restart** ([`SavedState`], [`Snapshot`]).
//!
//! ```
//! use slidelimit::{Conversion, Limit, LockFreeLimiter, SavedState, Snapshot};
//!
//! let limit = Limit::new(1, 10)?;
//! let before: LockFreeLimiter<u64> = LockFreeLimiter::new(limit);
//! assert!(before.check_and_hit(&1, 5));
//! let json = before.snapshot(5).to_json()?;
//! let after: LockFreeLimiter<u64> = LockFreeLimiter::new(limit);
//! after.restore(&Snapshot::from_json(&json)?, 6, Conversion::Exact)?;
//! assert!(!after.check_and_hit(&1, 6));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Waiting instead of refusing** (feature `tokio`): `slidelimit::wait::AsyncLimiter` wraps
//! any limiter; `until_ready(&key).await` sleeps until the key has room, then takes it, with
//! waiters on one key served in arrival order and nothing recorded by a dropped future.
//!
//! **A pool of API keys**, each usable `X` times per cooldown ([`pool`]):
//!
//! ```
//! use slidelimit::{KeyPool, PoolMode};
//!
//! let pool: KeyPool<&str> = KeyPool::new(["a", "b"], 1, 60, PoolMode::Exact)?;
//! assert_eq!(pool.get_next_key(0), Some(&"a"));
//! assert_eq!(pool.get_next_key(1), Some(&"b"));
//! assert_eq!(pool.get_next_key(2), None, "both used within the cooldown");
//! # Ok::<(), slidelimit::PoolError>(())
//! ```
//!
//! **HTTP, many processes, the command line**: the workspace's `slidelimit-tower` crate is a
//! `tower` layer (axum, hyper) answering 429 with `Retry-After` and the `RateLimit` fields;
//! `slidelimit-redis` keeps one limit across processes in Redis; `slidelimit-cli` replays
//! traces and simulates workloads through any variant.
//!
//! **Another guard**: every variant implements [`RateLimiter`], so code written against the
//! trait takes the global-mutex, per-key-lock or `RwLock` limiter of the sibling crates
//! (`slidelimit-mutex`, `slidelimit-per-key-lock`, `slidelimit-rwlock`) unchanged; they run the
//! same algorithm, built from the implementor surface in [`raw`].
//!
//! # Guarantees
//! - **Safety**, for every variant, interleaving and timestamp order: no window `(x - W, x]`
//!   holds more than `max_requests` admitted `check_and_hit` calls per key.
//! - **Exactness**: with non-decreasing timestamps per key, every answer equals a full sorted
//!   log's. `hit` and `allowed` are exact in any order. An out-of-order `check_and_hit` is
//!   answered conservatively: a hit recorded with a later timestamp still counts.
//! - **Removal** never loses a concurrent hit and never makes an admission unsafe: a call below
//!   its key's removal watermark (see [`keyed`]) is refused, `hit` always records.
//! - **Limit changes and restores** keep the same guarantee across the change (see
//!   [`LimitControl::set_limit`] and [`snapshot`]).
//! - Timestamps are `u64` ticks; `u64::MAX` and `u64::MAX - 1` are treated as `u64::MAX - 2`.
//!   Nothing wraps.
//!
//! # Atomic orderings
//! No operation relies on `SeqCst`: every handshake is a read-modify-write on one word (a ring
//! slot, a bucket window's head word, a watermark). Each module with atomics states its
//! orderings and why.
//!
//! # Implementation
//! [`window`] holds the algorithms, each in a sequential and an atomic form; [`keyed`] holds
//! the key map policy (creation, idle removal, watermarks) and the two map shapes; the lock
//! crates (`slidelimit-mutex`, `slidelimit-per-key-lock`, `slidelimit-rwlock`) only choose a
//! guard. [`LockFreeLimiter`] is the atomic window in a papaya map, removed by sealing the
//! window's own words.

mod clock;
pub mod decide;
pub mod keyed;
mod limit;
mod limiter;
mod lockfree;
pub mod metrics;
pub mod pool;
pub mod raw;
pub mod snapshot;
mod sync;
#[cfg(feature = "tokio")]
pub mod wait;
pub mod window;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use decide::{Answer, Decide, Decision};
pub use keyed::limits::LimitResolver;
pub use keyed::Options;
pub use limit::{Limit, LimitError, MAX_REQUESTS, MAX_WINDOWS};
pub use limiter::{LimitControl, RateLimiter};
pub use lockfree::LockFreeLimiter;
pub use pool::{KeyPool, PoolError, PoolMode, PoolStatus, Refusal};
pub use snapshot::{Conversion, Restored, SavedState, Snapshot, SnapshotError};
#[cfg(feature = "tokio")]
pub use wait::{AsyncLimiter, TokioClock, WaitClock, WaitError};
pub use window::buckets::{BucketError, RollingBuckets};
pub use window::ring::ExactLog;
pub use window::{Status, WeightError, WindowStatuses};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The user guide (`docs/`), compiled and run as doc tests.
#[cfg(doctest)]
mod guide;

/// The crate's README (its crates.io page), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;

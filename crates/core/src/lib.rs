//! Sliding-window rate limiters that never admit more than `max_requests` hits in any window,
//! with a lock-free core decided by CAS and lock-based siblings running the same algorithm.
//!
//! ```
//! use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
//!
//! // 3 requests per 10 ticks (the caller picks the unit: here, seconds).
//! let limiter: LockFreeLimiter<&'static str> = LockFreeLimiter::new(Limit::new(3, 10)?);
//! limiter.hit(&"user_1", 1);
//! limiter.hit(&"user_1", 2);
//! assert!(limiter.allowed(&"user_1", 3));
//! limiter.hit(&"user_1", 3);
//! assert!(!limiter.allowed(&"user_1", 4));
//! assert!(limiter.allowed(&"user_1", 12), "window (2, 12] holds only the hit at 3");
//! assert!(limiter.allowed(&"user_2", 5), "a new key has no hits");
//!
//! // The atomic decision: check and record in one step.
//! assert!(limiter.check_and_hit(&"user_3", 20));
//! let status = limiter.status(&"user_3", 21);
//! assert_eq!((status.count, status.remaining), (1, 2));
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! # Guarantees
//! - **Safety**, for every variant, interleaving and timestamp order: no window `(x - W, x]`
//!   holds more than `max_requests` admitted `check_and_hit` calls per key.
//! - **Exactness**: with non-decreasing timestamps per key, every answer equals a full sorted
//!   log's. `hit` and `allowed` are exact in any order. An out-of-order `check_and_hit` is
//!   answered conservatively: a hit recorded with a later timestamp still counts.
//! - **Removal** never loses a concurrent hit and never makes an admission unsafe: a call below
//!   its key's removal watermark (see [`keyed`]) is refused, `hit` always records.
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
pub mod keyed;
mod limit;
mod limiter;
mod lockfree;
pub mod pool;
pub mod raw;
pub mod snapshot;
mod sync;
pub mod window;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use keyed::limits::LimitResolver;
pub use keyed::Options;
pub use limit::{Limit, LimitError, MAX_REQUESTS};
pub use limiter::{LimitControl, RateLimiter};
pub use lockfree::LockFreeLimiter;
pub use pool::{KeyPool, PoolError, PoolMode, PoolStatus, Refusal};
pub use snapshot::{Conversion, Restored, SavedState, Snapshot, SnapshotError};
pub use window::buckets::{BucketError, RollingBuckets};
pub use window::ring::ExactLog;
pub use window::{Status, WeightError};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

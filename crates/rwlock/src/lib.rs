//! slidelimit's `RwLock` variant: every key's window in one map behind one
//! `std::sync::RwLock`; `allowed` and `status` share the read lock, `hit`, `check_and_hit` and
//! removal take the write lock. It wins only on read-heavy mixes.
//!
//! ```
//! use slidelimit::{Limit, RateLimiter};
//! use slidelimit_rwlock::RwLockLimiter;
//! let limiter: RwLockLimiter<u64> = RwLockLimiter::new(Limit::new(2, 10)?);
//! limiter.hit(&1, 1);
//! assert!(limiter.allowed(&1, 2));
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! # Guarantees
//! The core's (see `slidelimit`); this crate only chooses the guard. `allowed` never writes
//! (the core's windows decide it from loads alone), which is what makes the read lock enough.

use std::sync::{PoisonError, RwLock};

use slidelimit::raw::{KeyTable, MapGuardedLimiter, TableLock};
use slidelimit::ExactLog;

/// The `RwLock` limiter; `RwLockLimiter::new(limit)` gives the exact log.
pub type RwLockLimiter<K, W = ExactLog> = MapGuardedLimiter<K, W, GlobalRwLock<KeyTable<K, W>>>;

/// One `RwLock` around all state.
pub struct GlobalRwLock<T>(RwLock<T>);

impl<T: Send + Sync> TableLock<T> for GlobalRwLock<T> {
    const NAME: &'static str = "rwlock";

    fn new(state: T) -> Self {
        Self(RwLock::new(state))
    }

    fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.write().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

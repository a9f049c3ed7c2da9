//! slidelimit's global-`Mutex` variant: every key's window in one map behind one
//! `std::sync::Mutex`. Simple and exact; every call serialises on the one lock.
//!
//! ```
//! use slidelimit::{Limit, RateLimiter};
//! use slidelimit_mutex::MutexLimiter;
//! let limiter: MutexLimiter<u64> = MutexLimiter::new(Limit::new(1, 10)?);
//! assert!(limiter.check_and_hit(&1, 5));
//! assert!(!limiter.check_and_hit(&1, 14));
//! assert!(limiter.check_and_hit(&1, 15));
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! # Guarantees
//! The core's (see `slidelimit`): the algorithm is the core's sequential window; this crate
//! only chooses the guard. A panic while the lock is held (only possible from a key's own
//! `Hash`/`Eq`) leaves the map consistent, so a poisoned lock is entered anyway.

use std::sync::{Mutex, MutexGuard, PoisonError};

use slidelimit::pool::{KeyPool, LockedLedger, SequentialLedger};
use slidelimit::raw::{KeyTable, MapGuardedLimiter, TableLock};
use slidelimit::ExactLog;

/// The global-`Mutex` limiter; `MutexLimiter::new(limit)` gives the exact log.
pub type MutexLimiter<K, W = ExactLog> = MapGuardedLimiter<K, W, GlobalMutex<KeyTable<K, W>>>;

/// The key pool of `slidelimit::pool` with its ledger behind one `Mutex`: the same algorithm
/// as the lock-free `KeyPool`, one call at a time.
pub type MutexKeyPool<N> = KeyPool<N, LockedLedger<GlobalMutex<SequentialLedger>>>;

/// One `Mutex` around all state: reads and writes alike take it.
pub struct GlobalMutex<T>(Mutex<T>);

impl<T> GlobalMutex<T> {
    #[inline]
    fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Send> TableLock<T> for GlobalMutex<T> {
    const NAME: &'static str = "mutex";

    fn new(state: T) -> Self {
        Self(Mutex::new(state))
    }

    #[inline]
    fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.lock())
    }

    #[inline]
    fn write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }
}

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

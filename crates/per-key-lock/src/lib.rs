//! slidelimit's per-key-lock variant: a concurrent map of per-key `std::sync::Mutex`es, each
//! around the core's sequential window. Keys never contend with each other; calls on one key
//! serialise on its mutex.
//!
//! ```
//! use slidelimit::{Limit, RateLimiter};
//! use slidelimit_per_key_lock::PerKeyLockLimiter;
//! let limiter: PerKeyLockLimiter<u64> = PerKeyLockLimiter::new(Limit::new(1, 10)?);
//! assert!(limiter.check_and_hit(&1, 5));
//! assert!(limiter.check_and_hit(&2, 5), "keys are independent");
//! assert!(!limiter.check_and_hit(&1, 6));
//! # Ok::<(), slidelimit::LimitError>(())
//! ```
//!
//! # Guarantees
//! The core's (see `slidelimit`); this crate only chooses the guard. Removal uses the mutex as
//! the gate: a sweeper marks an idle entry retired under its lock, and a caller that locks a
//! retired entry looks the key up again, so no hit is written into an unlinked entry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use slidelimit::raw::{
    Algorithm, EntryGuardedLimiter, EntryWatermark, GuardedEntry, Retired, SequentialWindow,
};
use slidelimit::window::WindowState;
use slidelimit::{ExactLog, Limit, Status, WindowStatuses};

/// The per-key-lock limiter; `PerKeyLockLimiter::new(limit)` gives the exact log.
pub type PerKeyLockLimiter<K, W = ExactLog> = EntryGuardedLimiter<K, KeyMutex<W>>;

/// One key's sequential window behind its own mutex.
pub struct KeyMutex<W: Algorithm> {
    watermark: EntryWatermark,
    /// The limits version this entry's limit is current for.
    limits_version: AtomicU64,
    slot: Mutex<Slot<W::Sequential>>,
}

struct Slot<S> {
    window: S,
    retired: bool,
}

// An entry lives in papaya's node behind its 8-byte key: at 112 bytes the node is a 128-byte
// block, the largest glibc keeps on its per-arena fast lists, which a free from another thread
// reaches without the arena's lock. At 128 (the ring's 96 bytes before its counts went to 32
// bits) every free the thread cache could not take locked the arena and went through its
// bins: side by side, two threads on churn ran 1.42× faster and their p99.9 fell from 71-90
// to 25-31 µs once the entry shrank (`results/lifecycle.md`).
const _: () = assert!(std::mem::size_of::<KeyMutex<ExactLog>>() <= 112);
const _: () = assert!(std::mem::size_of::<KeyMutex<slidelimit::RollingBuckets>>() <= 112);

impl<W: Algorithm> KeyMutex<W> {
    /// Runs `f` on the window under the lock, unless a sweeper retired it.
    fn locked<R>(&self, f: impl FnOnce(&mut W::Sequential) -> R) -> Result<R, Retired> {
        // The window is plain integers updated in place by code that cannot panic midway,
        // so a poisoned lock still guards a consistent window.
        let mut slot: MutexGuard<'_, Slot<W::Sequential>> =
            self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.retired {
            return Err(Retired);
        }
        Ok(f(&mut slot.window))
    }
}

impl<W: Algorithm> GuardedEntry for KeyMutex<W> {
    type Algorithm = W;
    const NAME: &'static str = "per-key-lock";
    // A key's state under its lock is sized by use without a replacement: it never grows.
    type Outgrown = ();

    fn new(window: &W, limits_version: u64, now: u64) -> Self {
        Self {
            watermark: EntryWatermark::unresolved(),
            limits_version: AtomicU64::new(limits_version),
            slot: Mutex::new(Slot {
                window: window.new_sequential_at(now),
                retired: false,
            }),
        }
    }

    fn from_state(window: &W, state: &WindowState, limits_version: u64, watermark: u64) -> Self {
        Self {
            watermark: EntryWatermark::resolved(watermark),
            limits_version: AtomicU64::new(limits_version),
            slot: Mutex::new(Slot {
                window: window.sequential_from(state),
                retired: false,
            }),
        }
    }

    fn limits_version(&self) -> u64 {
        // Relaxed: compared with the limiter's version (loaded Acquire); the entry's limit
        // is fixed at construction and published with the entry by the map.
        self.limits_version.load(Ordering::Relaxed)
    }

    fn confirm_limits_version(&self, version: u64) {
        // Relaxed: see limits_version; fetch_max keeps the newest confirmation.
        self.limits_version.fetch_max(version, Ordering::Relaxed);
    }

    fn limit(&self) -> Limit {
        // The limit never changes while the entry lives, retired or not.
        let slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.window.limit()
    }

    fn export(&self) -> Result<WindowState, Retired> {
        self.locked(|window| window.export())
    }

    fn retire_for_swap(&self) -> Option<WindowState> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.retired {
            return None;
        }
        slot.retired = true;
        Some(slot.window.export())
    }

    fn watermark(&self) -> &EntryWatermark {
        &self.watermark
    }

    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        self.locked(|window| window.hit_n(now, n))
    }

    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        self.locked(|window| window.check_and_hit_n(now, n))
    }

    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        self.locked(|window| window.allowed_n(now, n))
    }

    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired> {
        self.locked(|window| window.status_n(now, n))
    }

    fn window_statuses(&self, now: u64, n: u64) -> Result<WindowStatuses, Retired> {
        self.locked(|window| window.window_statuses(now, n))
    }

    fn retire_if_idle(&self, horizon: u64) -> Option<u64> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.retired || !slot.window.is_idle_by(horizon) {
            return None;
        }
        slot.retired = true;
        Some(slot.window.idle_from())
    }

    fn idle_from_hint(&self) -> u64 {
        let slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.window.idle_from()
    }

    // One lock and one reading of the window for the sweep's look, retired or not (the
    // default takes the lock twice for a key it leaves): `is_idle_by(h)` is
    // `idle_from() <= h` by its contract, and the look needs `idle_from` either way.
    #[inline]
    fn retire_or_hint(&self, horizon: u64) -> Result<u64, u64> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let idle_from = slot.window.idle_from();
        if slot.retired || idle_from > horizon {
            return Err(idle_from);
        }
        slot.retired = true;
        Ok(idle_from)
    }
}

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

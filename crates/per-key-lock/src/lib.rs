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

use std::sync::{Mutex, MutexGuard, PoisonError};

use slidelimit::{
    ConcurrentKeys, EntryWatermark, ExactLog, KeyEntry, SequentialWindow, Status, Window,
    WindowAccess,
};

/// The per-key-lock limiter; `PerKeyLockLimiter::new(limit)` gives the exact log.
pub type PerKeyLockLimiter<K, W = ExactLog> = ConcurrentKeys<K, KeyMutex<W>>;

/// One key's sequential window behind its own mutex.
pub struct KeyMutex<W: Window> {
    watermark: EntryWatermark,
    slot: Mutex<Slot<W::Sequential>>,
}

struct Slot<S> {
    window: S,
    retired: bool,
}

/// A locked, live [`KeyMutex`].
pub struct LockedWindow<'a, W: Window> {
    guard: MutexGuard<'a, Slot<W::Sequential>>,
}

impl<W: Window> KeyMutex<W> {
    fn lock(&self) -> MutexGuard<'_, Slot<W::Sequential>> {
        // The window is plain integers updated in place by code that cannot panic midway,
        // so a poisoned lock still guards a consistent window.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<W: Window> WindowAccess for LockedWindow<'_, W> {
    fn hit_n(&mut self, now: u64, n: u64) {
        self.guard.window.hit_n(now, n);
    }
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        self.guard.window.check_and_hit_n(now, n)
    }
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        self.guard.window.allowed_n(now, n)
    }
    fn status(&self, now: u64) -> Status {
        self.guard.window.status(now)
    }
}

impl<W: Window> KeyEntry for KeyMutex<W> {
    type Window = W;
    type Access<'a> = LockedWindow<'a, W>;
    const NAME: &'static str = "per-key-lock";

    fn new(window: &W) -> Self {
        Self {
            watermark: EntryWatermark::unresolved(),
            slot: Mutex::new(Slot {
                window: window.new_sequential(),
                retired: false,
            }),
        }
    }

    fn watermark(&self) -> &EntryWatermark {
        &self.watermark
    }

    fn enter(&self) -> Option<LockedWindow<'_, W>> {
        let guard = self.lock();
        (!guard.retired).then_some(LockedWindow { guard })
    }

    fn retire_if_fresh(&self, horizon: u64) -> Option<u64> {
        let mut slot = self.lock();
        if slot.retired || !slot.window.is_fresh_by(horizon) {
            return None;
        }
        slot.retired = true;
        Some(slot.window.fresh_from())
    }
}

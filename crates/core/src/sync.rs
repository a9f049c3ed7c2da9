//! The one place the core takes its synchronisation primitives from: `loom`'s under
//! `cfg(slidelimit_loom)`, `std`'s otherwise, so the loom models check the real code.

#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::{Arc, Mutex, RwLock};

#[cfg(not(slidelimit_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(slidelimit_loom))]
pub(crate) use std::sync::Mutex;

/// Called on every retry of a CAS loop and every bounce off a retired entry.
///
/// Under loom this yields, so the model can schedule the thread that makes progress
/// (loom rejects spin loops that never yield); natively it is a spin-loop hint. The ring and
/// the buckets keep this single hint rather than a [`Backoff`]: a ring admission that loses a
/// slot moves on to the next slot instead of retrying the word, and with a backoff on both
/// windows' lost CASes one hot key at 2–8 threads measured the same (8 interleaved rounds of
/// 1 s: 42.0 vs 42.0 ns per decision at 2 threads, 44.5 vs 44.6 at 4) for 4.5 more
/// instructions per admission.
#[inline]
pub(crate) fn retry_hint() {
    #[cfg(slidelimit_loom)]
    loom::thread::yield_now();
    #[cfg(not(slidelimit_loom))]
    std::hint::spin_loop();
}

/// Exponential backoff for a CAS that lost to another thread: `crossbeam_utils::Backoff`,
/// whose `spin` after the `n`th loss spins `2^min(n, 6)` hints, so the winner can run a few
/// calls while its cache lines stay put, instead of every thread re-reading and re-raising
/// them at once. Under loom it yields, like [`retry_hint`].
pub(crate) struct Backoff {
    #[cfg(not(slidelimit_loom))]
    spins: crossbeam_utils::Backoff,
}

impl Backoff {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(not(slidelimit_loom))]
            spins: crossbeam_utils::Backoff::new(),
        }
    }

    /// Called after each lost CAS of one call.
    #[inline]
    pub(crate) fn lost(&mut self) {
        #[cfg(slidelimit_loom)]
        loom::thread::yield_now();
        #[cfg(not(slidelimit_loom))]
        self.spins.spin();
    }
}

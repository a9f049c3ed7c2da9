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
/// (loom rejects spin loops that never yield); natively it is a spin-loop hint.
#[inline]
pub(crate) fn retry_hint() {
    #[cfg(slidelimit_loom)]
    loom::thread::yield_now();
    #[cfg(not(slidelimit_loom))]
    std::hint::spin_loop();
}

/// Exponential backoff for a CAS loop that lost to another thread: after the `n`th loss it
/// spins `2^min(n, 6)` hints, so the winner can run a few calls while its cache lines stay
/// put, instead of every thread re-reading and re-raising them at once. Under loom it yields.
pub(crate) struct Backoff(u32);

impl Backoff {
    pub(crate) fn new() -> Self {
        Self(0)
    }

    pub(crate) fn lost(&mut self) {
        #[cfg(slidelimit_loom)]
        loom::thread::yield_now();
        #[cfg(not(slidelimit_loom))]
        for _ in 0..1u32 << self.0.min(6) {
            std::hint::spin_loop();
        }
        self.0 += 1;
    }
}

//! The one place the core takes its synchronisation primitives from: `loom`'s under
//! `cfg(slidelimit_loom)`, `std`'s otherwise, so the loom models check the real code.

#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::{Arc, RwLock};

#[cfg(not(slidelimit_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

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

//! The one place the core takes its synchronisation primitives from: `loom`'s under
//! `cfg(slidelimit_loom)`, `std`'s otherwise, so the loom models check the real code.

#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(slidelimit_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard, RwLock};

#[cfg(not(slidelimit_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(slidelimit_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// A 128-bit atomic: `portable_atomic`'s natively (`cmpxchg16b` on x86_64, detected at run
/// time; 128-bit exclusives on AArch64). Loom has none, so under loom it is a word behind a
/// loom `Mutex`: every load and CAS is then one step the model schedules, and the model checks
/// interleavings of whole operations, not weaker orderings of this one word (`cmpxchg16b` is
/// a full barrier on x86_64 anyway).
#[cfg(not(slidelimit_loom))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(slidelimit_loom)]
pub(crate) use loom_u128::AtomicU128;

#[cfg(slidelimit_loom)]
mod loom_u128 {
    //! `AtomicU128` for the loom models (see the re-export above).

    use super::{Mutex, Ordering};

    /// A 128-bit word behind a loom mutex, with the atomic operations the core uses.
    #[derive(Debug, Default)]
    pub(crate) struct AtomicU128(Mutex<u128>);

    impl AtomicU128 {
        pub(crate) fn new(value: u128) -> Self {
            Self(Mutex::new(value))
        }

        pub(crate) fn load(&self, _order: Ordering) -> u128 {
            *self.0.lock().expect("a loom model does not poison")
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            _success: Ordering,
            _failure: Ordering,
        ) -> Result<u128, u128> {
            let mut word = self.0.lock().expect("a loom model does not poison");
            if *word == current {
                *word = new;
                Ok(current)
            } else {
                Err(*word)
            }
        }
    }
}

/// Called on every retry of a CAS loop and every bounce off a retired entry.
///
/// Under loom this yields, so the model can schedule the thread that makes progress
/// (loom rejects spin loops that never yield); natively it is a spin-loop hint. The ring and
/// the buckets keep this single hint rather than a [`Backoff`]: a ring admission that loses a
/// slot moves on to the next slot instead of retrying the word, and with a per-call
/// exponential backoff on both windows' lost CASes one hot key at 2–8 threads measured the
/// same (8 interleaved rounds of 1 s: 42.0 vs 42.0 ns per decision at 2 threads, 44.5 vs 44.6
/// at 4) for 4.5 more instructions per admission. (The key pool's adaptive backoff was not
/// measured on them.)
#[inline]
pub(crate) fn retry_hint() {
    #[cfg(slidelimit_loom)]
    loom::thread::yield_now();
    #[cfg(not(slidelimit_loom))]
    std::hint::spin_loop();
}

/// Backoff for a CAS that lost to another thread, adaptive across calls: each thread keeps a
/// contention level (0 to [`MAX_BACKOFF_LEVEL`]); a lost CAS raises it by one and spins `2^level`
/// hints, a call that wins without losing lowers it by one. Under sustained contention the
/// losers then wait long enough for the winner to run several calls in a row while its cache
/// lines stay put, instead of every thread re-reading and re-raising them at once; without
/// contention the level decays to 0 and costs nothing. The level is the thread's, shared by
/// every pool it calls (contention is mostly a property of the thread's placement and load).
/// Under loom it yields, like [`retry_hint`].
pub(crate) struct Backoff {
    /// Whether this call lost a CAS.
    #[cfg(not(slidelimit_loom))]
    lost: bool,
}

/// The highest contention level: at most `2^10` spin hints after one lost CAS. Measured on the
/// key pool's exact cells (before the pool's line-traffic changes, `results/pool-contention.md`):
/// caps of 8, 10, 12 and 14 were alike at 2 and 4 threads.
#[cfg(not(slidelimit_loom))]
const MAX_BACKOFF_LEVEL: u32 = 10;

#[cfg(not(slidelimit_loom))]
thread_local! {
    /// This thread's contention level (see [`Backoff`]).
    static CONTENTION_LEVEL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl Backoff {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(not(slidelimit_loom))]
            lost: false,
        }
    }

    /// Called after each lost CAS of one call.
    #[inline]
    pub(crate) fn lost(&mut self) {
        #[cfg(slidelimit_loom)]
        loom::thread::yield_now();
        #[cfg(not(slidelimit_loom))]
        {
            self.lost = true;
            let level = CONTENTION_LEVEL.with(|level| {
                let raised = (level.get() + 1).min(MAX_BACKOFF_LEVEL);
                level.set(raised);
                raised
            });
            for _ in 0..1u32 << level {
                std::hint::spin_loop();
            }
        }
    }

    /// Called when the call's CAS won.
    #[inline]
    pub(crate) fn won(&self) {
        #[cfg(not(slidelimit_loom))]
        if !self.lost {
            CONTENTION_LEVEL.with(|level| level.set(level.get().saturating_sub(1)));
        }
    }
}

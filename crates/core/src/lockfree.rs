//! The lock-free limiter: atomic windows in a lock-free map, each behind a [`Gate`].
//!
//! The hot path for an existing key is one map lookup (no lock), a read of the entry's own
//! watermark and of the window's refusal hint, the gate's pin and unpin, and the window's
//! own fast path (for the exact log, in order: one slot load and one CAS). A saturated key is
//! refused from the hint without pinning: its refusals are loads only, so many threads
//! hammering one refused key share its cache line instead of bouncing it. No allocation, no
//! lock, no `SeqCst`.

use crate::keyed::concurrent::{ConcurrentKeys, KeyEntry, WindowAccess};
use crate::keyed::gate::Gate;
use crate::keyed::EntryWatermark;
use crate::window::{ring::ExactLog, AtomicWindow, Status, Window};

/// The lock-free keyed limiter. `LockFreeLimiter::new(limit)` gives the exact sliding log.
///
/// ```
/// use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
/// let limiter: LockFreeLimiter<u64> = LockFreeLimiter::new(Limit::new(2, 10)?);
/// assert!(limiter.check_and_hit(&7, 100));
/// assert!(limiter.check_and_hit(&7, 101));
/// assert!(!limiter.check_and_hit(&7, 105), "two hits in (95, 105] already");
/// assert!(limiter.check_and_hit(&7, 110), "the hit at 100 left the window (100, 110]");
/// # Ok::<(), slidelimit::LimitError>(())
/// ```
pub type LockFreeLimiter<K, W = ExactLog> = ConcurrentKeys<K, AtomicEntry<W>>;

/// One key's atomic window and its gate, on cache lines of its own.
#[repr(align(64))]
pub struct AtomicEntry<W: Window> {
    gate: Gate,
    watermark: EntryWatermark,
    window: W::Atomic,
}

impl<W: Window> AtomicEntry<W> {
    /// The entry's gate, for quiescent checks in tests and models.
    #[must_use]
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The entry's window, for quiescent checks in tests and models.
    #[must_use]
    pub fn window(&self) -> &W::Atomic {
        &self.window
    }
}

// The exact log's entry is one cache line: gate, watermark and the ring's header. (Not under
// loom, whose atomics are larger.)
#[cfg(not(slidelimit_loom))]
const _: () = assert!(std::mem::size_of::<AtomicEntry<ExactLog>>() == 64);

/// An [`AtomicEntry`] pinned by its gate; unpins on drop.
pub struct PinnedWindow<'a, W: Window> {
    entry: &'a AtomicEntry<W>,
}

impl<W: Window> Drop for PinnedWindow<'_, W> {
    #[inline]
    fn drop(&mut self) {
        self.entry.gate.unpin();
    }
}

impl<W: Window> WindowAccess for PinnedWindow<'_, W> {
    #[inline]
    fn hit_n(&mut self, now: u64, n: u64) {
        self.entry.window.hit_n(now, n);
    }
    #[inline]
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        self.entry.window.check_and_hit_n(now, n)
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        self.entry.window.allowed_n(now, n)
    }
    fn status(&self, now: u64) -> Status {
        self.entry.window.status(now)
    }
}

impl<W: Window> KeyEntry for AtomicEntry<W> {
    type Window = W;
    type Access<'a> = PinnedWindow<'a, W>;
    const NAME: &'static str = "lock-free";

    fn new(window: &W) -> Self {
        Self {
            gate: Gate::new(),
            watermark: EntryWatermark::unresolved(),
            window: window.new_atomic(),
        }
    }

    #[inline]
    fn watermark(&self) -> &EntryWatermark {
        &self.watermark
    }

    #[inline]
    fn enter(&self) -> Option<PinnedWindow<'_, W>> {
        // The guard unpins on drop, so it must exist only if the pin succeeded: building it
        // eagerly (`then_some`) and dropping it after a bounce unpinned twice, clearing
        // RETIRED under the sweeper (the keyed loom model M1 found this).
        if self.gate.pin() {
            Some(PinnedWindow { entry: self })
        } else {
            None
        }
    }

    #[inline]
    fn refuses_unguarded(&self, now: u64, n: u64) -> bool {
        self.window.refuses_at_a_glance(now, n)
    }

    fn retire_if_fresh(&self, horizon: u64) -> Option<u64> {
        // A cheap look first: most live entries are skipped without touching the gate.
        if !self.window.is_fresh_by(horizon) || !self.gate.try_retire() {
            return None;
        }
        // Retired: nobody is pinned and nobody can pin, so this re-check is final. A hit
        // that completed between the look above and the retire shows up here.
        let fresh_from = self.window.fresh_from();
        if fresh_from > horizon {
            self.gate.unretire();
            return None;
        }
        Some(fresh_from)
    }
}

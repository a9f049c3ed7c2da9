//! The lock-free limiter: atomic windows in a lock-free map, removed by sealing.
//!
//! The hot path for an existing key: one papaya lookup (its guard is a thread-local
//! reservation: a `SeqCst` store on entry, a plain one with the feature `fast-barrier`, and a
//! swap on exit, all on the thread's own word), then, in the entry the lookup returned (stored
//! in papaya's node beside the key), the entry's removal watermark and the window's own fast
//! path. For the exact log in order, an admission is the `blocked_until` load, the slot loads
//! from the cursor's line to the oldest slot, and one CAS (the cursor is stored once per line
//! of 8 slots); a refusal of a saturated key is the `blocked_until` load alone. Beyond the
//! guard, no lock and no `SeqCst`: a sweeper removes an entry by
//! sealing its window's own words with CAS (see [`crate::window::ring`] and
//! [`crate::window::buckets`]), so the writer's own CAS is the handshake.
//!
//! A new key's exact log starts inline: its one hit in the ring's header, no slots allocated
//! (most keys under churn are hit once). The call that needs a second slot replaces the entry
//! by its allocated form through the same seal (see `window/ring/atomic/inline.rs`); the hot
//! path of an allocated key pays one branch for it.

use crate::keyed::concurrent::{EntryGuardedLimiter, GuardedEntry};
use crate::keyed::EntryWatermark;
use crate::limit::Limit;
use crate::sync::{AtomicU64, Ordering};
use crate::window::ring::ExactLog;
use crate::window::state::WindowState;
use crate::window::{Algorithm, AtomicWindow, Retired, Status, WindowStatuses};

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
pub type LockFreeLimiter<K, W = ExactLog> = EntryGuardedLimiter<K, LockFreeEntry<W>>;

/// One key's atomic window and its removal watermark, stored in the key map's node beside
/// the key (no padding: the key, the watermark and the window's header share a line).
pub struct LockFreeEntry<W: Algorithm> {
    watermark: EntryWatermark,
    /// The limits version this entry's limit is current for (see [`crate::keyed::limits`]).
    limits_version: AtomicU64,
    window: W::Atomic,
}

impl<W: Algorithm> LockFreeEntry<W> {
    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// The entry's window, for quiescent checks in tests and models.
    #[must_use]
    pub fn window(&self) -> &W::Atomic {
        &self.window
    }
}

// The exact log's entry: watermark 8, limits version 8, slots (pointer and length) 16,
// window length 8, blocked_until 8, cursor 4, re-sort generation 4. (Release builds only:
// debug builds count lost races per ring, and loom's atomics are larger.)
#[cfg(not(any(slidelimit_loom, debug_assertions)))]
const _: () = assert!(std::mem::size_of::<LockFreeEntry<ExactLog>>() == 56);

impl<W: Algorithm> GuardedEntry for LockFreeEntry<W> {
    type Algorithm = W;
    const NAME: &'static str = "lock-free";
    type Outgrown = <W::Atomic as AtomicWindow>::Outgrown;

    fn new(window: &W, limits_version: u64, now: u64) -> Self {
        Self {
            watermark: EntryWatermark::unresolved(),
            limits_version: AtomicU64::new(limits_version),
            window: window.new_atomic_at(now),
        }
    }

    fn from_state(window: &W, state: &WindowState, limits_version: u64, watermark: u64) -> Self {
        Self {
            watermark: EntryWatermark::resolved(watermark),
            limits_version: AtomicU64::new(limits_version),
            window: window.atomic_from(state),
        }
    }

    #[inline]
    fn limits_version(&self) -> u64 {
        // Relaxed: compared with the limiter's version, which the caller loaded with
        // Acquire; the entry's limit is fixed at construction and published with the entry
        // by the map.
        self.limits_version.load(Ordering::Relaxed)
    }

    fn confirm_limits_version(&self, version: u64) {
        // Relaxed: see limits_version; fetch_max keeps the newest confirmation.
        self.limits_version.fetch_max(version, Ordering::Relaxed);
    }

    fn limit(&self) -> Limit {
        self.window.limit()
    }

    fn export(&self) -> Result<WindowState, Retired> {
        self.window.export()
    }

    fn retire_for_swap(&self) -> Option<WindowState> {
        self.window.seal_for_swap()
    }

    #[inline]
    fn watermark(&self) -> &EntryWatermark {
        &self.watermark
    }

    #[inline]
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        self.window.hit_n(now, n)
    }

    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        self.window.check_and_hit_n(now, n)
    }

    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        self.window.allowed_n(now, n)
    }

    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired> {
        self.window.status_n(now, n)
    }

    fn window_statuses(&self, now: u64, n: u64) -> Result<WindowStatuses, Retired> {
        self.window.window_statuses(now, n)
    }

    fn retire_if_idle(&self, horizon: u64) -> Option<u64> {
        self.window.try_seal(horizon)
    }

    fn idle_from_hint(&self) -> u64 {
        self.window.fresh_from_hint()
    }

    fn needs_slots(&self) -> bool {
        self.window.needs_slots()
    }

    fn seal_for_growth(&self) -> Option<Self::Outgrown> {
        self.window.seal_for_growth()
    }

    fn grown(&self, outgrown: Self::Outgrown, watermark: u64) -> Option<Self> {
        Some(Self {
            watermark: EntryWatermark::resolved(watermark),
            limits_version: AtomicU64::new(self.limits_version()),
            window: self.window.grown(outgrown)?,
        })
    }
}

//! The exact sliding log: a ring of `max_requests` timestamp slots, one algorithm over two
//! storages (plain integers under a lock, atomics decided by CAS).
//!
//! # Algorithm
//! Slot values encode a tick `s` as `s + 1`; 0 is an empty slot and `u64::MAX` a sealed one
//! (below). A slot is *expired* for a caller at `now` when it is empty or `s + W <= now`.
//! - `check_and_hit(now)` first refuses below `blocked_until` (a load); else it admits only by
//!   replacing an expired slot with `now` (a CAS in the atomic form), probing from the cursor,
//!   which in time order points at the oldest slot's line (it moves a line of slots at a
//!   time). A CAS loser goes on probing with the value it found, so it moves to the next slot
//!   instead of retrying the one just taken. When every slot is seen live it refuses, and
//!   raises `blocked_until` to `min(s) + W`.
//! - `hit(now)` replaces the minimum slot if it is older than `now`, so the ring always holds
//!   the `max_requests` newest hits (a hit older than all of them can never change an answer
//!   under this limit). A live hit it replaces, or a hit older than all of them, is counted
//!   as *carried* (`Carried`), so that a raised limit or a longer window counts it again.
//! - `allowed(now)` is the probe without the write.
//!
//! # Sealing (the atomic form only)
//! A sweeper removes a ring by sealing it: it CASes every slot, in index order, from a value
//! it judged expired for its horizon to `SEALED`, remembering the values. Every write to a
//! slot is a CAS from an unsealed value, so a writer's CAS either comes before the seal of its
//! slot in that slot's modification order (and the sweeper's seal CAS sees the new value: if
//! it is live for the horizon the sweeper restores every slot it sealed and keeps the ring;
//! if not, the hit is in the value the sweeper turns into the key's removal watermark) or
//! after it (and fails). A caller that reads `SEALED` stops and looks the key up again (unless
//! a re-sort, below, holds the seal: then it waits and starts again). So no hit is ever lost
//! to a removal, with no extra read-modify-write on the hot path: the seal
//! is a handshake on each slot word itself.
//!
//! # Keeping the ring in time order
//! All of the fast paths above assume that ring order is time order: the ring, read from its
//! oldest slot around, holds ascending values ("rotation-sorted"). In-order admissions keep it
//! so (each writes the newest value over the oldest). A late write (an old timestamp, or a
//! thread that read its clock, then lost a race) puts an old value where the newest belongs,
//! and at the limit rate that permutation would persist for ever: each call finds its expired
//! slot somewhere else and scans O(N) for it. So the algorithm counts the *displacement* of
//! admissions (the slots an admitting probe passed beyond the cursor's line) and, once it
//! reaches `RESORT_DISPLACEMENT × N` since the last re-sort, **re-sorts** the ring: every value
//! in ascending order from slot 0, the cursor at 0. Every form does this at the same calls
//! of a single-threaded trace (the count is a function of the trace), so they keep taking the
//! same slots. The atomic form re-sorts under a seal of every slot (`atomic/resort.rs`).
//!
//! # Cost of each operation (N = `max_requests`)
//! | operation | in order (every form) | after disorder |
//! |---|---|---|
//! | `check_and_hit`, admitting | 1 probe (a few within the cursor's line) | the probe distance to the first expired slot, until the next re-sort |
//! | `check_and_hit`, refusing below `blocked_until` | 1 load | 1 load |
//! | `check_and_hit`, refusing otherwise | locked: 1-2 probes; lock-free: N + 8 probes (the cursor's line, then every slot), at most once per admission (below) | O(N) |
//! | `hit` | locked: 2 probes; lock-free: O(N) | O(N) |
//! | `allowed` | locked: 1 probe; lock-free: up to O(N) | up to O(N) |
//! | `status` | locked: O(log N) probes (binary search); lock-free: O(N) | O(N) |
//! | re-sort | never | O(N log N), at most once per `RESORT_DISPLACEMENT × N` slots of displacement |
//!
//! The locked forms know at every moment whether their ring is rotation-sorted and from where
//! (`RingCells::known_order`): they see every write, and keep an exact count of the
//! descents around the ring (a write changes two neighbour pairs, so O(1) per write; sorted
//! means at most one descent, the oldest slot is the one after it). The lock-free form cannot
//! know it without a read-modify-write per call (its writers race), so its refusals past
//! `blocked_until`, `hit` and `status` read every slot. **Remaining O(N) operations and how often they run:**
//! - lock-free refusal at a tick past `blocked_until`: one per admission at most (each full
//!   scan raises `blocked_until` to the oldest hit + W, and only an admission that replaces
//!   that hit can make the next call scan again);
//! - lock-free `hit` and `status`: every call (they are not on the admission path);
//! - a re-sort: O(N log N), run only by an admission that brings the displacement counted
//!   since the last re-sort to `RESORT_DISPLACEMENT × N`; so the re-sorts cost at most
//!   O(log N / RESORT_DISPLACEMENT) per slot that slow admissions had already probed, and after
//!   a late phase the displacement it left costs at most `RESORT_DISPLACEMENT × N + N` probes
//!   in all before the in-order fast path is back;
//! - locked refusal, `hit`, `status` while the ring is out of order: O(N) each, until in-order
//!   writes have replaced the values out of place (at most a window's worth of writes) or
//!   the next re-sort, whichever comes first;
//! - `allowed` on the lock-free form: a scan up to the first expired slot, in index order.
//!
//! # Guarantees
//! Slot values only grow while a ring is live, except in a re-sort (a restore puts back the
//! very value a seal took), and an admission replaces a value at least `W` older, so two
//! admissions in one slot are at least `W` apart: by pigeonhole no window of `W` ticks holds
//! more than `max_requests` admitted hits, in any interleaving and any timestamp order. A
//! re-sort holds every slot sealed while it permutes the values, so no admission runs during
//! it and the argument carries over with values in place of slots: each value's history is a
//! chain of admissions at least `W` apart, and there are `max_requests` chains. For
//! non-decreasing timestamps the answers equal a full sorted log's. `cursor`,
//! `blocked_until` and the locked forms' known order are never the reason for an admission;
//! `blocked_until` stays a lower bound on the oldest value + W through a re-sort (the
//! multiset of values is unchanged). A decision that rests on reading several slots (a
//! refusal after a scan, `allowed` false, `status`, the minimum `hit` replaces) is checked
//! against the re-sort generation read before its first slot: a scan that a re-sort
//! overlapped may have seen a value twice and missed another, and starts again.
//!
//! # Atomic orderings
//! Safety needs only per-slot coherence and RMW atomicity. Slot loads are `Acquire` and
//! successful CASes `AcqRel` so that a refusal, the `blocked_until` bound and the sweeper's
//! seal all happen-after the slot writes they read. The cursor is `Relaxed` (a hint). The
//! re-sort generation is a seqlock: odd while a re-sort holds the slots, bumped with
//! `Release` after its last write, read with `Acquire` before and after a scan (see
//! `atomic/resort.rs`).

mod algorithm;
mod atomic;
mod sequential;
#[cfg(test)]
mod tests;

pub use atomic::AtomicRing;
pub use sequential::SequentialRing;

use crate::limit::Limit;
use crate::window::layers::Layers;
use crate::window::state::WindowState;
use crate::window::{is_live, Algorithm, Retired, WeightError, WindowKind};

/// The exact sliding log: never more than `max_requests` hits in any window, answers exact
/// for non-decreasing timestamps. Memory: `8 × max_requests` bytes of slots per key, plus a
/// header of 40 bytes in the lock-free form, where a key hit once allocates no slots (its hit
/// stays in the header: `atomic/inline.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactLog {
    limit: Limit,
}

impl ExactLog {
    /// The exact log for `limit`.
    #[must_use]
    pub const fn new(limit: Limit) -> Self {
        Self { limit }
    }
}

impl Algorithm for ExactLog {
    type Sequential = Layers<SequentialRing>;
    type Atomic = Layers<AtomicRing>;

    fn algorithm(&self) -> &'static str {
        "exact"
    }

    fn limit(&self) -> Limit {
        self.limit
    }

    fn check_weight(&self, n: u64) -> Result<(), WeightError> {
        match n {
            0 => Err(WeightError::Zero),
            1 => Ok(()),
            n => Err(WeightError::Unsupported { n }),
        }
    }

    fn new_sequential(&self) -> Layers<SequentialRing> {
        Layers::build(self.limit, SequentialRing::new)
    }

    fn new_atomic(&self) -> Layers<AtomicRing> {
        Layers::build(self.limit, AtomicRing::new)
    }

    /// A single window starts inline (`atomic/inline.rs`): a key hit once never allocates its
    /// slots; the keyed limiter replaces the entry when a hit needs a second slot.
    fn new_atomic_at(&self, _now: u64) -> Layers<AtomicRing> {
        if self.limit.is_layered() {
            return self.new_atomic();
        }
        Layers::One(AtomicRing::inline(self.limit))
    }

    fn with_limit(&self, limit: Limit) -> Self {
        Self::new(limit)
    }

    fn kind(&self) -> WindowKind {
        WindowKind::ExactLog
    }

    /// Every window of a layered limit is built from the one state (the widest window's, which
    /// holds every hit the others hold), each converted to its own window and count.
    fn sequential_from(&self, state: &WindowState) -> Layers<SequentialRing> {
        Layers::build(self.limit, |window| {
            let state = state.for_target(window.window_ticks(), window.max_requests());
            let (values, carried) = state.to_slot_values(capacity_of(window));
            SequentialRing::from_slot_values(window, values, carried)
        })
    }

    fn atomic_from(&self, state: &WindowState) -> Layers<AtomicRing> {
        Layers::build(self.limit, |window| {
            let state = state.for_target(window.window_ticks(), window.max_requests());
            let (values, carried) = state.to_slot_values(capacity_of(window));
            AtomicRing::from_slot_values(window, values, carried)
        })
    }
}

/// The limit of a ring of `capacity` slots over `window_ticks`: both were validated by the
/// `Limit` the ring was built from.
pub(super) fn limit_of(capacity: usize, window_ticks: u64) -> Limit {
    Limit::new(capacity as u64, window_ticks).expect("a ring is built from a valid limit")
}

/// An empty slot.
pub(super) const EMPTY: u64 = 0;
/// A slot sealed by a sweeper: above every encoded tick (`encode(MAX_TICK) = u64::MAX - 1`).
pub(super) const SEALED: u64 = u64::MAX;

#[inline]
pub(super) const fn encode(tick: u64) -> u64 {
    // tick <= MAX_TICK, so this cannot overflow or reach SEALED.
    tick + 1
}

/// Whether slot value `v` (not `SEALED`) holds a hit that is live for a caller at `now`.
#[inline]
pub(super) const fn slot_is_live(v: u64, window_ticks: u64, now: u64) -> bool {
    v != EMPTY && is_live(v - 1, window_ticks, now)
}

/// The largest slot value that is *not* live for a caller at `now`: a value above it holds a
/// live hit (or is `SEALED`), at or below it is empty or expired. One comparison per slot in
/// the probe loop instead of [`slot_is_live`]'s test and saturating add; the same answer: for
/// `now >= W`, `s + W > now` exactly when `s > now - W`, i.e. `s + 1 > now - W + 1`; for
/// `now < W` every recorded hit is live (`s + W >= W > now`), so only 0 (empty) is not.
#[inline]
pub(super) const fn expired_at_most(window_ticks: u64, now: u64) -> u64 {
    if now >= window_ticks {
        now - window_ticks + 1
    } else {
        EMPTY
    }
}

/// The storage the ring algorithm runs on. The atomic form's `replace_slot` is a CAS and may
/// fail with the value it found; the sequential form's always succeeds.
pub(super) trait RingCells {
    /// Whether a slot can hold `SEALED`: false for the sequential form, so the checks
    /// compile away there.
    const SEALABLE: bool;
    fn capacity(&self) -> usize;
    fn window_ticks(&self) -> u64;
    fn slot(&self, index: usize) -> u64;
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64>;
    fn cursor(&self) -> usize;
    fn set_cursor(&mut self, index: usize);
    fn blocked_until(&self) -> u64;
    fn raise_blocked_until(&mut self, tick: u64);
    /// Counts a live hit (slot value `value`) that `hit` is about to replace as *carried*
    /// (see [`crate::window::state::Carried`]): the ring forgets it, but a later raise of the
    /// limit must count it. Called before the replacing write, so a reader that sees the
    /// write sees the count (a write that then fails leaves one hit counted twice, which
    /// only ever refuses more).
    fn carry_dropped(&mut self, value: u64);
    /// After [`RingCells::carry_dropped`] with no slot write to follow: orders the carried
    /// count before any later seal of the ring, by a read-modify-write of slot `index` that
    /// leaves its value as it is (the seal handshake is a CAS on every slot, so a seal either
    /// comes later in that slot's modification order, and its sealer then reads the count, or
    /// earlier, and the caller meets it: `Err(Retired)`, look the key up again).
    fn publish_carried(&mut self, index: usize, value: u64) -> Result<(), Retired>;

    /// `Some(index)` when the cells know that the ring is rotation-sorted with its oldest
    /// value at `index` (ascending from there around the ring). Only the sequential form,
    /// which sees every write, can know it; the atomic form answers `None`. The answer
    /// only lets the algorithm skip reads: every decision it shortcuts is the one the full
    /// probe would take, so both forms still take the same slots.
    fn known_order(&self) -> Option<usize>;
    /// Adds `slots` to the displacement counted since the last re-sort; returns the total.
    fn add_displacement(&mut self, slots: u64) -> u64;
    /// Sorts the slot values in place (ascending from slot 0), sets the cursor to 0 and the
    /// displacement to 0. The atomic form does it under a seal of every slot and may give up
    /// (a sweeper's seal, or another re-sort, holds a slot): false.
    fn resort(&mut self) -> bool;
    /// The re-sort generation: even and unchanged across a scan means no re-sort moved a
    /// value during it. Always 0 for the sequential form.
    fn resort_generation(&self) -> u32;
    /// Called after reading `SEALED` at `index`: `Err(Retired)` if a sweeper sealed the ring
    /// (the caller gives up), `Ok` if a re-sort held it (the caller starts again).
    fn settle_seal(&self, index: usize) -> Result<(), Retired>;

    #[inline]
    fn is_sealed(value: u64) -> bool {
        Self::SEALABLE && value == SEALED
    }
}

/// Whether a scan that read the re-sort generation `before` its first slot saw one
/// consistent arrangement of the values: no re-sort was under way then, and none has
/// started since.
#[inline]
pub(super) fn scan_is_consistent<C: RingCells>(cells: &C, before: u32) -> bool {
    before % 2 == 0 && cells.resort_generation() == before
}

/// Slot reads made by the ring algorithm on this thread, in debug builds (every test build):
/// lets tests count an operation's work instead of timing it. `None` in release builds,
/// which do not count. The count includes the reads of a re-sort (one per slot).
// Hidden: a hook for the tests (they count work instead of timing it); not part of the API
// a user builds on.
#[doc(hidden)]
#[must_use]
pub fn slot_probes_on_this_thread() -> Option<u64> {
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    {
        Some(PROBES.with(std::cell::Cell::get))
    }
    #[cfg(not(all(debug_assertions, not(slidelimit_loom))))]
    {
        None
    }
}

#[cfg(all(debug_assertions, not(slidelimit_loom)))]
thread_local! {
    static PROBES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `reads` slot reads for [`slot_probes_on_this_thread`] (nothing in release builds).
#[inline]
pub(super) fn count_probes(reads: usize) {
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    PROBES.with(|probes| probes.set(probes.get() + reads as u64));
    #[cfg(not(all(debug_assertions, not(slidelimit_loom))))]
    let _ = reads;
}

pub(super) fn capacity_of(limit: Limit) -> usize {
    // Limit::new caps max_requests at 2^24, which fits every usize this crate builds for.
    usize::try_from(limit.max_requests()).unwrap_or(usize::MAX)
}

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
//!   the `max_requests` newest hits (a hit older than all of them can never change an answer).
//! - `allowed(now)` is the probe without the write.
//!
//! # Sealing (the atomic form only)
//! A sweeper removes a ring by sealing it: it CASes every slot, in index order, from a value
//! it judged expired for its horizon to `SEALED`, remembering the values. Every write to a
//! slot is a CAS from an unsealed value, so a writer's CAS either comes before the seal of its
//! slot in that slot's modification order (and the sweeper's seal CAS sees the new value: if
//! it is live for the horizon the sweeper restores every slot it sealed and keeps the ring;
//! if not, the hit is in the value the sweeper turns into the key's removal watermark) or
//! after it (and fails). A caller that reads `SEALED` stops and looks the key up again. So no
//! hit is ever lost to a removal, with no extra read-modify-write on the hot path: the seal
//! is a handshake on each slot word itself.
//!
//! # Guarantees
//! Slot values only grow while a ring is live (a restore puts back the very value a seal
//! took), and an admission replaces a value at least `W` older, so two admissions in one slot
//! are at least `W` apart: by pigeonhole no window of `W` ticks holds more than
//! `max_requests` admitted hits, in any interleaving and any timestamp order. For
//! non-decreasing timestamps the answers equal a full sorted log's. `cursor` and
//! `blocked_until` are hints: they are never the reason for an admission.
//!
//! # Atomic orderings
//! Safety needs only per-slot coherence and RMW atomicity. Slot loads are `Acquire` and
//! successful CASes `AcqRel` so that a refusal, the `blocked_until` bound and the sweeper's
//! seal all happen-after the slot writes they read. The cursor is `Relaxed` (a hint).

mod algorithm;
mod atomic;
mod sequential;
#[cfg(test)]
mod tests;

pub use atomic::AtomicRing;
pub use sequential::SequentialRing;

use crate::window::{is_live, WeightError, Window};
use crate::Limit;

/// The exact sliding log: never more than `max_requests` hits in any window, answers exact
/// for non-decreasing timestamps. Memory: `8 × max_requests` bytes of slots per key, plus a
/// header of 40 bytes in the lock-free form.
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

impl Window for ExactLog {
    type Sequential = SequentialRing;
    type Atomic = AtomicRing;

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

    fn new_sequential(&self) -> SequentialRing {
        SequentialRing::new(self.limit)
    }

    fn new_atomic(&self) -> AtomicRing {
        AtomicRing::new(self.limit)
    }
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

    #[inline]
    fn is_sealed(value: u64) -> bool {
        Self::SEALABLE && value == SEALED
    }
}

pub(super) fn capacity_of(limit: Limit) -> usize {
    // Limit::new caps max_requests at 2^24, which fits every usize this crate builds for.
    usize::try_from(limit.max_requests()).unwrap_or(usize::MAX)
}

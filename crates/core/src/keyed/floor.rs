//! The removal floor: the one watermark every sweep raises, and the observed clock that keeps
//! a bad `now` from raising it.
//!
//! A sweep may forget a key only if the key's state is fresh (equal to an empty window) from
//! some tick `f` at or below the floor, and it raises the floor *before* it unlinks the key.
//! Every entry created later answers with the floor it finds (read when the entry is first
//! reached through the map), so a call on a re-created key below `f` is refused: it could have
//! needed the forgotten hits. A key that was never seen, or not removed, is refused only below
//! this floor, and the floor never rises past what the limiter has *observed* as real time:
//! the oldest of the `now`s of the last [`OBSERVED_CREATIONS`] key creations, minus the
//! lateness tolerance. One far-future timestamp (a call, or `remove_idle(u64::MAX)`) moves
//! neither: a sweep at such a `now` removes only what is idle by the observed time.
//!
//! # Atomic orderings
//! The floor is raised with an `AcqRel` `fetch_max` before the sweep unlinks anything, and read
//! with `Acquire` by the first caller that reaches a new entry through the map; that caller
//! found the entry after the unlink of every earlier entry of its key, so it sees the raise.
//! The observed clock is a set of hints read and written `Relaxed`: a stale value only makes
//! a sweep forget less.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::window::MAX_TICK;

/// How many recent key creations the observed clock remembers. The floor follows the oldest
/// of them, so fewer than this many consecutive bad creation timestamps cannot move it.
pub const OBSERVED_CREATIONS: usize = 8;

/// Marks an observation slot not yet written (the identity of `min`).
const UNOBSERVED: u64 = u64::MAX;

/// The removal floor and the observed clock (see the module docs).
pub(crate) struct RemovalFloor {
    floor: AtomicU64,
    creations: [AtomicU64; OBSERVED_CREATIONS],
    next_creation: AtomicUsize,
}

impl RemovalFloor {
    pub(crate) fn new() -> Self {
        Self {
            floor: AtomicU64::new(0),
            creations: std::array::from_fn(|_| AtomicU64::new(UNOBSERVED)),
            next_creation: AtomicUsize::new(0),
        }
    }

    /// The floor: decisions below it on an entry created now are refused.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max in `raise_for_sweep`, which a sweep runs
        // before it unlinks an entry; a caller that reached a newer entry sees the raise.
        self.floor.load(Ordering::Acquire)
    }

    /// Records that a call at `now` created a key's state.
    pub(crate) fn observe_creation(&self, now: u64) {
        // Relaxed: picks a slot round-robin; a hint, see the module docs.
        let slot = self.next_creation.fetch_add(1, Ordering::Relaxed) % OBSERVED_CREATIONS;
        // Relaxed: a hint; see the module docs.
        self.creations[slot].store(now.min(MAX_TICK), Ordering::Relaxed);
    }

    /// The time the limiter has observed: the oldest of the last creations' `now`s (or
    /// `u64::MAX` if no key was ever created; then there is nothing to remove either).
    fn observed_time(&self) -> u64 {
        self.creations
            .iter()
            // Relaxed: a hint; see the module docs.
            .map(|slot| slot.load(Ordering::Relaxed))
            .min()
            .unwrap_or(UNOBSERVED)
    }

    /// Raises the floor to at least `floor` (a restored snapshot's).
    pub(crate) fn raise_to(&self, floor: u64) {
        // AcqRel: as in raise_for_sweep; fetch_max keeps the floor monotone.
        self.floor.fetch_max(floor.min(MAX_TICK), Ordering::AcqRel);
    }

    /// Raises the floor for a sweep at `now` to `min(now, observed time) - lateness_ticks`
    /// and returns the floor now in force: the sweep may remove a key whose state is fresh
    /// from a tick at or below it.
    pub(crate) fn raise_for_sweep(&self, now: u64, lateness_ticks: u64) -> u64 {
        let horizon = now
            .min(self.observed_time())
            .min(MAX_TICK)
            .saturating_sub(lateness_ticks);
        // AcqRel: Release publishes the raise before the unlinks that follow it (see `get`);
        // fetch_max keeps the floor monotone under concurrent sweeps.
        let previous = self.floor.fetch_max(horizon, Ordering::AcqRel);
        previous.max(horizon)
    }
}

//! The removal floor: the one watermark every sweep raises, and the observed clocks that keep
//! a bad `now` from raising it.
//!
//! A sweep may forget a key only if the key's state is fresh (equal to an empty window) from
//! some tick `f` at or below the floor, and it raises the floor *before* it unlinks the key.
//! Every entry created later answers with the floor it finds (read when the entry is first
//! reached through the map), so a call on a re-created key below `f` is refused: it could have
//! needed the forgotten hits. A key that was never seen, or not removed, is refused only below
//! this floor, and the floor never rises past what the limiter has *observed* as real time:
//! the oldest of the `now`s of the last [`OBSERVED_CREATIONS`] sampled key creations, minus
//! the lateness tolerance. One far-future timestamp (a call, or `remove_idle(u64::MAX)`)
//! moves neither: a sweep at such a `now` raises the floor only to the observed time.
//!
//! Both words are limiter-wide, and both are written rarely. The observed clock records one
//! key creation in [`crate::keyed::OBSERVE_EVERY`] per shard (every shard's first included):
//! a per-shard clock would be stale wherever a shard creates keys seldom (with 512 shards
//! and a few creations per tick, the oldest of a shard's last eight creations lagged real
//! time by several windows, and the floor with it, so removal lagged too), while the sampled
//! one lags by a few dozen creations. The floor is read by every never-seen key in any shard,
//! and written only when a sweep step raises it: once per tick that sweeps see, not once per
//! key.
//!
//! # Atomic orderings
//! The floor is raised with an `AcqRel` `fetch_max` before the sweep unlinks anything, and read
//! with `Acquire` by the first caller that reaches a new entry through the map; that caller
//! found the entry after the unlink of every earlier entry of its key, so it sees the raise.
//! The observed clocks are hints read and written `Relaxed`: a stale value only makes a sweep
//! forget less.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::window::MAX_TICK;

/// How many recent sampled key creations the observed clock remembers. The floor follows the
/// oldest of them, so fewer than this many consecutive bad sampled creation timestamps cannot
/// move it.
pub const OBSERVED_CREATIONS: usize = 8;

/// Marks an observation slot not yet written (the identity of `min`).
const UNOBSERVED: u64 = u64::MAX;

/// The removal floor (see the module docs).
pub(crate) struct RemovalFloor {
    floor: AtomicU64,
}

impl RemovalFloor {
    pub(crate) fn new() -> Self {
        Self {
            floor: AtomicU64::new(0),
        }
    }

    /// The floor: decisions below it on an entry created now are refused.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max in `raise_for_sweep`, which a sweep runs
        // before it unlinks an entry; a caller that reached a newer entry sees the raise.
        self.floor.load(Ordering::Acquire)
    }

    /// Raises the floor to at least `floor` (a restored snapshot's).
    pub(crate) fn raise_to(&self, floor: u64) {
        // AcqRel: as in raise_for_sweep; fetch_max keeps the floor monotone.
        self.floor.fetch_max(floor.min(MAX_TICK), Ordering::AcqRel);
    }

    /// Raises the floor for a sweep at `now`, when the observed clock reads `observed`, to
    /// `min(now, observed) - lateness_ticks` and returns the floor now in force: the sweep
    /// may remove a key whose state is fresh from a tick at or below it. With no creation
    /// observed yet (restored keys only) it raises nothing: there is no evidence of real time.
    pub(crate) fn raise_for_sweep(&self, now: u64, observed: u64, lateness_ticks: u64) -> u64 {
        let horizon = now
            .min(observed)
            .min(MAX_TICK)
            .saturating_sub(lateness_ticks);
        let current = self.get();
        if observed == UNOBSERVED || horizon <= current {
            // Nothing to raise: no write to the limiter-wide word (most sweep steps land
            // here, on a tick an earlier step already raised the floor to).
            return current;
        }
        // AcqRel: Release publishes the raise before the unlinks that follow it (see `get`);
        // fetch_max keeps the floor monotone under concurrent sweeps.
        let previous = self.floor.fetch_max(horizon, Ordering::AcqRel);
        previous.max(horizon)
    }
}

/// The record of recent sampled key creations: the `now`s of the last
/// [`OBSERVED_CREATIONS`] of them, in a ring (see the module docs).
pub(crate) struct ObservedClock {
    creations: [AtomicU64; OBSERVED_CREATIONS],
    next_creation: AtomicUsize,
}

impl ObservedClock {
    pub(crate) fn new() -> Self {
        Self {
            creations: std::array::from_fn(|_| AtomicU64::new(UNOBSERVED)),
            next_creation: AtomicUsize::new(0),
        }
    }

    /// Records that a call at `now` created a key's state (a sampled creation).
    #[inline]
    pub(crate) fn observe(&self, now: u64) {
        // Relaxed: picks a slot round-robin; a hint, see the module docs. Limiter-wide, and
        // written by one creation in OBSERVE_EVERY per shard only (see the module docs).
        let slot = self.next_creation.fetch_add(1, Ordering::Relaxed) % OBSERVED_CREATIONS;
        // Relaxed: a hint; see the module docs.
        self.creations[slot].store(now.min(MAX_TICK), Ordering::Relaxed);
    }

    /// The time the limiter has observed: the oldest of the last sampled creations' `now`s
    /// (or `u64::MAX` if none was; then it raises no floor).
    pub(crate) fn time(&self) -> u64 {
        self.creations
            .iter()
            // Relaxed: a hint; see the module docs.
            .map(|slot| slot.load(Ordering::Relaxed))
            .min()
            .unwrap_or(UNOBSERVED)
    }
}

//! The removal floor: the one watermark every sweep raises, and the observed clock that keeps
//! a bad `now` from raising it.
//!
//! A sweep may forget a key only if the key's state is fresh (equal to an empty window) from
//! some tick `f` at or below the floor, and it raises the floor *before* it unlinks the key.
//! Every entry created later answers with the floor it finds (read when the entry is first
//! reached through the map), so a call on a re-created key below `f` is refused: it could have
//! needed the forgotten hits. A key that was never seen, or not removed, is refused only below
//! this floor, and the floor never rises past what the limiter has *observed* as real time,
//! minus the lateness tolerance.
//!
//! # The observed time, and what moves it
//! The observed time is the **lower quartile** of the `now`s of the last [`OBSERVED_SAMPLES`]
//! sampled key creations: the latest tick that at least three quarters of them reached. A
//! sweep at a far-future `now` (a call, or `remove_idle(u64::MAX)`) raises the floor only to
//! it, and it moves only when three quarters of the samples move:
//!
//! - **Clocks ahead.** Callers whose clocks run ahead, making any share of the new keys up to
//!   one half, leave it where the others' clocks put it. The samples are one creation in
//!   [`crate::keyed::OBSERVE_EVERY`] per shard, picked by the shard's creation count, which
//!   no caller can aim at (the shard is a seeded hash of the key); for a caller making half of
//!   the creations to fill three quarters of 256 samples is 8 standard deviations out, a
//!   chance below 10^-15 per sample.
//! - **Clocks behind.** A creation stamped below the removal floor is not sampled (with the
//!   tolerance, no caller within `D` of real time is that late), so callers whose clocks run
//!   far behind, at any share, move nothing: their own new keys are refused, nobody else's.
//! - **A clock that moves for everyone** (a host's clock set forward, a replayed trace that
//!   jumps) is taken as real once three quarters of the samples carry it: a few hundred key
//!   creations with one shard, about eight times as many spread over many shards.
//!
//! The quartile lags real time by about three quarters of the ring (192 samples: as many key
//! creations with one shard, about 1,500 with the default 512 shards), so the automatic sweep
//! removes a key that much later than its window and tolerance allow: memory follows the
//! active keys plus a bounded number of creations.
//!
//! Both words are limiter-wide, and both are written rarely: the observed clock by one key
//! creation in [`crate::keyed::OBSERVE_EVERY`] per shard (every shard's first included), and
//! its quartile recounted at one sample in [`RECOUNT_EVERY`] (a copy and a selection of 256
//! words, about 8,000 instructions, a few microseconds: about 16 instructions per creation
//! with many shards, where one creation in eight is sampled). A per-shard
//! clock would be stale wherever a shard creates keys seldom, and a sample small enough to
//! read at every sweep step is one a caller making half of the keys fills by chance (the
//! oldest of eight samples, the rule before this one, was moved by such a caller within a few
//! thousand creations). The floor is read by every never-seen key in any shard, and written
//! only when a sweep step raises it: once per tick that sweeps see, not once per key.
//!
//! # Atomic orderings
//! The floor is raised with an `AcqRel` `fetch_max` before the sweep unlinks anything, and read
//! with `Acquire` by the first caller that reaches a new entry through the map; that caller
//! found the entry after the unlink of every earlier entry of its key, so it sees the raise.
//! The observed clock's words are hints read and written `Relaxed`: a stale value only makes a
//! sweep forget less.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::window::MAX_TICK;

/// How many recent sampled key creations the observed clock remembers (8 under loom, whose
/// models create a handful of keys).
pub const OBSERVED_SAMPLES: usize = if cfg!(slidelimit_loom) { 8 } else { 256 };

/// The observed clock recounts its quartile at each of its first this many samples, then at
/// one sample in this many.
pub const RECOUNT_EVERY: usize = 64;

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
/// [`OBSERVED_SAMPLES`] of them, in a ring, and the time they attest (see the module docs).
pub(crate) struct ObservedClock {
    samples: Box<[AtomicU64]>,
    taken: AtomicUsize,
    /// The lower quartile of `samples` at the last recount ([`UNOBSERVED`] before any).
    attested: AtomicU64,
}

impl ObservedClock {
    pub(crate) fn new() -> Self {
        Self {
            samples: (0..OBSERVED_SAMPLES)
                .map(|_| AtomicU64::new(UNOBSERVED))
                .collect(),
            taken: AtomicUsize::new(0),
            attested: AtomicU64::new(UNOBSERVED),
        }
    }

    /// Records that a call at `now` created a key's state (a sampled creation, at or above
    /// the removal floor), and recounts the attested time at the first [`RECOUNT_EVERY`]
    /// samples and every [`RECOUNT_EVERY`]-th after.
    #[inline]
    pub(crate) fn observe(&self, now: u64) {
        // Relaxed: picks a slot round-robin; a hint, see the module docs. Limiter-wide, and
        // written by one creation in OBSERVE_EVERY per shard only (see the module docs).
        let index = self.taken.fetch_add(1, Ordering::Relaxed);
        // Relaxed: a hint; see the module docs.
        self.samples[index % OBSERVED_SAMPLES].store(now.min(MAX_TICK), Ordering::Relaxed);
        if recounts_at(index) {
            self.recount();
        }
    }

    /// Sets the attested time to the lower quartile of the samples held: the latest tick
    /// that at least three quarters of them reached.
    #[cold]
    #[inline(never)]
    fn recount(&self) {
        let mut values = [0_u64; OBSERVED_SAMPLES];
        let mut held = 0;
        for slot in self.samples.iter() {
            // Relaxed: a hint; see the module docs.
            let value = slot.load(Ordering::Relaxed);
            if value != UNOBSERVED {
                values[held] = value;
                held += 1;
            }
        }
        if held == 0 {
            return;
        }
        let (_, quartile, _) = values[..held].select_nth_unstable(quartile_rank(held));
        // Relaxed: a hint; a racing recount may store an older quartile, which only makes a
        // sweep forget less until the next one.
        self.attested.store(*quartile, Ordering::Relaxed);
    }

    /// The time the limiter has observed: the lower quartile of the recent sampled
    /// creations' `now`s (or `u64::MAX` if none was recorded; then it raises no floor).
    pub(crate) fn time(&self) -> u64 {
        // Relaxed: a hint; see the module docs.
        self.attested.load(Ordering::Relaxed)
    }
}

/// Whether the sample of index `index` (counted from 0) recounts the attested time: each of
/// the first [`RECOUNT_EVERY`], so that a young limiter learns the time at once, then one in
/// [`RECOUNT_EVERY`].
#[must_use]
pub const fn recounts_at(index: usize) -> bool {
    index < RECOUNT_EVERY || index % RECOUNT_EVERY == RECOUNT_EVERY - 1
}

/// The rank (from 0, in ascending order) of the lower quartile among `held` samples: the
/// value that at least three quarters of them reach.
#[must_use]
pub const fn quartile_rank(held: usize) -> usize {
    held / 4
}

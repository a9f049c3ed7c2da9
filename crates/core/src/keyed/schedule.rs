//! When the automatic sweep runs, and in which steps: a sweep *cycle* starts when the key map
//! has grown past its trigger, and then walks the map one shard per key-creating call, so no
//! call pays for more than one shard (about `tracked keys / shards` entries).
//!
//! Every limiter runs this one schedule, and it depends only on the order of key creations,
//! so on a single-threaded trace every variant sweeps the same shards at the same calls.

use crate::sync::{AtomicUsize, Ordering};

/// Marks "no cycle in progress" in `next_at` while a cycle runs.
const CYCLE_RUNNING: usize = usize::MAX;

/// The automatic sweep's trigger and its cursor over the shards.
pub(crate) struct SweepSchedule {
    floor_keys: usize,
    /// The key count that starts the next cycle; [`CYCLE_RUNNING`] while one runs.
    next_at: AtomicUsize,
    /// The next shard of the running cycle to sweep; at or past the shard count when no cycle
    /// runs (or its last shard has been handed out).
    cursor: AtomicUsize,
    shards: usize,
}

impl SweepSchedule {
    pub(crate) fn new(floor_keys: usize, shards: usize) -> Self {
        Self {
            floor_keys,
            next_at: AtomicUsize::new(floor_keys),
            cursor: AtomicUsize::new(shards),
            shards,
        }
    }

    /// Called after a call created a key, with the keys now tracked: the shard this call must
    /// sweep, if any. Call [`Self::done`] with it after sweeping.
    pub(crate) fn claim(&self, tracked_keys: usize) -> Option<usize> {
        // Relaxed (every access here): the schedule only spreads work; the sweep's safety
        // rests on the seals and the removal floor, not on it.
        if self.cursor.load(Ordering::Relaxed) < self.shards {
            // Relaxed: hands out a shard index; see above.
            let shard = self.cursor.fetch_add(1, Ordering::Relaxed);
            return (shard < self.shards).then_some(shard);
        }
        // Relaxed: a trigger count; see above.
        let next_at = self.next_at.load(Ordering::Relaxed);
        if tracked_keys < next_at || next_at == CYCLE_RUNNING {
            return None;
        }
        // Relaxed both ways: the CAS only elects the call that starts the cycle.
        self.next_at
            .compare_exchange(next_at, CYCLE_RUNNING, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        // This call sweeps shard 0; the next creating calls take the others.
        // Relaxed: see above.
        self.cursor.store(1, Ordering::Relaxed);
        Some(0)
    }

    /// Called when the sweep of `shard` (from [`Self::claim`]) is done, with the keys left.
    /// The last shard closes the cycle and sets the next trigger: half as many keys again as
    /// were left, above the floor. (Doubling let key rotation keep 2.2 times the active keys;
    /// at 1.5 a cycle still visits each key about twice per creation, amortised.)
    pub(crate) fn done(&self, shard: usize, tracked_keys: usize) {
        if shard + 1 == self.shards {
            let next = tracked_keys
                .saturating_add(tracked_keys / 2)
                .max(self.floor_keys);
            // Relaxed: only the sweeper of the last shard writes here while a cycle runs.
            self.next_at.store(next, Ordering::Relaxed);
        }
    }
}

//! The automatic sweep, shard by shard: each shard keeps its key count, its observed clock and
//! a queue of its keys in the order they are due for a look, so a sweep step looks only at
//! keys whose window and lateness tolerance may have passed, and at most [`LOOKS_PER_STEP`]
//! of them. A shard steps when it arms and then at every creation, or at one in up to
//! [`STEP_EVERY`] once it holds enough keys ([`steps_at`]).
//!
//! A key joins its shard's queue when it is created, due one window plus the lateness
//! tolerance later: the first tick at which a key hit only then can be removed. A look at a
//! due key removes it if it is idle; a key found live joins again, due when its own state may
//! be fresh. A key therefore costs about one look per
//! removal on key churn, and one per window and tolerance while it stays in use; the old
//! whole-shard sweeps visited about three keys per key removed, and a call that ran one paid
//! for a whole shard at once.
//!
//! Every limiter runs this one schedule (through [`DueQueue`]), and it depends only on the
//! order of calls, so on a single-threaded trace every variant looks at the same keys at the
//! same calls.

use std::collections::{BinaryHeap, VecDeque};

use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::window::MAX_TICK;

/// The most creations a shard lets pass between two sweep steps. A step has a cost of its own
/// whatever it finds (the floor's raise, the queue's lock and loop, and in the concurrent
/// shape the buffer its keys wait in), so a shard holding many keys takes one at one creation
/// in this many, and pays that cost once (mutex: 948 → 780 instructions per churn call,
/// callgrind). A due key then waits up to that many of its shard's creations longer, so the
/// stride follows the shard's size (see [`steps_at`]): the keys kept past their time stay
/// within an eighth of what the shard holds, and a shard with a few keys (many shards, a
/// small population) still steps at every creation.
pub(crate) const STEP_EVERY: usize = 8;

/// The most keys one sweep step looks at, whatever its shard's stride: eight per creation at
/// the widest stride ([`STEP_EVERY`]), more per creation at a narrower one (a shard below 64
/// keys rarely has that many due, except after a pause in its traffic, when the larger budget
/// catches up sooner). Each creation adds one key to its shard's queue, so up to eight looks
/// per creation keep up with churn and with the keys found live, while bounding what any one
/// call pays (a few microseconds at most).
pub(crate) const LOOKS_PER_STEP: usize = 8 * STEP_EVERY;

/// Whether a creation in an armed shard takes a sweep step: the one that found
/// `created_before` keys created or installed in the shard before it, the shard now holding
/// `keys` (this one included). The stride is `keys / 8` rounded down to a power of two, from 1
/// (below 16 keys: every creation) to [`STEP_EVERY`] (64 keys and more); the steps fall on the
/// creations whose count is a multiple of it.
#[inline]
pub(crate) fn steps_at(created_before: usize, keys: usize) -> bool {
    let stride = 1_usize << (keys / 8).clamp(1, STEP_EVERY).ilog2();
    created_before & (stride - 1) == 0
}

/// What a look at a due key found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// It was idle and is removed.
    Removed,
    /// It was idle by a budget step's horizon and is removed, leaving a tombstone above the
    /// floor: the key stays queued, due when the floor may cover its tombstone (`idle_from`),
    /// for the look that drops it.
    Tombstoned { idle_from: u64 },
    /// It is still in use (or being replaced): look again once the floor may reach
    /// `idle_from`, the tick from which its state is fresh as far as the look could tell.
    Live { idle_from: u64 },
    /// It is no longer tracked (`remove_idle` removed it): forget the queue's copy.
    Gone,
}

/// A key and the tick at which it is due for a look, ordered by that tick alone, soonest
/// first (the queue is a max-heap of these).
struct Due<K> {
    due: u64,
    key: K,
}

impl<K> PartialEq for Due<K> {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due
    }
}

impl<K> Eq for Due<K> {}

impl<K> PartialOrd for Due<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Due<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.due.cmp(&self.due)
    }
}

/// A shard's keys by the tick at which each is due for a look. Empty and unarmed until the
/// shard first holds its share of [`super::Options::sweep_floor_keys`]: below it the shard
/// never sweeps, and keeps no queue.
///
/// New keys wait in a FIFO: created in time order, they come due in that order, and most
/// (under key churn, nearly all) are removed at their first look, for a push and a pop that
/// touch one end each. Keys found live, and those a shard held when it was armed, wait in a
/// heap: a key found live is due when its own state may be fresh, which can come before keys
/// created after it. A look takes whichever of the two fronts is due first; a new key due much
/// further ahead than any call near the sweep's time could have pushed it (a far-future
/// call's) moves to the heap rather than hold the FIFO up.
pub(crate) struct DueQueue<K> {
    fresh: VecDeque<Due<K>>,
    due: BinaryHeap<Due<K>>,
    armed: bool,
    /// [`Self::service`]'s keys found live during a step, kept until the step's takes are
    /// done; empty between steps, its capacity kept (at most [`LOOKS_PER_STEP`]).
    live: Vec<(K, u64)>,
}

impl<K> DueQueue<K> {
    pub(crate) fn new() -> Self {
        Self {
            fresh: VecDeque::new(),
            due: BinaryHeap::new(),
            armed: false,
            live: Vec::new(),
        }
    }

    /// Whether the shard keeps its keys' queue (it reached its sweep floor once).
    pub(crate) fn is_armed(&self) -> bool {
        self.armed
    }

    /// Starts keeping the queue, with the keys the shard holds now, each due at `now`: their
    /// creation times were not kept, so each gets a look by the next creating calls. They are
    /// queued in [`super::arming_rank`] order, so that every variant, whatever order its map
    /// lists them in, looks at them alike. Once per shard: kept out of line, so the lock's
    /// common path (a push and a sweep step) stays small enough to inline.
    #[cold]
    #[inline(never)]
    pub(crate) fn arm(&mut self, mut held: Vec<K>, now: u64)
    where
        K: std::hash::Hash,
    {
        held.sort_by_cached_key(|key| super::arming_rank(key));
        self.armed = true;
        let due = now.min(MAX_TICK);
        self.due
            .extend(held.into_iter().map(|key| Due { due, key }));
    }

    /// A key created at `now`, due `recheck_ticks` later.
    pub(crate) fn push(&mut self, key: K, now: u64, recheck_ticks: u64) {
        if self.armed {
            let due = now.min(MAX_TICK).saturating_add(recheck_ticks);
            self.fresh.push_back(Due { due, key });
        }
    }

    /// Takes the keys due by `trusted` (the time the sweep trusts: the removal floor plus the
    /// lateness tolerance), the earlier of the two fronts first, at most
    /// [`LOOKS_PER_STEP`] of them, for a look each. A new key due more than two
    /// `recheck_ticks` after `trusted` moves to the heap instead, and counts as a look.
    ///
    /// `take` gets each key taken. The keys found live go back by [`Self::put_back`] after
    /// every take: a caller that shares the queue does both outside its lock, so that
    /// no other creator of the shard waits on a look (an unlink, a retirement, the frees a
    /// reclamation batch brings). What is taken does not depend on what the looks find (a key
    /// put back is due after `trusted`), and every limiter, locked or not, takes, looks and
    /// puts back in this order, so on one thread they all look at the same keys.
    pub(crate) fn take_due(&mut self, trusted: u64, recheck_ticks: u64, mut take: impl FnMut(K)) {
        let trusted = trusted.min(MAX_TICK);
        let far_ahead = trusted.saturating_add(recheck_ticks.saturating_mul(2));
        for _ in 0..LOOKS_PER_STEP {
            let fresh_first = self.fresh.front().map(|first| first.due);
            if fresh_first.is_some_and(|due| due > far_ahead) {
                // A far-future call's key: to the heap, where it waits without blocking.
                if let Some(far) = self.fresh.pop_front() {
                    self.due.push(far);
                }
                continue;
            }
            let heap_first = self.due.peek().map(|first| first.due);
            // The earlier front; a tie goes to the FIFO.
            let from_fresh = match (fresh_first, heap_first) {
                (Some(fresh), Some(heap)) => fresh <= heap,
                (fresh, _) => fresh.is_some(),
            };
            let first = if from_fresh { fresh_first } else { heap_first };
            if first.is_none_or(|due| due > trusted) {
                break;
            }
            let taken_key = if from_fresh {
                self.fresh.pop_front()
            } else {
                self.due.pop()
            };
            let Some(Due { key, .. }) = taken_key else {
                break;
            };
            take(key);
        }
    }

    /// A step for a caller that holds the queue throughout: [`Self::take_due`] by `trusted`
    /// with a look at each key as it is taken (`look` says what it found), and the keys found
    /// live put back once the takes are done, as [`Self::put_back`] would after
    /// `requeue_after`. Returns how many keys the looks removed.
    pub(crate) fn service(
        &mut self,
        trusted: u64,
        requeue_after: u64,
        lateness_ticks: u64,
        recheck_ticks: u64,
        mut look: impl FnMut(&K) -> Look,
    ) -> usize {
        let mut live = std::mem::take(&mut self.live);
        let mut removed = 0;
        self.take_due(trusted, recheck_ticks, |key| match look(&key) {
            Look::Removed => removed += 1,
            Look::Gone => {}
            Look::Live { idle_from } => live.push((key, idle_from)),
            Look::Tombstoned { idle_from } => {
                removed += 1;
                live.push((key, idle_from));
            }
        });
        self.requeue(live.drain(..), requeue_after, lateness_ticks, recheck_ticks);
        self.live = live;
        removed
    }

    /// Puts back the keys of `taken` that their looks found live (see [`TakenKeys::found`]),
    /// each due when the floor may reach the tick it is fresh from, or, if the look could not
    /// tell, half a `recheck_ticks` after `trusted`.
    pub(crate) fn put_back(
        &mut self,
        taken: &mut TakenKeys<K>,
        trusted: u64,
        lateness_ticks: u64,
        recheck_ticks: u64,
    ) {
        let count = std::mem::take(&mut taken.count);
        taken.live = 0;
        let live = taken.keys[..count]
            .iter_mut()
            .zip(taken.idle_from)
            .filter_map(|(slot, idle_from)| slot.take().map(|key| (key, idle_from)));
        self.requeue(live, trusted, lateness_ticks, recheck_ticks);
    }

    /// Queues keys found live, each with the tick it is fresh from (see [`Self::put_back`]).
    fn requeue(
        &mut self,
        live: impl Iterator<Item = (K, u64)>,
        trusted: u64,
        lateness_ticks: u64,
        recheck_ticks: u64,
    ) {
        let trusted = trusted.min(MAX_TICK);
        let again = trusted.saturating_add(recheck_ticks / 2);
        for (key, idle_from) in live {
            let due = idle_from.saturating_add(lateness_ticks);
            let due = if due > trusted { due } else { again };
            self.due.push(Due { due, key });
        }
    }

    /// Forgets the queued keys that `tracked` says are no longer tracked (after
    /// `remove_idle` removed some), so a key that comes back is queued once.
    pub(crate) fn retain_tracked(&mut self, mut tracked: impl FnMut(&K) -> bool) {
        self.fresh.retain(|entry| tracked(&entry.key));
        self.due.retain(|entry| tracked(&entry.key));
    }
}

/// The keys one sweep step took from its queue ([`DueQueue::take_due`]), in the order it took
/// them, with what each look found: on the caller's stack (a step allocates nothing), filled
/// and emptied in place.
pub(crate) struct TakenKeys<K> {
    /// `..count`: taken, and not found removed or gone.
    keys: [Option<K>; LOOKS_PER_STEP],
    /// For a key found live: the tick its state is fresh from, as far as its look could tell.
    idle_from: [u64; LOOKS_PER_STEP],
    count: usize,
    /// Keys found live (still in `keys`): none on most steps under churn, which then put
    /// nothing back and take no second lock.
    live: usize,
}

impl<K> TakenKeys<K> {
    pub(crate) fn new() -> Self {
        Self {
            keys: [const { None }; LOOKS_PER_STEP],
            idle_from: [0; LOOKS_PER_STEP],
            count: 0,
            live: 0,
        }
    }

    /// Keeps `key`, taken from the queue ([`DueQueue::take_due`] takes at most
    /// [`LOOKS_PER_STEP`] keys a step).
    pub(crate) fn push(&mut self, key: K) {
        self.keys[self.count] = Some(key);
        self.count += 1;
    }

    /// Looks at every key taken, in order; `look` says what it found. Returns how many it
    /// removed.
    pub(crate) fn look(&mut self, mut look: impl FnMut(&K) -> Look) -> usize {
        let mut removed = 0;
        for index in 0..self.count {
            let Some(key) = &self.keys[index] else {
                continue;
            };
            match look(key) {
                Look::Removed => {
                    removed += 1;
                    self.keys[index] = None;
                }
                Look::Gone => self.keys[index] = None,
                Look::Live { idle_from } => {
                    self.idle_from[index] = idle_from;
                    self.live += 1;
                }
                Look::Tombstoned { idle_from } => {
                    removed += 1;
                    self.idle_from[index] = idle_from;
                    self.live += 1;
                }
            }
        }
        removed
    }

    /// Whether a look found a key live (it must go back to the queue).
    pub(crate) fn found(&self) -> bool {
        self.live > 0
    }
}

/// Set in [`ShardBook`]'s key word once the shard keeps its due queue.
const ARMED: usize = 1 << (usize::BITS - 1);

/// One shard's sweep bookkeeping in a concurrent map: written only by calls that create or
/// remove keys of this shard, never by the rest of the limiter.
pub(crate) struct ShardBook<K> {
    /// Keys ever created or installed in the shard, and whether its queue is armed, in one
    /// word so that a creating call learns both from its increment:
    ///
    /// | bits                | meaning                                     |
    /// |---------------------|---------------------------------------------|
    /// | top bit ([`ARMED`]) | the queue is armed: every creation joins it |
    /// | the others          | keys created or installed in the shard      |
    created: AtomicUsize,
    /// Keys unlinked from the shard. Apart from `created`: a sweep may unlink a key before
    /// its creator has counted it, and two counts that only grow never go below zero.
    removed: AtomicUsize,
    /// Decisions on new keys refused because the shard's budget was full (for the observed
    /// clock's sampling, see `KeyPolicy::refused_by_budget`).
    refused: AtomicUsize,
    /// Locked only by calls that create or remove keys of an armed shard (or of one at its
    /// floor), for a push and, at a step, the taking of at most [`LOOKS_PER_STEP`] due keys, and
    /// again to put back any that their looks, made outside it, found live; lookups and
    /// decisions never take it.
    queue: Mutex<DueQueue<K>>,
}

/// What a creating call learnt from its shard's key word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Created {
    /// Keys tracked in the shard, this one included.
    pub(crate) keys: usize,
    /// Whether the queue was armed before this creation counted.
    pub(crate) armed: bool,
    /// How many keys the shard created or installed before this one (see
    /// [`super::KeyPolicy::samples_creation`]).
    pub(crate) created_before: usize,
}

impl<K> ShardBook<K> {
    pub(crate) fn new() -> Self {
        Self {
            created: AtomicUsize::new(0),
            removed: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            queue: Mutex::new(DueQueue::new()),
        }
    }

    /// Counts `inserted` new entries (a creation, a restore or an import).
    #[inline]
    pub(crate) fn count_in(&self, inserted: usize) -> Created {
        // AcqRel: pairs with the arming `fetch_or` (see `with_queue`). Either this increment
        // comes first, and the arming call, which lists the shard's keys after its
        // `fetch_or`, finds this call's keys; or the `fetch_or` comes first, and this call
        // sees ARMED and queues its key itself.
        let previous = self.created.fetch_add(inserted, Ordering::AcqRel);
        Created {
            keys: ((previous & !ARMED) + inserted).saturating_sub(self.removed_count()),
            armed: previous & ARMED != 0,
            created_before: previous & !ARMED,
        }
    }

    /// Counts a decision refused because the shard's budget was full; returns how many came
    /// before it.
    pub(crate) fn count_refusal(&self) -> usize {
        // Relaxed: a count for sampling; it orders nothing. The shard's own word.
        self.refused.fetch_add(1, Ordering::Relaxed)
    }

    /// `removed` keys of this shard were unlinked.
    pub(crate) fn removed(&self, removed: usize) {
        if removed > 0 {
            // Relaxed: a count; the unlinks are published by the map itself.
            self.removed.fetch_add(removed, Ordering::Relaxed);
        }
    }

    fn removed_count(&self) -> usize {
        // Relaxed: a count for the floor test and `tracked_keys`; it orders nothing.
        self.removed.load(Ordering::Relaxed)
    }

    /// Keys tracked in the shard.
    pub(crate) fn keys(&self) -> usize {
        // Relaxed: as in `removed_count`.
        let created = self.created.load(Ordering::Relaxed) & !ARMED;
        created.saturating_sub(self.removed_count())
    }

    /// Runs `f` on the queue under its lock. `held` lists the shard's keys, and is called
    /// only if the queue is not armed yet: then it is armed with them (due at `now`) and `f`
    /// learns so (`true`: the keys just listed include the caller's own).
    pub(crate) fn with_queue<R>(
        &self,
        now: u64,
        held: impl FnOnce() -> Vec<K>,
        f: impl FnOnce(&mut DueQueue<K>, bool) -> R,
    ) -> R
    where
        K: std::hash::Hash,
    {
        let mut queue = self.lock();
        let arming = !queue.is_armed();
        if arming {
            // AcqRel: see `created`; the listing below comes after it.
            self.created.fetch_or(ARMED, Ordering::AcqRel);
            queue.arm(held(), now);
        }
        f(&mut queue, arming)
    }

    /// Puts back under the lock the keys of `taken` found live (see [`DueQueue::put_back`]);
    /// takes no lock if none was.
    pub(crate) fn put_back(
        &self,
        taken: &mut TakenKeys<K>,
        trusted: u64,
        lateness_ticks: u64,
        recheck_ticks: u64,
    ) {
        if taken.found() {
            self.lock()
                .put_back(taken, trusted, lateness_ticks, recheck_ticks);
        }
    }

    /// Forgets the queued keys that `tracked` says are gone (see
    /// [`DueQueue::retain_tracked`]); nothing if the queue is not armed.
    pub(crate) fn retain_tracked(&self, tracked: impl FnMut(&K) -> bool) {
        let mut queue = self.lock();
        if queue.is_armed() {
            queue.retain_tracked(tracked);
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, DueQueue<K>> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

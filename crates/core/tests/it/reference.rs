//! The reference model: a plain log of every recorded hit per key, plus the key policy of
//! design.md section 6 (which keys are tracked, when the automatic sweep runs, what it
//! removes, which watermark each removal leaves).
//!
//! It is written to be obviously right, not fast: every query scans the whole log. The
//! limiters must match it exactly, watermarks included: the removal floor (raised by a sweep
//! at `now` to `min(now, observed time) - D`, the observed time being the lower quartile of
//! the last 256 key creations' `now`s at or above the floor, recounted at each of the first 64
//! and every 64th after), each tracked key's watermark fixed when it was created, and the
//! tombstones of keys removed while fresh only above the floor.
//!
//! The automatic sweep is the limiters' due queue, in the one shard the checked limiters run
//! with: from the key that brings the map to the floor on, every created key joins the queue,
//! due one window plus D later; the call that arms the queue, and from then on every creating
//! call whose creation count is a multiple of the shard's stride (its keys / 8 rounded down to
//! a power of two, 1 to 8), raises the floor and looks at up to 64 keys due by the floor plus
//! D, removing those fresh by the floor and queueing the others again.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::Hash;

use slidelimit::keyed::floor;
use slidelimit::{Options, Status};

/// `u64::MAX` and `u64::MAX - 1` are treated as this tick (the limiters' `MAX_TICK`).
pub const MAX_TICK: u64 = slidelimit::window::MAX_TICK;

/// The tick a limiter actually stores and decides on for a timestamp.
pub fn clamp(tick: u64) -> u64 {
    tick.min(MAX_TICK)
}

/// Whether a hit at `s` is live for a query at `now` (both already clamped): `s + W > now`.
pub fn is_live(s: u64, window_ticks: u64, now: u64) -> bool {
    s.saturating_add(window_ticks) > now
}

/// A model limiter's configuration, mirrored into [`Options`] for the real ones.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub max_requests: u64,
    pub window_ticks: u64,
    /// `None`: the default lateness, one window.
    pub lateness_ticks: Option<u64>,
    /// `usize::MAX`: no automatic sweep. The model has one due queue, so the limiters it
    /// checks run with one key shard.
    pub sweep_floor_keys: usize,
}

impl Config {
    pub fn options(&self) -> Options {
        let options = Options::default()
            .sweep_floor_keys(self.sweep_floor_keys)
            .key_shards(1);
        match self.lateness_ticks {
            Some(ticks) => options.lateness_ticks(ticks),
            None => options,
        }
    }

    pub fn limit(&self) -> slidelimit::Limit {
        crate::variants::limit(self.max_requests, self.window_ticks)
    }
}

/// A key and when it is due for a look, ordered by that tick alone, soonest first.
#[derive(Clone, Debug)]
pub struct Due<K> {
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

/// The due queue as the limiters keep it: new keys in a FIFO, the rest in a heap.
#[derive(Clone, Debug)]
pub struct Queue<K> {
    fresh: VecDeque<Due<K>>,
    heap: BinaryHeap<Due<K>>,
}

/// The model limiter.
#[derive(Clone, Debug)]
pub struct Reference<K> {
    config: Config,
    /// The due queue: keys by the tick at which each is due for a look (a heap, soonest
    /// first, as the limiters keep it); `None` until the map first reaches the floor.
    queue: Option<Queue<K>>,
    /// Tracked keys and every hit recorded for them since they were (re)created, clamped.
    logs: HashMap<K, Vec<u64>>,
    /// Each tracked key's removal watermark, fixed when its state was created.
    watermarks: HashMap<K, u64>,
    /// Removed keys' watermarks above the floor.
    tombstones: HashMap<K, u64>,
    /// The removal floor.
    floor: u64,
    /// The clamped `now`s of the last 256 key creations at or above the floor (with one
    /// shard, the limiters' observed clock records every such creation).
    creations: VecDeque<u64>,
    /// How many creations `creations` has recorded, ever.
    samples_taken: usize,
    /// The observed time: the lower quartile of `creations` at the last recount.
    observed: Option<u64>,
    /// Keys ever created, as the limiters' `schedule::steps_at` counts them.
    created: usize,
}

impl<K: Hash + Eq + Clone> Reference<K> {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            queue: None,
            logs: HashMap::new(),
            watermarks: HashMap::new(),
            tombstones: HashMap::new(),
            floor: 0,
            creations: VecDeque::new(),
            samples_taken: 0,
            observed: None,
            created: 0,
        }
    }

    pub fn config(&self) -> Config {
        self.config
    }

    /// The live hits of `key` at `now`, newest first.
    fn live_hits(&self, key: &K, now: u64) -> Vec<u64> {
        let now = clamp(now);
        let mut live: Vec<u64> = self
            .logs
            .get(key)
            .map(|log| {
                log.iter()
                    .copied()
                    .filter(|&s| is_live(s, self.config.window_ticks, now))
                    .collect()
            })
            .unwrap_or_default();
        live.sort_unstable_by(|a, b| b.cmp(a));
        live
    }

    /// What the key's window holds at `now`, ignoring watermarks. The exact log keeps the
    /// `max_requests` newest hits, so the count it reports saturates at `max_requests`;
    /// retry-after is when the `max_requests`-th newest live hit leaves the window.
    pub fn window_status(&self, key: &K, now: u64) -> Status {
        let max = self.config.max_requests;
        let live = self.live_hits(key, now);
        let count = (live.len() as u64).min(max);
        let retry_after_ticks = if count < max {
            0
        } else {
            let kth_newest = live[usize::try_from(max - 1).unwrap()];
            kth_newest.saturating_add(self.config.window_ticks) - clamp(now)
        };
        Status {
            count,
            remaining: max - count,
            retry_after_ticks,
        }
    }

    /// The key's removal watermark: the one its state was created with, or for a key with no
    /// state, the one it would be created with now (its tombstone and the floor).
    pub fn watermark(&self, key: &K) -> u64 {
        match self.watermarks.get(key) {
            Some(&watermark) => watermark,
            None => self
                .floor
                .max(self.tombstones.get(key).copied().unwrap_or(0)),
        }
    }

    /// The removal floor.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The status a limiter reports: nothing remains below the watermark (compared with the
    /// raw `now`, as the limiters do).
    pub fn status(&self, key: &K, now: u64) -> Status {
        let status = self.window_status(key, now);
        let watermark = self.watermark(key);
        if now < watermark {
            Status {
                remaining: 0,
                retry_after_ticks: status.retry_after_ticks.max(watermark - now),
                ..status
            }
        } else {
            status
        }
    }

    /// The model's `allowed`.
    pub fn allowed(&self, key: &K, now: u64) -> bool {
        self.status(key, now).remaining > 0
    }

    /// The model's `hit`: always records.
    pub fn hit(&mut self, key: &K, now: u64) {
        self.record(key, now, true);
    }

    /// The model's `check_and_hit`.
    pub fn check_and_hit(&mut self, key: &K, now: u64) -> bool {
        let admitted = self.allowed(key, now);
        self.record(key, now, admitted);
        admitted
    }

    /// A call that creates the key's state if missing (`hit`, `check_and_hit`), recording a
    /// hit at `now` if `recorded`; then the automatic sweep if this call inserted the key and
    /// the map reached its trigger, with this call's `now`.
    pub fn record(&mut self, key: &K, now: u64, recorded: bool) {
        let inserted = !self.logs.contains_key(key);
        if inserted {
            let watermark = self.watermark(key);
            self.watermarks.insert(key.clone(), watermark);
            self.observe(now);
        }
        let log = self.logs.entry(key.clone()).or_default();
        if recorded {
            log.push(clamp(now));
        }
        if !inserted {
            return;
        }
        let floor_keys = self.config.sweep_floor_keys;
        let due = clamp(now).saturating_add(self.recheck());
        let created_before = self.created;
        self.created += 1;
        match &mut self.queue {
            Some(queue) => {
                queue.fresh.push_back(Due {
                    due,
                    key: key.clone(),
                });
                // An armed shard steps at the creations whose count is a multiple of its
                // stride: its keys / 8 rounded down to a power of two, from 1 to 8.
                let stride = 1_usize << (self.logs.len() / 8).clamp(1, 8).ilog2();
                if created_before % stride != 0 {
                    return;
                }
            }
            None if self.logs.len() >= floor_keys => {
                // Armed: every key held joins, due now, in the limiters' arming order.
                let mut held: Vec<K> = self.logs.keys().cloned().collect();
                held.sort_by_cached_key(|key| slidelimit::keyed::arming_rank(key));
                let mut heap = BinaryHeap::new();
                heap.extend(held.into_iter().map(|key| Due {
                    due: clamp(now),
                    key,
                }));
                self.queue = Some(Queue {
                    fresh: VecDeque::new(),
                    heap,
                });
            }
            None => return,
        }
        if self.logs.len() >= floor_keys {
            self.sweep_step(now);
        }
    }

    fn lateness(&self) -> u64 {
        self.config
            .lateness_ticks
            .unwrap_or(self.config.window_ticks)
    }

    /// One window plus D: how long after its creation, or a look that found it live, a key
    /// is due for a look.
    fn recheck(&self) -> u64 {
        self.config.window_ticks.saturating_add(self.lateness())
    }

    /// Records a creation at `now` in the observed clock, unless it lies below the floor.
    fn observe(&mut self, now: u64) {
        if now < self.floor {
            return;
        }
        if self.creations.len() == floor::OBSERVED_SAMPLES {
            self.creations.pop_front();
        }
        self.creations.push_back(clamp(now));
        let index = self.samples_taken;
        self.samples_taken += 1;
        if floor::recounts_at(index) {
            let mut sorted: Vec<u64> = self.creations.iter().copied().collect();
            sorted.sort_unstable();
            // The latest tick that three quarters of the samples reached.
            self.observed = Some(sorted[floor::quartile_rank(sorted.len())]);
        }
    }

    /// Raises the floor for a sweep at `now` by the observed time (not at all if no key was
    /// ever created) and returns it.
    fn raise_floor(&mut self, now: u64) -> u64 {
        if let Some(observed) = self.observed {
            self.floor = self
                .floor
                .max(clamp(now).min(observed).saturating_sub(self.lateness()));
        }
        self.floor
    }

    /// One step of the automatic sweep, by a creating call at `now`: its raise of the floor
    /// follows the observed time alone, whatever the stepping call's `now`.
    fn sweep_step(&mut self, _now: u64) {
        let floor = self.raise_floor(u64::MAX);
        let trusted = floor.saturating_add(self.lateness()).min(MAX_TICK);
        let again = trusted.saturating_add(self.recheck() / 2);
        let far_ahead = trusted.saturating_add(self.recheck().saturating_mul(2));
        let mut queue = self.queue.take().expect("armed");
        // Keys found live go back once the step's takes are done, as the limiters put them.
        let mut live = Vec::new();
        // At most 64 looks a step: eight per creation, a step every eighth.
        for _ in 0..64 {
            let fresh_first = queue.fresh.front().map(|first| first.due);
            if fresh_first.is_some_and(|due| due > far_ahead) {
                // A far-future call's key leaves the FIFO for the heap (one look).
                let far = queue.fresh.pop_front().expect("a front");
                queue.heap.push(far);
                continue;
            }
            let heap_first = queue.heap.peek().map(|first| first.due);
            let from_fresh = match (fresh_first, heap_first) {
                (Some(fresh), Some(heap)) => fresh <= heap,
                (fresh, _) => fresh.is_some(),
            };
            let first = if from_fresh { fresh_first } else { heap_first };
            if first.is_none_or(|due| due > trusted) {
                break;
            }
            let Due { key, .. } = if from_fresh {
                queue.fresh.pop_front()
            } else {
                queue.heap.pop()
            }
            .expect("a first");
            // The tick from which a key found live may be removed, by its state or tombstone.
            let idle_from = if let Some(log) = self.logs.get(&key) {
                let idle_from = self.idle_from(log);
                if idle_from <= floor {
                    self.logs.remove(&key);
                    self.watermarks.remove(&key);
                    continue;
                }
                idle_from
            } else if let Some(&tombstone) = self.tombstones.get(&key) {
                if tombstone <= floor {
                    self.tombstones.remove(&key);
                    continue;
                }
                tombstone
            } else {
                continue;
            };
            let due = idle_from.saturating_add(self.lateness());
            let due = if due > trusted { due } else { again };
            live.push(Due { due, key });
        }
        for due in live {
            queue.heap.push(due);
        }
        self.queue = Some(queue);
    }

    /// The first tick from which this log answers every call as an empty one would.
    fn idle_from(&self, log: &[u64]) -> u64 {
        log.iter()
            .max()
            .map_or(0, |&newest| newest.saturating_add(self.config.window_ticks))
    }

    /// A sweep at `now` (`remove_idle`, or the automatic one): raises the floor to
    /// `min(now, observed) - D`, drops the tombstones at or below it, removes every key whose
    /// log is fresh from some tick `f <= now - D`, leaving a tombstone at `f` if `f` is above
    /// the floor.
    pub fn sweep(&mut self, now: u64) -> usize {
        let lateness = self.lateness();
        let floor = self.raise_floor(now);
        self.tombstones.retain(|_, idle_from| *idle_from > floor);
        let horizon = clamp(now).saturating_sub(lateness);
        let idle: Vec<(K, u64)> = self
            .logs
            .iter()
            .map(|(key, log)| (key.clone(), self.idle_from(log)))
            .filter(|&(_, idle_from)| idle_from <= horizon)
            .collect();
        for (key, idle_from) in &idle {
            self.logs.remove(key);
            self.watermarks.remove(key);
            if *idle_from > floor {
                let tombstone = self.tombstones.entry(key.clone()).or_insert(0);
                *tombstone = (*tombstone).max(*idle_from);
            }
        }
        if !idle.is_empty() {
            if let Some(queue) = &mut self.queue {
                // The queue forgets the keys removed, unless a tombstone of theirs waits.
                let tracked = |entry: &Due<K>| {
                    self.logs.contains_key(&entry.key) || self.tombstones.contains_key(&entry.key)
                };
                queue.fresh.retain(tracked);
                queue.heap.retain(tracked);
            }
        }
        idle.len()
    }

    pub fn tracked_keys(&self) -> usize {
        self.logs.len()
    }
}

#[test]
fn model_reproduces_the_seed_example() {
    let mut model = Reference::new(Config {
        max_requests: 3,
        window_ticks: 10,
        lateness_ticks: None,
        sweep_floor_keys: usize::MAX,
    });
    let user = "user_1";
    model.hit(&user, 1);
    model.hit(&user, 2);
    assert!(model.allowed(&user, 3));
    model.hit(&user, 3);
    assert!(!model.allowed(&user, 4));
    assert!(model.allowed(&user, 12));
    assert_eq!(model.status(&user, 4).retry_after_ticks, 7);
    assert_eq!(model.sweep(22), 0, "fresh from 13, above the horizon 12");
    assert_eq!(model.sweep(23), 1);
    assert_eq!(
        model.floor(),
        0,
        "observed time 1, the key's creation, minus D"
    );
    assert_eq!(model.watermark(&user), 13, "its tombstone");
    assert!(!model.allowed(&user, 12), "below the watermark");
    assert!(model.allowed(&"stranger", 0), "not below the floor");
}

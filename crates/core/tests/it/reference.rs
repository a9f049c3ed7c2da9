//! The reference model: a plain log of every recorded hit per key, plus the key policy of
//! design.md section 6 (which keys are tracked, when the automatic sweep runs, what it
//! removes, which watermark each removal leaves).
//!
//! It is written to be obviously right, not fast: every query scans the whole log. Its
//! watermarks are per key; the limiters keep them per key *hash* in a 1024-slot table, so
//! a limiter's watermark for a key is at least the model's and always a value that some
//! removal raised (the model keeps every such value in [`Reference::raised_watermarks`]).

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

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
    /// `usize::MAX`: no automatic sweep.
    pub sweep_floor_keys: usize,
}

impl Config {
    pub fn options(&self) -> Options {
        let options = Options::default().sweep_floor_keys(self.sweep_floor_keys);
        match self.lateness_ticks {
            Some(ticks) => options.lateness_ticks(ticks),
            None => options,
        }
    }

    pub fn limit(&self) -> slidelimit::Limit {
        crate::variants::limit(self.max_requests, self.window_ticks)
    }
}

/// The model limiter.
#[derive(Clone, Debug)]
pub struct Reference<K> {
    config: Config,
    /// The sweep trigger: the key count at which the next automatic sweep runs.
    next_sweep_at: usize,
    /// Tracked keys and every hit recorded for them since they were (re)created, clamped.
    logs: HashMap<K, Vec<u64>>,
    /// Each key's own removal watermark.
    watermarks: HashMap<K, u64>,
    /// Every value a removal has raised some watermark to.
    raised: BTreeSet<u64>,
}

impl<K: Hash + Eq + Clone> Reference<K> {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            next_sweep_at: config.sweep_floor_keys,
            logs: HashMap::new(),
            watermarks: HashMap::new(),
            raised: BTreeSet::new(),
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

    /// The key's own removal watermark (0 if it was never removed).
    pub fn watermark(&self, key: &K) -> u64 {
        self.watermarks.get(key).copied().unwrap_or(0)
    }

    /// Every value a removal raised some key's watermark to.
    pub fn raised_watermarks(&self) -> &BTreeSet<u64> {
        &self.raised
    }

    /// The status a limiter without watermark collisions reports: nothing remains below the
    /// watermark (compared with the raw `now`, as the limiters do).
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
        let log = self.logs.entry(key.clone()).or_default();
        if recorded {
            log.push(clamp(now));
        }
        if inserted && self.next_sweep_at != usize::MAX && self.logs.len() >= self.next_sweep_at {
            self.sweep(now);
            self.next_sweep_at = self
                .logs
                .len()
                .saturating_mul(2)
                .max(self.config.sweep_floor_keys);
        }
    }

    /// The first tick from which this log answers every call as an empty one would.
    fn fresh_from(&self, log: &[u64]) -> u64 {
        log.iter()
            .max()
            .map_or(0, |&newest| newest.saturating_add(self.config.window_ticks))
    }

    /// A sweep at `now` (`remove_idle`, or the automatic one): removes every key whose log is
    /// fresh from some tick `f <= now - D` and raises its watermark to `f`.
    pub fn sweep(&mut self, now: u64) -> usize {
        let lateness = self
            .config
            .lateness_ticks
            .unwrap_or(self.config.window_ticks);
        let horizon = clamp(now).saturating_sub(lateness);
        let idle: Vec<(K, u64)> = self
            .logs
            .iter()
            .map(|(key, log)| (key.clone(), self.fresh_from(log)))
            .filter(|&(_, fresh_from)| fresh_from <= horizon)
            .collect();
        for (key, fresh_from) in &idle {
            self.logs.remove(key);
            let watermark = self.watermarks.entry(key.clone()).or_insert(0);
            *watermark = (*watermark).max(*fresh_from);
            self.raised.insert(*fresh_from);
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
    assert_eq!(model.watermark(&user), 13);
    assert!(!model.allowed(&user, 12), "below the watermark");
}

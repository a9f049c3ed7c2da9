//! The window check over a log of admissions: per key, the most weight admitted in any window
//! of `W` ticks, the window where that happened, and every window above the limit `N`.
//!
//! This is the property every limiter in the project promises (never more than `N` admitted in
//! any window of length `W`, per key), checked once here for the stress tests, the Redis
//! tests, the CLI's reports and the comparison tools.
//!
//! # Windows
//! The project's rule: a hit at `s` is live at `t` iff `s + W > t`, with a saturating add, so
//! nothing wraps near `u64::MAX`. The window ending at `t` therefore holds the hits at ticks
//! `t - W + 1 ..= t` (the half-open `(t - W, t]`). Its content changes only at a hit's tick,
//! so the heaviest window ends at some hit: the check sorts each key's hits and slides the
//! window's start behind its end, `O(h log h)` for `h` hits. It counts, for each distinct
//! tick holding a hit, the window ending there.
//!
//! A hit at `u64::MAX` would, by the saturating rule, be live nowhere, not even at its own
//! tick; the audit reads every tick above `u64::MAX - 1` as `u64::MAX - 1` so that no hit
//! escapes it. [`Audit::clamp_ticks_to`] lowers that bound to the limiter's own
//! (`slidelimit::raw::MAX_TICK`), which records later ticks at it.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::Hash;

/// The highest tick the audit keeps apart: above it, the saturating rule would drop a hit from
/// its own window.
const HIGHEST_TICK: u64 = u64::MAX - 1;

/// Why an audit cannot be set up.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// A window of no ticks holds nothing, so there would be nothing to check.
    #[error("a window must last at least one tick")]
    ZeroWindow,
}

/// The rule to check: at most `limit` weight admitted per key in any window of
/// `window_ticks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Audit {
    limit: u64,
    window_ticks: u64,
    max_tick: u64,
    from: u64,
}

impl Audit {
    /// Checks for at most `limit` weight per key in any window of `window_ticks`.
    ///
    /// # Errors
    /// [`AuditError::ZeroWindow`] when `window_ticks` is 0.
    pub const fn new(limit: u64, window_ticks: u64) -> Result<Self, AuditError> {
        if window_ticks == 0 {
            return Err(AuditError::ZeroWindow);
        }
        Ok(Self {
            limit,
            window_ticks,
            max_tick: HIGHEST_TICK,
            from: 0,
        })
    }

    /// Reads ticks above `max_tick` as `max_tick`, the way a limiter that records later ticks
    /// at `max_tick` counts them (bounded by `u64::MAX - 1`, see the module's docs).
    #[must_use]
    pub const fn clamp_ticks_to(mut self, max_tick: u64) -> Self {
        self.max_tick = if max_tick < HIGHEST_TICK {
            max_tick
        } else {
            HIGHEST_TICK
        };
        self
    }

    /// Judges only the windows that end at a hit at or after `tick` (earlier hits still
    /// count in them), that is the windows holding a hit admitted from `tick` on: what was
    /// admitted after a change of limit, or across a restore. (A window ending at `tick`
    /// with no hit there holds only earlier hits, which the limit before `tick` judged.)
    #[must_use]
    pub const fn windows_ending_from(mut self, tick: u64) -> Self {
        self.from = tick;
        self
    }

    /// The most weight a window may hold.
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// The window's length in ticks.
    #[must_use]
    pub const fn window_ticks(&self) -> u64 {
        self.window_ticks
    }

    /// Audits one key's admissions, `(tick, weight)` in any order.
    pub fn key(&self, hits: impl IntoIterator<Item = (u64, u64)>) -> KeyReport {
        let mut hits: Vec<(u64, u64)> = hits
            .into_iter()
            .map(|(tick, weight)| (tick.min(self.max_tick), weight))
            .collect();
        hits.sort_unstable_by_key(|&(tick, _)| tick);
        self.sorted(&hits)
    }

    /// Audits admissions of many keys, `(key, tick, weight)` in any order.
    pub fn keys<K: Hash + Eq>(&self, hits: impl IntoIterator<Item = (K, u64, u64)>) -> Report<K> {
        let mut by_key: HashMap<K, Vec<(u64, u64)>> = HashMap::new();
        for (key, tick, weight) in hits {
            by_key
                .entry(key)
                .or_default()
                .push((tick.min(self.max_tick), weight));
        }
        let per_key = by_key
            .into_iter()
            .map(|(key, mut hits)| {
                hits.sort_unstable_by_key(|&(tick, _)| tick);
                (key, self.sorted(&hits))
            })
            .collect();
        Report {
            limit: self.limit,
            per_key,
        }
    }

    /// A running peak for one key's hits given in time order, keeping one window of them.
    #[must_use]
    pub fn running(&self) -> RunningPeak {
        RunningPeak {
            audit: *self,
            window: VecDeque::new(),
            inside: 0,
            latest: 0,
            best: 0,
        }
    }

    /// The sweep over one key's hits, clamped and sorted by tick.
    fn sorted(&self, hits: &[(u64, u64)]) -> KeyReport {
        let mut report = KeyReport {
            limit: self.limit,
            hits: hits.len() as u64,
            weight: saturate(hits.iter().map(|&(_, w)| u128::from(w)).sum()),
            worst: None,
            over_limit_windows: 0,
            first_violation: None,
        };
        // u128: a sum of u64 weights cannot overflow it for any log that fits in memory.
        let (mut start, mut end, mut inside, mut inside_hits) = (0, 0, 0u128, 0u64);
        while end < hits.len() {
            // Every hit at this tick belongs to the window ending at it.
            let last_tick = hits[end].0;
            while end < hits.len() && hits[end].0 == last_tick {
                inside += u128::from(hits[end].1);
                inside_hits += 1;
                end += 1;
            }
            // Stops at the hits at `last_tick` at the latest: ticks are at most u64::MAX - 1
            // and the window at least one tick, so `last_tick + W > last_tick`.
            while hits[start].0.saturating_add(self.window_ticks) <= last_tick {
                inside -= u128::from(hits[start].1);
                inside_hits -= 1;
                start += 1;
            }
            if last_tick < self.from {
                continue;
            }
            let window = Window {
                first_tick: last_tick.saturating_sub(self.window_ticks - 1),
                last_tick,
                weight: saturate(inside),
                hits: inside_hits,
            };
            if report
                .worst
                .is_none_or(|worst| window.weight > worst.weight)
            {
                report.worst = Some(window);
            }
            if inside > u128::from(self.limit) {
                report.over_limit_windows += 1;
                report.first_violation.get_or_insert(window);
            }
        }
        report
    }
}

fn saturate(weight: u128) -> u64 {
    u64::try_from(weight).unwrap_or(u64::MAX)
}

/// One window: the hits at ticks `first_tick..=last_tick`, i.e. `(last_tick - W, last_tick]`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The earliest tick inside (`last_tick - W + 1`, or 0).
    pub first_tick: u64,
    /// The tick the window ends at, inclusive: always a tick holding a hit.
    pub last_tick: u64,
    /// The weight admitted inside (saturating at `u64::MAX`).
    pub weight: u64,
    /// The number of hits inside.
    pub hits: u64,
}

/// What the audit found for one key.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyReport {
    /// The limit audited against.
    pub limit: u64,
    /// The key's hits.
    pub hits: u64,
    /// Their total weight (saturating at `u64::MAX`).
    pub weight: u64,
    /// The window holding the most weight, the earliest of equals; `None` without hits (or
    /// with none at or after [`Audit::windows_ending_from`]).
    pub worst: Option<Window>,
    /// How many windows (one per distinct tick holding a hit) hold more than the limit.
    pub over_limit_windows: u64,
    /// The earliest window holding more than the limit.
    pub first_violation: Option<Window>,
}

impl KeyReport {
    /// The most weight in any one window: the worst window's.
    #[must_use]
    pub fn peak(&self) -> u64 {
        self.worst.map_or(0, |worst| worst.weight)
    }

    /// Whether no window holds more than the limit.
    #[must_use]
    pub const fn within_limit(&self) -> bool {
        self.first_violation.is_none()
    }

    /// The first window above the limit, as an error.
    ///
    /// # Errors
    /// [`OverLimit`] with the earliest window that holds more than the limit.
    pub fn check(&self) -> Result<(), OverLimit> {
        match self.first_violation {
            None => Ok(()),
            Some(window) => Err(OverLimit {
                limit: self.limit,
                window,
            }),
        }
    }
}

/// What the audit found for every key.
#[derive(Clone, Debug)]
pub struct Report<K> {
    limit: u64,
    per_key: HashMap<K, KeyReport>,
}

impl<K: Hash + Eq> Report<K> {
    /// Each key's report.
    #[must_use]
    pub const fn per_key(&self) -> &HashMap<K, KeyReport> {
        &self.per_key
    }

    /// Each key's report, to keep.
    #[must_use]
    pub fn into_per_key(self) -> HashMap<K, KeyReport> {
        self.per_key
    }

    /// The most weight any key had in one window.
    #[must_use]
    pub fn peak(&self) -> u64 {
        self.per_key
            .values()
            .map(KeyReport::peak)
            .max()
            .unwrap_or(0)
    }

    /// The heaviest window of all keys and its key (of equals, any one).
    #[must_use]
    pub fn worst(&self) -> Option<(&K, Window)> {
        self.per_key
            .iter()
            .filter_map(|(key, report)| report.worst.map(|worst| (key, worst)))
            .max_by_key(|(_, worst)| worst.weight)
    }

    /// How many windows of all keys hold more than the limit.
    #[must_use]
    pub fn over_limit_windows(&self) -> u64 {
        self.per_key.values().map(|r| r.over_limit_windows).sum()
    }

    /// The violation that ends earliest, and its key (of equal ends, any one).
    #[must_use]
    pub fn first_violation(&self) -> Option<(&K, Window)> {
        self.per_key
            .iter()
            .filter_map(|(key, report)| report.first_violation.map(|window| (key, window)))
            .min_by_key(|(_, window)| window.last_tick)
    }

    /// The earliest window above the limit, with its key, as an error.
    ///
    /// # Errors
    /// [`KeyOverLimit`] naming the key and the window of [`Report::first_violation`].
    pub fn check(&self) -> Result<(), KeyOverLimit<K>>
    where
        K: Clone + Debug,
    {
        match self.first_violation() {
            None => Ok(()),
            Some((key, window)) => Err(KeyOverLimit {
                key: key.clone(),
                over: OverLimit {
                    limit: self.limit,
                    window,
                },
            }),
        }
    }
}

/// A window that holds more than the limit.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} admitted ({} hits) in the window of ticks {}..={}, above the limit of {limit}",
    window.weight,
    window.hits,
    window.first_tick,
    window.last_tick
)]
pub struct OverLimit {
    /// The limit audited against.
    pub limit: u64,
    /// The window above it.
    pub window: Window,
}

/// A window of one key that holds more than the limit.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key {key:?}: {over}")]
pub struct KeyOverLimit<K: Debug> {
    /// The key.
    pub key: K,
    /// Its window above the limit.
    pub over: OverLimit,
}

/// The peak of one key's hits given in time order, as they come, keeping one window of them
/// (for workloads too long to log). Made by [`Audit::running`].
#[derive(Clone, Debug)]
pub struct RunningPeak {
    audit: Audit,
    window: VecDeque<(u64, u64)>,
    inside: u128,
    latest: u64,
    best: u64,
}

impl RunningPeak {
    /// Adds a hit of `weight` at `tick`. A tick earlier than one already given is read as the
    /// latest given, which keeps the hit in the window longer: the peak may be overstated,
    /// never understated.
    pub fn push(&mut self, tick: u64, weight: u64) {
        let tick = tick.min(self.audit.max_tick).max(self.latest);
        self.latest = tick;
        while let Some(&(first, w)) = self.window.front() {
            if first.saturating_add(self.audit.window_ticks) > tick {
                break;
            }
            self.inside -= u128::from(w);
            self.window.pop_front();
        }
        self.window.push_back((tick, weight));
        self.inside += u128::from(weight);
        if tick >= self.audit.from {
            self.best = self.best.max(saturate(self.inside));
        }
    }

    /// The most weight in one window so far.
    #[must_use]
    pub const fn peak(&self) -> u64 {
        self.best
    }
}

#[cfg(test)]
mod tests;

//! The peak window count: the most weight admitted for one key in any window `(t - W, t]`,
//! which a sliding-window limiter must keep at or below `N`.
//!
//! The content of a window only changes at a hit's tick, so the peak is reached by a window
//! that ends at some hit: sorting the hits and sliding the window's start behind its end gives
//! it in one pass. [`peak`] takes hits in any order; [`RunningPeak`] takes them in time order
//! as they come, without keeping more than one window of them.

use std::collections::VecDeque;

// The latest tick a limiter records (it treats `u64::MAX` and `u64::MAX - 1` as this), so
// the peak clamps ticks the way the limiters do.
use slidelimit::raw::MAX_TICK;

/// The most weight that `hits` (`(tick, weight)`, any order) put in one window of
/// `window_ticks`. Sorts `hits`.
pub fn peak(hits: &mut [(u64, u64)], window_ticks: u64) -> u64 {
    for hit in hits.iter_mut() {
        hit.0 = hit.0.min(MAX_TICK);
    }
    hits.sort_unstable();
    let mut start = 0;
    let mut in_window = 0u64;
    let mut best = 0;
    for end in 0..hits.len() {
        let (now, weight) = hits[end];
        in_window += weight;
        // A hit at `s` is in the window of `now` while `s + W > now` (saturating: nothing
        // wraps near u64::MAX), the limiter's own rule.
        while hits[start].0.saturating_add(window_ticks) <= now {
            in_window -= hits[start].1;
            start += 1;
        }
        best = best.max(in_window);
    }
    best
}

/// The peak of hits that arrive in non-decreasing time order, one window kept at a time.
#[derive(Debug, Default)]
pub struct RunningPeak {
    window: VecDeque<(u64, u64)>,
    in_window: u64,
    best: u64,
}

impl RunningPeak {
    /// Adds a hit at `now` (no earlier than the hits before it) of `weight`.
    pub fn push(&mut self, now: u64, weight: u64, window_ticks: u64) {
        let now = now.min(MAX_TICK);
        while let Some(&(tick, w)) = self.window.front() {
            if tick.saturating_add(window_ticks) > now {
                break;
            }
            self.in_window -= w;
            self.window.pop_front();
        }
        self.window.push_back((now, weight));
        self.in_window += weight;
        self.best = self.best.max(self.in_window);
    }

    /// The peak so far.
    #[must_use]
    pub const fn get(&self) -> u64 {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slidelimit_bench::rng::SplitMix64;

    #[test]
    fn a_window_is_half_open() {
        // W = 10: hits at 0 and 10 are never in one window, 1 and 10 are.
        assert_eq!(peak(&mut [(0, 1), (10, 1)], 10), 1);
        assert_eq!(peak(&mut [(1, 1), (10, 1)], 10), 2);
        assert_eq!(peak(&mut [(10, 1), (1, 1), (5, 1), (25, 1)], 10), 3);
        assert_eq!(peak(&mut [], 10), 0);
    }

    #[test]
    fn weights_add_up_and_nothing_wraps() {
        assert_eq!(peak(&mut [(3, 4), (3, 2), (20, 5)], 10), 6);
        assert_eq!(peak(&mut [(u64::MAX - 1, 1), (u64::MAX, 1)], 5), 2);
        assert_eq!(peak(&mut [(u64::MAX, 1)], 1), 1);
    }

    #[test]
    fn the_running_peak_agrees_with_the_sorted_pass() {
        let mut rng = SplitMix64::new(9);
        for _ in 0..200 {
            let window = 1 + rng.below(20);
            let mut now = 0;
            let mut hits = Vec::new();
            let mut running = RunningPeak::default();
            for _ in 0..rng.below(40) {
                now += rng.below(6);
                let weight = 1 + rng.below(3);
                hits.push((now, weight));
                running.push(now, weight, window);
            }
            // By brute force: every window ending at a hit.
            let brute = hits
                .iter()
                .map(|&(end, _)| {
                    hits.iter()
                        .filter(|&&(s, _)| s <= end && s + window > end)
                        .map(|&(_, w)| w)
                        .sum::<u64>()
                })
                .max()
                .unwrap_or(0);
            hits.reverse();
            assert_eq!(peak(&mut hits, window), brute);
            assert_eq!(running.get(), brute);
        }
    }
}

//! The pools compared: for each bucket budget, thresholds for A, B and AB chosen as strict as
//! the budget allows (the smallest `τ` and `k` whose exact bucket bound fits in it).

use serde::Serialize;
use slidelimit::pool::{bucket_bound, PoolGeometry, PoolMode};

/// How a budget is spent: all of it on time-closed buckets (A), all on count-closed ones (B),
/// or a share of it on each (AB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Relaxation A alone: the smallest `τ` whose bound fits.
    TimeOnly,
    /// Relaxation AB with about `percent` % of the budget closed by time, the rest by count.
    Split { percent: u64 },
    /// Relaxation B alone: the smallest `k` whose bound fits.
    CountOnly,
}

/// The strategies, from time-strict to key-strict.
pub const STRATEGIES: [Strategy; 5] = [
    Strategy::TimeOnly,
    Strategy::Split { percent: 75 },
    Strategy::Split { percent: 50 },
    Strategy::Split { percent: 25 },
    Strategy::CountOnly,
];

impl Strategy {
    /// The name in tables and plots.
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Self::TimeOnly => "A".to_owned(),
            Self::Split { percent } => format!("AB-t{percent}"),
            Self::CountOnly => "B".to_owned(),
        }
    }
}

/// One pool configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// `"exact"`, `"A"`, `"AB-t75"`, … .
    pub strategy: String,
    /// The budget it was chosen for (`None` for the exact pool).
    pub budget: Option<u64>,
    /// The time threshold `τ` in ticks (how long a bucket takes uses; A's slack).
    pub threshold_ticks: Option<u64>,
    /// The key threshold `k` (uses per bucket; B's slack), `L` for A, 1 for exact.
    pub key_threshold: u64,
    /// The exact bucket bound of these thresholds (`slidelimit::pool::bucket_bound`).
    pub bucket_bound: u64,
    /// `KeyPool::ledger().ledger_bytes()` of a lock-free pool built with them.
    pub ledger_bytes: usize,
    #[serde(skip)]
    pub mode: PoolMode,
}

/// The smallest `τ ≥ 1` with `bucket_bound(L, T, Some(τ), k) ≤ budget`, if `τ = T` (where
/// at most one bucket closes by time within a cooldown) is already enough. The bound does not
/// grow with `τ`, so a binary search finds it.
#[must_use]
pub fn smallest_tau(total_uses: u64, cooldown: u64, k: u64, budget: u64) -> Option<u64> {
    let fits = |tau: u64| bucket_bound(total_uses, cooldown, Some(tau), k) <= budget;
    if !fits(cooldown) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, cooldown);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The mode a strategy gets from `budget` buckets, or `None` if no thresholds fit.
#[must_use]
pub fn choose(strategy: Strategy, total_uses: u64, cooldown: u64, budget: u64) -> Option<PoolMode> {
    match strategy {
        Strategy::TimeOnly => smallest_tau(total_uses, cooldown, total_uses, budget)
            .map(|threshold_ticks| PoolMode::TimeBound { threshold_ticks }),
        Strategy::CountOnly => (1..=total_uses)
            .find(|&k| bucket_bound(total_uses, cooldown, None, k) <= budget)
            .map(|key_threshold| PoolMode::CountBound { key_threshold }),
        Strategy::Split { percent } => {
            // Count-closed buckets get the rest of the budget; k follows from them, then τ
            // is as small as the remaining buckets allow (k grows if none is left).
            let count_buckets = ((budget * (100 - percent) + 50) / 100).max(1);
            let first_k = total_uses.div_ceil(count_buckets);
            (first_k..=total_uses).find_map(|key_threshold| {
                smallest_tau(total_uses, cooldown, key_threshold, budget).map(|threshold_ticks| {
                    PoolMode::Both {
                        threshold_ticks,
                        key_threshold,
                    }
                })
            })
        }
    }
}

/// Builds the row for `mode`, with its bound and the lock-free ledger's bytes.
///
/// # Panics
/// If `mode` is not a valid geometry for the pool (the callers only pass chosen ones).
#[must_use]
pub fn config(
    strategy: String,
    budget: Option<u64>,
    keys: usize,
    uses_per_key: u64,
    cooldown: u64,
    mode: PoolMode,
) -> Config {
    let pool = slidelimit::KeyPool::<u64>::new(0..keys as u64, uses_per_key, cooldown, mode)
        .expect("a chosen configuration is valid");
    let geometry: &PoolGeometry = pool.geometry();
    let (threshold_ticks, key_threshold) = super::replay::thresholds(mode, geometry.total_uses());
    Config {
        strategy,
        budget,
        threshold_ticks,
        key_threshold,
        bucket_bound: geometry.bucket_bound(),
        ledger_bytes: slidelimit::pool::UseLedger::ledger_bytes(pool.ledger()),
        mode,
    }
}

#[cfg(test)]
mod tests {
    use super::{choose, smallest_tau, Strategy, STRATEGIES};
    use slidelimit::pool::{bucket_bound, PoolMode};

    const L: u64 = 500;
    const T: u64 = 600_000;

    #[test]
    fn every_choice_fits_its_budget_and_is_as_strict_as_it_can_be() {
        for budget in [5, 10, 20, 40, 80] {
            for strategy in STRATEGIES {
                let mode = choose(strategy, L, T, budget).expect("every strategy fits");
                let (tau, k) = super::super::replay::thresholds(mode, L);
                assert!(
                    bucket_bound(L, T, tau, k) <= budget,
                    "{strategy:?} {budget}"
                );
                if let Some(tau) = tau.filter(|&t| t > 1) {
                    assert!(
                        bucket_bound(L, T, Some(tau - 1), k) > budget,
                        "τ not minimal"
                    );
                }
                if matches!(strategy, Strategy::CountOnly) && k > 1 {
                    assert!(bucket_bound(L, T, None, k - 1) > budget, "k not minimal");
                }
            }
        }
    }

    /// The seed's numbers: 10 buckets by time need τ just over T / 9 (`⌈(T - 1) / τ⌉ ≤ 9`),
    /// 10 by count need k = 50.
    #[test]
    fn seed_sized_budgets() {
        assert_eq!(smallest_tau(L, T, L, 10), Some(66_667));
        assert_eq!(
            choose(Strategy::CountOnly, L, T, 10),
            Some(PoolMode::CountBound { key_threshold: 50 })
        );
    }
}

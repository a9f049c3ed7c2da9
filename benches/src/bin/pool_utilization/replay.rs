//! One request stream replayed through one pool, each answer judged against the pool's own
//! grants: a refusal while fewer than `L` of them lie in `(now - T, now]` is a false negative.

use serde::Serialize;
use slidelimit::pool::{PoolGeometry, PoolMode};
use slidelimit::Refusal;

/// A mode's thresholds: the time threshold `τ` and the key threshold `k` (the core's own
/// reading of the mode).
#[must_use]
pub fn thresholds(mode: PoolMode, total_uses: u64) -> (Option<u64>, u64) {
    mode.thresholds(total_uses)
}

/// What one replay saw. Counts are over requests; "own grants" are the grants of this very
/// replay (so every mode is judged on its own history, not the exact pool's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub requests: u64,
    pub grants: u64,
    pub refusals: u64,
    /// Refusals while fewer than `L` own grants lay in `(now - T, now]`: a use was free.
    pub false_negatives: u64,
    /// The most uses truly free at any refusal (`L` minus own grants in `(now - T, now]`).
    pub worst_free_at_refusal: u64,
    /// Grants while `L` own grants already lay in `(now - T, now]`: must be 0.
    pub false_positives: u64,
    /// Refusals with `k` or more uses truly free (relaxation B's promise broken): must be 0.
    pub key_bound_violations: u64,
    /// Refusals with fewer than `L` own grants in `(now - T - τ, now]` (relaxation A's
    /// promise broken): must be 0.
    pub time_bound_violations: u64,
    /// Refusals other than `Exhausted` (`NoBucket`, `Late`): must be 0 with in-order ticks.
    pub other_refusals: u64,
}

impl Outcome {
    /// Promises broken: false positives, broken bounds and unexpected refusals.
    #[must_use]
    pub fn violations(&self) -> u64 {
        self.false_positives
            + self.key_bound_violations
            + self.time_bound_violations
            + self.other_refusals
    }

    /// Every promise kept: no false positive, no broken bound, no unexpected refusal.
    #[must_use]
    pub fn sound(&self) -> bool {
        self.violations() == 0
    }
}

/// Replays `ticks` (non-decreasing) through `take`, a pool built from `geometry`, and judges
/// each answer against the grants so far.
pub fn replay(
    geometry: &PoolGeometry,
    ticks: &[u64],
    mut take: impl FnMut(u64) -> Result<u64, Refusal>,
) -> Outcome {
    let total = geometry.total_uses();
    let cooldown = geometry.cooldown_ticks();
    let (tau, k) = thresholds(geometry.mode(), total);
    let mut grants: Vec<u64> = Vec::with_capacity(ticks.len());
    // First own grant inside `(now - T, now]`, and inside `(now - T - τ, now]`.
    let (mut in_cooldown, mut in_stretched) = (0usize, 0usize);
    let mut out = Outcome::default();
    for &now in ticks {
        out.requests += 1;
        // A grant at `t` is free again from `t + T`: it is held at `now` iff `t > now - T`.
        while in_cooldown < grants.len() && grants[in_cooldown] + cooldown <= now {
            in_cooldown += 1;
        }
        let held = (grants.len() - in_cooldown) as u64;
        match take(now) {
            Ok(_) => {
                out.grants += 1;
                out.false_positives += u64::from(held >= total);
                grants.push(now);
            }
            Err(refusal) => {
                out.refusals += 1;
                if refusal != Refusal::Exhausted {
                    out.other_refusals += 1;
                }
                let free = total - held.min(total);
                if free > 0 {
                    out.false_negatives += 1;
                    out.worst_free_at_refusal = out.worst_free_at_refusal.max(free);
                }
                out.key_bound_violations += u64::from(free >= k);
                if let Some(tau) = tau {
                    let span = cooldown + tau;
                    while in_stretched < grants.len() && grants[in_stretched] + span <= now {
                        in_stretched += 1;
                    }
                    let recent = (grants.len() - in_stretched) as u64;
                    out.time_bound_violations += u64::from(recent < total);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{replay, Outcome};
    use slidelimit::pool::{PoolGeometry, PoolMode, SequentialLedger};
    use slidelimit::Refusal;

    /// L = 2 uses (one key, two uses), T = 10 ticks, one bucket of k = 2.
    ///
    /// | tick | pool | own grants in (t - 10, t] | judged |
    /// |---|---|---|---|
    /// | 0 | grant (bucket opens) | none | – |
    /// | 5 | grant (bucket full, last use 5) | {0} | – |
    /// | 10 | refuse (bucket cools at 15) | {5}: 1 free | false negative, free 1 < k |
    /// | 12 | refuse | {5}: 1 free | false negative |
    /// | 15 | grant (bucket released) | {} | – |
    /// | 16 | grant | {15} | – |
    /// | 17 | refuse | {15, 16}: 0 free | a true refusal |
    #[test]
    fn hand_computed_count_bound() {
        let geometry = PoolGeometry::new(1, 2, 10, PoolMode::CountBound { key_threshold: 2 })
            .expect("valid geometry");
        let mut ledger = SequentialLedger::new(geometry);
        let out = replay(&geometry, &[0, 5, 10, 12, 15, 16, 17], |now| {
            ledger.take(now)
        });
        assert_eq!(
            out,
            Outcome {
                requests: 7,
                grants: 4,
                refusals: 3,
                false_negatives: 2,
                worst_free_at_refusal: 1,
                ..Outcome::default()
            }
        );
        assert!(out.sound());
    }

    /// The exact pool on the same ticks: no false negative, the refusal at 17 is true.
    #[test]
    fn exact_pool_has_no_false_negatives() {
        let geometry = PoolGeometry::new(1, 2, 10, PoolMode::Exact).expect("valid geometry");
        let mut ledger = SequentialLedger::new(geometry);
        let out = replay(&geometry, &[0, 5, 10, 12, 15, 16, 17], |now| {
            ledger.take(now)
        });
        // 0, 5 granted; 10 (0 cooled) granted; 12 refused (5, 10 held); 15 granted;
        // 16 refused (10, 15 held); 17 refused.
        assert_eq!((out.grants, out.refusals, out.false_negatives), (4, 3, 0));
        assert!(out.sound());
    }

    /// A scripted pool that breaks every promise once, so each counter is seen to count.
    #[test]
    fn broken_pool_is_caught() {
        let geometry = PoolGeometry::new(
            1,
            2,
            10,
            PoolMode::Both {
                threshold_ticks: 3,
                key_threshold: 1,
            },
        )
        .expect("valid geometry");
        let mut script = vec![
            Ok(0),                   // t = 0
            Ok(1),                   // t = 1
            Ok(2),                   // t = 2: 2 held already: false positive
            Err(Refusal::Exhausted), // t = 20: all free: FN, k broken, A broken
            Err(Refusal::NoBucket),  // t = 21: unexpected kind
        ]
        .into_iter();
        let out = replay(&geometry, &[0, 1, 2, 20, 21], |_| {
            script.next().expect("one answer per request")
        });
        assert_eq!(out.false_positives, 1);
        assert_eq!(out.false_negatives, 2);
        assert_eq!(out.worst_free_at_refusal, 2);
        assert_eq!(out.key_bound_violations, 2);
        assert_eq!(out.time_bound_violations, 2);
        assert_eq!(out.other_refusals, 1);
        assert!(!out.sound());
    }
}

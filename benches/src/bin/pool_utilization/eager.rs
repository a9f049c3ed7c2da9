//! A reference model of the bucket rules with *eager* release, as the seed's Python does it:
//! every bucket that has cooled down (`last_use + T <= now`) is released before a decision,
//! so a use never joins a bucket that has already cooled. Plain `VecDeque`, obviously
//! correct, slow enough not to matter here.

use std::collections::VecDeque;

use slidelimit::pool::PoolGeometry;
use slidelimit::Refusal;

use super::replay::thresholds;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    uses: u64,
    opened_at: u64,
    last_use: u64,
}

/// The seed's `Throttler`, with the library's cooldown rule (a bucket frees `T` after its
/// newest use) and its time rule (a bucket takes uses until `opened_at + τ`).
#[derive(Debug)]
pub struct EagerModel {
    total: u64,
    cooldown: u64,
    tau: Option<u64>,
    k: u64,
    bound: u64,
    held: u64,
    seq: u64,
    buckets: VecDeque<Bucket>,
}

impl EagerModel {
    pub fn new(geometry: &PoolGeometry) -> Self {
        let (tau, k) = thresholds(geometry.mode(), geometry.total_uses());
        Self {
            total: geometry.total_uses(),
            cooldown: geometry.cooldown_ticks(),
            tau,
            k,
            bound: geometry.bucket_bound(),
            held: 0,
            seq: 0,
            buckets: VecDeque::new(),
        }
    }

    /// One use at `now` (non-decreasing), or `Exhausted`.
    ///
    /// # Errors
    /// `Refusal::Exhausted` when every use is held by a bucket not cooled down;
    /// `Refusal::NoBucket` if the bucket bound would be exceeded (never, if the bound holds).
    pub fn take(&mut self, now: u64) -> Result<u64, Refusal> {
        while let Some(front) = self.buckets.front() {
            if front.last_use + self.cooldown > now {
                break;
            }
            self.held -= front.uses;
            self.buckets.pop_front();
        }
        if self.held >= self.total {
            return Err(Refusal::Exhausted);
        }
        let accepts = self
            .buckets
            .back()
            .is_some_and(|b| b.uses < self.k && self.tau.is_none_or(|tau| now < b.opened_at + tau));
        if !accepts {
            if self.buckets.len() as u64 >= self.bound {
                return Err(Refusal::NoBucket);
            }
            self.buckets.push_back(Bucket {
                uses: 0,
                opened_at: now,
                last_use: now,
            });
        }
        let bucket = self.buckets.back_mut().expect("a bucket is open");
        bucket.uses += 1;
        bucket.last_use = now;
        self.held += 1;
        self.seq += 1;
        Ok(self.seq - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::EagerModel;
    use crate::replay::replay;
    use slidelimit::pool::{PoolGeometry, PoolMode, SequentialLedger};
    use slidelimit_trace::rng::SplitMix64;

    /// Rounds of 1,000 requests, each round after every use has cooled: eager release gives
    /// the whole pool every round, whatever `k` (13 does not divide 500).
    #[test]
    fn eager_release_refills_the_whole_pool() {
        let mode = PoolMode::CountBound { key_threshold: 13 };
        let geometry = PoolGeometry::new(5, 100, 600_000, mode).expect("valid geometry");
        let mut model = EagerModel::new(&geometry);
        for round in 0..4u64 {
            let granted = (0..1_000)
                .filter(|i| model.take(round * 700_000 + i).is_ok())
                .count();
            assert_eq!(granted, 500, "round {round}");
        }
    }

    /// Where a bucket closes by time no later than it cools (`τ ≤ T`), the newest bucket can
    /// never have cooled while it still takes uses, so lazy release (the library) and eager
    /// release decide alike on every request.
    #[test]
    fn library_matches_eager_release_when_time_closes_buckets() {
        let mut rng = SplitMix64::new(11);
        let mut t = 0u64;
        let ticks: Vec<u64> = (0..20_000)
            .map(|_| {
                // Bursty: mostly 0-3 ms gaps, now and then a pause of up to 15 min.
                t += if rng.below(50) == 0 {
                    rng.below(900_000)
                } else {
                    rng.below(4)
                };
                t
            })
            .collect();
        for mode in [
            PoolMode::Exact,
            PoolMode::TimeBound {
                threshold_ticks: 66_667,
            },
            PoolMode::Both {
                threshold_ticks: 120_000,
                key_threshold: 100,
            },
            PoolMode::Both {
                threshold_ticks: 600_000,
                key_threshold: 13,
            },
        ] {
            let geometry = PoolGeometry::new(5, 100, 600_000, mode).expect("valid geometry");
            let mut ledger = SequentialLedger::new(geometry);
            let mut model = EagerModel::new(&geometry);
            let library = replay(&geometry, &ticks, |now| ledger.take(now));
            let eager = replay(&geometry, &ticks, |now| model.take(now));
            assert_eq!(library, eager, "{mode:?}");
            assert!(eager.sound());
        }
    }
}

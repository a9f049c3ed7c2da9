//! Out-of-order `now`, by hand: late callers below a release, a bucket opened out of order,
//! and ticks at the ends of the `u64` range. Both pools, same answers.

use slidelimit::pool::{KeyPool, PoolMode, Refusal, UseLedger};

use super::both_pools;
use crate::trace::check_safety;

/// Each call's answer, and the named grants `(key index, now)`.
type Takes = (Vec<Result<usize, Refusal>>, Vec<(usize, u64)>);

/// Runs `nows` through `take` on `pool`.
fn takes<G: UseLedger>(pool: &KeyPool<u32, G>, nows: &[u64]) -> Takes {
    let answers: Vec<_> = nows.iter().map(|&now| pool.take(now)).collect();
    let granted = answers
        .iter()
        .zip(nows)
        .filter_map(|(answer, &now)| answer.ok().map(|index| (index, now)))
        .collect();
    (answers, granted)
}

/// One use per 10 ticks. A call at 30 releases the use made at 20; a caller that read its
/// clock before 30 must not get it (that would be two uses within 10 ticks for it).
#[test]
fn a_call_below_a_release_is_late_until_the_released_cooldown_end() {
    let (lock_free, mutex) = both_pools(&[0u32], 1, 10, PoolMode::Exact).unwrap();
    for pool in [&lock_free as &dyn Probe, &mutex] {
        assert_eq!(pool.take(20), Ok(0));
        assert_eq!(pool.take(30), Ok(0));
        for late in [21, 25, 29] {
            assert_eq!(
                pool.take(late),
                Err(Refusal::Late),
                "{}: at {late}",
                pool.name()
            );
            let status = pool.status(late);
            assert_eq!(
                (status.refusal, status.retry_at, status.available),
                (Some(Refusal::Late), 30, 0),
                "{}: {status:?}",
                pool.name()
            );
        }
        // At the release's own tick: the pool is simply exhausted again.
        assert_eq!(pool.take(30), Err(Refusal::Exhausted), "{}", pool.name());
        assert_eq!(pool.take(40), Ok(0), "{}", pool.name());
    }
}

/// A bucket opened out of order (at 0, after one at 37) and released by a call far ahead:
/// a caller at 34 must still be refused, since the uses at 37 it would reuse cool down at 41.
/// (Found by the any-order property against a pool whose new bucket's cooldown end could be
/// below the bucket before it; the late check read the lower one.)
#[test]
fn a_bucket_opened_out_of_order_does_not_lower_the_late_check() {
    let mode = PoolMode::Both {
        threshold_ticks: 4,
        key_threshold: 2,
    };
    let nows = [0, 37, 0, 0, 37, 1_000, 1_004, 34, 35, 40];
    let (lock_free, mutex) = both_pools(&[0u32, 1, 2], 2, 4, mode).unwrap();
    let (answers, granted) = takes(&lock_free, &nows);
    assert_eq!((answers.clone(), granted.clone()), takes(&mutex, &nows));
    assert_eq!(
        answers[..7],
        [Ok(0), Ok(1), Ok(2), Ok(0), Ok(1), Ok(2), Ok(0)]
    );
    for (answer, now) in answers[7..].iter().zip(&nows[7..]) {
        assert!(answer.is_err(), "at {now}: {answer:?} ({answers:?})");
    }
    check_safety(&granted, 2, 4).unwrap();
}

/// Ticks at 0 and near `u64::MAX` (clamped at `MAX_TICK`), in any order, with cooldowns and
/// thresholds near `u64::MAX`: no panic, and no name above its uses per window.
#[test]
fn extreme_ticks_never_panic_and_stay_safe() {
    let ticks = [
        u64::MAX,
        0,
        u64::MAX - 1,
        1,
        u64::MAX - 2,
        u64::MAX / 2,
        u64::MAX,
        0,
        u64::MAX - 3,
        u64::MAX,
    ];
    for cooldown in [1, 2, u64::MAX / 2, u64::MAX - 2] {
        for mode in [
            PoolMode::Exact,
            PoolMode::TimeBound { threshold_ticks: 1 },
            PoolMode::TimeBound {
                threshold_ticks: cooldown,
            },
            PoolMode::CountBound { key_threshold: 2 },
            PoolMode::Both {
                threshold_ticks: cooldown.min(2),
                key_threshold: 3,
            },
        ] {
            let (lock_free, mutex) = both_pools(&[0u32, 1], 2, cooldown, mode).unwrap();
            let nows: Vec<u64> = ticks.iter().cycle().take(40).copied().collect();
            let (answers, granted) = takes(&lock_free, &nows);
            assert_eq!(
                (answers, granted.clone()),
                takes(&mutex, &nows),
                "T={cooldown} {mode:?}"
            );
            check_safety(&granted, 2, cooldown)
                .unwrap_or_else(|e| panic!("T={cooldown} {mode:?}: {e}"));
            for now in [0, u64::MAX] {
                assert_eq!(
                    lock_free.status(now),
                    mutex.status(now),
                    "T={cooldown} {mode:?}"
                );
            }
        }
    }
}

/// The two pool types behind one reference, for the tests above.
trait Probe {
    fn take(&self, now: u64) -> Result<usize, Refusal>;
    fn status(&self, now: u64) -> slidelimit::PoolStatus;
    fn name(&self) -> &'static str;
}

impl<G: UseLedger> Probe for KeyPool<u32, G> {
    fn take(&self, now: u64) -> Result<usize, Refusal> {
        KeyPool::take(self, now)
    }
    fn status(&self, now: u64) -> slidelimit::PoolStatus {
        KeyPool::status(self, now)
    }
    fn name(&self) -> &'static str {
        self.variant()
    }
}

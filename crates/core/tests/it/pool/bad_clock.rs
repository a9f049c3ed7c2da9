//! What a bad clock costs the key pool. Through `take`, a `now` far in the future is a use at
//! that tick: it holds its use until that tick plus T, and costs nothing else (its bucket is
//! moved to the back of the ring whenever it would stand in front of the others). Through
//! `take_stamped` with the process's own clock, a stamp ahead of the clock counts as made at
//! the clock's tick (one use for one cooldown); one a whole cooldown behind is refused as late
//! and recorded nowhere. Both pools, same answers.

use proptest::prelude::*;
use slidelimit::pool::{KeyPool, PoolMode, Refusal, UseLedger};
use slidelimit::{Clock, ManualClock};

use super::both_pools;
use crate::trace::check_safety;

const KEYS: [u32; 3] = [0, 1, 2];
const USES_PER_KEY: u64 = 4;
/// `L`: the pool of 12 uses.
const TOTAL_USES: usize = 12;
const COOLDOWN: u64 = 100;
const FAR_FUTURE: u64 = u64::MAX - 5;
/// Every mode, with thresholds that bind in these tests.
const MODES: [PoolMode; 4] = [
    PoolMode::Exact,
    PoolMode::TimeBound {
        threshold_ticks: 10,
    },
    PoolMode::CountBound { key_threshold: 3 },
    PoolMode::Both {
        threshold_ticks: 10,
        key_threshold: 3,
    },
];

/// Calls `take` (or `take_stamped` against a clock at `clock_at`) on both pools and checks
/// they agree; returns the lock-free pool's answer.
fn both<G: UseLedger, H: UseLedger>(
    pools: (&KeyPool<u32, G>, &KeyPool<u32, H>),
    answer: impl Fn(&dyn Taker) -> Result<usize, Refusal>,
) -> Result<usize, Refusal> {
    let (a, b) = (answer(pools.0), answer(pools.1));
    assert_eq!(a, b, "lock-free and mutex pools disagree");
    a
}

/// `take` and `take_stamped` through one object for either pool.
trait Taker {
    fn take(&self, now: u64) -> Result<usize, Refusal>;
    fn take_stamped(&self, stamped: u64, clock: &dyn Clock) -> Result<usize, Refusal>;
}

impl<G: UseLedger> Taker for KeyPool<u32, G> {
    fn take(&self, now: u64) -> Result<usize, Refusal> {
        KeyPool::take(self, now)
    }
    fn take_stamped(&self, stamped: u64, clock: &dyn Clock) -> Result<usize, Refusal> {
        KeyPool::take_stamped(self, stamped, clock)
    }
}

/// Through `take`, a first call at `u64::MAX - 5` is a use at that tick, and costs that one
/// use: the pool grants the other 11, refuses the 12th as exhausted, and from then on grants
/// 11 uses in every cooldown, for good (the far-future bucket is moved to the back of the
/// ring each time it reaches the front, never released, and never in the way). docs/key-pool.md's
/// "Bad input" cites this test.
#[test]
fn through_take_one_far_future_now_costs_the_one_use_it_took() {
    let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, PoolMode::Exact).unwrap();
    let pools = (&lock_free, &mutex);
    assert!(both(pools, |p| p.take(FAR_FUTURE)).is_ok());
    for round in 0..50 {
        let start = round * COOLDOWN;
        for now in start..start + (TOTAL_USES as u64 - 1) {
            assert!(both(pools, |p| p.take(now)).is_ok(), "at {now}");
        }
        let now = start + TOTAL_USES as u64 - 1;
        assert_eq!(
            both(pools, |p| p.take(now)),
            Err(Refusal::Exhausted),
            "at {now}"
        );
        assert_eq!(lock_free.status(now), mutex.status(now));
        assert_eq!(lock_free.status(now).held_uses, TOTAL_USES as u64);
    }
}

/// A far-future call that arrives when every use is held and the oldest bucket is an
/// earlier far-future use (cooled down by the later one's tick) moves that bucket to the back
/// instead of releasing it: releasing it would raise the release watermark to that far tick
/// and refuse every well-timed call as late. The well-timed calls lose the two uses, no more.
#[test]
fn a_far_future_call_never_releases_an_earlier_one_for_the_well_timed() {
    let first = 1 << 40;
    let second = first + 10 * COOLDOWN;
    let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, PoolMode::Exact).unwrap();
    let pools = (&lock_free, &mutex);
    assert!(both(pools, |p| p.take(first)).is_ok());
    for now in 0..(TOTAL_USES as u64 - 1) {
        assert!(both(pools, |p| p.take(now)).is_ok(), "at {now}");
    }
    // The oldest bucket is the first far-future use; the second call needs its use. It
    // passes that bucket and releases the next (the use made at 0), raising the watermark
    // to its cooldown end, T: no further.
    assert!(both(pools, |p| p.take(second)).is_ok());
    let before = lock_free.status(COOLDOWN - 1);
    assert_eq!(
        (before.refusal, before.retry_at),
        (Some(Refusal::Late), COOLDOWN)
    );
    for round in 1..20 {
        // The uses made at 1..=10 (and then at the same ticks of each round) free up one by
        // one; the two far-future ones never do.
        let start = round * COOLDOWN + 1;
        for now in start..start + (TOTAL_USES as u64 - 2) {
            assert!(both(pools, |p| p.take(now)).is_ok(), "at {now}");
        }
        let now = start + TOTAL_USES as u64 - 2;
        assert_eq!(
            both(pools, |p| p.take(now)),
            Err(Refusal::Exhausted),
            "at {now}"
        );
    }
}

/// A burst of far-future `now`s among well-timed calls, every mode: each costs the use it
/// took and nothing more. Once the well-timed uses have cooled down, the pool holds exactly
/// the bad calls' uses (their buckets took no well-timed use). Per cooldown, the exact pool's
/// well-timed calls get exactly as many uses as from the same pool that never saw the burst,
/// less one per bad call; the relaxed pools serve them in every cooldown. A well-timed call
/// is refused only as exhausted, or as late where a bad call released a bucket that had not
/// cooled down by the well-timed clock (at most one cooldown ahead of it: a bad call never
/// releases another's far-future bucket).
#[test]
fn a_burst_of_far_future_nows_costs_the_uses_it_took() {
    // Bad calls: a stuck clock (three at one far tick), two far ticks apart, one at the end
    // of the range.
    let bad_at = [
        (130, FAR_FUTURE - 9),
        (131, FAR_FUTURE - 9),
        (132, FAR_FUTURE - 9),
        (250, 1 << 50),
        (420, (1 << 50) + 7 * COOLDOWN),
        (555, u64::MAX),
    ];
    for mode in MODES {
        let (with_bad, with_bad_mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, mode).unwrap();
        let (clean, _) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, mode).unwrap();
        let mut granted = Vec::new();
        let mut per_cooldown = [[0u64; 2]; 30];
        for now in 0..3_000u64 {
            if let Some(&(_, bad)) = bad_at.iter().find(|&&(at, _)| at == now) {
                let answer = with_bad.take(bad);
                assert_eq!(answer, with_bad_mutex.take(bad), "{mode:?} bad at {now}");
                let key = answer.unwrap_or_else(|refusal| panic!("{mode:?}: {refusal:?}"));
                granted.push((key, bad));
            }
            let answer = with_bad.take(now);
            assert_eq!(answer, with_bad_mutex.take(now), "{mode:?} at {now}");
            match answer {
                Ok(key) => granted.push((key, now)),
                Err(refusal) => assert!(
                    matches!(refusal, Refusal::Exhausted | Refusal::Late),
                    "{mode:?} at {now}: {refusal:?}"
                ),
            }
            let cooldown = (now / COOLDOWN) as usize;
            per_cooldown[cooldown][0] += u64::from(answer.is_ok());
            per_cooldown[cooldown][1] += u64::from(clean.take(now).is_ok());
        }
        assert!(
            check_safety(&granted, USES_PER_KEY, COOLDOWN).is_ok(),
            "{mode:?}"
        );
        let cost = bad_at.len() as u64;
        for (cooldown, &[bad, clean]) in per_cooldown.iter().enumerate().skip(10) {
            if mode == PoolMode::Exact {
                assert_eq!(bad, clean - cost, "{mode:?}: cooldown {cooldown}");
            } else {
                // The relaxed pools group uses into buckets, and how many a cooldown gets
                // depends on where they close: still served in every one.
                assert!(bad > 0, "{mode:?}: cooldown {cooldown}: none");
            }
        }
        // Once the well-timed uses have cooled down, the bad calls hold exactly their own.
        let after = 3_000 + 2 * COOLDOWN;
        for status in [with_bad.status(after), with_bad_mutex.status(after)] {
            assert_eq!(
                (status.held_uses, status.available),
                (cost, TOTAL_USES as u64 - cost),
                "{mode:?}"
            );
        }
    }
}

/// Through `take_stamped`, the same far-future stamp counts as made at the clock's tick: it
/// costs one use for one cooldown from there, and every use is free again a cooldown later.
#[test]
fn through_take_stamped_a_far_future_stamp_costs_one_use_for_one_cooldown() {
    let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, PoolMode::Exact).unwrap();
    let pools = (&lock_free, &mutex);
    let clock = ManualClock::new(0);
    assert_eq!(both(pools, |p| p.take_stamped(FAR_FUTURE, &clock)), Ok(0));
    for now in 0..(TOTAL_USES as u64 - 1) {
        clock.set(now);
        assert!(
            both(pools, |p| p.take_stamped(now, &clock)).is_ok(),
            "at {now}"
        );
    }
    clock.set(11);
    assert_eq!(
        both(pools, |p| p.take_stamped(11, &clock)),
        Err(Refusal::Exhausted)
    );
    // The far-future use was recorded at 0: it is free again at T.
    clock.set(COOLDOWN);
    assert_eq!(both(pools, |p| p.take_stamped(COOLDOWN, &clock)), Ok(0));
    assert_eq!(
        lock_free.status(COOLDOWN + 11).available,
        TOTAL_USES as u64 - 1
    );
}

/// A stamp a whole cooldown behind the clock is refused as late and recorded nowhere; one
/// less behind is an ordinary call.
#[test]
fn through_take_stamped_a_stamp_a_cooldown_behind_is_late_and_not_recorded() {
    let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, PoolMode::Exact).unwrap();
    let pools = (&lock_free, &mutex);
    let clock = ManualClock::new(5 * COOLDOWN);
    for stamped in [0, 4 * COOLDOWN] {
        assert_eq!(
            both(pools, |p| p.take_stamped(stamped, &clock)),
            Err(Refusal::Late),
            "stamped {stamped}"
        );
    }
    assert_eq!(
        lock_free.status(5 * COOLDOWN).held_uses,
        0,
        "nothing recorded"
    );
    assert_eq!(
        both(pools, |p| p.take_stamped(4 * COOLDOWN + 1, &clock)),
        Ok(0)
    );
}

/// A burst of far-future stamps among well-timed calls, every mode: each bad stamp costs the
/// use it took, for one cooldown from the clock's tick. Well-timed callers are served exactly
/// as if each bad stamp had been a call at the clock's tick.
#[test]
fn a_burst_of_far_future_stamps_costs_what_as_many_calls_now_would() {
    for mode in MODES {
        let (stamped, _) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, mode).unwrap();
        let (honest, _) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, mode).unwrap();
        let clock = ManualClock::new(0);
        for now in 0..2_000u64 {
            clock.set(now);
            // Every seventh call in the first 500 ticks carries a bad stamp.
            let bad = now < 500 && now % 7 == 3;
            let stamp = if bad { FAR_FUTURE - now } else { now };
            assert_eq!(
                stamped.take_stamped(stamp, &clock),
                honest.take(now),
                "{mode:?} at {now}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any stamps (near the clock, far ahead of it, far behind it) against a clock moving
    /// forward: both pools answer alike, and no name is handed out more than `X` times in any
    /// window of the ticks the pool recorded (the stamps capped at the clock).
    #[test]
    fn stamped_calls_never_over_grant_the_ticks_recorded(
        steps in prop::collection::vec((0u64..30, 0u8..4, 0u64..400), 1..300),
        mode in 0u8..4,
    ) {
        let mode = match mode {
            0 => PoolMode::Exact,
            1 => PoolMode::TimeBound { threshold_ticks: 20 },
            2 => PoolMode::CountBound { key_threshold: 4 },
            _ => PoolMode::Both { threshold_ticks: 20, key_threshold: 4 },
        };
        let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, mode).unwrap();
        let clock = ManualClock::new(1_000);
        let mut recorded = Vec::new();
        for (advance, kind, offset) in steps {
            let now = clock.now_ticks() + advance;
            clock.set(now);
            let stamp = match kind {
                0 => now.saturating_sub(offset % COOLDOWN),
                1 => now.saturating_sub(offset),
                2 => now + offset,
                _ => u64::MAX - offset,
            };
            let answer = lock_free.take_stamped(stamp, &clock);
            prop_assert_eq!(answer, mutex.take_stamped(stamp, &clock));
            if let Ok(key) = answer {
                recorded.push((key, stamp.min(now)));
            }
        }
        prop_assert!(check_safety(&recorded, USES_PER_KEY, COOLDOWN).is_ok(), "{:?}", check_safety(&recorded, USES_PER_KEY, COOLDOWN));
    }
}

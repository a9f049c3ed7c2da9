//! What a bad clock costs the key pool: a `now` far in the future through `take` (trusted, as
//! documented: it holds its use until that `now` plus T, and the uses handed out after it wait
//! behind it), against the same stamps through `take_stamped` with the process's own clock (a
//! stamp ahead of the clock counts as made at the clock's tick; one a whole cooldown behind is
//! refused as late and recorded nowhere). Both pools, same answers.

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

/// Through `take`, a first call at `u64::MAX - 5` is a use at that tick: the pool grants the
/// other 11 uses, then refuses every well-timed call, for good (the far-future use is the
/// oldest bucket and cools down only at its own `now` + T). The README's "Bad input" cites
/// this test.
#[test]
fn through_take_one_far_future_now_holds_the_pool_until_it_cools() {
    let (lock_free, mutex) = both_pools(&KEYS, USES_PER_KEY, COOLDOWN, PoolMode::Exact).unwrap();
    let pools = (&lock_free, &mutex);
    assert!(both(pools, |p| p.take(FAR_FUTURE)).is_ok());
    for now in 0..(TOTAL_USES as u64 - 1) {
        assert!(both(pools, |p| p.take(now)).is_ok(), "at {now}");
    }
    for now in [11, COOLDOWN, 1_000 * COOLDOWN, 1 << 62] {
        assert_eq!(
            both(pools, |p| p.take(now)),
            Err(Refusal::Exhausted),
            "at {now}"
        );
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
    let modes = [
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
    for mode in modes {
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

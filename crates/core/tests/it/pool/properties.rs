//! Property tests over small random pools (1-3 keys x 1-3 uses, cooldown 1-12, every mode
//! with thresholds on both sides of the cooldown and of the pool's uses).
//!
//! - Non-decreasing `now`: every call checked by [`InOrder`] against the sorted log (the exact
//!   pool answers like it, the relaxed ones refuse only where their relaxation allows, held
//!   buckets never exceed the bound, never `NoBucket` nor `Late`), the lock-free pool and the
//!   mutex pool answer and report alike call by call.
//! - Any order of `now` (arbitrary ticks with some near `u64::MAX`, or a forward clock read
//!   late by some callers): no panic, the two pools answer and report alike, no name above
//!   `X` uses and the pool not above `L` uses in any window of the `now`s passed in. (Names
//!   leave the cycle order there: a bucket holding a use more than `T` out of order is moved
//!   to the back of the ring, and its uses renumbered.)

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use slidelimit::pool::{KeyPool, PoolMode};
use slidelimit_mutex::MutexKeyPool;

use super::{both_pools, Answer, Call, InOrder};
use crate::trace::check_safety;

#[derive(Clone, Copy, Debug)]
struct PoolConfig {
    keys: u32,
    uses_per_key: u64,
    cooldown: u64,
    mode: PoolMode,
}

impl PoolConfig {
    fn build(&self) -> (KeyPool<u32>, MutexKeyPool<u32>) {
        let names: Vec<u32> = (0..self.keys).map(|i| 100 + i).collect();
        both_pools(&names, self.uses_per_key, self.cooldown, self.mode).expect("a valid config")
    }
}

fn config() -> impl Strategy<Value = PoolConfig> {
    (1u32..=3, 1u64..=3, 1u64..=12, 0u8..4, 1u64..=14, 1u64..=9).prop_map(
        |(keys, uses_per_key, cooldown, mode, threshold_ticks, k)| {
            let total = u64::from(keys) * uses_per_key;
            let key_threshold = 1 + (k - 1) % total;
            // A time threshold is at most the cooldown.
            let threshold_ticks = 1 + (threshold_ticks - 1) % cooldown;
            let mode = match mode {
                0 => PoolMode::Exact,
                1 => PoolMode::TimeBound { threshold_ticks },
                2 => PoolMode::CountBound { key_threshold },
                _ => PoolMode::Both {
                    threshold_ticks,
                    key_threshold,
                },
            };
            PoolConfig {
                keys,
                uses_per_key,
                cooldown,
                mode,
            }
        },
    )
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => Just(Call::Take),
        3 => Just(Call::NextKey),
        2 => Just(Call::TryUse),
        1 => Just(Call::Available),
    ]
}

/// Non-decreasing ticks: mostly small steps (buckets fill and time-close), some jumps past a
/// cooldown; starting at 0, mid-range or just below `u64::MAX` (never reaching the clamp).
fn in_order_trace() -> impl Strategy<Value = Vec<(u64, Call)>> {
    let base = prop_oneof![3 => Just(0u64), 1 => Just(1 << 40), 1 => Just(u64::MAX - 10_000)];
    let step = (prop_oneof![8 => 0u64..=2, 1 => 0u64..=20], call());
    (base, vec(step, 1..200)).prop_map(|(base, steps)| {
        let mut now = base;
        steps
            .into_iter()
            .map(|(dt, call)| {
                now += dt;
                (now, call)
            })
            .collect()
    })
}

fn any_tick() -> impl Strategy<Value = u64> {
    prop_oneof![
        12 => 0u64..=40,
        2 => 1_000u64..=1_030,
        1 => (u64::MAX - 3)..=u64::MAX,
    ]
}

fn any_order_trace() -> impl Strategy<Value = Vec<(u64, Call)>> {
    vec((any_tick(), call()), 1..200)
}

/// A clock that moves forward (small steps, some jumps past a cooldown); a quarter of the
/// calls read it late, by up to 30 ticks (a few cooldowns of the configs above).
fn late_caller_trace() -> impl Strategy<Value = Vec<(u64, Call)>> {
    let step = (
        prop_oneof![8 => 0u64..=2, 1 => 0u64..=25],
        prop_oneof![3 => Just(0u64), 1 => 0u64..=30],
        call(),
    );
    vec(step, 1..200).prop_map(|steps| {
        let mut clock = 100;
        steps
            .into_iter()
            .map(|(dt, lag, call)| {
                clock += dt;
                (clock - lag, call)
            })
            .collect()
    })
}

/// 256 cases per property, or `PROPTEST_CASES` when set.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Non-decreasing `now`: each pool checked against the sorted log, and the two pools
    /// alike call by call.
    #[test]
    fn in_order_answers_stay_within_the_modes_relaxation(
        config in config(),
        trace in in_order_trace(),
    ) {
        let (lock_free, mutex) = config.build();
        let mut lf = InOrder::new(&lock_free);
        let mut mx = InOrder::new(&mutex);
        for (step, &(now, call)) in trace.iter().enumerate() {
            let a = lf.call(&lock_free, call, now).map_err(TestCaseError::fail)?;
            let b = mx.call(&mutex, call, now).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&a, &b, "step {} at {}: {:?}", step, now, call);
            prop_assert_eq!(lock_free.status(now), mutex.status(now), "step {}", step);
        }
    }

    /// Any order of `now`: safety per name and for the pool, and the two pools
    /// alike call by call (answers and statuses).
    #[test]
    fn any_order_is_safe_and_both_pools_agree(
        config in config(),
        trace in any_order_trace(),
    ) {
        check_any_order(config, &trace)?;
    }

    /// The same for a clock that moves forward while some callers come late (by up to a few
    /// cooldowns): releases made at a later `now` meet calls below them.
    #[test]
    fn late_callers_are_safe_and_both_pools_agree(
        config in config(),
        trace in late_caller_trace(),
    ) {
        check_any_order(config, &trace)?;
    }
}

/// Runs `trace` on both pools: answers and statuses alike call by call, no name above `X` and the pool not above `L` uses in any window of `T`.
fn check_any_order(config: PoolConfig, trace: &[(u64, Call)]) -> Result<(), TestCaseError> {
    let (lock_free, mutex) = config.build();
    let keys = config.keys as usize;
    let mut named = Vec::new();
    let mut grants = Vec::new();
    for (step, &(now, call)) in trace.iter().enumerate() {
        prop_assert_eq!(
            lock_free.status(now),
            mutex.status(now),
            "before step {}",
            step
        );
        let a = call.run(&lock_free, now);
        let b = call.run(&mutex, now);
        prop_assert_eq!(&a, &b, "step {} at {}: {:?}", step, now, call);
        if matches!(
            a,
            Answer::Take(Ok(_)) | Answer::Index(Some(_)) | Answer::Used(true)
        ) {
            if let Answer::Take(Ok(index)) | Answer::Index(Some(index)) = a {
                prop_assert!(index < keys, "step {}: no such key {}", step, index);
                named.push((index, now));
            }
            grants.push(((), now));
        }
    }
    check_safety(&named, config.uses_per_key, config.cooldown).map_err(TestCaseError::fail)?;
    check_safety(
        &grants,
        u64::from(config.keys) * config.uses_per_key,
        config.cooldown,
    )
    .map_err(TestCaseError::fail)
}

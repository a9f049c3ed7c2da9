//! Property tests: random single-threaded traces, every variant against the reference model,
//! and the variants against each other.
//!
//! Timestamps come from a small range (so windows overlap and fill) with a few near
//! `u64::MAX` (so clamping and saturation are exercised). Traces "with removal" call
//! `remove_idle` and use a sweep floor of a few keys over up to ten keys, so the automatic
//! sweep runs too.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::reference::{Config, Reference};
use crate::trace::{run, Expect, Op, Outcome};
use crate::variants::all_variants;

/// Keys in traces without removal (the sweep never runs: floor `usize::MAX`).
const FEW_KEYS: u8 = 4;
/// Keys in traces with removal: more than any sweep floor below.
const MANY_KEYS: u8 = 10;

fn config(removal: bool) -> impl Strategy<Value = Config> {
    let floor = if removal {
        (2usize..=6).boxed()
    } else {
        Just(usize::MAX).boxed()
    };
    (
        1u64..=4,
        1u64..=20,
        prop_oneof![Just(None), (0u64..=30).prop_map(Some)],
        floor,
    )
        .prop_map(
            |(max_requests, window_ticks, lateness_ticks, sweep_floor_keys)| Config {
                max_requests,
                window_ticks,
                lateness_ticks,
                sweep_floor_keys,
            },
        )
}

/// Which calls a trace may make.
#[derive(Clone, Copy)]
enum Calls {
    /// `hit`, `allowed`, `status`.
    HitAllowed,
    /// All four key calls.
    All,
}

fn key_call(calls: Calls, kind: u8, key: u8, now: u64) -> Op {
    match (calls, kind % 8) {
        (_, 0..=2) => Op::Hit(key, now),
        (_, 3 | 4) => Op::Allowed(key, now),
        (Calls::All, 5 | 6) => Op::CheckAndHit(key, now),
        _ => Op::Status(key, now),
    }
}

/// How many in ten calls are `remove_idle` (0 without removal).
fn removal_share(removal: bool) -> u8 {
    if removal {
        1
    } else {
        0
    }
}

/// Timestamps never decrease per key; keys advance at their own pace, and `remove_idle`
/// runs at a tick at or ahead of the key it is drawn with.
fn in_order_trace(keys: u8, calls: Calls, removal: bool) -> impl Strategy<Value = Vec<Op>> {
    let base = prop_oneof![4 => Just(0u64), 1 => Just(u64::MAX - 40)];
    let step = (0..keys, 0u64..=4, any::<u8>(), 0u8..10);
    (base, vec(step, 1..120)).prop_map(move |(base, steps)| {
        let mut clocks = vec![base; usize::from(keys)];
        steps
            .into_iter()
            .map(|(key, dt, kind, roll)| {
                let clock = &mut clocks[usize::from(key)];
                *clock = clock.saturating_add(dt);
                if roll < removal_share(removal) {
                    Op::RemoveIdle(clock.saturating_add(dt * 6))
                } else {
                    key_call(calls, kind, key, *clock)
                }
            })
            .collect()
    })
}

fn any_tick() -> impl Strategy<Value = u64> {
    prop_oneof![9 => 0u64..60, 1 => (u64::MAX - 30)..=u64::MAX]
}

/// Timestamps in any order.
fn any_order_trace(keys: u8, calls: Calls, removal: bool) -> impl Strategy<Value = Vec<Op>> {
    let step = (0..keys, any_tick(), any::<u8>(), 0u8..10);
    vec(step, 1..120).prop_map(move |steps| {
        steps
            .into_iter()
            .map(|(key, now, kind, roll)| {
                if roll < removal_share(removal) {
                    Op::RemoveIdle(now)
                } else {
                    key_call(calls, kind, key, now)
                }
            })
            .collect()
    })
}

/// Timestamps never decrease across the whole trace (so no call is ever below a watermark).
fn time_ordered_trace(keys: u8) -> impl Strategy<Value = Vec<Op>> {
    let step = (0..keys, 0u64..=3, any::<u8>(), 0u8..10);
    vec(step, 1..150).prop_map(move |steps| {
        let mut clock = 0u64;
        steps
            .into_iter()
            .map(|(key, dt, kind, roll)| {
                clock += dt;
                if roll < 1 {
                    Op::RemoveIdle(clock)
                } else {
                    key_call(Calls::All, kind, key, clock)
                }
            })
            .collect()
    })
}

/// Runs the trace against every variant, each beside a fresh model.
fn run_all(config: Config, ops: &[Op], expect: Expect) -> Result<Vec<Outcome>, TestCaseError> {
    all_variants::<u64>(config.limit(), config.options())
        .iter()
        .map(|limiter| {
            run(limiter.as_ref(), &mut Reference::new(config), ops, expect)
                .map_err(TestCaseError::fail)
        })
        .collect()
}

fn assert_all_agree(outcomes: &[Outcome]) -> Result<(), TestCaseError> {
    for (index, outcome) in outcomes.iter().enumerate().skip(1) {
        prop_assert_eq!(
            &outcome.answers,
            &outcomes[0].answers,
            "variant #{} answers differently from variant #0",
            index
        );
        prop_assert_eq!(&outcome.tracked_keys, &outcomes[0].tracked_keys);
    }
    Ok(())
}

/// 128 cases per property, or `PROPTEST_CASES` when set (for longer local runs).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// In-order timestamps per key, all calls: every answer is the model's.
    #[test]
    fn in_order_answers_are_exact(
        config in config(false),
        ops in in_order_trace(FEW_KEYS, Calls::All, false),
    ) {
        run_all(config, &ops, Expect::Exact)?;
    }

    /// The same with `remove_idle` and automatic sweeps: exact at or above the watermarks,
    /// refused below them.
    #[test]
    fn in_order_answers_are_exact_with_removal(
        config in config(true),
        ops in in_order_trace(MANY_KEYS, Calls::All, true),
    ) {
        run_all(config, &ops, Expect::Exact)?;
    }

    /// `hit` and `allowed` (and `status`) in any timestamp order: every answer is the model's.
    #[test]
    fn hit_and_allowed_are_exact_in_any_order(
        config in config(false),
        ops in any_order_trace(FEW_KEYS, Calls::HitAllowed, false),
    ) {
        run_all(config, &ops, Expect::Exact)?;
    }

    /// The same with `remove_idle` and automatic sweeps.
    #[test]
    fn hit_and_allowed_are_exact_in_any_order_with_removal(
        config in config(true),
        ops in any_order_trace(MANY_KEYS, Calls::HitAllowed, true),
    ) {
        run_all(config, &ops, Expect::Exact)?;
    }

    /// All calls in any order: the safety invariant holds, every refusal is explained by a
    /// full log or a raised watermark, and the key policy follows the model exactly.
    #[test]
    fn safe_in_any_order_with_removal(
        config in config(true),
        ops in any_order_trace(MANY_KEYS, Calls::All, true),
    ) {
        run_all(config, &ops, Expect::Safe)?;
    }

    /// All calls in any order, no removal: the four variants answer identically.
    #[test]
    fn variants_agree_in_any_order(
        config in config(false),
        ops in any_order_trace(FEW_KEYS, Calls::All, false),
    ) {
        assert_all_agree(&run_all(config, &ops, Expect::Safe)?)?;
    }

    /// Timestamps ordered across the whole trace, with removal: identical answers and
    /// identical tracked keys (no call is ever below a watermark here).
    #[test]
    fn variants_agree_in_time_order_with_removal(
        config in config(true),
        ops in time_ordered_trace(MANY_KEYS),
    ) {
        assert_all_agree(&run_all(config, &ops, Expect::Exact)?)?;
    }

    /// All calls in any order, with removal and automatic sweeps: the four variants answer
    /// identically and track the same keys.
    ///
    /// Keys share watermark slots (a collision refuses more), so this holds only because
    /// every limiter of a process hashes keys alike; the trace keys are spread over `u64` so
    /// that collisions do happen.
    #[test]
    fn variants_agree_in_any_order_with_removal(
        config in config(true),
        ops in any_order_trace(MANY_KEYS, Calls::All, true),
    ) {
        assert_all_agree(&run_all(config, &ops, Expect::Safe)?)?;
    }
}

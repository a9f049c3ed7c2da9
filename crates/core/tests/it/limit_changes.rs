//! Limit changes keep their promises, on every variant and both windows: a longer window
//! never over-admits (the hits a window forgot are assumed at their busiest), a read never
//! changes a later answer, `allowed_n` agrees with `check_and_hit_n` for a key never seen,
//! and a restored limiter answers in-order calls as the original. Each case a regression
//! test of a trace that failed before, then property tests of random changes in both
//! directions, interleaved with reads, against the window invariant.

use std::sync::Arc;

use proptest::prelude::*;
use slidelimit::{Conversion, ExactLog, Options, RollingBuckets};

use crate::runtime::{describe, every_limiter, variants_with, Full};
use crate::variants::limit;

/// The largest number of admissions any window of `window_ticks` holds that also holds the
/// admission at `tick`, counting every hit in `hits`.
fn fullest_window_around(hits: &[u64], tick: u64, window_ticks: u64) -> usize {
    // Windows (x - W, x] holding `tick`: x from tick to tick + W - 1. The count changes only
    // where x passes a hit, so trying x at `tick` and at every hit in range is enough.
    let candidates = std::iter::once(tick).chain(
        hits.iter()
            .copied()
            .filter(|&h| h >= tick && h < tick.saturating_add(window_ticks)),
    );
    candidates
        .map(|x| {
            hits.iter()
                .filter(|&&h| h <= x && h.saturating_add(window_ticks) > x)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_longer_window_counts_the_hits_the_ring_replaced() {
    for limiter in every_limiter::<u64>(2, 10) {
        let who = describe(limiter.as_ref());
        let mut admitted = Vec::new();
        for t in [0, 1, 10, 30] {
            if limiter.check_and_hit(&7, t) {
                admitted.push(t);
            }
        }
        limiter.set_limit(limit(2, 25));
        if limiter.check_and_hit(&7, 30) {
            admitted.push(30);
        }
        assert!(
            fullest_window_around(&admitted, 30, 25) <= 2,
            "{who}: admitted {admitted:?}, more than 2 in a window of 25"
        );
        if limiter.algorithm() == "exact" {
            assert_eq!(admitted, [0, 1, 10, 30], "{who}: (5, 30] holds 10 and 30");
            // The ring holds 1 and 30 and assumes 20 and 10 before 30 (one hit per old
            // window): refused until the assumed 20 leaves (20, 45].
            assert!(!limiter.check_and_hit(&7, 40), "{who}");
            assert!(limiter.check_and_hit(&7, 45), "{who}");
        }
    }
}

#[test]
fn a_longer_window_set_for_one_key_or_restored_counts_them_too() {
    for limiter in every_limiter::<u64>(2, 10) {
        let who = describe(limiter.as_ref());
        for t in [0, 1, 10, 30] {
            let _ = limiter.check_and_hit(&7, t);
        }
        limiter.set_limit_for(&7, limit(2, 25));
        assert!(!limiter.check_and_hit(&7, 30), "{who}: set_limit_for");
    }
    let sources = every_limiter::<u64>(2, 10);
    for (source, target) in sources.iter().zip(every_limiter_longer()) {
        let who = describe(target.as_ref());
        for t in [0, 1, 10, 30] {
            let _ = source.check_and_hit(&7, t);
        }
        let snapshot = source.snapshot(30);
        target
            .restore(&snapshot, 30, Conversion::ToLimiter)
            .expect("a conversion into a longer window is allowed");
        assert!(
            !target.check_and_hit(&7, 30),
            "{who}: restore into 2 per 25"
        );
    }
}

fn every_limiter_longer() -> Vec<Arc<dyn Full<u64>>> {
    every_limiter::<u64>(2, 25)
}

#[test]
fn rolling_buckets_refuse_until_the_dropped_span_left_a_longer_window() {
    for limiter in every_limiter::<u64>(2, 20) {
        let who = describe(limiter.as_ref());
        let mut admitted = Vec::new();
        for t in [0, 1, 30] {
            if limiter.check_and_hit(&7, t) {
                admitted.push(t);
            }
        }
        assert_eq!(admitted, [0, 1, 30], "{who}");
        limiter.set_limit(limit(2, 40));
        assert!(
            !limiter.check_and_hit(&7, 31),
            "{who}: 0, 1 and 30 are in (-9, 31]"
        );
        // Once the forgotten span has left every window of 40, the key is free again.
        assert!(limiter.check_and_hit(&7, 80), "{who}");
    }
}

#[test]
fn a_raise_counts_the_live_hits_a_forced_hit_replaced() {
    for limiter in every_limiter::<u64>(1, 10) {
        let who = describe(limiter.as_ref());
        limiter.hit(&7, 0);
        limiter.hit(&7, 1);
        limiter.set_limit(limit(3, 10));
        let admitted: Vec<bool> = [5, 5, 6]
            .iter()
            .map(|&t| limiter.check_and_hit(&7, t))
            .collect();
        assert_eq!(
            admitted,
            [true, false, false],
            "{who}: 0 and 1 are live at 5"
        );
    }
}

#[test]
fn a_read_after_a_limit_change_changes_no_later_answer() {
    let run = |limiter: &dyn Full<u64>, read: bool| -> Vec<bool> {
        for t in 0..4 {
            assert!(limiter.check_and_hit(&7, t));
        }
        limiter.set_limit(limit(1, 10));
        if read {
            assert!(!limiter.allowed(&7, 4));
            assert_eq!(limiter.status(&7, 4).remaining, 0);
            let _ = limiter.snapshot(4);
            let _ = limiter.snapshot_key(&7, 4);
        }
        limiter.set_limit(limit(4, 10));
        vec![limiter.check_and_hit(&7, 10), limiter.check_and_hit(&7, 11)]
    };
    for (with_read, without) in every_limiter::<u64>(4, 10)
        .iter()
        .zip(every_limiter::<u64>(4, 10))
    {
        let who = describe(with_read.as_ref());
        let expected = run(without.as_ref(), false);
        assert_eq!(run(with_read.as_ref(), true), expected, "{who}");
        if with_read.algorithm() == "exact" {
            assert_eq!(
                expected,
                [true, true],
                "{who}: the hits at 0 and 1 have left"
            );
        }
    }
}

#[test]
fn allowed_n_agrees_with_check_and_hit_n_for_a_key_never_seen() {
    let window = RollingBuckets::new(limit(6, 20), 4).expect("valid buckets");
    for limiter in variants_with::<u64, _>(window, Options::default()) {
        let who = describe(limiter.as_ref());
        limiter.set_limit_for(&3, limit(3, 20));
        assert_eq!(limiter.allowed_n(&3, 103, 5), Ok(false), "{who}");
        assert_eq!(limiter.check_and_hit_n(&3, 103, 5), Ok(false), "{who}");
        assert_eq!(limiter.allowed_n(&3, 103, 3), Ok(true), "{who}");
        assert_eq!(limiter.check_and_hit_n(&3, 103, 3), Ok(true), "{who}");
        // A never-seen key under the default limit takes up to 6.
        assert_eq!(limiter.allowed_n(&4, 103, 6), Ok(true), "{who}");
        assert_eq!(
            limiter.allowed_n(&4, 103, 7),
            limiter.check_and_hit_n(&4, 103, 7)
        );
    }
}

#[test]
fn a_late_call_after_a_restore_may_be_refused_where_the_original_admits() {
    for (original, restored) in every_limiter::<u64>(2, 10)[..4]
        .iter()
        .zip(every_limiter::<u64>(2, 10))
    {
        let who = describe(original.as_ref());
        assert!(
            original.check_and_hit(&7, 9) && original.check_and_hit(&7, 0),
            "{who}"
        );
        restored
            .restore(&original.snapshot(9), 9, Conversion::Exact)
            .expect("same shape");
        // The original's 23 replaced 9 (the first expired slot of its layout), so its late 16
        // finds 0 expired; the restored ring, in time order, replaced 0 and still counts 9.
        assert_eq!(
            [
                original.check_and_hit(&7, 23),
                original.check_and_hit(&7, 16)
            ],
            [true, true],
            "{who}"
        );
        assert_eq!(
            [
                restored.check_and_hit(&7, 23),
                restored.check_and_hit(&7, 16)
            ],
            [true, false],
            "{who}"
        );
    }
}

#[test]
fn a_restore_answers_in_order_calls_as_the_original() {
    for (original, restored) in every_limiter::<u64>(2, 10)
        .iter()
        .zip(every_limiter::<u64>(2, 10))
    {
        let who = describe(original.as_ref());
        // Out of order before the snapshot: 9, then 0.
        let before = [original.check_and_hit(&7, 9), original.check_and_hit(&7, 0)];
        let snapshot = original.snapshot(9);
        restored
            .restore(&snapshot, 9, Conversion::Exact)
            .expect("same shape");
        // In order after it: every answer the same.
        for t in [9, 12, 16, 19, 23, 23, 29, 40] {
            assert_eq!(
                restored.check_and_hit(&7, t),
                original.check_and_hit(&7, t),
                "{who}: at {t} (before: {before:?})"
            );
        }
    }
}

/// One step of a random trace.
#[derive(Clone, Debug)]
enum Step {
    Decide {
        key: u64,
        tick: u64,
    },
    /// A forced `hit`: recorded whatever the limit says.
    Force {
        key: u64,
        tick: u64,
    },
    Read {
        key: u64,
        tick: u64,
    },
    SetLimit {
        max_requests: u64,
        window_ticks: u64,
    },
    SetLimitFor {
        key: u64,
        max_requests: u64,
        window_ticks: u64,
    },
}

fn step(in_order: bool) -> impl Strategy<Value = Step> {
    // In order: a tick offset added to the running clock; out of order: a jitter around it.
    let tick = if in_order { 0..6u64 } else { 0..24u64 };
    prop_oneof![
        8 => (0..2u64, tick.clone()).prop_map(|(key, tick)| Step::Decide { key, tick }),
        1 => (0..2u64, tick.clone()).prop_map(|(key, tick)| Step::Force { key, tick }),
        3 => (0..2u64, tick).prop_map(|(key, tick)| Step::Read { key, tick }),
        1 => (1..5u64, 1..30u64).prop_map(|(max_requests, window_ticks)| Step::SetLimit {
            max_requests,
            window_ticks,
        }),
        1 => (0..2u64, 1..5u64, 1..30u64).prop_map(|(key, max_requests, window_ticks)| {
            Step::SetLimitFor { key, max_requests, window_ticks }
        }),
    ]
}

/// Runs `steps` on `limiter` (reads only if `with_reads`); returns every decision, and
/// checks that each admission leaves no window of the key's limit then holding more than
/// its `max_requests` of the hits recorded so far, forced or admitted (any order of ticks).
fn run_checked(
    limiter: &dyn Full<u64>,
    steps: &[Step],
    in_order: bool,
    with_reads: bool,
) -> Vec<bool> {
    let who = describe(limiter);
    let mut clock = 100u64;
    let mut decisions = Vec::new();
    let mut admitted: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let tick_of = |clock: &mut u64, offset: u64| {
        if in_order {
            *clock += offset;
            *clock
        } else {
            // Mostly forward, sometimes up to 12 ticks late.
            *clock += 2;
            *clock + offset - 12
        }
    };
    for step in steps {
        match *step {
            Step::Decide { key, tick } => {
                let t = tick_of(&mut clock, tick);
                let verdict = limiter.check_and_hit(&key, t);
                decisions.push(verdict);
                if verdict {
                    let hits = &mut admitted[key as usize];
                    hits.push(t);
                    let now = limiter.limit_for(&key);
                    let fullest = fullest_window_around(hits, t, now.window_ticks());
                    assert!(
                        fullest as u64 <= now.max_requests(),
                        "{who}: key {key} admitted at {t} under {now:?}: {fullest} in one window \
                         of {hits:?}"
                    );
                }
            }
            Step::Force { key, tick } => {
                let t = tick_of(&mut clock, tick);
                limiter.hit(&key, t);
                admitted[key as usize].push(t);
            }
            Step::Read { key, tick } => {
                let t = tick_of(&mut clock, tick);
                if with_reads {
                    let _ = limiter.allowed(&key, t);
                    let _ = limiter.status(&key, t);
                }
            }
            Step::SetLimit {
                max_requests,
                window_ticks,
            } => {
                limiter.set_limit(limit(max_requests, window_ticks));
            }
            Step::SetLimitFor {
                key,
                max_requests,
                window_ticks,
            } => {
                limiter.set_limit_for(&key, limit(max_requests, window_ticks));
            }
        }
    }
    decisions
}

fn check_trace(steps: &[Step], in_order: bool) {
    let limiters = || {
        let mut all = variants_with::<u64, _>(ExactLog::new(limit(2, 10)), Options::default());
        all.extend(variants_with::<u64, _>(
            RollingBuckets::new(limit(2, 10), 5).expect("valid buckets"),
            Options::default(),
        ));
        all
    };
    let mut by_algorithm: Vec<(&'static str, Vec<bool>)> = Vec::new();
    for (reading, silent) in limiters().iter().zip(limiters()) {
        let with_reads = run_checked(reading.as_ref(), steps, in_order, true);
        let without = run_checked(silent.as_ref(), steps, in_order, false);
        assert_eq!(
            with_reads,
            without,
            "{}: reads changed a later answer",
            describe(reading.as_ref())
        );
        match by_algorithm
            .iter()
            .find(|(name, _)| *name == reading.algorithm())
        {
            Some((_, first)) => assert_eq!(
                &with_reads,
                first,
                "{} answers unlike the first variant",
                describe(reading.as_ref())
            ),
            None => by_algorithm.push((reading.algorithm(), with_reads)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn in_order_limit_changes_never_over_admit_and_reads_change_nothing(
        steps in prop::collection::vec(step(true), 1..80)
    ) {
        check_trace(&steps, true);
    }

    #[test]
    fn out_of_order_limit_changes_never_over_admit_and_reads_change_nothing(
        steps in prop::collection::vec(step(false), 1..80)
    ) {
        check_trace(&steps, false);
    }
}

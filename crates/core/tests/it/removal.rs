//! Removal safety (design.md section 6): what a sweep keeps, the watermark it leaves, and how
//! callers on either side of it are answered, against every variant.
//!
//! The rule under test: a sweep at `now_s` removes a key whose state is fresh (answers like
//! an empty window) for every call from some tick `f <= now_s - D` on, `f` being its newest
//! hit + W, and raises that key's watermark to `f`. Calls at or above `f` are answered
//! exactly; `allowed` and `check_and_hit` below it are refused; `hit` always records.

use slidelimit::{Options, Status};

use crate::variants::{for_each_variant, limit, no_auto_sweep};

#[test]
fn a_key_live_at_the_horizon_is_kept_and_answered_exactly() {
    let options = no_auto_sweep().lateness_ticks(20);
    for_each_variant::<u32>(limit(3, 10), options, |name, limiter| {
        for now in [100, 101, 102] {
            assert!(limiter.check_and_hit(&1, now), "{name}");
        }
        // Fresh from 112; the horizon of a sweep at 121 is 101.
        assert_eq!(limiter.remove_idle(121), 0, "{name}");
        assert_eq!(limiter.tracked_keys(), 1, "{name}");
        // A caller lagging exactly D behind the sweeper sees all three hits (102 is in its
        // future, and still counts).
        assert!(!limiter.allowed(&1, 101), "{name}");
        assert!(!limiter.check_and_hit(&1, 101), "{name}");
        assert_eq!(limiter.status(&1, 101).count, 3, "{name}");
        assert_eq!(limiter.status(&1, 101).retry_after_ticks, 9, "{name}");
        assert!(
            limiter.allowed(&1, 110),
            "{name}: (100, 110] holds 101, 102"
        );
    });
}

#[test]
fn a_caller_at_the_horizon_of_a_sweep_that_removed_its_key_is_answered_exactly() {
    let options = no_auto_sweep().lateness_ticks(20);
    for_each_variant::<u32>(limit(3, 10), options, |name, limiter| {
        for now in [100, 101, 102] {
            assert!(limiter.check_and_hit(&1, now), "{name}");
        }
        // Fresh from 112 = the horizon of a sweep at 132: removed, watermark 112.
        assert_eq!(limiter.remove_idle(131), 0, "{name}: horizon 111 < 112");
        assert_eq!(limiter.remove_idle(132), 1, "{name}");
        assert_eq!(limiter.tracked_keys(), 0, "{name}");
        // At the horizon, the forgotten hits are all dead: exact answers.
        assert_eq!(
            limiter.status(&1, 112),
            Status {
                count: 0,
                remaining: 3,
                retry_after_ticks: 0
            },
            "{name}"
        );
        assert!(limiter.allowed(&1, 112), "{name}");
        for _ in 0..3 {
            assert!(limiter.check_and_hit(&1, 112), "{name}");
        }
        assert!(!limiter.check_and_hit(&1, 112), "{name}: full again");
        assert!(!limiter.check_and_hit(&1, 121), "{name}");
        assert!(limiter.check_and_hit(&1, 122), "{name}");
    });
}

#[test]
fn below_the_watermark_decisions_are_refused_but_hits_record() {
    let options = no_auto_sweep().lateness_ticks(20);
    for_each_variant::<u32>(limit(3, 10), options, |name, limiter| {
        for now in [100, 101, 102] {
            limiter.hit(&1, now);
        }
        assert_eq!(limiter.remove_idle(132), 1, "{name}: watermark 112");
        // The full log would hold only 102 at 111 and admit: the limiter forgot it, so it
        // refuses instead (the documented false negative), and says until when.
        assert!(!limiter.allowed(&1, 111), "{name}");
        assert_eq!(
            limiter.status(&1, 111),
            Status {
                count: 0,
                remaining: 0,
                retry_after_ticks: 1
            },
            "{name}"
        );
        assert!(!limiter.check_and_hit(&1, 111), "{name}");
        assert!(!limiter.check_and_hit(&1, 50), "{name}");
        assert_eq!(
            limiter.status(&1, 112).count,
            0,
            "{name}: refusals record nothing"
        );
        // hit never refuses: both count from 112 on.
        limiter.hit(&1, 105);
        limiter.hit(&1, 111);
        assert!(
            !limiter.allowed(&1, 111),
            "{name}: still below the watermark"
        );
        assert_eq!(limiter.status(&1, 112).count, 2, "{name}");
        assert!(limiter.check_and_hit(&1, 112), "{name}");
        assert!(
            !limiter.check_and_hit(&1, 113),
            "{name}: 105, 111, 112 are live"
        );
        assert!(limiter.check_and_hit(&1, 115), "{name}: 105 left at 115");
    });
}

#[test]
fn a_sweep_removes_exactly_the_idle_keys_and_reports_them() {
    for_each_variant::<u32>(limit(2, 10), no_auto_sweep(), |name, limiter| {
        limiter.hit(&1, 10); // fresh from 20
        limiter.hit(&2, 30); // fresh from 40
        limiter.hit(&3, 50); // fresh from 60
        limiter.hit(&3, 5);
        assert!(limiter.check_and_hit(&4, 0), "{name}"); // fresh from 10
        assert_eq!(limiter.tracked_keys(), 4, "{name}");
        // Default lateness: one window. The horizon of 30 is 20.
        assert_eq!(limiter.remove_idle(29), 1, "{name}: key 4 only");
        assert_eq!(limiter.remove_idle(30), 1, "{name}: key 1, fresh from 20");
        assert_eq!(limiter.remove_idle(50), 1, "{name}: key 2");
        assert_eq!(limiter.remove_idle(50), 0, "{name}: nothing left to remove");
        assert_eq!(limiter.tracked_keys(), 1, "{name}");
        assert_eq!(
            limiter.status(&3, 55).count,
            1,
            "{name}: key 3 kept its hit"
        );
        assert_eq!(limiter.remove_idle(u64::MAX), 1, "{name}");
        assert_eq!(limiter.tracked_keys(), 0, "{name}");
    });
}

/// With no lateness, a sweep at `now_s = u64::MAX` uses the horizon `u64::MAX` unclamped: a
/// key fresh from exactly `u64::MAX` (newest hit + W saturates there, or is `MAX - 1 + 1`) is
/// removed with watermark `u64::MAX`, although calls at `u64::MAX` (the tick `MAX - 1`) still
/// see its hit; and such a call is not below that watermark, so it is admitted against the
/// forgotten state. With W = `u64::MAX` that breaks safety even on the raw timestamps: the
/// window `(0, u64::MAX]` then holds two admissions under a limit of 1.
#[test]
fn a_sweep_at_u64_max_never_readmits_a_live_key() {
    for (window_ticks, first) in [(u64::MAX, 5), (1, u64::MAX - 1)] {
        let options = no_auto_sweep().lateness_ticks(0);
        for_each_variant::<u32>(limit(1, window_ticks), options, |name, limiter| {
            let case = format!("{name}, W = {window_ticks}, first admission at {first}");
            assert!(limiter.check_and_hit(&1, first), "{case}");
            assert!(!limiter.allowed(&1, u64::MAX), "{case}");
            limiter.remove_idle(u64::MAX);
            assert!(!limiter.allowed(&1, u64::MAX), "{case}: after the sweep");
            assert!(
                !limiter.check_and_hit(&1, u64::MAX),
                "{case}: a second admission in one window"
            );
        });
    }
}

#[test]
fn a_sweep_at_u64_max_with_default_lateness_keeps_live_keys() {
    // The same sweep with the default lateness (one window) is safe: the horizon is then at
    // most MAX - 1.
    for (window_ticks, first) in [(u64::MAX, 5), (1, u64::MAX - 1), (10, u64::MAX - 3)] {
        for_each_variant::<u32>(limit(1, window_ticks), no_auto_sweep(), |name, limiter| {
            assert!(limiter.check_and_hit(&1, first), "{name}");
            assert_eq!(
                limiter.remove_idle(u64::MAX),
                0,
                "{name}, W = {window_ticks}"
            );
            assert!(
                !limiter.check_and_hit(&1, u64::MAX),
                "{name}, W = {window_ticks}"
            );
        });
    }
}

/// After 600 keys are removed by a sweep far ahead of their hits, never-seen keys are refused
/// only below the floor, removed ones below their own tombstones, alike in every variant.
#[test]
fn variants_agree_on_new_keys_after_a_large_removal() {
    // 600 keys created at 100, removed by a sweep at 1000: the floor rises to the observed
    // time 100 minus D = 10, so 90; each removed key keeps a tombstone at 110.
    let key = |i: u64| crate::trace::limiter_key(0).wrapping_mul(i + 1);
    for_each_variant::<u64>(limit(1, 10), no_auto_sweep(), |name, limiter| {
        for i in 0..600 {
            limiter.hit(&key(i), 100);
        }
        assert_eq!(limiter.remove_idle(1000), 600, "{name}");
        for i in 1000..1064 {
            assert!(!limiter.allowed(&key(i), 89), "{name}: below the floor");
            assert!(
                limiter.allowed(&key(i), 90),
                "{name}: a stranger at the floor"
            );
        }
        for i in 0..600 {
            assert!(
                !limiter.allowed(&key(i), 109),
                "{name}: below its tombstone"
            );
            assert_eq!(limiter.status(&key(i), 100).retry_after_ticks, 10, "{name}");
            assert!(limiter.allowed(&key(i), 110), "{name}");
        }
        assert!(limiter.check_and_hit(&key(0), 110), "{name}");
        assert!(!limiter.check_and_hit(&key(0), 111), "{name}: limit 1");
    });
}

#[test]
fn watermarks_are_per_key_not_global() {
    // One sweep removes a key fresh from 110 and fifty keys fresh from 50. Each keeps its own
    // tombstone: at 60 the fifty are admitted, and key 0 is refused until exactly 110.
    let key = |i: u64| crate::trace::limiter_key(0).wrapping_mul(i + 1);
    for_each_variant::<u64>(limit(1, 10), no_auto_sweep(), |name, limiter| {
        limiter.hit(&key(0), 100);
        for i in 1..=50 {
            limiter.hit(&key(i), 40);
        }
        assert_eq!(limiter.remove_idle(500), 51, "{name}");
        assert!(
            !limiter.check_and_hit(&key(0), 60),
            "{name}: below key 0's watermark"
        );
        let mut refused = 0;
        for i in 1..=50 {
            if !limiter.check_and_hit(&key(i), 60) {
                refused += 1;
                assert_eq!(limiter.status(&key(i), 60).retry_after_ticks, 50, "{name}");
            }
        }
        assert_eq!(
            refused, 0,
            "{name}: {refused} of 50 refused: a shared watermark?"
        );
        assert!(limiter.check_and_hit(&key(0), 110), "{name}");
    });
}

#[test]
fn automatic_sweep_runs_on_the_inserting_call_after_its_own_operation() {
    // Floor 4, one shard: from the 4th key on, every insert takes a sweep step at its own
    // `now`, after recording its hit, and removes what is fresh by the floor: the lower
    // quartile of the creations so far, minus D.
    let options = Options::default().sweep_floor_keys(4).key_shards(1);
    for_each_variant::<u32>(limit(1, 10), options, |name, limiter| {
        limiter.hit(&1, 0);
        limiter.hit(&2, 0);
        limiter.hit(&3, 100);
        assert_eq!(limiter.tracked_keys(), 3, "{name}: below the floor");
        // The creations at 0 are among the last eight: the floor stays 0, nothing goes.
        assert!(limiter.check_and_hit(&4, 100), "{name}");
        assert_eq!(limiter.tracked_keys(), 4, "{name}");
        for key in 5..=10 {
            assert!(limiter.check_and_hit(&key, 100), "{name}: key {key}");
        }
        // Key 10's insert: the last eight creations are at 100, the floor rises to 90, and
        // keys 1 and 2 (fresh from 10) go; key 3 on are live.
        assert_eq!(limiter.tracked_keys(), 8, "{name}");
        assert!(
            !limiter.check_and_hit(&10, 100),
            "{name}: its own hit survived"
        );
        // A removed key is refused below the floor only.
        assert!(!limiter.allowed(&1, 89), "{name}");
        assert!(limiter.allowed(&1, 90), "{name}");
    });
}

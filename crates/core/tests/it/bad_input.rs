//! Bad input: one far-future timestamp, or `remove_idle` far ahead, must not turn the sweep it
//! triggers into refusals for keys never seen or not removed, against every variant.
//!
//! The rule: a far-future tick is a valid tick. It counts as a live hit of its own key until
//! that tick + W, so that key's ordinary calls see one more hit. The removal floor rises only
//! to the *observed* time (the lower quartile of the recent sampled key creations) minus D, so an
//! automatic sweep step at a far-future `now` forgets only what is fresh by that floor.
//! `remove_idle` at a far-future `now` may forget every key idle by then, and each removed key
//! whose state was fresh only above the floor keeps a tombstone at its own newest hit + W:
//! ordinary calls on it are refused only until then, as if the key's clock had lagged by less
//! than a window. Keys never seen are refused only below the floor, which the bad `now` did
//! not move.

use slidelimit::{Options, RateLimiter};

use crate::trace::limiter_key;
use crate::variants::{for_each_variant, limit};

const FLOOR: usize = 64;
const FAR_FUTURE: u64 = 1 << 60;

fn key(i: u64) -> u64 {
    limiter_key(0).wrapping_mul(i + 1)
}

/// Asks `count` never-seen keys (from `first`) at `now`: how many were refused.
fn refused_strangers(limiter: &dyn RateLimiter<u64>, first: u64, count: u64, now: u64) -> u64 {
    (first..first + count)
        .filter(|&i| !limiter.check_and_hit(&key(i), now))
        .count() as u64
}

#[test]
fn a_far_future_timestamp_does_not_refuse_later_ordinary_calls() {
    let options = Options::default().sweep_floor_keys(FLOOR).key_shards(1);
    for_each_variant::<u64>(limit(1, 100), options, |name, limiter| {
        // 63 ordinary keys, key i hit at 1000 + i: fresh from 1100 + i.
        for i in 0..63 {
            assert!(limiter.check_and_hit(&key(i), 1000 + i), "{name}");
        }
        assert_eq!(limiter.tracked_keys(), 63, "{name}");
        let bad = key(1000);
        // The 64th key reaches the floor at 2^60: its sweep step removes only what is fresh
        // by the floor, which rose to the observed time (1016, the lower quartile of the 64
        // creations) minus W, not to 2^60 - W: no ordinary key is fresh by 916.
        assert!(limiter.check_and_hit(&bad, FAR_FUTURE), "{name}");
        assert_eq!(limiter.tracked_keys(), 64, "{name}: nothing was forgotten");
        // Each key still answers by its own hit: refused below its newest hit + W, admitted
        // from there.
        for i in 0..63 {
            let idle_from = 1100 + i;
            assert!(!limiter.allowed(&key(i), idle_from - 1), "{name}: key #{i}");
            assert_eq!(
                limiter.status(&key(i), idle_from - 1).retry_after_ticks,
                1,
                "{name}: key #{i}"
            );
            assert!(limiter.allowed(&key(i), idle_from), "{name}: key #{i}");
        }

        // Never-seen keys at the real time are all admitted.
        assert_eq!(refused_strangers(limiter, 2000, 10_000, 1062), 0, "{name}");

        // From 1162 on, every ordinary call on every key, old or never seen, is answered
        // exactly: one admission, then a refusal.
        let now = 1162;
        for i in (0..63).chain(20_000..20_100) {
            assert!(limiter.allowed(&key(i), now), "{name}: key #{i}");
            assert!(limiter.check_and_hit(&key(i), now), "{name}: key #{i}");
            assert!(!limiter.check_and_hit(&key(i), now + 1), "{name}: key #{i}");
        }

        // The far-future key's own ordinary calls count its far-future hit until 2^60 + W.
        assert_eq!(limiter.status(&bad, now).count, 1, "{name}");
        assert!(!limiter.check_and_hit(&bad, now), "{name}: limit 1");
    });
}

#[test]
fn never_seen_keys_are_admitted_after_a_far_future_automatic_sweep() {
    // The scenario, default options (512 shards, floor 4096): 5,000 keys at real
    // times, one far-future call whose insert starts the sweep cycle, then 10,000 never-seen
    // keys at the real time (each creation sweeps one more shard, at its own `now`).
    for_each_variant::<u64>(limit(1, 1_000), Options::default(), |name, limiter| {
        for i in 0..5_000 {
            assert!(limiter.check_and_hit(&key(i), 10_000 + i), "{name}");
        }
        let real_time = 15_000;
        assert!(limiter.check_and_hit(&key(1_000_000), FAR_FUTURE), "{name}");
        assert_eq!(
            refused_strangers(limiter, 100_000, 10_000, real_time),
            0,
            "{name}: never-seen keys refused"
        );
        // Keys not removed keep their state and are answered exactly.
        assert!(
            !limiter.check_and_hit(&key(4_999), real_time),
            "{name}: 14999 is live"
        );
        assert!(
            limiter.check_and_hit(&key(4_999), real_time + 999),
            "{name}"
        );
    });
}

#[test]
fn never_seen_keys_are_admitted_after_remove_idle_far_ahead() {
    let manual = Options::default().sweep_floor_keys(usize::MAX);
    for options in [manual, manual.key_shards(1)] {
        for_each_variant::<u64>(limit(1, 1_000), options, |name, limiter| {
            for i in 0..5_000 {
                assert!(limiter.check_and_hit(&key(i), 10_000 + i), "{name}");
            }
            // A caller's mistake: it may forget every key, but strangers stay welcome.
            assert_eq!(limiter.remove_idle(u64::MAX), 5_000, "{name}");
            assert_eq!(limiter.tracked_keys(), 0, "{name}");
            assert_eq!(
                refused_strangers(limiter, 100_000, 10_000, 15_000),
                0,
                "{name}: never-seen keys refused"
            );
            // A removed key is refused only below its own last hit + W (14999 + 1000).
            assert!(!limiter.allowed(&key(4_999), 15_998), "{name}");
            assert!(limiter.allowed(&key(4_999), 15_999), "{name}");
            // Key 0 (fresh from 10999) is below the floor: the observed time minus W. With
            // one shard every creation is sampled, and the last recount (at the 4,992nd
            // creation, one in 64) took the lower quartile of creations 4,736..=4,991: 14,800,
            // so the floor is 13,800. With more shards, the quartile of the sampled creations
            // (every shard's first, then one in eight), at most the last creation's. No
            // tombstone; the floor rules.
            if options == manual.key_shards(1) {
                assert!(!limiter.allowed(&key(0), 13_799), "{name}: below the floor");
                assert!(limiter.allowed(&key(0), 13_800), "{name}");
            } else {
                assert!(!limiter.allowed(&key(0), 10_998), "{name}: below the floor");
                assert!(limiter.allowed(&key(0), 13_999), "{name}");
            }
            // remove_idle(0) forgets nothing live and raises nothing.
            limiter.remove_idle(0);
            assert_eq!(
                refused_strangers(limiter, 200_000, 1_000, 15_000),
                0,
                "{name}"
            );
        });
    }
}

#[test]
fn a_far_future_timestamp_without_a_sweep_changes_no_other_key() {
    // Below the sweep floor nothing is removed: other keys keep their hits and are exact.
    for_each_variant::<u64>(limit(1, 100), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&key(1), 1000), "{name}");
        limiter.hit(&key(2), u64::MAX);
        assert!(limiter.check_and_hit(&key(3), FAR_FUTURE), "{name}");
        assert!(
            !limiter.check_and_hit(&key(1), 1050),
            "{name}: its hit still counts"
        );
        assert!(limiter.check_and_hit(&key(1), 1100), "{name}");
        assert!(limiter.check_and_hit(&key(4), 1100), "{name}");
        assert_eq!(
            limiter.remove_idle(2000),
            2,
            "{name}: keys 1 and 4; 2 and 3 are live"
        );
        assert!(
            !limiter.allowed(&key(2), 0),
            "{name}: a hit at u64::MAX counts everywhere"
        );
    });
}

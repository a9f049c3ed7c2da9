//! The key budget (`Options::max_keys`): a flood of fresh keys cannot grow a limiter past it,
//! nothing is over-admitted on the way, keys that already have state are decided as before,
//! and the budget frees as keys go idle. Every variant, both windows and a layered limit.

use slidelimit::{Conversion, ExactLog, LockFreeLimiter, Options, RateLimiter, SavedState};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

use crate::trace::check_safety;
use crate::variants::{every_limiter, limit};

#[test]
fn a_full_budget_refuses_new_keys_and_leaves_tracked_ones_alone() {
    // One shard, a budget of 64 keys; 2 per 100 ticks, lateness one window.
    let options = Options::default().key_shards(1).max_keys(64);
    let layered = limit(2, 100).and(limit(3, 300)).expect("two windows");
    for limit in [limit(2, 100), layered] {
        for (name, limiter) in every_limiter(limit, options) {
            for key in 0..64 {
                assert!(limiter.check_and_hit(&key, 1000), "{name}: key {key}");
            }
            assert_eq!(limiter.tracked_keys(), 64, "{name}");
            // A new key: refused by every call that decides, and no state is created.
            assert!(!limiter.allowed(&64, 1000), "{name}");
            assert!(!limiter.check_and_hit(&64, 1000), "{name}");
            let status = limiter.status(&64, 1000);
            assert_eq!(status.remaining, 0, "{name}");
            assert!(status.retry_after_ticks >= 200, "{name}: {status:?}");
            assert_eq!(limiter.tracked_keys(), 64, "{name}");
            // Keys that have state are decided as before: key 0 holds one hit of two.
            assert!(limiter.check_and_hit(&0, 1001), "{name}");
            assert!(!limiter.check_and_hit(&0, 1002), "{name}");
            // `hit` is the caller's own accounting: it records past the budget.
            limiter.hit(&65, 1000);
            assert_eq!(limiter.tracked_keys(), 65, "{name}");
            assert_eq!(limiter.status(&65, 1000).count, 1, "{name}");
        }
    }
}

#[test]
fn the_budget_frees_as_keys_go_idle() {
    // One shard, 16 keys, 1 per 10 ticks, lateness 10: key k (hit at k) is fresh from k + 10.
    // A decision on a new key in the full shard removes the keys idle by its own `now` minus
    // the lateness tolerance, as `remove_idle(now)` would.
    let options = Options::default()
        .key_shards(1)
        .max_keys(16)
        .lateness_ticks(10);
    for (name, limiter) in every_limiter(limit(1, 10), options) {
        for key in 0..16 {
            assert!(limiter.check_and_hit(&key, key), "{name}");
        }
        // At 15 no key is idle: refused, told to come back one refusal reach plus the
        // tolerance later (W + D = 20 for the exact log; for 8 buckets of 10 ticks the reach
        // is 14, so 24).
        assert!(!limiter.check_and_hit(&100, 15), "{name}");
        let wait = limiter.status(&100, 15).retry_after_ticks;
        let expected = if name.ends_with("buckets") { 24 } else { 20 };
        assert_eq!(wait, expected, "{name}");
        // Then every key hit by 15 is idle by the caller's now minus D: they go (up to 64
        // looks a step), and the new key is admitted.
        assert!(limiter.check_and_hit(&100, 15 + wait), "{name}");
        assert_eq!(limiter.tracked_keys(), 1, "{name}");
        // With the exact log, at 20 only key 0 (fresh from 10) is idle by 20 - D: one key
        // goes for the one that asks, and the next new key is refused.
        if !name.ends_with("buckets") {
            let again = every_limiter(limit(1, 10), options);
            let (_, early) = again
                .iter()
                .find(|(other, _)| *other == name)
                .expect("same");
            for key in 0..16 {
                assert!(early.check_and_hit(&key, key), "{name}");
            }
            assert!(!early.check_and_hit(&100, 19), "{name}");
            assert!(early.check_and_hit(&100, 20), "{name}: key 0 is idle by 10");
            assert!(!early.check_and_hit(&101, 20), "{name}: key 1 is not");
            assert_eq!(early.tracked_keys(), 16, "{name}");
        }
    }
}

/// The repro and its kin: a new key refused by a full budget, retried at the wait its
/// status told, is admitted when nothing else is going on (it used to be refused 8 more times
/// with one shard, about 60 with 512, until the refusals themselves moved the observed clock).
/// One shard and the default 512, the exact log and rolling buckets, one window and two.
#[test]
fn a_key_refused_by_a_full_budget_is_admitted_at_the_told_wait() {
    let one = limit(1, 10);
    let layered = one.and(limit(3, 40)).expect("two windows");
    for shards in [1, 512] {
        for limit in [one, layered] {
            let options = Options::default().key_shards(shards).max_keys(shards);
            for (name, limiter) in every_limiter(limit, options) {
                let name = format!("{name}, {shards} shards, {} windows", limit.window_count());
                assert!(limiter.check_and_hit(&1, 0), "{name}");
                // The first key that finds its shard full (one key a shard): every earlier one
                // filled an empty shard.
                let refused = (2..10_000_u64)
                    .find(|&key| !limiter.check_and_hit(&key, 0))
                    .expect("some key meets a full shard");
                let wait = limiter.status(&refused, 0).retry_after_ticks;
                assert!(wait > 0, "{name}");
                let tracked = limiter.tracked_keys();
                assert!(
                    limiter.check_and_hit(&refused, wait),
                    "{name}: refused at {wait}"
                );
                assert_eq!(
                    limiter.tracked_keys(),
                    tracked,
                    "{name}: one key for another"
                );
                assert!(limiter.tracked_keys() <= shards, "{name}");
            }
        }
    }
}

#[test]
fn a_flood_of_fresh_keys_stays_within_the_budget_and_never_over_admits() {
    // The default 512 shards and a budget of 4096 keys (8 a shard); 3 per 1000 ticks. One
    // well-behaved client (its key created before the flood) asks every 100 ticks; 100,000
    // fresh keys arrive within one window, each asking twice.
    const BUDGET: usize = 4096;
    const GOOD: u64 = u64::MAX;
    let max_tracked = BUDGET + 512;
    let options = Options::default().max_keys(BUDGET);
    let quiet = every_limiter(limit(3, 1000), Options::default());
    for ((name, limiter), (_, unflooded)) in every_limiter(limit(3, 1000), options)
        .into_iter()
        .zip(quiet)
    {
        let mut admitted = Vec::new();
        let (mut good, mut good_unflooded) = (Vec::new(), Vec::new());
        let mut most = 0;
        for i in 0..100_000u64 {
            let now = i / 100;
            if i % 10_000 == 0 {
                good.push(limiter.check_and_hit(&GOOD, now));
                good_unflooded.push(unflooded.check_and_hit(&GOOD, now));
            }
            for _ in 0..2 {
                if limiter.check_and_hit(&i, now) {
                    admitted.push((i, now));
                }
            }
            if i % 1000 == 0 {
                most = most.max(limiter.tracked_keys());
            }
        }
        most = most.max(limiter.tracked_keys());
        assert!(most <= max_tracked, "{name}: {most} keys tracked");
        assert!(
            most >= BUDGET / 2,
            "{name}: the flood filled the budget: {most}"
        );
        assert!(
            admitted.len() < 100_000,
            "{name}: the budget refused some fresh keys"
        );
        assert!(admitted.len() >= BUDGET / 2, "{name}: {}", admitted.len());
        // Every admission recorded, the good client's included: no window holds more than 3.
        admitted.extend(
            good.iter()
                .enumerate()
                .filter(|(_, &yes)| yes)
                .map(|(n, _)| (GOOD, n as u64 * 100)),
        );
        check_safety(&admitted, 3, 1000).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The well-behaved client is answered exactly as without the flood.
        assert_eq!(good, good_unflooded, "{name}");
        assert_eq!(good.iter().filter(|&&yes| yes).count(), 3, "{name}");
    }
}

#[test]
fn a_restored_limiter_keeps_its_budget_for_new_keys() {
    // A restore installs every saved key (a restore is the operator's, not a decision), and
    // new keys are refused while the restored ones fill the budget.
    let options = Options::default().key_shards(1).max_keys(8);
    let source = LockFreeLimiter::<u64>::with_options(ExactLog::new(limit(2, 100)), options);
    for key in 0..8 {
        assert!(source.check_and_hit(&key, 10));
    }
    let snapshot = source.snapshot(10);
    let window = ExactLog::new(limit(2, 100));
    check_restore(
        &LockFreeLimiter::<u64>::with_options(window, options),
        &snapshot,
    );
    check_restore(
        &MutexLimiter::<u64>::with_options(window, options),
        &snapshot,
    );
    check_restore(
        &PerKeyLockLimiter::<u64>::with_options(window, options),
        &snapshot,
    );
    check_restore(
        &RwLockLimiter::<u64>::with_options(window, options),
        &snapshot,
    );
}

fn check_restore<L: RateLimiter<u64> + SavedState<u64>>(
    limiter: &L,
    snapshot: &slidelimit::Snapshot<u64>,
) {
    let name = limiter.name();
    let restored = limiter
        .restore(snapshot, 10, Conversion::Exact)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(restored.keys, 8, "{name}");
    assert!(
        !limiter.check_and_hit(&100, 11),
        "{name}: the budget is full"
    );
    assert!(limiter.check_and_hit(&3, 11), "{name}: a restored key");
}

/// A budget step at a far-ahead `now` (one client's clock) removes the full shard's keys,
/// each leaving a tombstone; those tombstones go back to the queue by the observed time, not
/// by that `now`, so the automatic sweep drops them once the floor passes them (queued after
/// the far-ahead `now`, they stayed until `remove_idle`).
#[test]
fn tombstones_a_far_ahead_budget_step_leaves_are_dropped_by_the_sweep() {
    let options = Options::default()
        .key_shards(1)
        .max_keys(16)
        .sweep_floor_keys(1)
        .lateness_ticks(10);
    let window = ExactLog::new(crate::variants::limit(1, 10));
    let limiters: [(&str, &dyn SavedState<u64>, &dyn RateLimiter<u64>); 2] = {
        let lock_free = Box::leak(Box::new(LockFreeLimiter::<u64>::with_options(
            window, options,
        )));
        let mutex = Box::leak(Box::new(MutexLimiter::<u64>::with_options(window, options)));
        [
            ("lock-free", &*lock_free, &*lock_free),
            ("mutex", &*mutex, &*mutex),
        ]
    };
    for (name, saved, limiter) in limiters {
        for key in 0..16 {
            assert!(limiter.check_and_hit(&key, key), "{name}");
        }
        // The far-ahead client: its budget step removes every key, each fresh from its hit +
        // 10, above the floor: sixteen tombstones.
        assert!(limiter.check_and_hit(&1_000, 1 << 40), "{name}");
        assert_eq!(saved.snapshot(20).tombstones.len(), 16, "{name}");
        // Everyone else goes on at real time: the floor passes the tombstones, and the
        // sweep's looks drop them.
        for (i, key) in (2_000..2_400_u64).enumerate() {
            let now = 30 + i as u64;
            let _ = limiter.check_and_hit(&key, now);
        }
        // (Budget steps at real time leave tombstones of their own, for keys fresh only
        // above the lagging floor: the latest of those may still be there.)
        let left: Vec<u64> = saved
            .snapshot(500)
            .tombstones
            .iter()
            .map(|&(key, _)| key)
            .filter(|&key| key < 16)
            .collect();
        assert!(left.is_empty(), "{name}: tombstones left for {left:?}");
    }
}

//! Limits of several windows in Redis: both scripts answer as the core does on random
//! in-order traces (window by window), never over-admit any window under threads with the
//! server's clock, keep a refused call out of every window, and a leased limiter refuses
//! them with a typed error.

use std::sync::Arc;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter, RollingBuckets};
use slidelimit_redis::{Error, LeasedLimiter, Options, RedisLimiter};
use slidelimit_trace::rng::SplitMix64;

use crate::over_admissions;
use crate::{limit, manual, shared, TIMEOUT};

fn layered(windows: &[(u64, u64)]) -> Limit {
    windows
        .iter()
        .map(|&(n, w)| limit(n, w))
        .reduce(|all, window| all.and(window).expect("a valid layered limit"))
        .expect("at least one window")
}

/// Random in-order traces against the core's lock-free limiter of the same algorithm:
/// every decision, and every window's status.
fn matches_the_core(prefix: &str, options: Options, local: &dyn RateLimiter<String>) {
    let lim = local.limit();
    let (remote, clock) = manual(prefix, lim, options);
    let mut rng = SplitMix64::new(prefix.len() as u64);
    let mut t = 1_000;
    for step in 0..400 {
        t += rng.below(4);
        clock.set(t);
        let key = format!("k{}", rng.below(3));
        match rng.below(10) {
            0..=6 => assert_eq!(
                remote.check_and_hit(&key).unwrap().admitted,
                local.check_and_hit(&key, t),
                "{prefix} step {step}: check_and_hit({key}, {t})"
            ),
            7 => {
                remote.hit(&key).unwrap();
                local.hit(&key, t);
            }
            8 => assert_eq!(
                remote.allowed(&key).unwrap(),
                local.allowed(&key, t),
                "{prefix} step {step}: allowed({key}, {t})"
            ),
            _ => {
                let remote_windows: Vec<_> = remote.window_statuses(&key).unwrap().iter().collect();
                let local_windows: Vec<_> = local.window_statuses(&key, t).iter().collect();
                assert_eq!(
                    remote_windows, local_windows,
                    "{prefix} step {step}: window_statuses({key}, {t})"
                );
                assert_eq!(remote.status(&key).unwrap(), local.status(&key, t));
            }
        }
    }
}

#[test]
fn exact_script_answers_as_the_core_window_by_window() {
    let lim = layered(&[(3, 10), (7, 50), (12, 200)]);
    let local: LockFreeLimiter<String> = LockFreeLimiter::new(lim);
    matches_the_core("layered-exact", Options::new(), &local);
}

#[test]
fn buckets_script_answers_as_the_core_window_by_window() {
    let lim = layered(&[(3, 10), (7, 50), (12, 200)]);
    let local = LockFreeLimiter::<String, RollingBuckets>::bucketed(lim, 5).unwrap();
    matches_the_core("layered-buckets", Options::new().buckets(5), &local);
}

/// Issue 35: `B = 6` does not divide the wide window of 10 ticks (5 buckets of 2 there), but
/// the narrow window of 6 ticks gets its own 6 buckets of one tick, reach 8: the script takes
/// each window's geometry from the core's and answers as the core does.
#[test]
fn buckets_script_gives_each_window_the_configured_count_clamped_to_it() {
    let lim = layered(&[(3, 6), (5, 10)]);
    let (limiter, clock) = manual("layered-geometry", lim, Options::new().buckets(6));
    assert!(limiter.check_and_hit_n("k", 3).unwrap().admitted);
    let statuses = |now| -> Vec<(u64, u64, u64)> {
        clock.set(now);
        limiter
            .window_statuses("k")
            .unwrap()
            .iter()
            .map(|s| (s.count, s.remaining, s.retry_after_ticks))
            .collect()
    };
    // (count, remaining, retry): the narrow window's wait is one one-tick bucket.
    assert_eq!(statuses(7), [(3, 0, 1), (3, 2, 0)], "at 7");
    assert!(
        !limiter.check_and_hit("k").unwrap().admitted,
        "7 is within the reach"
    );
    assert_eq!(statuses(8), [(0, 3, 0), (3, 2, 0)], "at 8");
    assert!(
        limiter.check_and_hit("k").unwrap().admitted,
        "8 is past the reach"
    );

    let local = LockFreeLimiter::<String, RollingBuckets>::bucketed(lim, 6).unwrap();
    matches_the_core("layered-geometry-trace", Options::new().buckets(6), &local);
}

#[test]
fn a_refused_call_leaves_no_capacity_behind() {
    // As the core's test: 115 and 116 find room in 2 per 10 but not in 3 per 100, and are
    // refused without a trace, so 121 is admitted.
    let (limiter, clock) = manual(
        "layered-leak",
        layered(&[(2, 10), (3, 100)]),
        Options::new(),
    );
    let answers: Vec<bool> = [20, 21, 22, 50, 115, 116, 121]
        .iter()
        .map(|&t| {
            clock.set(t);
            limiter.check_and_hit("k").unwrap().admitted
        })
        .collect();
    assert_eq!(answers, [true, true, false, true, false, false, true]);
    clock.set(122);
    assert!(
        limiter.check_and_hit("k").unwrap().admitted,
        "2 of 2 and 3 of 3 now"
    );
    clock.set(123);
    let refused = limiter.check_and_hit("k").unwrap();
    assert!(!refused.admitted);
    let windows: Vec<(u64, u64)> = refused
        .windows
        .iter()
        .map(|s| (s.remaining, s.retry_after_ticks))
        .collect();
    assert_eq!(windows, [(0, 8), (0, 27)], "121 leaves at 131, 50 at 150");
    assert_eq!(
        refused.status.retry_after_ticks, 27,
        "both windows have room at 150"
    );
}

#[test]
fn threads_never_over_admit_any_window_with_server_time() {
    for (prefix, options) in [
        ("layered-threads-exact", Options::new()),
        ("layered-threads-buckets", Options::new().buckets(10)),
    ] {
        // 5 per 2 ms and 12 per 20 ms (ticks in microseconds).
        let lim = layered(&[(5, 2_000), (12, 20_000)]);
        let options = options.prefix(prefix).timeout(TIMEOUT);
        let limiter = Arc::new(RedisLimiter::new(&shared().url(), lim, options).unwrap());
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                std::thread::spawn(move || {
                    let mut admitted = Vec::new();
                    for _ in 0..300 {
                        let decision = limiter.check_and_hit("hot").unwrap();
                        if decision.admitted {
                            admitted.push((decision.now, 1));
                        }
                    }
                    admitted
                })
            })
            .collect();
        let admitted: Vec<(u64, u64)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        assert!(admitted.len() >= 12, "{prefix}: the key was used");
        assert_eq!(over_admissions(admitted.clone(), 5, 2_000), 0, "{prefix}");
        assert_eq!(over_admissions(admitted, 12, 20_000), 0, "{prefix}");
    }
}

#[test]
fn weights_above_the_narrowest_window_are_refused_with_a_typed_error() {
    let (limiter, _clock) = manual(
        "layered-weight",
        layered(&[(2, 10), (5, 100)]),
        Options::new().buckets(5),
    );
    assert!(matches!(
        limiter.check_and_hit_n("k", 3),
        Err(Error::Weight(_))
    ));
    assert!(limiter.check_and_hit_n("k", 2).unwrap().admitted);
}

#[test]
fn a_leased_limiter_refuses_a_layered_limit() {
    let result = LeasedLimiter::new(
        &shared().url(),
        layered(&[(2, 10), (5, 100)]),
        Options::new().prefix("layered-lease"),
        2,
        5,
    );
    assert!(matches!(result, Err(Error::Config(_))));
}

//! The exact log against the contract: the seed's example, refusals that write nothing,
//! weights, the core's answers on random traces, the window invariant under threads and
//! out-of-order ticks, expiry, NOSCRIPT.

use std::sync::Arc;

use slidelimit::{LockFreeLimiter, Status};
use slidelimit_redis::{Error, Options, RedisLimiter};

use crate::over_admissions;
use crate::{limit, manual, shared, TIMEOUT};
use slidelimit_trace::rng::SplitMix64;

#[test]
fn seed_example_limit_3_per_10() {
    let (limiter, clock) = manual("exact-seed", limit(3, 10), Options::new());
    for t in [1, 2, 3] {
        clock.set(t);
        limiter.hit("u").unwrap();
    }
    clock.set(4);
    assert!(!limiter.allowed("u").unwrap(), "three hits in (-6, 4]");
    clock.set(12);
    assert!(
        limiter.allowed("u").unwrap(),
        "window (2, 12] holds only the hit at 3"
    );
    clock.set(5);
    assert!(limiter.allowed("other").unwrap(), "a new key has no hits");
}

#[test]
fn check_and_hit_admits_n_then_refuses_without_a_trace() {
    let (limiter, clock) = manual("exact-refuse", limit(2, 10), Options::new());
    let mut con = shared().connection();
    clock.set(100);
    assert!(limiter.check_and_hit("k").unwrap().admitted);
    clock.set(103);
    let second = limiter.check_and_hit("k").unwrap();
    assert!(second.admitted);
    assert_eq!(second.now, 103, "the caller's tick decided");
    assert_eq!(
        second.status,
        Status {
            count: 2,
            remaining: 0,
            retry_after_ticks: 7
        }
    );
    let before: u64 = redis::cmd("ZCARD")
        .arg("exact-refuse:{#k}:log")
        .query(&mut con)
        .unwrap();
    clock.set(105);
    let refused = limiter.check_and_hit("k").unwrap();
    assert!(!refused.admitted);
    assert_eq!(
        refused.status.retry_after_ticks, 5,
        "the hit at 100 leaves at 110"
    );
    let after: u64 = redis::cmd("ZCARD")
        .arg("exact-refuse:{#k}:log")
        .query(&mut con)
        .unwrap();
    assert_eq!((before, after), (2, 2), "a refusal records nothing");
    clock.set(110);
    assert!(
        limiter.check_and_hit("k").unwrap().admitted,
        "(100, 110] excludes 100"
    );
}

#[test]
fn weighted_hits_are_all_or_nothing() {
    let (limiter, clock) = manual("exact-weight", limit(5, 10), Options::new());
    clock.set(1);
    assert!(limiter.check_and_hit_n("k", 3).unwrap().admitted);
    let refused = limiter.check_and_hit_n("k", 3).unwrap();
    assert!(!refused.admitted, "3 + 3 > 5: nothing taken");
    assert_eq!(refused.status.count, 3);
    assert!(limiter.check_and_hit_n("k", 2).unwrap().admitted);
    assert_eq!(limiter.status("k").unwrap().remaining, 0);
    assert!(matches!(
        limiter.check_and_hit_n("k", 0),
        Err(Error::Weight(_))
    ));
    assert!(matches!(
        limiter.check_and_hit_n("k", 6),
        Err(Error::Weight(_))
    ));
}

/// In-order random traces of check_and_hit, hit, allowed and status on a few keys give the
/// core's exact lock-free limiter's answers, call by call.
#[test]
fn random_in_order_traces_match_the_core() {
    for seed in 1..=3u64 {
        let prefix = format!("exact-model-{seed}");
        let lim = limit(4, 20);
        let (remote, clock) = manual(&prefix, lim, Options::new());
        let local: LockFreeLimiter<String> = LockFreeLimiter::new(lim);
        let mut rng = SplitMix64::new(seed * 7919);
        let mut t = 1;
        for step in 0..300 {
            t += rng.below(4);
            clock.set(t);
            let key = format!("k{}", rng.below(3));
            let what = rng.below(10);
            match what {
                0..=5 => assert_eq!(
                    remote.check_and_hit(&key).unwrap().admitted,
                    local.check_and_hit(&key, t),
                    "seed {seed} step {step}: check_and_hit({key}, {t})"
                ),
                6 => {
                    remote.hit(&key).unwrap();
                    local.hit(&key, t);
                }
                7 => assert_eq!(remote.allowed(&key).unwrap(), local.allowed(&key, t)),
                _ => {
                    let (r, l) = (remote.status(&key).unwrap(), local.status(&key, t));
                    assert_eq!(
                        (r.count, r.remaining),
                        (l.count, l.remaining),
                        "status({key}, {t})"
                    );
                    assert_eq!(
                        r.retry_after_ticks, l.retry_after_ticks,
                        "retry({key}, {t})"
                    );
                }
            }
        }
    }
}

/// Out-of-order ticks (callers up to 30 ticks late, within the lateness tolerance): some
/// late requests are refused, none breaks the window.
#[test]
fn out_of_order_checks_never_break_the_window() {
    let lim = limit(5, 50);
    let (limiter, clock) = manual("exact-ooo", lim, Options::new().lateness_ticks(50));
    let mut rng = SplitMix64::new(42);
    let mut newest = 100;
    let mut admitted = Vec::new();
    let mut refused_late = 0;
    for _ in 0..600 {
        newest += rng.below(3);
        let t = newest - rng.below(30);
        clock.set(t);
        let decision = limiter.check_and_hit("k").unwrap();
        if decision.admitted {
            admitted.push((t, 1));
        } else if t < newest {
            refused_late += 1;
        }
    }
    assert!(admitted.len() > 50, "the trace admits: {}", admitted.len());
    assert!(refused_late > 0, "late calls were exercised");
    assert_eq!(over_admissions(admitted, 5, 50), 0);
}

/// A call further behind than the lateness tolerance is refused (its window may have lost
/// hits), and `hit` that late records nothing.
#[test]
fn calls_below_the_watermark_are_refused() {
    let (limiter, clock) = manual("exact-late", limit(3, 10), Options::new().lateness_ticks(5));
    clock.set(1_000);
    assert!(limiter.check_and_hit("k").unwrap().admitted);
    clock.set(980);
    let late = limiter.check_and_hit("k").unwrap();
    assert!(
        !late.admitted,
        "980 - 10 is below the watermark 1000 - 10 - 5"
    );
    assert_eq!(late.status.remaining, 0);
    clock.set(994);
    let late = limiter.check_and_hit("k").unwrap();
    assert!(!late.admitted, "6 behind: 984 < 985");
    clock.set(995);
    let within = limiter.check_and_hit("k").unwrap();
    assert!(within.admitted, "5 behind: within the tolerance");
}

/// Eight threads on one key with the server's clock: every admission recorded at the
/// server tick that decided it; no window over the limit, and the key is saturated.
#[test]
fn threads_on_one_key_never_over_admit_with_server_time() {
    let lim = limit(20, 20_000); // 20 per 20 ms
    let options = Options::new().prefix("exact-threads").timeout(TIMEOUT);
    let limiter = Arc::new(RedisLimiter::new(&shared().url(), lim, options).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                let mut admitted = Vec::new();
                for _ in 0..400 {
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
    let calls = 8 * 400;
    assert!(
        admitted.len() < calls,
        "the limit bit: {} of {calls}",
        admitted.len()
    );
    assert!(!admitted.is_empty());
    assert_eq!(over_admissions(admitted, 20, 20_000), 0);
}

#[test]
fn keys_expire_and_hold_at_most_the_window() {
    let (limiter, clock) = manual("exact-expire", limit(3, 10_000), Options::new());
    let mut con = shared().connection();
    for i in 0..10 {
        clock.set(1_000 + i);
        limiter.hit("k").unwrap();
    }
    let card: u64 = redis::cmd("ZCARD")
        .arg("exact-expire:{#k}:log")
        .query(&mut con)
        .unwrap();
    assert_eq!(card, 3, "hit keeps the newest max_requests");
    let ttl: i64 = redis::cmd("PTTL")
        .arg("exact-expire:{#k}:log")
        .query(&mut con)
        .unwrap();
    // Window 10 ms + lateness 10 ms + slack 1 s.
    assert!(ttl > 0 && ttl <= 1_020, "PEXPIRE set: {ttl}");
    let meta_ttl: i64 = redis::cmd("PTTL")
        .arg("exact-expire:{#k}:meta")
        .query(&mut con)
        .unwrap();
    assert!(meta_ttl > 0 && meta_ttl <= 1_020);
    // A read creates nothing.
    let _ = limiter.status("never-seen").unwrap();
    let exists: u64 = redis::cmd("EXISTS")
        .arg("exact-expire:{#never-seen}:log")
        .arg("exact-expire:{#never-seen}:meta")
        .query(&mut con)
        .unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn script_flush_is_survived_by_reloading() {
    // A server of its own: the flush must not race the other tests' calls.
    let server = crate::Server::start();
    let clock = Arc::new(slidelimit::ManualClock::new(5));
    let options = Options::new()
        .timeout(TIMEOUT)
        .time(slidelimit_redis::TimeSource::Caller(clock));
    let limiter = RedisLimiter::new(&server.url(), limit(2, 10), options).unwrap();
    assert!(limiter.check_and_hit("k").unwrap().admitted);
    let mut con = server.connection();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    let trips = limiter.round_trips();
    assert!(
        limiter.check_and_hit("k").unwrap().admitted,
        "NOSCRIPT, load, call again"
    );
    assert_eq!(
        limiter.round_trips() - trips,
        3,
        "EVALSHA, SCRIPT LOAD, EVALSHA"
    );
    assert!(!limiter.check_and_hit("k").unwrap().admitted);
}

#[test]
fn a_script_error_is_a_typed_server_error() {
    let (limiter, clock) = manual("exact-wrongtype", limit(2, 10), Options::new());
    let mut con = shared().connection();
    let _: () = redis::cmd("SET")
        .arg("exact-wrongtype:{#k}:log")
        .arg("x")
        .query(&mut con)
        .unwrap();
    clock.set(5);
    let err = limiter.check_and_hit("k").unwrap_err();
    assert!(matches!(err, Error::Server(_)), "{err:?}");
    assert!(err.is_backend_failure());
    assert!(
        limiter.check_and_hit("other").unwrap().admitted,
        "the connection stays usable"
    );
}

#[test]
fn ticks_beyond_a_double_are_refused_before_the_server() {
    let (limiter, clock) = manual("exact-tick", limit(2, 10), Options::new());
    clock.set(1 << 53);
    assert!(matches!(
        limiter.check_and_hit("k"),
        Err(Error::TickOutOfRange { .. })
    ));
}

/// A full key is refused from its `blocked until` tick alone; a forced hit that pushes out
/// the oldest hit drops that tick, so the retry-after stays exact.
#[test]
fn full_key_refusals_and_retry_after_stay_exact() {
    let (limiter, clock) = manual("exact-blocked", limit(2, 10), Options::new());
    clock.set(100);
    assert!(limiter.check_and_hit("k").unwrap().admitted);
    clock.set(103);
    assert!(limiter.check_and_hit("k").unwrap().admitted);
    clock.set(105);
    assert_eq!(
        limiter.check_and_hit("k").unwrap().status.retry_after_ticks,
        5
    );
    clock.set(101);
    assert!(
        !limiter.check_and_hit("k").unwrap().admitted,
        "a late caller: still full"
    );
    clock.set(104);
    limiter.hit("k").unwrap(); // keeps the newest 2: 103 and 104
    clock.set(105);
    let refused = limiter.check_and_hit("k").unwrap();
    assert!(!refused.admitted);
    assert_eq!(refused.status.retry_after_ticks, 8, "103 leaves at 113");
    clock.set(113);
    assert!(limiter.check_and_hit("k").unwrap().admitted);
}

//! The rolling buckets in Redis: the core's answers on random traces (same geometry, same
//! rule), weights all or nothing, O(B) memory, and the window invariant under threads.

use std::sync::Arc;

use slidelimit::{LockFreeLimiter, RollingBuckets};
use slidelimit_redis::{Options, RedisLimiter};

use crate::over_admissions;
use crate::{limit, manual, shared, TIMEOUT};
use slidelimit_trace::rng::SplitMix64;

#[test]
fn weighted_tokens_per_hours_example() {
    // 100,000 tokens per 5 hours (ticks here are whatever the caller says), 60 buckets.
    let (limiter, clock) = manual(
        "buckets-tokens",
        limit(100_000, 18_000),
        Options::new().buckets(60),
    );
    clock.set(1_000);
    assert!(limiter.check_and_hit_n("pk", 30_000).unwrap().admitted);
    clock.set(1_060);
    assert!(
        !limiter.check_and_hit_n("pk", 80_000).unwrap().admitted,
        "all or nothing"
    );
    assert_eq!(limiter.status("pk").unwrap().count, 30_000);
    assert_eq!(limiter.algorithm(), "buckets");
}

/// Random in-order traces with weights: admitted and count equal the core's
/// `RollingBuckets` on the lock-free limiter, call by call.
#[test]
fn random_in_order_traces_match_the_core() {
    for (seed, b) in [(1u64, 4u64), (2, 5), (3, 10)] {
        let lim = limit(12, 40);
        let prefix = format!("buckets-model-{seed}");
        let (remote, clock) = manual(&prefix, lim, Options::new().buckets(b));
        let local = LockFreeLimiter::<String, RollingBuckets>::bucketed(lim, b).unwrap();
        let mut rng = SplitMix64::new(seed * 104_729);
        let mut t = 1;
        for step in 0..300 {
            t += rng.below(6);
            clock.set(t);
            let key = format!("k{}", rng.below(3));
            let n = 1 + rng.below(4);
            match rng.below(8) {
                0..=4 => assert_eq!(
                    remote.check_and_hit_n(&key, n).unwrap().admitted,
                    local.check_and_hit_n(&key, t, n).unwrap(),
                    "seed {seed} step {step}: check_and_hit_n({key}, {t}, {n})"
                ),
                5 => {
                    remote.hit_n(&key, n).unwrap();
                    local.hit_n(&key, t, n).unwrap();
                }
                6 => assert_eq!(
                    remote.allowed_n(&key, n).unwrap(),
                    local.allowed_n(&key, t, n).unwrap()
                ),
                _ => {
                    let (r, l) = (remote.status(&key).unwrap(), local.status(&key, t));
                    assert_eq!(
                        (r.count, r.remaining),
                        (l.count, l.remaining),
                        "status({key}, {t})"
                    );
                }
            }
        }
    }
}

#[test]
fn memory_is_o_of_b_and_expires() {
    let (limiter, clock) = manual(
        "buckets-mem",
        limit(1_000, 10_000),
        Options::new().buckets(10),
    );
    let mut con = shared().connection();
    for i in 0..500 {
        clock.set(i * 100);
        let _ = limiter.check_and_hit_n("k", 3).unwrap();
    }
    let fields: u64 = redis::cmd("HLEN")
        .arg("buckets-mem:{#k}:buckets")
        .query(&mut con)
        .unwrap();
    // B + 1 + L = 12 bucket fields at most, plus the head and the total.
    assert!(fields <= 14, "{fields} fields");
    let ttl: i64 = redis::cmd("PTTL")
        .arg("buckets-mem:{#k}:buckets")
        .query(&mut con)
        .unwrap();
    assert!(ttl > 0 && ttl <= 1_012, "{ttl}");
}

#[test]
fn threads_on_one_key_never_over_admit_with_server_time() {
    let lim = limit(30, 20_000);
    let options = Options::new()
        .prefix("buckets-threads")
        .timeout(TIMEOUT)
        .buckets(10);
    let limiter = Arc::new(RedisLimiter::new(&shared().url(), lim, options).unwrap());
    let handles: Vec<_> = (0..8u64)
        .map(|i| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                let mut admitted = Vec::new();
                for j in 0..300u64 {
                    let n = 1 + (i + j) % 3;
                    let decision = limiter.check_and_hit_n("hot", n).unwrap();
                    if decision.admitted {
                        admitted.push((decision.now, n));
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
    assert!(!admitted.is_empty());
    assert_eq!(over_admissions(admitted, 30, 20_000), 0);
}

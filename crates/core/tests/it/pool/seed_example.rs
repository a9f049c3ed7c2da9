//! A five-key pool end to end: five keys, each usable 500 times per 10 minutes, ticks in ms. Exact
//! and with the AB relaxation (1 minute, 50 uses).

use slidelimit::pool::{KeyPool, PoolMode, Refusal, UseLedger};

use super::{both_pools, Call, InOrder};
use crate::trace::check_safety;
use slidelimit_trace::rng::SplitMix64;

const NAMES: [&str; 5] = ["alpha", "bravo", "charlie", "delta", "echo"];
const USES_PER_KEY: u64 = 500;
const TEN_MINUTES: u64 = 600_000;
const MODES: [PoolMode; 2] = [
    PoolMode::Exact,
    PoolMode::Both {
        threshold_ticks: 60_000,
        key_threshold: 50,
    },
];

/// A burst that uses everything, the cooldown, then 40 minutes of calls every 0-299 ms (about
/// 8,000 per 10 minutes against 2,500 uses): the limit binds throughout.
fn run<G: UseLedger>(pool: &KeyPool<&'static str, G>) -> Vec<(&'static str, u64)> {
    let label = format!("{} {:?}", pool.variant(), pool.geometry().mode());
    let mut checked = InOrder::new(pool);
    let mut granted = Vec::new();
    let start = 1_000;
    for i in 0..2_500 {
        assert_eq!(
            pool.get_next_key(start),
            Some(&NAMES[i % 5]),
            "{label}: use {i}"
        );
        checked.log.grant(start);
        granted.push((NAMES[i % 5], start));
    }
    assert_eq!(pool.get_next_key(start), None, "{label}");
    assert_eq!(
        pool.take(start + TEN_MINUTES - 1),
        Err(Refusal::Exhausted),
        "{label}"
    );
    assert_eq!(pool.status(start).retry_at, start + TEN_MINUTES, "{label}");
    // The burst cools down at once: the cycle goes on where it stopped.
    assert_eq!(
        pool.get_next_key(start + TEN_MINUTES),
        Some(&"alpha"),
        "{label}"
    );
    checked.log.grant(start + TEN_MINUTES);
    granted.push(("alpha", start + TEN_MINUTES));
    assert_eq!(
        pool.get_next_key(start + TEN_MINUTES),
        Some(&"bravo"),
        "{label}"
    );
    checked.log.grant(start + TEN_MINUTES);
    granted.push(("bravo", start + TEN_MINUTES));

    let mut rng = SplitMix64::new(1);
    let mut now = start + TEN_MINUTES;
    let end = now + 4 * TEN_MINUTES;
    let refusals_before = checked.refusals;
    while now < end {
        now += rng.below(300);
        let answer = checked
            .call(pool, Call::NextKey, now)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        if let super::Answer::Index(Some(index)) = answer {
            granted.push((NAMES[index], now));
        }
    }
    assert!(
        checked.refusals - refusals_before > 1_000,
        "{label}: the limit never bound"
    );
    granted
}

#[test]
fn five_keys_cycle_in_order_and_none_exceeds_500_per_ten_minutes() {
    for mode in MODES {
        let (lock_free, mutex) = both_pools(&NAMES, USES_PER_KEY, TEN_MINUTES, mode).unwrap();
        assert_eq!(lock_free.geometry().total_uses(), 2_500);
        let granted = run(&lock_free);
        assert_eq!(run(&mutex), granted, "{mode:?}: the pools differ");
        check_safety(&granted, USES_PER_KEY, TEN_MINUTES)
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        // And the pool as a whole: 2,500 uses per 10 minutes.
        let all: Vec<((), u64)> = granted.iter().map(|&(_, now)| ((), now)).collect();
        check_safety(&all, 5 * USES_PER_KEY, TEN_MINUTES)
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        for name in NAMES {
            let uses = granted.iter().filter(|(n, _)| *n == name).count();
            // 50 minutes in all, 500 a key per 10: at most 2,500 (5 windows + the burst's).
            assert!(
                (1_500..=3_000).contains(&uses),
                "{mode:?}: {name} used {uses} times"
            );
        }
    }
}

/// The seed's anonymous `tryUseKey` (one key per cooldown, 500 keys) draws from the same
/// uses as the named calls.
#[test]
fn try_use_key_and_get_next_key_share_the_uses() {
    let names: Vec<u32> = (0..500).collect();
    let (pool, _) = both_pools(&names, 1, TEN_MINUTES, MODES[1]).unwrap();
    for _ in 0..499 {
        assert!(pool.try_use_key(5));
    }
    assert_eq!(pool.available(5), 1);
    // The cycle counts the anonymous uses: use 499 is key 499.
    assert_eq!(pool.get_next_key(5), Some(&499));
    assert!(!pool.try_use_key(TEN_MINUTES + 4));
    assert!(pool.try_use_key(TEN_MINUTES + 5));
    assert_eq!(pool.get_next_key(TEN_MINUTES + 5), Some(&1));
}

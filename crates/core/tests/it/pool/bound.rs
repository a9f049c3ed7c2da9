//! Traces that drive a pool to exactly `geometry().bucket_bound()` held buckets, every call
//! granted: a ring one slot smaller would have refused the last call.
//!
//! The construction (see `bucket_bound`'s doc): the peak is at tick `t`, where the last call
//! opens a new bucket. Before it, `c` buckets closed by time, one use each, `τ` ticks apart,
//! the oldest still held at `t`; with `extra = 1` the oldest one opens at
//! `o₁ = t - T - τ + 2` and takes a second use at `o₁ + τ - 1` (its newest use is then
//! `t - T + 1`, so it cools down at `t + 1`), which lets the chain start one bucket earlier
//! (`c' = ⌈(T - 1) / τ⌉` instead of `⌊(T - 1) / τ⌋`). The uses left, all but the last, fill
//! `⌊(L - 1 - c - extra) / k⌋` buckets of `k` uses, packed at `t` (their uses must be newer
//! than `t - T` to be held, and a time-closed bucket before them makes the first one open).

use slidelimit::pool::{additive_bucket_formula, bucket_bound, KeyPool, PoolMode, UseLedger};

use super::{both_pools, thresholds};

/// The peak's `now`s, and the tick `t` of the peak.
fn peak_trace(
    total_uses: u64,
    cooldown: u64,
    open: Option<u64>,
    k: u64,
    time_closed: u64,
    extra: u64,
) -> (Vec<u64>, u64) {
    let tau = open.unwrap_or(0);
    assert!(open.is_some() || time_closed == 0);
    assert!(
        extra == 0 || (k >= 2 && time_closed >= 1),
        "the oldest bucket takes two uses"
    );
    let t = 10 * (cooldown + tau) + 7;
    let mut nows = Vec::new();
    if extra == 1 {
        let first_open = t + 2 - cooldown - tau;
        nows.extend([first_open, first_open + tau - 1]);
        nows.extend((1..time_closed).map(|j| first_open + j * tau));
    } else {
        let first_open = t + 1 - cooldown;
        nows.extend((0..time_closed).map(|j| first_open + j * tau));
    }
    let full = (total_uses - 1 - time_closed - extra) / k;
    nows.extend(std::iter::repeat_n(t, (full * k + 1) as usize));
    assert!(nows.windows(2).all(|w| w[0] <= w[1]));
    (nows, t)
}

/// Runs the peak trace on `pool`: every call granted, `expected` buckets held at `t`.
fn reach_peak<G: UseLedger>(pool: &KeyPool<u32, G>, time_closed: u64, extra: u64, expected: u64) {
    let geometry = *pool.geometry();
    let total = geometry.total_uses();
    let (open, k) = thresholds(geometry.mode(), total);
    let label = format!(
        "{} L={total} T={} {:?}",
        pool.variant(),
        geometry.cooldown_ticks(),
        geometry.mode()
    );
    assert_eq!(geometry.bucket_bound(), expected, "{label}");
    assert_eq!(
        bucket_bound(total, geometry.cooldown_ticks(), open, k),
        expected,
        "{label}"
    );
    let (nows, t) = peak_trace(
        total,
        geometry.cooldown_ticks(),
        open,
        k,
        time_closed,
        extra,
    );
    for (i, &now) in nows.iter().enumerate() {
        // Before the last call one bucket fewer is held: the last one opens the peak's.
        if i + 1 == nows.len() {
            assert_eq!(pool.status(now).held_buckets, expected - 1, "{label}");
        }
        let taken = pool.take(now);
        assert_eq!(
            taken,
            Ok(i % pool.names().len()),
            "{label}: call {i} at {now}"
        );
    }
    let status = pool.status(t);
    assert_eq!(status.held_buckets, expected, "{label}: {status:?}");
    assert_eq!(status.held_uses, nows.len() as u64, "{label}: {status:?}");
    if time_closed > 0 {
        // The oldest bucket's newest use is at t - T + 1 (with or without the extra use): the
        // peak lasts one tick.
        let later = pool.status(t + 1);
        assert_eq!(later.held_buckets, expected - 1, "{label}: {later:?}");
    }
}

fn check(
    names: u32,
    uses_per_key: u64,
    cooldown: u64,
    mode: PoolMode,
    time_closed: u64,
    extra: u64,
    expected: u64,
) {
    let names: Vec<u32> = (0..names).collect();
    let (lock_free, mutex) = both_pools(&names, uses_per_key, cooldown, mode).unwrap();
    reach_peak(&lock_free, time_closed, extra, expected);
    reach_peak(&mutex, time_closed, extra, expected);
}

const SEED_AB_MS: PoolMode = PoolMode::Both {
    threshold_ticks: 60_000,
    key_threshold: 50,
};

/// (a) The seed's numbers in ms: L = 500 (5 keys x 100), T = 10 min, τ = 1 min, k = 50.
/// `c' = ⌈599,999 / 60,000⌉ = 10` time-closed buckets (the oldest with two uses) and
/// `⌊(499 - 11) / 50⌋ = 9` full ones beside the new one: 20, the seed's ⌈T/τ⌉ + ⌈L/k⌉.
#[test]
fn seed_numbers_in_ms_reach_the_seeds_twenty_buckets() {
    let formula = additive_bucket_formula(500, 600_000, Some(60_000), 50);
    assert_eq!(formula, 20);
    check(5, 100, 600_000, SEED_AB_MS, 10, 1, formula);
}

/// (b) The same in minute ticks (T = 10, τ = 1): ⌊9 / 1⌋ = ⌈9 / 1⌉ = 9 time-closed buckets,
/// 9 full, 1 new: 19, one less than the seed's formula.
#[test]
fn seed_numbers_in_minutes_reach_nineteen_one_below_the_seed() {
    let mode = PoolMode::Both {
        threshold_ticks: 1,
        key_threshold: 50,
    };
    let formula = additive_bucket_formula(500, 10, Some(1), 50);
    assert_eq!(formula, 20);
    check(5, 100, 10, mode, 9, 0, formula - 1);
}

/// (c) Where the `F(c', 1)` term wins strictly. AB with L = 10, T = 8, τ = 3, k = 4:
/// `F(⌊7/3⌋ = 2, 0) = 2 + ⌊7/4⌋ + 1 = 4` but `F(⌈7/3⌉ = 3, 1) = 3 + ⌊5/4⌋ + 1 = 5` (the
/// seed's formula says 6). A with L = 6, T = 8, τ = 3: `F(2, 0) = 3`, `F(3, 1) = 4`.
#[test]
fn the_stretched_chain_term_is_reached() {
    let both = PoolMode::Both {
        threshold_ticks: 3,
        key_threshold: 4,
    };
    assert_eq!(additive_bucket_formula(10, 8, Some(3), 4), 6);
    check(2, 5, 8, both, 3, 1, 5);
    check(3, 2, 8, PoolMode::TimeBound { threshold_ticks: 3 }, 3, 1, 4);
    // The F(c, 0) trace of the same pool stops one bucket short of the bound.
    let (pool, _) = both_pools(&[0u32, 1], 5, 8, both).unwrap();
    let (nows, t) = peak_trace(10, 8, Some(3), 4, 2, 0);
    for now in nows {
        assert!(pool.take(now).is_ok());
    }
    assert_eq!(pool.status(t).held_buckets, 4);
}

/// Without a time threshold the bound is ⌈L / k⌉, reached by one burst.
#[test]
fn count_and_exact_bounds_are_reached() {
    check(
        5,
        100,
        600_000,
        PoolMode::CountBound { key_threshold: 50 },
        0,
        0,
        10,
    );
    check(
        5,
        100,
        600_000,
        PoolMode::CountBound { key_threshold: 499 },
        0,
        0,
        2,
    );
    check(3, 3, 4, PoolMode::Exact, 0, 0, 9);
}

/// A time threshold equal to T (the largest allowed) still lets one time-closed bucket be
/// held beside the open one, through its second use: `c = 0`, `c' = 1`, `F(1, 1) = 2`. With
/// T = 1 nothing is held once time-closed.
#[test]
fn a_time_threshold_equal_to_the_cooldown_still_holds_two_buckets() {
    check(2, 3, 5, PoolMode::TimeBound { threshold_ticks: 5 }, 1, 1, 2);
    check(2, 3, 1, PoolMode::TimeBound { threshold_ticks: 1 }, 0, 0, 1);
}

//! Every `PoolError`, from both pools' constructors, and the largest accepted values beside
//! the smallest refused ones.

use slidelimit::pool::{
    PoolError, PoolMode, FAR_FUTURE_HEADROOM, MAX_BUCKET_SLOTS, MAX_TOTAL_USES,
};

use super::both_pools;

/// Builds both pools; both must agree on the outcome. `Ok` carries the bucket bound.
fn build(
    names: &[u32],
    uses_per_key: u64,
    cooldown: u64,
    mode: PoolMode,
) -> Result<u64, PoolError> {
    let lock_free =
        slidelimit::KeyPool::<u32>::new(names.iter().copied(), uses_per_key, cooldown, mode)
            .map(|pool| pool.geometry().bucket_bound());
    let mutex =
        slidelimit_mutex::MutexKeyPool::new(names.iter().copied(), uses_per_key, cooldown, mode)
            .map(|pool| pool.geometry().bucket_bound());
    assert_eq!(
        lock_free, mutex,
        "{names:?} x {uses_per_key} per {cooldown}, {mode:?}"
    );
    lock_free
}

const AB: PoolMode = PoolMode::Both {
    threshold_ticks: 60,
    key_threshold: 5,
};

#[test]
fn an_empty_key_list_is_refused() {
    assert_eq!(build(&[], 1, 10, PoolMode::Exact), Err(PoolError::NoKeys));
    // Checked before anything else.
    assert_eq!(build(&[], 0, 0, PoolMode::Exact), Err(PoolError::NoKeys));
}

#[test]
fn a_repeated_name_is_refused_with_both_positions() {
    assert_eq!(
        build(&[7, 8, 9, 8], 3, 10, AB),
        Err(PoolError::DuplicateKey {
            first: 1,
            second: 3
        })
    );
    assert_eq!(
        build(&[7, 7], 1, 10, PoolMode::Exact),
        Err(PoolError::DuplicateKey {
            first: 0,
            second: 1
        })
    );
    let pool = both_pools(&["a", "b", "a"], 1, 10, PoolMode::Exact).err();
    assert_eq!(
        pool,
        Some(PoolError::DuplicateKey {
            first: 0,
            second: 2
        })
    );
}

#[test]
fn zero_uses_or_cooldown_are_refused() {
    assert_eq!(
        build(&[1], 0, 10, PoolMode::Exact),
        Err(PoolError::ZeroUsesPerKey)
    );
    assert_eq!(build(&[1, 2], 0, 10, AB), Err(PoolError::ZeroUsesPerKey));
    assert_eq!(
        build(&[1], 1, 0, PoolMode::Exact),
        Err(PoolError::ZeroCooldown)
    );
    assert_eq!(build(&[1], 10, 0, AB), Err(PoolError::ZeroCooldown));
}

#[test]
fn zero_thresholds_are_refused() {
    let time = |threshold_ticks| PoolMode::TimeBound { threshold_ticks };
    let count = |key_threshold| PoolMode::CountBound { key_threshold };
    let both = |threshold_ticks, key_threshold| PoolMode::Both {
        threshold_ticks,
        key_threshold,
    };
    assert_eq!(
        build(&[1, 2], 5, 10, time(0)),
        Err(PoolError::ZeroTimeThreshold)
    );
    assert_eq!(
        build(&[1, 2], 5, 10, both(0, 3)),
        Err(PoolError::ZeroTimeThreshold)
    );
    assert_eq!(
        build(&[1, 2], 5, 10, count(0)),
        Err(PoolError::ZeroKeyThreshold)
    );
    assert_eq!(
        build(&[1, 2], 5, 10, both(1, 0)),
        Err(PoolError::ZeroKeyThreshold)
    );
    // The smallest thresholds are accepted.
    assert_eq!(build(&[1, 2], 5, 10, time(1)), Ok(10));
    assert_eq!(build(&[1, 2], 5, 10, count(1)), Ok(10));
}

#[test]
fn a_key_threshold_above_the_pools_uses_is_refused() {
    let count = |key_threshold| PoolMode::CountBound { key_threshold };
    // 3 keys x 4 uses = 12.
    assert_eq!(
        build(&[1, 2, 3], 4, 10, count(13)),
        Err(PoolError::KeyThresholdTooLarge {
            key_threshold: 13,
            total_uses: 12
        })
    );
    assert_eq!(
        build(
            &[1, 2, 3],
            4,
            10,
            PoolMode::Both {
                threshold_ticks: 2,
                key_threshold: u64::MAX
            }
        ),
        Err(PoolError::KeyThresholdTooLarge {
            key_threshold: u64::MAX,
            total_uses: 12
        })
    );
    // k = L: one bucket.
    assert_eq!(build(&[1, 2, 3], 4, 10, count(12)), Ok(1));
}

#[test]
fn a_time_threshold_above_the_cooldown_is_refused() {
    let time = |threshold_ticks| PoolMode::TimeBound { threshold_ticks };
    assert_eq!(
        build(&[1], 2, 10, time(11)),
        Err(PoolError::TimeThresholdTooLarge {
            threshold_ticks: 11
        })
    );
    assert_eq!(
        build(
            &[1],
            2,
            2,
            PoolMode::Both {
                threshold_ticks: u64::MAX - 1,
                key_threshold: 1
            }
        ),
        Err(PoolError::TimeThresholdTooLarge {
            threshold_ticks: u64::MAX - 1
        })
    );
    // τ = T is accepted: c = min(⌊(T - 1) / τ⌋, L - 1) = 0 and c' = 1 is not below L - 1,
    // so one bucket; at the largest cooldown too.
    assert_eq!(build(&[1], 2, 10, time(10)), Ok(1));
    assert_eq!(build(&[1], 2, u64::MAX, time(u64::MAX)), Ok(1));
    // T + τ = u64::MAX fits: one time-closed bucket beside the one taking uses: 2.
    assert_eq!(build(&[1], 2, u64::MAX - 1, time(1)), Ok(2));
    // Without a time threshold the cooldown alone may be u64::MAX.
    assert_eq!(build(&[1], 2, u64::MAX, PoolMode::Exact), Ok(2));
}

#[test]
fn too_many_uses_are_refused() {
    let count = PoolMode::CountBound {
        key_threshold: MAX_TOTAL_USES,
    };
    // keys x uses overflows a u64.
    assert_eq!(
        build(&[1, 2], u64::MAX, 10, count),
        Err(PoolError::TooManyUses {
            keys: 2,
            uses_per_key: u64::MAX
        })
    );
    // Fits a u64 but is above MAX_TOTAL_USES.
    assert_eq!(
        build(&[1], MAX_TOTAL_USES + 1, 10, count),
        Err(PoolError::TooManyUses {
            keys: 1,
            uses_per_key: MAX_TOTAL_USES + 1
        })
    );
    assert_eq!(MAX_TOTAL_USES % 47, 0, "2^23 - 1 = 47 x 178,481");
    let keys: Vec<u32> = (0..47).collect();
    assert_eq!(
        build(&keys, MAX_TOTAL_USES / 47 + 1, 10, count),
        Err(PoolError::TooManyUses {
            keys: 47,
            uses_per_key: MAX_TOTAL_USES / 47 + 1
        })
    );
    // Exactly MAX_TOTAL_USES, in one bucket.
    assert_eq!(build(&keys, MAX_TOTAL_USES / 47, 10, count), Ok(1));
}

/// Slots a ring keeps beside the bound (`geometry().slots() - bucket_bound()`).
fn spare_slots() -> u64 {
    let pool = slidelimit::KeyPool::<u32>::new([1], 3, 10, PoolMode::Exact).unwrap();
    let geometry = pool.geometry();
    assert_eq!(geometry.bucket_bound(), 3);
    geometry.slots() - geometry.bucket_bound()
}

#[test]
fn a_ring_above_max_bucket_slots_is_refused() {
    let spare = spare_slots();
    assert!((1..=4).contains(&spare), "{spare} spare slots");
    // Exact: one bucket per use.
    let most = MAX_BUCKET_SLOTS - spare;
    assert_eq!(build(&[1], most, 10, PoolMode::Exact), Ok(most));
    assert_eq!(
        build(&[1], most + 1, 10, PoolMode::Exact),
        Err(PoolError::TooManyBuckets {
            needed: MAX_BUCKET_SLOTS + 1
        })
    );
    assert_eq!(
        build(&[1], MAX_BUCKET_SLOTS + 7, 10, PoolMode::Exact),
        Err(PoolError::TooManyBuckets {
            needed: MAX_BUCKET_SLOTS + 7 + spare
        })
    );
    // B: ⌈L / k⌉ buckets, and room for far-future ones.
    let most_shared = most - FAR_FUTURE_HEADROOM;
    let count_bound = PoolMode::CountBound { key_threshold: 2 };
    assert_eq!(
        build(&[1, 2], most_shared, 10, count_bound),
        Ok(most_shared)
    );
    assert_eq!(
        build(&[1, 2], most_shared + 1, 10, count_bound),
        Err(PoolError::TooManyBuckets {
            needed: MAX_BUCKET_SLOTS + 1
        })
    );
    // A: ⌊(T - 1) / τ⌋ time-closed buckets (at most L - 1) beside the open one: L here.
    assert_eq!(
        build(
            &[1],
            MAX_TOTAL_USES,
            u64::MAX / 2,
            PoolMode::TimeBound { threshold_ticks: 1 }
        ),
        Err(PoolError::TooManyBuckets {
            needed: MAX_TOTAL_USES + spare + FAR_FUTURE_HEADROOM
        })
    );
    // The message names the need and the limit.
    let message = PoolError::TooManyBuckets { needed: 5 }.to_string();
    assert!(
        message.contains('5') && message.contains(&MAX_BUCKET_SLOTS.to_string()),
        "{message}"
    );
}

//! Window edges (half-open windows, tick 0, ticks near `u64::MAX`), invalid limits, invalid
//! weights and `status`, against every variant.

use slidelimit::{Limit, LimitError, ManualClock, Options, Status, WeightError, MAX_REQUESTS};

use crate::variants::{for_each_variant, limit};

#[test]
fn window_is_half_open() {
    for_each_variant::<u32>(limit(1, 10), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&1, 20), "{name}");
        assert!(!limiter.allowed(&1, 29), "{name}: 20 is in (19, 29]");
        assert!(!limiter.check_and_hit(&1, 29), "{name}");
        assert!(limiter.allowed(&1, 30), "{name}: 20 is not in (20, 30]");
        assert!(limiter.check_and_hit(&1, 30), "{name}");
        assert_eq!(
            limiter.status(&1, 30),
            Status {
                count: 1,
                remaining: 0,
                retry_after_ticks: 10
            },
            "{name}"
        );
        assert_eq!(limiter.status(&1, 39).retry_after_ticks, 1, "{name}");
        assert_eq!(limiter.status(&1, 40).count, 0, "{name}");
    });
}

#[test]
fn tick_zero_is_a_real_tick() {
    for_each_variant::<u32>(limit(2, 10), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&1, 0), "{name}");
        assert!(limiter.check_and_hit(&1, 0), "{name}");
        assert!(!limiter.check_and_hit(&1, 0), "{name}: two hits at tick 0");
        assert!(
            !limiter.allowed(&1, 5),
            "{name}: the window (-5, 5] holds tick 0"
        );
        assert!(!limiter.allowed(&1, 9), "{name}");
        assert!(limiter.allowed(&1, 10), "{name}");
        assert_eq!(limiter.status(&1, 3).retry_after_ticks, 7, "{name}");
    });
}

#[test]
fn the_top_two_ticks_are_treated_as_the_tick_below_them() {
    assert_eq!(slidelimit::window::MAX_TICK, u64::MAX - 2);
    for_each_variant::<u32>(limit(2, 10), Options::default(), |name, limiter| {
        limiter.hit(&1, u64::MAX);
        limiter.hit(&1, u64::MAX - 1);
        let full = Status {
            count: 2,
            remaining: 0,
            // Both hits are at MAX - 2; MAX - 2 + 10 saturates at MAX.
            retry_after_ticks: 2,
        };
        assert_eq!(limiter.status(&1, u64::MAX), full, "{name}");
        assert_eq!(limiter.status(&1, u64::MAX - 1), full, "{name}");
        assert_eq!(limiter.status(&1, u64::MAX - 2), full, "{name}");
        assert!(!limiter.allowed(&1, u64::MAX), "{name}");
        assert!(!limiter.check_and_hit(&1, u64::MAX), "{name}");
        assert!(
            !limiter.allowed(&1, 5),
            "{name}: hits in the future of a query are live"
        );
    });
}

#[test]
fn windows_near_u64_max_never_wrap() {
    for_each_variant::<u32>(limit(1, 10), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&1, u64::MAX - 5), "{name}");
        assert!(
            !limiter.check_and_hit(&1, u64::MAX),
            "{name}: MAX - 5 + 10 saturates, so the hit stays live"
        );
        assert!(limiter.check_and_hit(&2, u64::MAX - 20), "{name}");
        assert!(
            limiter.check_and_hit(&2, u64::MAX - 10),
            "{name}: MAX - 20 + 10 = MAX - 10 is not > MAX - 10"
        );
        assert!(!limiter.allowed(&2, u64::MAX - 1), "{name}");
    });
}

#[test]
fn a_window_of_u64_max_ticks_never_forgets() {
    for_each_variant::<u32>(limit(1, u64::MAX), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&1, 0), "{name}");
        assert!(!limiter.allowed(&1, u64::MAX - 1), "{name}");
        assert!(!limiter.check_and_hit(&1, u64::MAX), "{name}");
        assert_eq!(limiter.remove_idle(u64::MAX), 0, "{name}: never idle");
        assert_eq!(limiter.status(&1, u64::MAX).count, 1, "{name}");
    });
}

#[test]
fn zero_and_oversized_limits_are_errors() {
    assert_eq!(Limit::new(0, 10), Err(LimitError::ZeroMaxRequests));
    assert_eq!(Limit::new(3, 0), Err(LimitError::ZeroWindow));
    assert_eq!(Limit::new(0, 0), Err(LimitError::ZeroMaxRequests));
    assert_eq!(
        Limit::new(MAX_REQUESTS + 1, 10),
        Err(LimitError::TooManyRequests {
            max_requests: MAX_REQUESTS + 1
        })
    );
    assert!(Limit::new(MAX_REQUESTS, 10).is_ok());
    assert!(Limit::new(1, 1).is_ok());
    assert!(Limit::new(1, u64::MAX).is_ok());
    let limit = Limit::new(7, 30).unwrap();
    assert_eq!((limit.max_requests(), limit.window_ticks()), (7, 30));
}

#[test]
fn the_exact_log_rejects_weights_other_than_one() {
    for_each_variant::<u32>(limit(3, 10), Options::default(), |name, limiter| {
        assert_eq!(limiter.hit_n(&1, 5, 0), Err(WeightError::Zero), "{name}");
        assert_eq!(
            limiter.allowed_n(&1, 5, 0),
            Err(WeightError::Zero),
            "{name}"
        );
        assert_eq!(
            limiter.check_and_hit_n(&1, 5, 0),
            Err(WeightError::Zero),
            "{name}"
        );
        for n in [2, 3, 4, u64::MAX] {
            let unsupported = Err(WeightError::Unsupported { n });
            assert_eq!(limiter.hit_n(&1, 5, n), unsupported, "{name}");
            assert_eq!(
                limiter.allowed_n(&1, 5, n),
                unsupported.map(|()| true),
                "{name}"
            );
            assert_eq!(
                limiter.check_and_hit_n(&1, 5, n),
                unsupported.map(|()| true),
                "{name}"
            );
            assert_eq!(
                limiter.status_n(&1, 5, n).map(|_| ()),
                unsupported,
                "{name}"
            );
        }
        assert_eq!(limiter.status_n(&1, 5, 0), Err(WeightError::Zero), "{name}");
        assert_eq!(
            limiter.tracked_keys(),
            0,
            "{name}: a rejected call creates no key"
        );
        assert_eq!(
            limiter.status(&1, 5).count,
            0,
            "{name}: and records nothing"
        );
        assert_eq!(limiter.hit_n(&1, 5, 1), Ok(()), "{name}");
        assert_eq!(limiter.allowed_n(&1, 5, 1), Ok(true), "{name}");
        assert_eq!(limiter.check_and_hit_n(&1, 5, 1), Ok(true), "{name}");
        assert_eq!(limiter.status(&1, 5).count, 2, "{name}");
        assert_eq!(
            limiter.status_n(&1, 5, 1),
            Ok(limiter.status(&1, 5)),
            "{name}"
        );
    });
}

#[test]
fn a_weight_above_a_keys_own_limit_has_no_wait() {
    use slidelimit::{LimitControl, LockFreeLimiter, RollingBuckets};
    use slidelimit_mutex::MutexLimiter;
    use slidelimit_per_key_lock::PerKeyLockLimiter;
    use slidelimit_rwlock::RwLockLimiter;

    let window = RollingBuckets::new(limit(10, 100), 10).unwrap();
    let limiters: Vec<Box<dyn LimitControl<u32>>> = vec![
        Box::new(LockFreeLimiter::<u32, RollingBuckets>::with_options(
            window,
            Options::default(),
        )),
        Box::new(MutexLimiter::<u32, RollingBuckets>::with_options(
            window,
            Options::default(),
        )),
        Box::new(PerKeyLockLimiter::<u32, RollingBuckets>::with_options(
            window,
            Options::default(),
        )),
        Box::new(RwLockLimiter::<u32, RollingBuckets>::with_options(
            window,
            Options::default(),
        )),
    ];
    for limiter in limiters {
        let name = limiter.name();
        limiter.set_limit_for(&1, limit(3, 100));
        let above = Err(WeightError::ExceedsLimit {
            n: 4,
            max_requests: 3,
        });
        // Unknown key and known key alike.
        assert_eq!(limiter.status_n(&1, 0, 4), above, "{name}");
        assert_eq!(limiter.check_and_hit_n(&1, 0, 3), Ok(true), "{name}");
        assert_eq!(limiter.status_n(&1, 5, 4), above, "{name}");
        let full = limiter.status_n(&1, 5, 3).unwrap();
        assert_eq!(full.remaining, 0, "{name}");
        let at = 5 + full.retry_after_ticks;
        assert_eq!(
            limiter.allowed_n(&1, at, 3),
            Ok(true),
            "{name}: fits at {at}"
        );
        assert_eq!(
            limiter.allowed_n(&1, at - 1, 3),
            Ok(false),
            "{name}: not before"
        );
        // The default limit's keys take any weight up to 10.
        assert_eq!(
            limiter.status_n(&2, 5, 10).map(|s| s.retry_after_ticks),
            Ok(0),
            "{name}"
        );
        assert_eq!(
            limiter.status_n(&2, 5, 11),
            Err(WeightError::ExceedsLimit {
                n: 11,
                max_requests: 10
            }),
            "{name}"
        );
    }
}

#[test]
fn status_consumes_nothing_and_creates_no_key() {
    for_each_variant::<u32>(limit(2, 10), Options::default(), |name, limiter| {
        for _ in 0..5 {
            assert_eq!(
                limiter.status(&9, 3),
                Status {
                    count: 0,
                    remaining: 2,
                    retry_after_ticks: 0
                },
                "{name}"
            );
            assert!(limiter.allowed(&9, 3), "{name}");
        }
        assert_eq!(limiter.tracked_keys(), 0, "{name}");
        limiter.hit(&9, 3);
        limiter.hit(&9, 6);
        limiter.hit(&9, 8);
        // All three are live at 10, but the ring keeps only the `max_requests` newest (6, 8):
        // the count saturates at the limit. One more fits when 6 leaves, at 16.
        assert_eq!(
            limiter.status(&9, 10),
            Status {
                count: 2,
                remaining: 0,
                retry_after_ticks: 6
            },
            "{name}"
        );
        assert_eq!(limiter.status(&9, 16).remaining, 1, "{name}");
        assert_eq!(limiter.tracked_keys(), 1, "{name}");
    });
}

#[test]
fn keys_are_independent() {
    for_each_variant::<String>(limit(1, 10), Options::default(), |name, limiter| {
        assert!(limiter.check_and_hit(&"a".to_owned(), 1), "{name}");
        assert!(limiter.check_and_hit(&"b".to_owned(), 1), "{name}");
        assert!(!limiter.check_and_hit(&"a".to_owned(), 2), "{name}");
        assert!(!limiter.allowed(&"b".to_owned(), 2), "{name}");
        assert!(limiter.allowed(&"c".to_owned(), 2), "{name}");
        assert_eq!(limiter.tracked_keys(), 2, "{name}");
    });
}

#[test]
fn check_and_hit_now_reads_the_clock() {
    for_each_variant::<u32>(limit(1, 10), Options::default(), |name, limiter| {
        let clock = ManualClock::new(100);
        assert!(limiter.check_and_hit_now(&1, &clock), "{name}");
        clock.advance(9);
        assert!(!limiter.check_and_hit_now(&1, &clock), "{name}: at 109");
        clock.advance(1);
        assert!(limiter.check_and_hit_now(&1, &clock), "{name}: at 110");
        clock.set(u64::MAX);
        assert!(limiter.check_and_hit_now(&1, &clock), "{name}");
        assert_eq!(limiter.status(&1, u64::MAX - 1).count, 1, "{name}");
    });
}

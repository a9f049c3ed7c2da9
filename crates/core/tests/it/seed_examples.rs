//! The worked examples of a limit of 3 per 10 ticks (hit, allowed, check_and_hit on two
//! users), against every variant.

use slidelimit::Options;

use crate::variants::{for_each_variant, limit};

#[test]
fn usage_example() {
    for_each_variant::<&str>(limit(3, 10), Options::default(), |name, limiter| {
        limiter.hit(&"user_1", 1);
        limiter.hit(&"user_1", 2);
        assert!(limiter.allowed(&"user_1", 3), "{name}: 2 hits in window");
        limiter.hit(&"user_1", 3);
        assert!(!limiter.allowed(&"user_1", 4), "{name}: 3 hits = limit");
        assert!(
            limiter.allowed(&"user_1", 12),
            "{name}: window (2, 12] holds only the hit at 3"
        );
        assert_eq!(limiter.status(&"user_1", 12).count, 1, "{name}");
        assert!(limiter.allowed(&"user_2", 5), "{name}: a new key");
        assert_eq!(limiter.tracked_keys(), 1, "{name}: allowed creates no key");
    });
}

#[test]
fn burst_at_one_tick() {
    for_each_variant::<&str>(limit(3, 10), Options::default(), |name, limiter| {
        limiter.hit(&"user_1", 5);
        limiter.hit(&"user_1", 5);
        assert!(limiter.allowed(&"user_1", 5), "{name}: 2 hits");
        limiter.hit(&"user_1", 5);
        assert!(!limiter.allowed(&"user_1", 5), "{name}: 3 hits");
        assert_eq!(limiter.status(&"user_1", 5).count, 3, "{name}");
        assert!(
            !limiter.allowed(&"user_1", 14),
            "{name}: all three live until 15"
        );
        assert!(limiter.allowed(&"user_1", 15), "{name}");
    });
}

#[test]
fn burst_through_check_and_hit_admits_exactly_the_limit() {
    for_each_variant::<&str>(limit(3, 10), Options::default(), |name, limiter| {
        let admitted = (0..10)
            .filter(|_| limiter.check_and_hit(&"user_1", 5))
            .count();
        assert_eq!(admitted, 3, "{name}");
    });
}

#[test]
fn out_of_order_timestamps_count_both() {
    for_each_variant::<&str>(limit(3, 10), Options::default(), |name, limiter| {
        limiter.hit(&"user_2", 10);
        limiter.hit(&"user_2", 8);
        assert_eq!(
            limiter.status(&"user_2", 10).count,
            2,
            "{name}: the late hit at 8 counts"
        );
        assert!(limiter.allowed(&"user_2", 10), "{name}: 2 < 3");
        limiter.hit(&"user_2", 9);
        assert!(!limiter.allowed(&"user_2", 10), "{name}: 8, 9, 10 fill it");
        assert!(
            limiter.allowed(&"user_2", 18),
            "{name}: (8, 18] holds only 9 and 10"
        );
    });
}

#[test]
fn long_gap_forgets_old_hits() {
    for_each_variant::<&str>(limit(3, 10), Options::default(), |name, limiter| {
        limiter.hit(&"user_3", 1);
        limiter.hit(&"user_3", 2);
        limiter.hit(&"user_3", 3);
        assert!(!limiter.allowed(&"user_3", 3), "{name}");
        assert!(
            limiter.allowed(&"user_3", 1000),
            "{name}: old hits are gone"
        );
        assert_eq!(limiter.status(&"user_3", 1000).count, 0, "{name}");
        assert!(limiter.check_and_hit(&"user_3", 1000), "{name}");
        assert_eq!(
            limiter.remove_idle(1000),
            0,
            "{name}: the key is live again"
        );
    });
}

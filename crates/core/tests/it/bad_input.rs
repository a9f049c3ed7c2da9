//! Bad input: one far-future timestamp must not turn the automatic sweep it triggers into
//! refusals for everyone, against every variant.
//!
//! The rule: a far-future tick is a valid tick. It counts as a live hit of its own key until
//! that tick + W, so that key's ordinary calls see one more hit. If its insert triggers the
//! automatic sweep, the sweep runs at the far-future `now`, so every other key looks idle
//! and is removed; each removed key's watermark rises only to *its own* newest hit + W (the
//! tick from which its removed state was fresh), so ordinary calls on it are refused only
//! until then, as if the key's clock had lagged by less than a window. Keys never seen are
//! affected only where they share a watermark slot with a removed key, for the same short
//! span. A single global watermark raised to the sweep's horizon would instead refuse every
//! call for about 2^60 ticks.

use slidelimit::Options;

use crate::trace::limiter_key;
use crate::variants::{for_each_variant, limit};

const FLOOR: usize = 64;
const FAR_FUTURE: u64 = 1 << 60;

fn key(i: u64) -> u64 {
    limiter_key(0).wrapping_mul(i + 1)
}

#[test]
fn a_far_future_timestamp_does_not_refuse_later_ordinary_calls() {
    let options = Options::default().sweep_floor_keys(FLOOR);
    for_each_variant::<u64>(limit(2, 100), options, |name, limiter| {
        // 63 ordinary keys, key i last hit at 1000 + i: fresh from 1100 + i.
        for i in 0..63 {
            assert!(limiter.check_and_hit(&key(i), 1000 + i), "{name}");
        }
        assert_eq!(limiter.tracked_keys(), 63, "{name}");
        let bad = key(1000);
        // The 64th key reaches the floor: the sweep runs at 2^60 and removes all the others.
        assert!(limiter.check_and_hit(&bad, FAR_FUTURE), "{name}");
        assert_eq!(
            limiter.tracked_keys(),
            1,
            "{name}: only the far-future key is live"
        );

        // Each removed key is refused below its own newest hit + W, and from there on at most
        // until the last removed key's (1162), where it shares that key's watermark slot.
        for i in 0..63 {
            let fresh_from = 1100 + i;
            assert!(
                !limiter.allowed(&key(i), fresh_from - 1),
                "{name}: key #{i}"
            );
            assert!(
                limiter.allowed(&key(i), fresh_from)
                    || limiter.status(&key(i), fresh_from).retry_after_ticks <= 1162 - fresh_from,
                "{name}: key #{i} refused past every removed key's watermark"
            );
        }

        // ...and from the last of those ticks on, every ordinary call on every key, removed
        // or never seen, is answered exactly: two admissions, then a refusal.
        let now = 1162;
        for i in (0..63).chain(2000..2100) {
            assert!(limiter.allowed(&key(i), now), "{name}: key #{i}");
            assert!(limiter.check_and_hit(&key(i), now), "{name}: key #{i}");
            assert!(limiter.check_and_hit(&key(i), now + 1), "{name}: key #{i}");
            assert!(!limiter.check_and_hit(&key(i), now + 2), "{name}: key #{i}");
        }

        // The far-future key's own ordinary calls count its far-future hit until 2^60 + W.
        assert_eq!(limiter.status(&bad, now).count, 1, "{name}");
        assert!(limiter.check_and_hit(&bad, now), "{name}");
        assert!(!limiter.check_and_hit(&bad, now), "{name}: limit 2");
    });
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

//! When a refused request of weight `n` will first fit, asked of the limiter without
//! recording anything.

use std::hash::Hash;

use crate::limiter::RateLimiter;
use crate::window::MAX_TICK;

/// What the limiter says about `n` hits of a key after a refusal at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ready {
    /// The first tick after `now` at which `n` hits would be admitted if no other call
    /// came.
    At(u64),
    /// No tick up to the last one admits `n` hits: `n` is above the key's own limit.
    Never,
}

/// The first tick `t > now` at which `limiter.allowed_n(key, t, n)` holds if no other call
/// came, read from the window by one `status_n` (which consumes nothing and creates no key):
/// every window answers when weight `n` next fits, the rolling buckets from their counters.
///
/// A refusal at `now` means nothing fits at `now`, so the answer is at least `now + 1` even
/// when the status (read a moment later, after other calls) says there is room: the caller
/// then wakes a tick later and tries again, rather than spinning.
pub(super) fn first_admitting_tick<K, L>(limiter: &L, key: &K, now: u64, n: u64) -> Ready
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: RateLimiter<K> + ?Sized,
{
    match limiter.status_n(key, now, n) {
        Ok(status) => Ready::At(
            now.saturating_add(status.retry_after_ticks.max(1))
                .min(MAX_TICK),
        ),
        // The weight was valid for the limiter (the waiter checked before queueing), so
        // this is the key's own limit: below `n`, it never admits it.
        Err(_) => Ready::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::{first_admitting_tick, Ready};
    use crate::limit::Limit;
    use crate::limiter::LimitControl;
    use crate::lockfree::LockFreeLimiter;
    use crate::window::buckets::RollingBuckets;

    #[test]
    fn weight_one_is_the_status_retry_after() {
        let limiter: LockFreeLimiter<u8> = LockFreeLimiter::new(Limit::new(2, 100).unwrap());
        assert!(limiter.check_and_hit(&1, 10));
        assert!(limiter.check_and_hit(&1, 30));
        assert!(!limiter.check_and_hit(&1, 50));
        assert_eq!(first_admitting_tick(&limiter, &1, 50, 1), Ready::At(110));
    }

    #[test]
    fn heavier_weights_are_read_from_the_counters_exactly() {
        // 10 per 100 ticks in 10 buckets of 10: 4 at 0, 3 at 20, 3 at 40.
        let limiter =
            LockFreeLimiter::<u8, RollingBuckets>::bucketed(Limit::new(10, 100).unwrap(), 10)
                .unwrap();
        for (tick, n) in [(0, 4), (20, 3), (40, 3)] {
            assert_eq!(limiter.check_and_hit_n(&1, tick, n), Ok(true));
        }
        for n in 1..=10 {
            let Ready::At(tick) = first_admitting_tick(&limiter, &1, 50, n) else {
                panic!("weight {n} fits some day");
            };
            assert!(tick > 50);
            assert_eq!(
                limiter.allowed_n(&1, tick, n),
                Ok(true),
                "weight {n} at {tick}"
            );
            assert_eq!(
                limiter.allowed_n(&1, tick - 1, n),
                Ok(false),
                "weight {n} before"
            );
        }
    }

    #[test]
    fn a_weight_above_the_keys_own_limit_is_never_admitted() {
        let limiter: LockFreeLimiter<u8, RollingBuckets> =
            LockFreeLimiter::bucketed(Limit::new(10, 100).unwrap(), 10).unwrap();
        limiter.set_limit_for(&1, Limit::new(3, 100).unwrap());
        assert_eq!(limiter.check_and_hit_n(&1, 0, 4), Ok(false));
        assert_eq!(first_admitting_tick(&limiter, &1, 0, 4), Ready::Never);
        assert_eq!(first_admitting_tick(&limiter, &1, 0, 3), Ready::At(1));
    }
}

//! Which limiter runs: one of the four variants, with the exact log or rolling buckets, built
//! once behind the `RateLimiter` trait so that everything after is written once.

use std::fmt;

use slidelimit::{BucketError, Limit, LockFreeLimiter, RateLimiter, RollingBuckets};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

use crate::spec::WindowSpec;

/// A limiter variant: the same algorithm behind a different guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// The lock-free core (`slidelimit::LockFreeLimiter`).
    LockFree,
    /// One global mutex (`slidelimit_mutex::MutexLimiter`).
    Mutex,
    /// A mutex per key (`slidelimit_per_key_lock::PerKeyLockLimiter`).
    PerKeyLock,
    /// One read-write lock (`slidelimit_rwlock::RwLockLimiter`).
    Rwlock,
}

/// A limiter over string keys, whichever variant and window it is.
pub type DynLimiter = Box<dyn RateLimiter<String>>;

/// Builds `variant` with `window` over `limit`.
///
/// # Errors
/// [`BucketError`] when the rolling buckets cannot be laid over the window (zero buckets, a
/// bucket narrower than a tick, too many).
pub fn build(
    variant: Variant,
    window: WindowSpec,
    limit: Limit,
) -> Result<DynLimiter, BucketError> {
    Ok(match (variant, window) {
        (Variant::LockFree, WindowSpec::Exact) => Box::new(LockFreeLimiter::<String>::new(limit)),
        (Variant::Mutex, WindowSpec::Exact) => Box::new(MutexLimiter::<String>::new(limit)),
        (Variant::PerKeyLock, WindowSpec::Exact) => {
            Box::new(PerKeyLockLimiter::<String>::new(limit))
        }
        (Variant::Rwlock, WindowSpec::Exact) => Box::new(RwLockLimiter::<String>::new(limit)),
        (Variant::LockFree, WindowSpec::Buckets(b)) => Box::new(LockFreeLimiter::<
            String,
            RollingBuckets,
        >::bucketed(limit, b)?),
        (Variant::Mutex, WindowSpec::Buckets(b)) => {
            Box::new(MutexLimiter::<String, RollingBuckets>::bucketed(limit, b)?)
        }
        (Variant::PerKeyLock, WindowSpec::Buckets(b)) => Box::new(PerKeyLockLimiter::<
            String,
            RollingBuckets,
        >::bucketed(limit, b)?),
        (Variant::Rwlock, WindowSpec::Buckets(b)) => {
            Box::new(RwLockLimiter::<String, RollingBuckets>::bucketed(limit, b)?)
        }
    })
}

/// How a window reads in a report: `exact log`, `buckets (B=10)`.
pub struct WindowName(pub WindowSpec);

impl fmt::Display for WindowName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            WindowSpec::Exact => f.write_str("exact log"),
            WindowSpec::Buckets(b) => write!(f, "buckets (B={b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_and_window_is_built_and_named() {
        let limit = Limit::new(2, 10).unwrap();
        for &variant in <Variant as clap::ValueEnum>::value_variants() {
            for window in [WindowSpec::Exact, WindowSpec::Buckets(5)] {
                let limiter = build(variant, window, limit).unwrap();
                let expected = clap::ValueEnum::to_possible_value(&variant).unwrap();
                assert_eq!(limiter.name(), expected.get_name());
                let algorithm = if window == WindowSpec::Exact {
                    "exact"
                } else {
                    "buckets"
                };
                assert_eq!(limiter.algorithm(), algorithm);
                assert_eq!(limiter.limit(), limit);
            }
        }
    }

    #[test]
    fn buckets_narrower_than_a_tick_are_refused() {
        let limit = Limit::new(2, 10).unwrap();
        assert!(matches!(
            build(Variant::LockFree, WindowSpec::Buckets(11), limit),
            Err(BucketError::NarrowerThanATick { .. })
        ));
    }
}

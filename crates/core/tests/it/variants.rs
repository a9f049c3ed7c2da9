//! The harness: every test body runs against all four variants through `dyn RateLimiter<K>`,
//! so a new variant added here gets every test.

use std::hash::Hash;
use std::sync::Arc;

use slidelimit::{ExactLog, Limit, LockFreeLimiter, Options, RateLimiter, RollingBuckets};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

/// The names every variant reports, in the order [`all_variants`] builds them.
pub const NAMES: [&str; 4] = ["lock-free", "mutex", "per-key-lock", "rwlock"];

/// One limiter of each variant, with the exact log for `limit` and the given options.
pub fn all_variants<K>(limit: Limit, options: Options) -> Vec<Box<dyn RateLimiter<K>>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let window = ExactLog::new(limit);
    vec![
        Box::new(LockFreeLimiter::<K>::with_options(window, options)),
        Box::new(MutexLimiter::<K>::with_options(window, options)),
        Box::new(PerKeyLockLimiter::<K>::with_options(window, options)),
        Box::new(RwLockLimiter::<K>::with_options(window, options)),
    ]
}

/// [`all_variants`] with default options (lateness one window, sweep floor 4096).
pub fn default_variants<K>(limit: Limit) -> Vec<Box<dyn RateLimiter<K>>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    vec![
        Box::new(LockFreeLimiter::<K>::new(limit)),
        Box::new(MutexLimiter::<K>::new(limit)),
        Box::new(PerKeyLockLimiter::<K>::new(limit)),
        Box::new(RwLockLimiter::<K>::new(limit)),
    ]
}

/// [`all_variants`], shareable between threads.
pub fn shared_variants<K>(limit: Limit, options: Options) -> Vec<Arc<dyn RateLimiter<K>>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    all_variants(limit, options)
        .into_iter()
        .map(Arc::from)
        .collect()
}

/// The variant called `name` (one of [`NAMES`]), shareable between threads.
pub fn shared_variant<K>(name: &str, limit: Limit, options: Options) -> Arc<dyn RateLimiter<K>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    shared_variants(limit, options)
        .into_iter()
        .find(|limiter| limiter.name() == name)
        .unwrap_or_else(|| panic!("no variant named {name}"))
}

/// Runs `body` once per variant (fresh limiter each time); a failing assertion names the
/// variant in its message through the `&str` argument.
pub fn for_each_variant<K>(
    limit: Limit,
    options: Options,
    mut body: impl FnMut(&str, &dyn RateLimiter<K>),
) where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    for limiter in all_variants::<K>(limit, options) {
        body(limiter.name(), limiter.as_ref());
    }
}

/// A limit that is known to be valid.
pub fn limit(max_requests: u64, window_ticks: u64) -> Limit {
    Limit::new(max_requests, window_ticks).expect("a valid limit")
}

/// Options that never sweep on their own: only `remove_idle` removes keys.
pub fn no_auto_sweep() -> Options {
    Options::default().sweep_floor_keys(usize::MAX)
}

#[test]
fn harness_builds_every_variant_once() {
    let built: Vec<&str> = all_variants::<u32>(limit(3, 10), Options::default())
        .iter()
        .map(|l| l.name())
        .collect();
    assert_eq!(built, NAMES);
    let defaults: Vec<&str> = default_variants::<u32>(limit(3, 10))
        .iter()
        .map(|l| l.name())
        .collect();
    assert_eq!(defaults, NAMES);
    for limiter in all_variants::<u32>(limit(3, 10), Options::default()) {
        assert_eq!(limiter.algorithm(), "exact");
        assert_eq!(limiter.limit(), limit(3, 10));
        assert_eq!(limiter.tracked_keys(), 0);
    }
}

/// Every variant with the exact log and with rolling buckets (8), for `limit`, each with
/// its name (`-buckets` after the rolling buckets').
pub fn every_limiter(limit: Limit, options: Options) -> Vec<(String, Box<dyn RateLimiter<u64>>)> {
    let buckets = RollingBuckets::new(limit, 8).expect("8 buckets fit");
    let mut limiters: Vec<(String, Box<dyn RateLimiter<u64>>)> = all_variants(limit, options)
        .into_iter()
        .map(|limiter| (limiter.name().to_owned(), limiter))
        .collect();
    let bucketed: [Box<dyn RateLimiter<u64>>; 4] = [
        Box::new(LockFreeLimiter::<u64, RollingBuckets>::with_options(
            buckets, options,
        )),
        Box::new(MutexLimiter::<u64, RollingBuckets>::with_options(
            buckets, options,
        )),
        Box::new(PerKeyLockLimiter::<u64, RollingBuckets>::with_options(
            buckets, options,
        )),
        Box::new(RwLockLimiter::<u64, RollingBuckets>::with_options(
            buckets, options,
        )),
    ];
    limiters.extend(
        bucketed
            .into_iter()
            .map(|limiter| (format!("{}-buckets", limiter.name()), limiter)),
    );
    limiters
}

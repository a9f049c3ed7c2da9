//! The lifecycle's contenders by name: the four exact-log variants, their rolling-bucket
//! siblings and the plain deque limiter, each with its automatic removal on (as users run
//! it) or off (only `remove_idle` removes keys, so creating and removing can be counted
//! apart).

use slidelimit::{ExactLog, Limit, LockFreeLimiter, Options, RateLimiter, RollingBuckets};
use slidelimit_bench::clock::TICK_NS;
use slidelimit_bench::deque_baseline::DequeLimiter;
use slidelimit_bench::workload::{self, Workload};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

/// Distinct keys the churn draws from, uniformly.
pub const KEYS: u64 = 1_000_000;
/// The churn limit: 4 per 20,000 ticks.
const MAX_REQUESTS: u64 = 4;
pub const WINDOW_TICKS: u64 = 20_000;
/// Buckets of the rolling-bucket contenders (as in the comparison runner).
const BUCKETS: u64 = 8;

/// Every contender, the plain deque limiter last (the ratios' base).
pub const ALL: [&str; 9] = [
    "lock-free",
    "mutex",
    "per-key-lock",
    "rwlock",
    "lock-free-buckets",
    "mutex-buckets",
    "per-key-lock-buckets",
    "rwlock-buckets",
    "deque-mutex",
];

/// Whether a contender removes idle keys by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// As built by default: the automatic sweep (ours), a pass every 65,536 calls (the deque).
    Automatic,
    /// Only `remove_idle` removes keys.
    OnlyRemoveIdle,
}

/// The comparison's `zipf` workload, whose limit and keys the Zipf trace takes.
pub fn zipf_workload() -> Workload {
    workload::find("zipf").expect("the comparison defines a zipf workload")
}

/// The trace a contender is built for, which sets its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trace {
    /// Key churn: 4 per 20,000 ticks.
    Churn,
    /// The comparison's Zipf workload, with its limit.
    Zipf,
    /// Fresh keys hit `hits` times in a row, `ticks_per_call` apart, with the churn's limit.
    Repeat { hits: u64, ticks_per_call: u64 },
}

/// The contender called `name`, built for the churn, or `None` for an unknown name.
pub fn build(name: &str, removal: Removal) -> Option<Box<dyn RateLimiter<u64>>> {
    build_for(name, removal, Trace::Churn)
}

/// The contender called `name`, built for `trace`, or `None` for an unknown name.
pub fn build_for(name: &str, removal: Removal, trace: Trace) -> Option<Box<dyn RateLimiter<u64>>> {
    let limit = move || {
        let (max_requests, window_ticks) = match trace {
            Trace::Churn | Trace::Repeat { .. } => (MAX_REQUESTS, WINDOW_TICKS),
            Trace::Zipf => {
                let zipf = zipf_workload();
                (zipf.max_requests, zipf.window_ns / TICK_NS)
            }
        };
        Limit::new(max_requests, window_ticks).expect("a valid limit")
    };
    let options = match removal {
        Removal::Automatic => Options::default(),
        // usize::MAX: the sweep never starts by itself (Options::sweep_floor_keys).
        Removal::OnlyRemoveIdle => Options::default().sweep_floor_keys(usize::MAX),
    };
    let exact = || ExactLog::new(limit());
    let bucketed = || RollingBuckets::new(limit(), BUCKETS).expect("valid buckets");
    Some(match name {
        "lock-free" => Box::new(LockFreeLimiter::<u64>::with_options(exact(), options)),
        "mutex" => Box::new(MutexLimiter::<u64>::with_options(exact(), options)),
        "per-key-lock" => Box::new(PerKeyLockLimiter::<u64>::with_options(exact(), options)),
        "rwlock" => Box::new(RwLockLimiter::<u64>::with_options(exact(), options)),
        "lock-free-buckets" => Box::new(LockFreeLimiter::<u64, RollingBuckets>::with_options(
            bucketed(),
            options,
        )),
        "mutex-buckets" => Box::new(MutexLimiter::<u64, RollingBuckets>::with_options(
            bucketed(),
            options,
        )),
        "per-key-lock-buckets" => Box::new(PerKeyLockLimiter::<u64, RollingBuckets>::with_options(
            bucketed(),
            options,
        )),
        "rwlock-buckets" => Box::new(RwLockLimiter::<u64, RollingBuckets>::with_options(
            bucketed(),
            options,
        )),
        "deque-mutex" => Box::new(match removal {
            Removal::Automatic => DequeLimiter::<u64>::new(limit()),
            Removal::OnlyRemoveIdle => DequeLimiter::<u64>::without_forgetting(limit()),
        }),
        _ => return None,
    })
}

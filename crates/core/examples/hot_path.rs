//! The decision hot path alone, for instruction counts under callgrind (results/metrics.md):
//! `calls` `check_and_hit` calls on one hot key or spread over 1024 keys, on the lock-free or
//! the mutex limiter. Run it at two `calls` and subtract, so setup cancels out.
//!
//! ```text
//! hot_path <lock-free|mutex> <hot|many> <calls> [recorder]
//! ```
//! `recorder` (feature `metrics`) installs a recorder that keeps every value before the
//! limiter is built; without it, the handles are the facade's no-ops.

use std::hint::black_box;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
use slidelimit_mutex::MutexLimiter;

/// Keys of the "many" workload, all created before the measured calls.
const MANY_KEYS: u64 = 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: hot_path <lock-free|mutex> <hot|many> <calls> [recorder]";
    let (variant, keys, calls) = match args.as_slice() {
        [_, variant, keys, calls, ..] => (variant.as_str(), keys.as_str(), calls.parse::<u64>()),
        _ => panic!("{usage}"),
    };
    let calls = calls.expect(usage);
    if args.get(4).map(String::as_str) == Some("recorder") {
        install_recorder();
    }
    // Half the calls admitted, half refused, on a hot key: 1 per 2 ticks, one call per tick.
    let limit = Limit::new(1, 2).expect("a valid limit");
    let limiter: Box<dyn RateLimiter<u64>> = match variant {
        "lock-free" => Box::new(LockFreeLimiter::<u64>::new(limit)),
        "mutex" => Box::new(MutexLimiter::<u64>::new(limit)),
        _ => panic!("{usage}"),
    };
    let key_count = match keys {
        "hot" => 1,
        "many" => MANY_KEYS,
        _ => panic!("{usage}"),
    };
    for key in 0..key_count {
        let _ = limiter.check_and_hit(&key, 0);
    }
    let mut admitted = 0u64;
    for call in 0..calls {
        let key = call % key_count;
        admitted += u64::from(limiter.check_and_hit(black_box(&key), call / key_count + 1));
    }
    println!("{admitted} of {calls} admitted");
}

#[cfg(feature = "metrics")]
fn install_recorder() {
    metrics_util::debugging::DebuggingRecorder::new()
        .install()
        .expect("the first recorder");
}

#[cfg(not(feature = "metrics"))]
fn install_recorder() {
    panic!("`recorder` needs feature `metrics`");
}

//! The decision hot path alone, for instruction counts under callgrind (results/metrics.md):
//! `calls` `check_and_hit` calls on one hot key or spread over 1024 keys, on the lock-free or
//! the mutex limiter. Run it at two `calls` and subtract, so setup cancels out.
//!
//! ```text
//! cargo run --release -p slidelimit --example hot_path     # lock-free, one hot key, 10M calls
//! hot_path <lock-free|mutex> <hot|many> <calls> [recorder]
//! ```
//! `recorder` (feature `metrics`) installs a recorder that keeps every value before the
//! limiter is built; without it, the handles are the facade's no-ops. It prints how many
//! calls were admitted and the time per call (wall time: for instructions, run it under
//! callgrind as `benches/metrics-callgrind.sh` does).

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
use slidelimit_mutex::MutexLimiter;

/// Keys of the "many" workload, all created before the measured calls.
const MANY_KEYS: u64 = 1024;

const USAGE: &str = "usage: hot_path [<lock-free|mutex> <hot|many> <calls> [recorder]]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (variant, keys, calls) = match args.as_slice() {
        [] => ("lock-free", "hot", Ok(10_000_000)),
        [variant, keys, calls, ..] => (variant.as_str(), keys.as_str(), calls.parse::<u64>()),
        _ => return usage(),
    };
    let Ok(calls) = calls else {
        return usage();
    };
    if args.get(3).map(String::as_str) == Some("recorder") {
        install_recorder();
    }
    // Half the calls admitted, half refused, on a hot key: 1 per 2 ticks, one call per tick.
    let limit = Limit::new(1, 2).expect("a valid limit");
    let limiter: Box<dyn RateLimiter<u64>> = match variant {
        "lock-free" => Box::new(LockFreeLimiter::<u64>::new(limit)),
        "mutex" => Box::new(MutexLimiter::<u64>::new(limit)),
        _ => return usage(),
    };
    let key_count = match keys {
        "hot" => 1,
        "many" => MANY_KEYS,
        _ => return usage(),
    };
    for key in 0..key_count {
        let _ = limiter.check_and_hit(&key, 0);
    }
    let started = Instant::now();
    let mut admitted = 0u64;
    for call in 0..calls {
        let key = call % key_count;
        admitted += u64::from(limiter.check_and_hit(black_box(&key), call / key_count + 1));
    }
    let elapsed = started.elapsed();
    println!(
        "{variant}, {keys} key(s): {admitted} of {calls} admitted, {:.1} ns per call",
        elapsed.as_nanos() as f64 / calls.max(1) as f64
    );
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
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

//! One decision's cost, counted rather than timed: drives a limiter through a fixed number of
//! admitting or refusing `check_and_hit` calls on one hot key inside [`measured`], a function
//! that `benches/profile-hotpath.sh` tells cachegrind to count alone, so instructions, loads,
//! stores and simulated cache misses divided by the call count are one call's cost, free of
//! the noise a shared machine puts into timings.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin hotpath -- lock-free admit 1000000
//! ```

use std::hint::black_box;
use std::process::ExitCode;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter, RollingBuckets};
use slidelimit_mutex::MutexLimiter;

const USAGE: &str =
    "usage: hotpath <lock-free|lock-free-buckets|mutex|mutex-buckets> <admit|refuse> [calls]";

/// Which calls the measured loop makes.
#[derive(Clone, Copy)]
enum Case {
    /// Every call is admitted: 1000 per 10,000 ticks, one tick per call, so the slot each
    /// call replaces expired long ago (the hot-allowed workload's shape).
    Admit,
    /// Every call is refused: the key's 10 slots are full at the measured tick.
    Refuse,
}

impl Case {
    /// The limit the case runs under. The rolling buckets count up to `(L + 1)` buckets more
    /// than the window (here 1.25 W), so the admitting case gives them twice the exact log's
    /// limit to stay admitting.
    fn limit(self, bucketed: bool) -> Limit {
        let limit = match self {
            Self::Admit => Limit::new(if bucketed { 2000 } else { 1000 }, 1000),
            Self::Refuse => Limit::new(10, 1_000_000),
        };
        limit.expect("valid limits")
    }
}

/// The calls counted: `calls` decisions on key 7, starting at tick `start`.
#[inline(never)]
fn measured(limiter: &impl RateLimiter<u64>, case: Case, start: u64, calls: u64) -> u64 {
    decide(limiter, case, start, calls)
}

/// The same calls, not counted: the warm-up.
#[inline(never)]
fn warm_up(limiter: &impl RateLimiter<u64>, case: Case, start: u64, calls: u64) -> u64 {
    decide(limiter, case, start, calls)
}

#[inline(always)]
fn decide(limiter: &impl RateLimiter<u64>, case: Case, start: u64, calls: u64) -> u64 {
    let mut admitted = 0;
    for i in 0..calls {
        let now = match case {
            Case::Admit => start + i,
            Case::Refuse => start,
        };
        admitted += u64::from(limiter.check_and_hit(black_box(&7), black_box(now)));
    }
    admitted
}

/// Fills the key's window the way the measured loop will meet it, then runs the loop; returns
/// how many calls it admitted.
fn run(limiter: &impl RateLimiter<u64>, case: Case, calls: u64) -> u64 {
    let start = match case {
        Case::Admit => warm_up(limiter, case, 1, 10_000) + 1,
        Case::Refuse => {
            warm_up(limiter, Case::Admit, 1, 10);
            100
        }
    };
    measured(limiter, case, start, calls)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (variant, case) = match (args.first(), args.get(1)) {
        (Some(variant), Some(case)) => (variant.as_str(), case.as_str()),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let case = match case {
        "admit" => Case::Admit,
        "refuse" => Case::Refuse,
        other => {
            eprintln!("unknown case {other:?}; {USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let calls = match args.get(2).map(|calls| calls.parse::<u64>()) {
        None => 1_000_000,
        Some(Ok(calls)) if calls > 0 => calls,
        Some(_) => {
            eprintln!("calls must be a positive whole number; {USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let admitted = match variant {
        "lock-free" => run(&LockFreeLimiter::<u64>::new(case.limit(false)), case, calls),
        "lock-free-buckets" => {
            match LockFreeLimiter::<u64, RollingBuckets>::bucketed(case.limit(true), 8) {
                Ok(limiter) => run(&limiter, case, calls),
                Err(error) => {
                    eprintln!("{error}");
                    return ExitCode::FAILURE;
                }
            }
        }
        "mutex" => run(&MutexLimiter::<u64>::new(case.limit(false)), case, calls),
        "mutex-buckets" => {
            match MutexLimiter::<u64, RollingBuckets>::bucketed(case.limit(true), 8) {
                Ok(limiter) => run(&limiter, case, calls),
                Err(error) => {
                    eprintln!("{error}");
                    return ExitCode::FAILURE;
                }
            }
        }
        other => {
            eprintln!("unknown variant {other:?}; {USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let expected = match case {
        Case::Admit => calls,
        Case::Refuse => 0,
    };
    if admitted != expected {
        eprintln!("the measured loop admitted {admitted} of {calls} calls, expected {expected}");
        return ExitCode::FAILURE;
    }
    println!("{variant} {}: {calls} calls, {admitted} admitted", args[1]);
    ExitCode::SUCCESS
}

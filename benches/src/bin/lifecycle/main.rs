//! The key lifecycle's cost, counted and timed: key churn (1M keys drawn uniformly, 4 per
//! 20,000 ticks, one tick per call, so nearly every call creates a key and the automatic
//! sweep keeps removing them) driven through one limiter. `count` runs the calls inside
//! [`measured`], which `benches/profile-lifecycle.sh` tells callgrind to count alone;
//! `phases` creates never-seen keys and removes them with `remove_idle`, the automatic
//! removal off, so that callgrind counts a created key and a removed key apart
//! ([`phases`]); `time` runs every contender in interleaved rounds on one thread and prints
//! CPU time per decision, side by side. `count-zipf` counts the comparison's Zipf workload
//! the way `count` counts the churn (1M keys, Zipf s = 1, 32 per 4,000 ticks, one tick every
//! 64 calls: a hot head decided on keys it holds, a tail that keeps creating keys).
//! `count-repeat` counts keys hit a few times each: fresh keys, each hit `hits` times in a
//! row, the clock moving `ticks per call` ticks between calls (1: a burst within one bucket;
//! 2,500, the rolling buckets' width here: every hit in a bucket of its own), so a key's
//! first call creates it, its later ones find it, and the sweep removes it once idle. The
//! price of a window kept inline until its second hit (or second bucket) shows here.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin lifecycle -- count lock-free 200000
//! cargo run --release -p slidelimit-bench --bin lifecycle -- count-zipf lock-free 200000
//! cargo run --release -p slidelimit-bench --bin lifecycle -- count-repeat lock-free 2 1 200000
//! cargo run --release -p slidelimit-bench --bin lifecycle -- phases lock-free 5 20000
//! cargo run --release -p slidelimit-bench --bin lifecycle -- time 5
//! cargo run --release -p slidelimit-bench --bin lifecycle -- time 5 lock-free deque-mutex
//! ```

mod contenders;
mod phases;

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use slidelimit::RateLimiter;
use slidelimit_trace::rng::{mix64, SplitMix64};

use slidelimit_bench::workload::KeyStream;

use contenders::{build, build_for, zipf_workload, Removal, Trace, ALL as CONTENDERS, KEYS};

const USAGE: &str = "usage: lifecycle count <contender> [calls] \
     | lifecycle count-zipf <contender> [calls] \
     | lifecycle count-repeat <contender> <hits per key> <ticks per call> [calls] \
     | lifecycle phases <contender> [cycles] [calls per cycle] \
     | lifecycle time [rounds] [contender...]";

/// Calls before the measured ones: enough for the key map to reach its steady size and the
/// automatic sweep to run several cycles.
const WARM_UP: u64 = 400_000;

/// A trace of calls: each gives the next call's key and tick.
trait Calls {
    fn next_call(&mut self) -> (u64, u64);
}

/// The churn: call `i` is at tick `i`, on a key drawn uniformly from [`KEYS`].
struct Churn {
    keys: SplitMix64,
    tick: u64,
}

impl Churn {
    fn new() -> Self {
        Self {
            keys: SplitMix64::new(0x5EED_0022),
            tick: 0,
        }
    }
}

impl Calls for Churn {
    #[inline(always)]
    fn next_call(&mut self) -> (u64, u64) {
        self.tick += 1;
        (mix64(self.keys.below(KEYS)), self.tick)
    }
}

/// Fresh keys hit `hits` times each in a row, the clock moving `ticks_per_call` per call.
struct Repeat {
    hits: u64,
    ticks_per_call: u64,
    call: u64,
}

impl Calls for Repeat {
    #[inline(always)]
    fn next_call(&mut self) -> (u64, u64) {
        self.call += 1;
        (
            mix64(self.call / self.hits),
            self.call * self.ticks_per_call,
        )
    }
}

/// The comparison's Zipf workload on one thread: its keys (a key stream generated before the
/// run from the workload's Zipf law), one tick every [`ZIPF_CALLS_PER_TICK`] calls.
struct ZipfCalls {
    keys: KeyStream,
    call: usize,
}

/// Calls per tick in the Zipf trace: the comparison's fake clock advances one tick every 64
/// calls of a thread.
const ZIPF_CALLS_PER_TICK: usize = 64;
/// Calls before the measured ones on the Zipf trace: two windows and lateness tolerances
/// (16,000 ticks), so the sweep has been removing the tail's idle keys for a while.
const ZIPF_WARM_UP: u64 = 1_000_000;

impl ZipfCalls {
    fn new() -> Self {
        Self {
            keys: KeyStream::generate(zipf_workload().keys, 1 << 21, 0x5EED_0033),
            call: 0,
        }
    }
}

impl Calls for ZipfCalls {
    #[inline(always)]
    fn next_call(&mut self) -> (u64, u64) {
        let call = (
            self.keys.get(self.call),
            (self.call / ZIPF_CALLS_PER_TICK) as u64 + 1,
        );
        self.call += 1;
        call
    }
}

#[inline(always)]
fn run(trace: &mut impl Calls, limiter: &dyn RateLimiter<u64>, calls: u64) -> u64 {
    let mut admitted = 0;
    for _ in 0..calls {
        let (key, tick) = trace.next_call();
        admitted += u64::from(limiter.check_and_hit(black_box(&key), black_box(tick)));
    }
    admitted
}

/// The calls callgrind counts (`lifecycle::measured*`, whichever trace).
#[inline(never)]
fn measured(trace: &mut impl Calls, limiter: &dyn RateLimiter<u64>, calls: u64) -> u64 {
    run(trace, limiter, calls)
}

#[inline(never)]
fn warm_up(trace: &mut impl Calls, limiter: &dyn RateLimiter<u64>, calls: u64) -> u64 {
    run(trace, limiter, calls)
}

/// Counts `calls` of `trace` after its warm-up, on the contender called `name`.
fn count(name: &str, calls: u64, trace: Trace) -> ExitCode {
    let Some(limiter) = build_for(name, Removal::Automatic, trace) else {
        eprintln!("unknown contender {name:?}; {USAGE}");
        return ExitCode::FAILURE;
    };
    let admitted = match trace {
        Trace::Churn => {
            let mut churn = Churn::new();
            warm_up(&mut churn, limiter.as_ref(), WARM_UP);
            measured(&mut churn, limiter.as_ref(), calls)
        }
        Trace::Zipf => {
            let mut zipf = ZipfCalls::new();
            warm_up(&mut zipf, limiter.as_ref(), ZIPF_WARM_UP);
            measured(&mut zipf, limiter.as_ref(), calls)
        }
        Trace::Repeat {
            hits,
            ticks_per_call,
        } => {
            let mut repeat = Repeat {
                hits,
                ticks_per_call,
                call: 0,
            };
            // Whole keys in each phase: the warm-up ends on a key's last hit.
            warm_up(&mut repeat, limiter.as_ref(), WARM_UP / hits * hits);
            measured(&mut repeat, limiter.as_ref(), calls)
        }
    };
    let label = match trace {
        Trace::Churn => String::new(),
        Trace::Zipf => " (zipf)".to_owned(),
        Trace::Repeat {
            hits,
            ticks_per_call,
        } => format!(" ({hits} hits per key, {ticks_per_call} ticks per call)"),
    };
    println!(
        "{name}{label}: {calls} calls, {admitted} admitted, {} keys tracked",
        limiter.tracked_keys()
    );
    ExitCode::SUCCESS
}

/// Counts a created and a removed key apart: prints the counts the profile script divides by.
fn count_phases(name: &str, cycles: u64, cycle_calls: u64) -> ExitCode {
    let Some(limiter) = build(name, Removal::OnlyRemoveIdle) else {
        eprintln!("unknown contender {name:?}; {USAGE}");
        return ExitCode::FAILURE;
    };
    let counts = phases::run(limiter.as_ref(), cycles, cycle_calls);
    println!(
        "{name}: created {} admitted {} removed {} tracked {}",
        counts.created, counts.admitted, counts.removed, counts.tracked
    );
    ExitCode::SUCCESS
}

/// CPU time of this thread, in nanoseconds (the machine is shared: wall time would count
/// other processes' turns).
fn thread_cpu_ns() -> u64 {
    // /proc/thread-self/stat fields 14 and 15: user and system time in clock ticks are too
    // coarse; schedstat's first field is the CPU time in nanoseconds.
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed().as_nanos() as u64
        })
}

fn time(rounds: u32, only: &[String]) -> ExitCode {
    const CALLS: u64 = 1_000_000;
    let mut totals = vec![0u64; CONTENDERS.len()];
    for round in 0..rounds {
        for (index, name) in CONTENDERS.iter().enumerate() {
            if !only.is_empty() && !only.iter().any(|o| o == name) {
                continue;
            }
            let limiter = build(name, Removal::Automatic).expect("a known contender");
            let mut churn = Churn::new();
            warm_up(&mut churn, limiter.as_ref(), WARM_UP);
            let start = thread_cpu_ns();
            black_box(measured(&mut churn, limiter.as_ref(), CALLS));
            totals[index] += thread_cpu_ns() - start;
            drop(limiter);
            eprintln!("round {round} {name} done");
        }
    }
    let deque = totals[CONTENDERS.len() - 1] as f64;
    println!("| contender | ns per decision | ÷ deque-mutex |");
    println!("|---|---:|---:|");
    for (name, total) in CONTENDERS.iter().zip(&totals) {
        if *total == 0 {
            continue;
        }
        let per_call = *total as f64 / f64::from(rounds) / CALLS as f64;
        let ratio = if deque > 0.0 {
            format!("{:.2}", *total as f64 / deque)
        } else {
            "-".to_owned()
        };
        println!("| {name} | {per_call:.0} | {ratio} |");
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(mode @ ("count" | "count-zipf")) => {
            let Some(name) = args.get(1) else {
                eprintln!("{USAGE}");
                return ExitCode::FAILURE;
            };
            let calls = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(200_000);
            let trace = if mode == "count" {
                Trace::Churn
            } else {
                Trace::Zipf
            };
            count(name, calls, trace)
        }
        Some("count-repeat") => {
            let number = |i: usize| args.get(i).and_then(|c| c.parse::<u64>().ok());
            let (Some(name), Some(hits), Some(ticks_per_call)) =
                (args.get(1), number(2).filter(|&h| h > 0), number(3))
            else {
                eprintln!("{USAGE}");
                return ExitCode::FAILURE;
            };
            let calls = number(4).unwrap_or(200_000) / hits * hits;
            count(
                name,
                calls,
                Trace::Repeat {
                    hits,
                    ticks_per_call,
                },
            )
        }
        Some("phases") => {
            let Some(name) = args.get(1) else {
                eprintln!("{USAGE}");
                return ExitCode::FAILURE;
            };
            let number =
                |i: usize, default| args.get(i).and_then(|c| c.parse().ok()).unwrap_or(default);
            count_phases(name, number(2, 5), number(3, phases::CYCLE_CALLS))
        }
        Some("time") => time(
            args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3),
            args.get(2..).unwrap_or_default(),
        ),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::FAILURE
        }
    }
}

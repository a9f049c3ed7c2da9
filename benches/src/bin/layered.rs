//! Limits of several windows: what a two- and a four-window limit cost per decision against
//! one window and against two separate limiters called in turn, and the capacity the separate
//! pair leaks on a bursty trace. Writes `results/layered.md` unless told otherwise.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin layered -- [--out FILE | --out -]
//! ```
//!
//! Ticks are milliseconds. The windows: 10 per second, 100 per minute, 1,000 per hour,
//! 10,000 per day. **one** is 1,000 per hour alone; **two** is 10 per second and 1,000 per
//! hour; **four** all four; **stacked** two limiters (10 per second, then 1,000 per hour,
//! the second asked only when the first admits), as a user without layered limits writes it.
//! The cost cells interleave the contenders in rounds and report each one's median.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
use slidelimit_bench::provenance;
use slidelimit_mutex::MutexLimiter;
use slidelimit_trace::rng::SplitMix64;

const SECOND: u64 = 1_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Keys of the cost workload, drawn uniformly.
const KEYS: u64 = 1_000;
/// Calls per tick of the cost workload: each key is asked about 20 times a second, so the
/// per-second window refuses about half, and after 100 s the hourly one binds too.
const CALLS_PER_TICK: u64 = 50;
/// Calls per thread and cell.
const CALLS: u64 = 2_000_000;
/// Rounds of every cell; each reports its median.
const ROUNDS: usize = 5;

fn window(n: u64, w: u64) -> Limit {
    Limit::new(n, w).expect("a valid window")
}

fn layered(windows: &[(u64, u64)]) -> Limit {
    windows
        .iter()
        .map(|&(n, w)| window(n, w))
        .reduce(|all, next| all.and(next).expect("windows that bind"))
        .expect("one window at least")
}

/// One contender: a way to decide a call of `key` at `now`.
trait Contender: Send + Sync {
    fn decide(&self, key: u64, now: u64) -> bool;
}

struct One<L>(L);

impl<L: RateLimiter<u64>> Contender for One<L> {
    fn decide(&self, key: u64, now: u64) -> bool {
        self.0.check_and_hit(&key, now)
    }
}

/// Two separate limiters, the first asked first; the second only if the first admits.
struct Stacked<L>(L, L);

impl<L: RateLimiter<u64>> Contender for Stacked<L> {
    fn decide(&self, key: u64, now: u64) -> bool {
        self.0.check_and_hit(&key, now) && self.1.check_and_hit(&key, now)
    }
}

/// The contenders of one variant, by name.
fn contenders(variant: &str) -> Vec<(&'static str, Arc<dyn Contender>)> {
    let one = window(1_000, HOUR);
    let two = layered(&[(10, SECOND), (1_000, HOUR)]);
    let four = layered(&[(10, SECOND), (100, MINUTE), (1_000, HOUR), (10_000, DAY)]);
    let (burst, hour) = (window(10, SECOND), window(1_000, HOUR));
    match variant {
        "lock-free" => vec![
            ("one", Arc::new(One(LockFreeLimiter::<u64>::new(one)))),
            ("two", Arc::new(One(LockFreeLimiter::<u64>::new(two)))),
            ("four", Arc::new(One(LockFreeLimiter::<u64>::new(four)))),
            (
                "stacked",
                Arc::new(Stacked(
                    LockFreeLimiter::<u64>::new(burst),
                    LockFreeLimiter::<u64>::new(hour),
                )),
            ),
        ],
        _ => vec![
            ("one", Arc::new(One(MutexLimiter::<u64>::new(one)))),
            ("two", Arc::new(One(MutexLimiter::<u64>::new(two)))),
            ("four", Arc::new(One(MutexLimiter::<u64>::new(four)))),
            (
                "stacked",
                Arc::new(Stacked(
                    MutexLimiter::<u64>::new(burst),
                    MutexLimiter::<u64>::new(hour),
                )),
            ),
        ],
    }
}

/// Nanoseconds per call of `threads` threads deciding the cost workload on `contender`, and
/// the fraction admitted.
fn cost(contender: &Arc<dyn Contender>, threads: u64) -> (f64, f64) {
    let clock = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let (contender, clock) = (Arc::clone(contender), Arc::clone(&clock));
            std::thread::spawn(move || {
                let mut rng = SplitMix64::new(thread + 1);
                let mut admitted = 0u64;
                for _ in 0..CALLS {
                    // Relaxed: a shared call counter that stands for the clock; it orders
                    // nothing else.
                    let now = clock.fetch_add(1, Ordering::Relaxed) / CALLS_PER_TICK;
                    admitted += u64::from(contender.decide(rng.below(KEYS), now));
                }
                admitted
            })
        })
        .collect();
    let admitted: u64 = handles.into_iter().map(|h| h.join().expect("worker")).sum();
    let elapsed = start.elapsed();
    let calls = CALLS * threads;
    (
        elapsed.as_nanos() as f64 / calls as f64 * threads as f64,
        admitted as f64 / calls as f64,
    )
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// What a bursty trace gives each way of enforcing 10 per second and 1,000 per hour.
struct Leak {
    requests: u64,
    layered: u64,
    narrow_first: u64,
    wide_first: u64,
    /// Calls the first limiter of the pair admitted and the second refused: hits it counts
    /// for requests that never went through.
    narrow_first_phantoms: u64,
    wide_first_phantoms: u64,
}

/// 100 keys over 3 hours; each key sends bursts of 15 requests at one tick, a burst every 2 s
/// on average (exponential gaps), so both windows bind.
fn leak() -> Leak {
    let (burst, hour) = (window(10, SECOND), window(1_000, HOUR));
    let both = burst.and(hour).expect("windows that bind");
    let layered = LockFreeLimiter::<u64>::new(both);
    let (narrow_a, wide_a) = (
        LockFreeLimiter::<u64>::new(burst),
        LockFreeLimiter::<u64>::new(hour),
    );
    let (wide_b, narrow_b) = (
        LockFreeLimiter::<u64>::new(hour),
        LockFreeLimiter::<u64>::new(burst),
    );
    let mut rng = SplitMix64::new(2026);
    let mut events: Vec<(u64, u64)> = Vec::new();
    for key in 0..100 {
        let mut t = rng.below(2 * SECOND);
        while t < 3 * HOUR {
            events.push((t, key));
            let gap = -(1.0 - rng.next_f64()).ln() * 2.0 * SECOND as f64;
            t += 1 + gap as u64;
        }
    }
    events.sort_unstable();
    let mut out = Leak {
        requests: 0,
        layered: 0,
        narrow_first: 0,
        wide_first: 0,
        narrow_first_phantoms: 0,
        wide_first_phantoms: 0,
    };
    for (t, key) in events {
        for _ in 0..15 {
            out.requests += 1;
            out.layered += u64::from(layered.check_and_hit(&key, t));
            if narrow_a.check_and_hit(&key, t) {
                if wide_a.check_and_hit(&key, t) {
                    out.narrow_first += 1;
                } else {
                    out.narrow_first_phantoms += 1;
                }
            }
            if wide_b.check_and_hit(&key, t) {
                if narrow_b.check_and_hit(&key, t) {
                    out.wide_first += 1;
                } else {
                    out.wide_first_phantoms += 1;
                }
            }
        }
    }
    out
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf();
    let path = match args.as_slice() {
        [] => Some(root.join("results/layered.md")),
        [flag, value] if flag == "--out" && value == "-" => None,
        [flag, value] if flag == "--out" => Some(PathBuf::from(value)),
        _ => {
            eprintln!("usage: layered [--out FILE | --out -]");
            return ExitCode::FAILURE;
        }
    };
    let facts = provenance::Facts::collect("layered");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Limits of several windows: cost and leak\n\n\
         Written by `{}`.\n\n\
         | | |\n|---|---|\n| CPU | {} ({} cores) |\n| rustc | {} |\n| profile | {} |\n| commit | {} |\n",
        facts.command, facts.cpu_model, facts.cores, facts.rustc, facts.profile, facts.commit
    );
    let _ = writeln!(
        out,
        "## Cost per decision\n\n\
         {KEYS} keys drawn uniformly, {CALLS_PER_TICK} calls per millisecond tick (about 20 per \
         second per key), {CALLS} calls per thread; {ROUNDS} rounds with the contenders \
         interleaved, the median of each. **one**: 1,000 per hour; **two**: 10 per second and \
         1,000 per hour; **four**: 10/s, 100/min, 1,000/h, 10,000/day; **stacked**: a limiter \
         of 10 per second, then (if it admits) one of 1,000 per hour. ns per call are wall time \
         × threads / calls; admitted is the fraction of calls admitted.\n\n\
         | variant | threads | contender | ns per call (median) | rounds (ns) | admitted |\n\
         |---|---:|---|---:|---|---:|"
    );
    for variant in ["lock-free", "mutex"] {
        for threads in [1u64, 2] {
            let mut samples: Vec<(&str, Vec<f64>, f64)> = Vec::new();
            for _ in 0..ROUNDS {
                for (index, (name, contender)) in contenders(variant).into_iter().enumerate() {
                    let (ns, admitted) = cost(&contender, threads);
                    if samples.len() <= index {
                        samples.push((name, Vec::new(), admitted));
                    }
                    samples[index].1.push(ns);
                }
            }
            for (name, mut rounds, admitted) in samples {
                let listed = rounds
                    .iter()
                    .map(|ns| format!("{ns:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mid = median(&mut rounds);
                eprintln!("{variant} {threads}t {name}: {mid:.1} ns");
                let _ = writeln!(
                    out,
                    "| {variant} | {threads} | {name} | {mid:.1} | {listed} | {admitted:.3} |"
                );
            }
        }
    }
    let leak = leak();
    let pct = |n: u64| 100.0 * n as f64 / leak.requests as f64;
    let _ = writeln!(
        out,
        "\n## Capacity the separate pair leaks (bursty trace)\n\n\
         100 keys for 3 hours (ticks in ms); each key sends bursts of 15 requests at one tick, \
         a burst every 2 s on average (exponential gaps): {} requests. 10 per second and 1,000 \
         per hour, enforced by one layered limit, or by two limiters called in turn (the second \
         asked only when the first admits). A *phantom* is a hit the first limiter of the pair \
         counted for a request the second refused.\n\n\
         | enforcement | admitted | % of requests | phantom hits |\n|---|---:|---:|---:|\n\
         | layered (one limit, all or nothing) | {} | {:.2} | 0 |\n\
         | per second first, then per hour | {} | {:.2} | {} |\n\
         | per hour first, then per second | {} | {:.2} | {} |",
        leak.requests,
        leak.layered,
        pct(leak.layered),
        leak.narrow_first,
        pct(leak.narrow_first),
        leak.narrow_first_phantoms,
        leak.wide_first,
        pct(leak.wide_first),
        leak.wide_first_phantoms,
    );
    match path {
        Some(path) => {
            if let Err(err) = std::fs::write(&path, &out) {
                eprintln!("error: cannot write {}: {err}", path.display());
                return ExitCode::FAILURE;
            }
            eprintln!("wrote {}", path.display());
        }
        None => print!("{out}"),
    }
    ExitCode::SUCCESS
}

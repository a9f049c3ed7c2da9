//! Stress: worker threads hammer a few keys with slightly skewed clocks while a sweeper
//! thread runs `remove_idle` in a loop (and the automatic sweep runs too); every admitted
//! `(key, tick)` is recorded and no window of W ticks may hold more than `max_requests` of
//! one key. Against every variant.
//!
//! Nothing here measures time: threads run a fixed number of operations, and the shared clock
//! is a counter the workers advance.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use slidelimit::{Options, RateLimiter};
use slidelimit_trace::rng::SplitMix64;

use crate::reference::clamp;
use crate::trace::check_safety;
use crate::variants::{limit, shared_variant};

const WORKERS: u64 = 4;
const OPS_PER_WORKER: u64 = 20_000;
const MAX_REQUESTS: u64 = 4;
const WINDOW_TICKS: u64 = 32;
/// Shared-counter increments per tick: the clock advances one tick per this many calls.
const CALLS_PER_TICK: u64 = 4;
/// Each worker's `now` is the shared clock plus a skew in `-SKEW..=SKEW`.
const SKEW: u64 = 3;

/// What one worker calls, at tick `now`: half the calls go to the hot key 0, the rest to one
/// of eight keys that change every 16 ticks (so older ones go idle and get swept while
/// stragglers may still reach them).
fn worker_call(
    limiter: &dyn RateLimiter<u64>,
    rng: &mut SplitMix64,
    now: u64,
) -> Option<(u64, u64)> {
    let key = if rng.below(2) == 0 {
        0
    } else {
        1 + (now / 16) * 8 + rng.below(8)
    };
    match rng.below(10) {
        0 => {
            limiter.hit(&key, now);
            None
        }
        1 => {
            let _ = limiter.allowed(&key, now);
            None
        }
        _ => limiter
            .check_and_hit(&key, now)
            .then_some((key, clamp(now))),
    }
}

struct Run {
    admitted: Vec<(u64, u64)>,
    swept_by_sweeper: usize,
}

/// Runs the workers, and the sweeper if `sweeper`.
fn hammer(limiter: &Arc<dyn RateLimiter<u64>>, sweeper: bool) -> Run {
    let counter = Arc::new(AtomicU64::new(1000 * CALLS_PER_TICK));
    let workers_done = Arc::new(AtomicBool::new(false));
    let swept = Arc::new(AtomicUsize::new(0));
    let sweeper_thread = sweeper.then(|| {
        let (limiter, counter, done, swept) = (
            Arc::clone(limiter),
            Arc::clone(&counter),
            Arc::clone(&workers_done),
            Arc::clone(&swept),
        );
        thread::spawn(move || {
            // Relaxed: a stop flag; the join below publishes everything that matters.
            while !done.load(Ordering::Relaxed) {
                let now = counter.load(Ordering::Relaxed) / CALLS_PER_TICK;
                swept.fetch_add(limiter.remove_idle(now), Ordering::Relaxed);
                // A pause, not a yield: a sweeper that only yields keeps re-taking the
                // global-lock variants' (unfair) lock and can starve the workers for minutes.
                thread::sleep(std::time::Duration::from_micros(20));
            }
        })
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| {
            let (limiter, counter, swept) = (
                Arc::clone(limiter),
                Arc::clone(&counter),
                Arc::clone(&swept),
            );
            thread::spawn(move || {
                let mut rng = SplitMix64::new(id + 1);
                let mut admitted = Vec::new();
                let mut calls = 0;
                // Go on past the quota until the sweeper has removed something (bounded), so
                // that removal really raced with these calls.
                while calls < OPS_PER_WORKER
                    || (sweeper
                        && swept.load(Ordering::Relaxed) == 0
                        && calls < 50 * OPS_PER_WORKER)
                {
                    let base = counter.fetch_add(1, Ordering::Relaxed) / CALLS_PER_TICK;
                    let now = (base + rng.below(2 * SKEW + 1)).saturating_sub(SKEW);
                    admitted.extend(worker_call(limiter.as_ref(), &mut rng, now));
                    calls += 1;
                }
                admitted
            })
        })
        .collect();
    let admitted = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker panicked"))
        .collect();
    workers_done.store(true, Ordering::Relaxed);
    if let Some(sweeper) = sweeper_thread {
        sweeper.join().expect("sweeper panicked");
    }
    Run {
        admitted,
        swept_by_sweeper: swept.load(Ordering::Relaxed),
    }
}

fn stress(name: &str, options: Options, sweeper: bool) {
    let limiter = shared_variant::<u64>(name, limit(MAX_REQUESTS, WINDOW_TICKS), options);
    let run = hammer(&limiter, sweeper);
    assert!(
        !sweeper || run.swept_by_sweeper > 0,
        "{name}: the sweeper never removed a key"
    );
    check_safety(&run.admitted, MAX_REQUESTS, WINDOW_TICKS)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        run.admitted.iter().any(|(key, _)| *key == 0),
        "{name}: the hot key was never admitted"
    );
    // Quiescent: everything is idle far in the future.
    limiter.remove_idle(u64::MAX);
    assert_eq!(limiter.tracked_keys(), 0, "{name}");
}

/// Lateness 4 ticks (about the skew), automatic sweeps from 16 keys on: stragglers regularly
/// fall below watermarks.
fn small_lateness() -> Options {
    Options::default().lateness_ticks(4).sweep_floor_keys(16)
}

/// Default lateness (one window), no automatic sweep: only a sweeper thread removes keys.
fn default_lateness() -> Options {
    Options::default().sweep_floor_keys(usize::MAX)
}

/// Each key is used for 4 ticks only, with a limit of 1 per 64 ticks: it may be admitted once,
/// ever. The sweeper removes keys idle for 100 ticks after their window, and raises their
/// watermarks, so a straggler (a worker descheduled between reading the clock and calling)
/// that reaches a removed key must be refused, not admitted into a re-created one.
fn stragglers_never_readmit_a_removed_key(name: &str) {
    const OPS: u64 = 50_000;
    let options = Options::default()
        .lateness_ticks(100)
        .sweep_floor_keys(usize::MAX);
    let limiter = shared_variant::<u64>(name, limit(1, 64), options);
    let clock = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sweeper = {
        let (limiter, clock, done) = (Arc::clone(&limiter), Arc::clone(&clock), Arc::clone(&done));
        thread::spawn(move || {
            let mut removed = 0;
            // Relaxed: a stop flag and a tick; the joins publish the results.
            while !done.load(Ordering::Relaxed) {
                removed += limiter.remove_idle(clock.load(Ordering::Relaxed));
                // A pause, not a yield: see `stress`.
                thread::sleep(std::time::Duration::from_micros(20));
            }
            removed
        })
    };
    let workers: Vec<_> = (0..2)
        .map(|id| {
            let (limiter, clock) = (Arc::clone(&limiter), Arc::clone(&clock));
            thread::spawn(move || {
                let mut rng = SplitMix64::new(id + 1);
                let mut admitted = Vec::new();
                for _ in 0..OPS {
                    let now = clock.fetch_add(1, Ordering::Relaxed);
                    let key = (now / 4) * 8 + rng.below(8);
                    if limiter.check_and_hit(&key, now) {
                        admitted.push((key, now));
                    }
                }
                admitted
            })
        })
        .collect();
    let admitted: Vec<(u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker panicked"))
        .collect();
    done.store(true, Ordering::Relaxed);
    let removed = sweeper.join().expect("sweeper panicked");
    assert!(removed > 0, "{name}: the sweeper never removed a key");
    check_safety(&admitted, 1, 64).unwrap_or_else(|e| panic!("{name}: {e}"));
}

/// The stress tests, once per variant (so that a failure names its variant).
macro_rules! variant_tests {
    ($module:ident, $name:literal) => {
        mod $module {
            use super::*;

            #[test]
            fn skewed_clocks_without_removal_never_over_admit() {
                stress($name, default_lateness(), false);
            }

            #[test]
            fn skewed_clocks_with_sweeps_and_small_lateness_never_over_admit() {
                stress($name, small_lateness(), true);
            }

            #[test]
            fn skewed_clocks_with_a_sweeper_and_default_lateness_never_over_admit() {
                stress($name, default_lateness(), true);
            }

            #[test]
            fn stragglers_never_readmit_a_removed_key() {
                super::stragglers_never_readmit_a_removed_key($name);
            }
        }
    };
}

variant_tests!(mutex, "mutex");
variant_tests!(rwlock, "rwlock");
variant_tests!(lock_free, "lock-free");
variant_tests!(per_key_lock, "per-key-lock");

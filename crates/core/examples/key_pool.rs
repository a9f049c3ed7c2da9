//! A pool of API keys: three keys to an upstream service, each usable 3 times per second, and
//! a `KeyPool` that names a key for every request that can be served and never hands one out
//! more often than that.
//!
//! ```text
//! cargo run -p slidelimit --example key_pool
//! ```
//!
//! First a timeline in explicit millisecond ticks (the same output on every run): keys come
//! round in order, a tenth request in the first second is refused with the tick to come back
//! at. Then four threads share one pool on the real clock, lock-free.

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant};

use slidelimit::pool::{KeyPool, PoolMode};
use slidelimit::{Clock, MonotonicClock};

const KEYS: [&str; 3] = ["key-a", "key-b", "key-c"];
const USES_PER_KEY: u64 = 3;

fn main() -> Result<(), Box<dyn Error>> {
    timeline()?;
    threads()?;
    Ok(())
}

/// One request every 100 ms for 1.5 s, ticks in milliseconds.
fn timeline() -> Result<(), Box<dyn Error>> {
    // `Exact` keeps one timestamp per use (9 here): never a false negative. For thousands of
    // uses per key, `PoolMode::Both { .. }` keeps a few buckets instead (see the README).
    let pool: KeyPool<&str> = KeyPool::new(KEYS, USES_PER_KEY, 1_000, PoolMode::Exact)?;
    println!("timeline: 3 keys x {USES_PER_KEY} uses per 1000 ms, a request every 100 ms");
    for now in (0..=1_500).step_by(100) {
        // `take` says why there is no key; `get_next_key` is the same as an Option.
        match pool.take(now) {
            Ok(index) => println!("  t={now:>4} ms  use {}", pool.names()[index]),
            Err(refusal) => {
                // The tick the oldest use cools down: a caller can sleep until then.
                let retry_at = pool.status(now).retry_at;
                println!("  t={now:>4} ms  no key ({refusal:?}), next one free at t={retry_at}");
            }
        }
    }
    Ok(())
}

/// Four threads asking as fast as they can for 0.5 s, on one pool they share by reference.
fn threads() -> Result<(), Box<dyn Error>> {
    // MonotonicClock counts nanoseconds, so the cooldown is in nanoseconds too.
    let cooldown = Duration::from_millis(200);
    let pool: KeyPool<&str> = KeyPool::new(
        KEYS,
        USES_PER_KEY,
        u64::try_from(cooldown.as_nanos())?,
        PoolMode::Exact,
    )?;
    let clock = MonotonicClock::new();
    let run = Duration::from_millis(500);
    let start = Instant::now();
    let per_thread: Vec<Vec<&str>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut used = Vec::new();
                    while start.elapsed() < run {
                        match pool.get_next_key(clock.now_ticks()) {
                            Some(key) => used.push(*key),
                            // A real client would sleep until `status(now).retry_at`;
                            // spinning here just shows that refusals cost nothing.
                            None => std::hint::spin_loop(),
                        }
                    }
                    used
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a worker thread panicked"))
            .collect()
    });
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for key in per_thread.into_iter().flatten() {
        *per_key.entry(key).or_default() += 1;
    }
    // 0.5 s spans three 200 ms cooldowns at most: never more than 3 x 3 = 9 uses per key.
    println!("threads: 4 threads for {run:?}, {USES_PER_KEY} uses per key per {cooldown:?}");
    for (key, uses) in per_key {
        println!("  {key}: {uses} uses (at most 9)");
    }
    Ok(())
}

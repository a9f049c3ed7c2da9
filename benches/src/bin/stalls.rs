//! The worst single call while a limiter takes in new keys: every call of a stream of distinct
//! new keys on one thread is timed alone, for the four exact-log variants, in two shapes:
//! `growth` (a window longer than the run, so no key goes idle and the key map only grows:
//! its resizes show) and `rotation` (keys go idle after two windows of calls, so the automatic
//! sweep runs and removes them: its walks show). Writes `results/stalls.md`.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin stalls -- [KEYS]   # default 2,000,000
//! ```

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
use slidelimit_bench::provenance;
use slidelimit_bench::rng::mix64;
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

/// One variant's latencies over the stream, in nanoseconds, sorted.
struct Latencies {
    sorted_ns: Vec<u64>,
    total_s: f64,
    tracked_after: usize,
}

impl Latencies {
    fn quantile(&self, q: f64) -> u64 {
        let last = self.sorted_ns.len() - 1;
        self.sorted_ns[((last as f64) * q).round() as usize]
    }

    fn over(&self, ns: u64) -> usize {
        self.sorted_ns.len() - self.sorted_ns.partition_point(|&x| x <= ns)
    }
}

/// `keys` distinct new keys, one call each, one tick apart, each call timed alone.
fn run(limiter: &impl RateLimiter<u64>, keys: u64) -> Latencies {
    let mut sorted_ns = Vec::with_capacity(usize::try_from(keys).unwrap_or(0));
    let start = Instant::now();
    for i in 0..keys {
        let key = mix64(i);
        let call = Instant::now();
        let admitted = limiter.check_and_hit(&key, i);
        sorted_ns.push(u64::try_from(call.elapsed().as_nanos()).unwrap_or(u64::MAX));
        assert!(admitted, "a new key's first call is admitted");
    }
    let total_s = start.elapsed().as_secs_f64();
    sorted_ns.sort_unstable();
    Latencies {
        sorted_ns,
        total_s,
        tracked_after: limiter.tracked_keys(),
    }
}

fn row(out: &mut String, shape: &str, name: &str, lat: &Latencies) {
    let us = |ns: u64| ns as f64 / 1e3;
    let _ = writeln!(
        out,
        "| {shape} | {name} | {:.2} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {} |",
        lat.total_s,
        us(lat.quantile(0.5)),
        us(lat.quantile(0.999)),
        us(lat.quantile(0.9999)),
        us(lat.sorted_ns[lat.sorted_ns.len() - 1]),
        lat.over(1_000_000),
        lat.tracked_after,
    );
}

fn main() -> ExitCode {
    let keys = match std::env::args().nth(1).map(|arg| arg.parse::<u64>()) {
        None => 2_000_000,
        Some(Ok(keys)) if keys > 0 => keys,
        Some(_) => {
            eprintln!("usage: stalls [KEYS]  (a positive whole number, default 2000000)");
            return ExitCode::FAILURE;
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "# The worst single call while new keys arrive\n");
    let _ = writeln!(
        out,
        "{keys} distinct new keys, one `check_and_hit` each, one tick apart, on one thread; every \
         call timed alone (`Instant`, ~20 ns of overhead per call). Limit 32 per window. \
         **growth**: a window longer than the run, so no key goes idle and the map only grows \
         (its resizes show). **rotation**: a window of 100,000 ticks, so keys go idle after two \
         windows (window plus the default lateness) and the automatic sweep removes them (its \
         walks show).\n"
    );
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest);
    let _ = writeln!(
        out,
        "| | |\n|---|---|\n| CPU | {} ({} cores) |\n| commit | {} |\n| command | \
         `cargo run --release -p slidelimit-bench --bin stalls -- {keys}` |\n",
        provenance::cpu_model(),
        std::thread::available_parallelism().map_or(0, usize::from),
        provenance::git_commit(root, &["crates", "benches"]),
    );
    let _ = writeln!(
        out,
        "| shape | variant | total s | p50 µs | p99.9 µs | p99.99 µs | max µs | calls > 1 ms | keys after |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (shape, window_ticks) in [("growth", u64::MAX / 2), ("rotation", 100_000)] {
        let limit = Limit::new(32, window_ticks).expect("a valid limit");
        let cells: [(&str, Latencies); 4] = [
            ("lock-free", run(&LockFreeLimiter::<u64>::new(limit), keys)),
            (
                "per-key-lock",
                run(&PerKeyLockLimiter::<u64>::new(limit), keys),
            ),
            ("mutex", run(&MutexLimiter::<u64>::new(limit), keys)),
            ("rwlock", run(&RwLockLimiter::<u64>::new(limit), keys)),
        ];
        for (name, lat) in &cells {
            eprintln!(
                "{shape} · {name}: max {} µs",
                lat.sorted_ns[lat.sorted_ns.len() - 1] / 1000
            );
            row(&mut out, shape, name, lat);
        }
    }
    print!("{out}");
    let path = root.join("results/stalls.md");
    if let Err(error) = std::fs::write(&path, out) {
        eprintln!("could not write {}: {error}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", path.display());
    ExitCode::SUCCESS
}

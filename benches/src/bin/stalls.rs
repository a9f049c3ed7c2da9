//! The worst single call while a limiter takes in new keys: every call of a stream of distinct
//! new keys on one thread is timed alone, for the four exact-log variants, in two shapes:
//! `growth` (a window longer than the run, so no key goes idle and the key map only grows:
//! its resizes show) and `rotation` (keys go idle after two windows of calls, so the automatic
//! sweep runs and removes them: its walks show). In `rotation`, the calls during which the
//! tracked-key count fell (the calls that removed keys) are also reported apart from the rest.
//! Writes `results/stalls.md` unless told otherwise.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin stalls -- [KEYS] [--out FILE | --out -]
//! ```
//!
//! `KEYS` defaults to 2,000,000 (the stall issue's figure); `--out -` prints the table only,
//! for a quick look (`-- 200000 --out -`) that leaves the results file alone.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use slidelimit::{Limit, LockFreeLimiter, RateLimiter};
use slidelimit_bench::provenance;
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_trace::rng::mix64;

/// The stall issue's targets, for the lock-free and per-key-lock variants: the worst single
/// call and the 99.99th percentile, nanoseconds.
const TARGET_MAX_NS: u64 = 10_000_000;
const TARGET_P9999_NS: u64 = 50_000;
/// The variants the targets apply to (the other two are reported beside them).
const TARGETED: [&str; 2] = ["lock-free", "per-key-lock"];

/// Latencies of a set of calls, in nanoseconds, sorted.
struct Latencies {
    sorted_ns: Vec<u64>,
}

impl Latencies {
    fn new(mut ns: Vec<u64>) -> Self {
        ns.sort_unstable();
        Self { sorted_ns: ns }
    }

    fn quantile(&self, q: f64) -> u64 {
        let last = self.sorted_ns.len().saturating_sub(1);
        self.sorted_ns
            .get(((last as f64) * q).round() as usize)
            .copied()
            .unwrap_or(0)
    }

    fn max(&self) -> u64 {
        self.sorted_ns.last().copied().unwrap_or(0)
    }

    fn over(&self, ns: u64) -> usize {
        self.sorted_ns.len() - self.sorted_ns.partition_point(|&x| x <= ns)
    }
}

/// One variant's run: every call, and the calls that removed keys apart from the others.
struct Run {
    all: Latencies,
    removing: Latencies,
    others: Latencies,
    total_s: f64,
    tracked_after: usize,
}

/// Runs one (shape, variant) in a fresh child process (this binary with `--one`): a run in a
/// process that had just dropped four limiters of 2M keys each inherited their freed memory,
/// and its calls paid 10-40 ms now and then for the allocator and the kernel taking it back.
fn run_in_child(shape: &str, variant: &str, keys: u64, window_ticks: u64) -> Result<Run, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = std::process::Command::new(exe)
        .args([
            "--one",
            shape,
            variant,
            &keys.to_string(),
            &window_ticks.to_string(),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "child {shape} {variant} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let words: Vec<u64> = output
        .stdout
        .chunks_exact(8)
        .map(|bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
        .collect();
    let (&tracked_after, calls) = words.split_last().ok_or("child wrote nothing")?;
    let (mut all, mut removing, mut others) = (Vec::with_capacity(calls.len()), vec![], vec![]);
    for &word in calls {
        let ns = word >> 1;
        all.push(ns);
        if word & 1 == 1 {
            removing.push(ns);
        } else {
            others.push(ns);
        }
    }
    let total_ns: u64 = all.iter().sum();
    Ok(Run {
        all: Latencies::new(all),
        removing: Latencies::new(removing),
        others: Latencies::new(others),
        total_s: total_ns as f64 / 1e9,
        tracked_after: usize::try_from(tracked_after).unwrap_or(usize::MAX),
    })
}

/// The child's side: `--one SHAPE VARIANT KEYS WINDOW`; writes each call's nanoseconds
/// (shifted left once, the low bit set if the call removed keys) and the keys tracked after,
/// as little-endian words on stdout.
fn one(args: &[String]) -> Result<(), String> {
    let [_, variant, keys, window] = args else {
        return Err("--one SHAPE VARIANT KEYS WINDOW".into());
    };
    let keys: u64 = keys.parse().map_err(|_| "bad KEYS")?;
    let window: u64 = window.parse().map_err(|_| "bad WINDOW")?;
    let limit = Limit::new(32, window).map_err(|e| e.to_string())?;
    let run = match variant.as_str() {
        "lock-free" => timed_calls(&LockFreeLimiter::<u64>::new(limit), keys),
        "per-key-lock" => timed_calls(&PerKeyLockLimiter::<u64>::new(limit), keys),
        "mutex" => timed_calls(&MutexLimiter::<u64>::new(limit), keys),
        "rwlock" => timed_calls(&RwLockLimiter::<u64>::new(limit), keys),
        other => return Err(format!("unknown variant {other}")),
    };
    let mut bytes = Vec::with_capacity(run.len() * 8);
    for word in run {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    std::io::Write::write_all(&mut std::io::stdout(), &bytes).map_err(|e| e.to_string())
}

/// Every call's time and whether it removed keys, then the keys tracked after (see [`one`]).
fn timed_calls(limiter: &impl RateLimiter<u64>, keys: u64) -> Vec<u64> {
    let mut words = Vec::with_capacity(usize::try_from(keys).unwrap_or(0) + 1);
    let mut tracked = limiter.tracked_keys();
    for i in 0..keys {
        let key = mix64(i);
        let call = Instant::now();
        let admitted = limiter.check_and_hit(&key, i);
        let ns = u64::try_from(call.elapsed().as_nanos()).unwrap_or(u64::MAX >> 1);
        assert!(admitted, "a new key's first call is admitted");
        let after = limiter.tracked_keys();
        words.push(ns << 1 | u64::from(after <= tracked));
        tracked = after;
    }
    words.push(limiter.tracked_keys() as u64);
    words
}

fn verdict(name: &str, lat: &Latencies) -> &'static str {
    if !TARGETED.contains(&name) {
        "-"
    } else if lat.max() <= TARGET_MAX_NS && lat.quantile(0.9999) <= TARGET_P9999_NS {
        "met"
    } else {
        "**missed**"
    }
}

fn row(out: &mut String, shape: &str, name: &str, calls: &str, lat: &Latencies, target: &str) {
    if lat.sorted_ns.is_empty() {
        let _ = writeln!(
            out,
            "| {shape} | {name} | {calls} | 0 | - | - | - | - | - | - | {target} |"
        );
        return;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    let _ = writeln!(
        out,
        "| {shape} | {name} | {calls} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {target} |",
        lat.sorted_ns.len(),
        us(lat.quantile(0.5)),
        us(lat.quantile(0.99)),
        us(lat.quantile(0.999)),
        us(lat.quantile(0.9999)),
        us(lat.max()),
        lat.over(1_000_000),
    );
}

/// `[KEYS] [--out FILE | --out -]`: the key count and where the table goes (None: stdout only).
fn parse_args(root: &std::path::Path) -> Result<(u64, Option<PathBuf>), String> {
    let mut keys = 2_000_000;
    let mut out = Some(root.join("results/stalls.md"));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--out" {
            let path = args
                .next()
                .ok_or("--out needs a file (or - for stdout only)")?;
            out = (path != "-").then(|| PathBuf::from(path));
        } else if let Some(path) = arg.strip_prefix("--out=") {
            out = (path != "-").then(|| PathBuf::from(path));
        } else {
            keys = match arg.parse::<u64>() {
                Ok(k) if k > 0 => k,
                _ => return Err(format!("bad key count {arg:?}")),
            };
        }
    }
    Ok((keys, out))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        return match one(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest);
    let (keys, path) = match parse_args(root) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!(
                "error: {message}\nusage: stalls [KEYS] [--out FILE | --out -]  \
                 (KEYS a positive whole number, default 2000000; --out - prints only)"
            );
            return ExitCode::FAILURE;
        }
    };
    // 100,000 ticks at the default 2M keys; scaled so that a quick run sees removals too.
    let rotation_window = (keys / 20).max(100);
    let mut out = String::new();
    let _ = writeln!(out, "# The worst single call while new keys arrive\n");
    let _ = writeln!(
        out,
        "{keys} distinct new keys, one `check_and_hit` each, one tick apart, on one thread, each variant and shape in a fresh process; every \
         call timed alone (`Instant`, ~20 ns of overhead per call; `total s` sums the calls). \
         Limit 32 per window. **growth**: a window longer than the run, so no key goes idle and \
         the map only grows (its resizes show, and the sweeps' walks, which find nothing to \
         remove). **rotation**: a window of {rotation_window} ticks (one twentieth of the \
         keys), so keys go idle after two windows (window plus the default lateness) and the \
         automatic sweep removes them (its walks show); its calls are also split into those during which the tracked-key count fell \
         (`removing`: the calls that swept) and the others. **target** (the stall issue, \
         lock-free and per-key-lock; the other two are reported beside them): the worst call \
         ≤ 10 ms and p99.99 ≤ 50 µs over every call.\n"
    );
    let command = if path.is_some() {
        format!("cargo run --release -p slidelimit-bench --bin stalls -- {keys}")
    } else {
        format!("cargo run --release -p slidelimit-bench --bin stalls -- {keys} --out -")
    };
    let _ = writeln!(
        out,
        "| | |\n|---|---|\n| CPU | {} ({} cores) |\n| rustc | {} |\n| commit | {} |\n\
         | command | `{command}` |\n",
        provenance::cpu_model(),
        std::thread::available_parallelism().map_or(0, usize::from),
        env!("SLIDELIMIT_BENCH_RUSTC"),
        provenance::git_commit(root, &["crates", "benches"]),
    );
    let _ = writeln!(
        out,
        "| shape | variant | calls | count | p50 µs | p99 µs | p99.9 µs | p99.99 µs | max µs | calls > 1 ms | target |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut totals = String::new();
    for (shape, window_ticks) in [("growth", u64::MAX / 2), ("rotation", rotation_window)] {
        let mut runs = Vec::new();
        for name in ["lock-free", "per-key-lock", "mutex", "rwlock"] {
            match run_in_child(shape, name, keys, window_ticks) {
                Ok(run) => runs.push((name, run)),
                Err(message) => {
                    eprintln!("error: {message}");
                    return ExitCode::FAILURE;
                }
            }
        }
        for (name, r) in &runs {
            eprintln!(
                "{shape} · {name}: p99.99 {:.1} µs, max {} µs",
                r.all.quantile(0.9999) as f64 / 1e3,
                r.all.max() / 1000
            );
            row(&mut out, shape, name, "all", &r.all, verdict(name, &r.all));
            if shape == "rotation" {
                row(&mut out, shape, name, "removing", &r.removing, "");
                row(&mut out, shape, name, "others", &r.others, "");
            }
            let _ = writeln!(
                totals,
                "| {shape} | {name} | {:.2} | {} |",
                r.total_s, r.tracked_after
            );
        }
    }
    let _ = writeln!(
        out,
        "\n| shape | variant | total s | keys after |\n|---|---|---:|---:|\n{totals}"
    );
    print!("{out}");
    if let Some(path) = path {
        if let Err(error) = std::fs::write(&path, out) {
            eprintln!("could not write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

//! What a snapshot costs: bytes per key in JSON and in postcard, and the time to save and
//! restore a limiter of many keys, and to import the same hits as a usage log in random
//! order, for the lock-free and the global-mutex limiter with the exact log and the rolling
//! buckets. Writes `results/snapshot.md` unless told otherwise.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin snapshot_cost -- [KEYS] [--out FILE | --out -]
//! ```
//!
//! `KEYS` defaults to 1,000,000. Each key gets a few hits (the exact log: 5 of a limit of 10
//! per minute, in millisecond ticks; the buckets: 5 weighted hits of a limit of 1,000 per
//! minute over 10 buckets), spread over the last window, as a busy service's keys would.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use slidelimit::raw::Algorithm;
use slidelimit::{
    Conversion, ExactLog, Limit, LockFreeLimiter, Options, RateLimiter, RollingBuckets, SavedState,
    Snapshot,
};
use slidelimit_bench::provenance;
use slidelimit_mutex::MutexLimiter;
use slidelimit_trace::rng::mix64;

const WINDOW_MS: u64 = 60_000;
const HITS_PER_KEY: u64 = 5;

/// One measured configuration.
struct Row {
    variant: &'static str,
    window: &'static str,
    keys: usize,
    snapshot: Duration,
    json_bytes: usize,
    json_encode: Duration,
    postcard_bytes: usize,
    postcard_encode: Duration,
    postcard_decode: Duration,
    restore: Duration,
    /// `import_usage` of every `(key, tick, weight)` record of the fill, in random order.
    import: Duration,
}

const NOW: u64 = 10 * WINDOW_MS;

/// Every `(key, tick, weight)` hit of the fill, in key order.
fn usage(keys: usize, weighted: bool) -> Vec<(u64, u64, u64)> {
    let mut records = Vec::with_capacity(keys * HITS_PER_KEY as usize);
    for key in 0..keys as u64 {
        for hit in 0..HITS_PER_KEY {
            let t = NOW - mix64(key * HITS_PER_KEY + hit) % WINDOW_MS;
            let weight = if weighted {
                1 + mix64(key ^ hit) % 50
            } else {
                1
            };
            records.push((key, t, weight));
        }
    }
    records
}

fn fill<L: RateLimiter<u64>>(limiter: &L, records: &[(u64, u64, u64)]) -> u64 {
    for &(key, t, weight) in records {
        let _ = limiter.hit_n(&key, t, weight);
    }
    NOW
}

fn measure<L, W>(variant: &'static str, window: W, keys: usize, build: impl Fn(W) -> L) -> Row
where
    L: RateLimiter<u64> + SavedState<u64>,
    W: Algorithm,
{
    let weighted = window.algorithm() == "buckets";
    let name = if weighted {
        "buckets (B = 10)"
    } else {
        "exact log"
    };
    let records = usage(keys, weighted);
    let original = build(window.clone());
    let now = fill(&original, &records);

    let started = Instant::now();
    let snapshot = original.snapshot(now);
    let snapshot_time = started.elapsed();
    assert_eq!(snapshot.keys.len(), keys, "every key is saved");
    drop(original);

    let started = Instant::now();
    let json = snapshot.to_json().expect("u64 keys encode");
    let json_encode = started.elapsed();
    let started = Instant::now();
    let bytes = snapshot.to_bytes().expect("u64 keys encode");
    let postcard_encode = started.elapsed();
    let json_bytes = json.len();
    drop(json);
    drop(snapshot);

    let started = Instant::now();
    let decoded = Snapshot::<u64>::from_bytes(&bytes).expect("our own bytes decode");
    let postcard_decode = started.elapsed();

    let restored = build(window.clone());
    let started = Instant::now();
    restored
        .restore(&decoded, now, Conversion::Exact)
        .expect("our own snapshot restores");
    let restore = started.elapsed();
    assert_eq!(restored.tracked_keys(), keys);
    drop(restored);

    // The same hits as a usage log in random order (a fixed permutation by a mixed rank).
    let mut shuffled = records;
    shuffled.sort_unstable_by_key(|&(key, t, _)| mix64(key ^ t.rotate_left(32)));
    let imported = build(window);
    let started = Instant::now();
    let summary = imported.import_usage(&mut shuffled.into_iter(), now);
    let import = started.elapsed();
    assert_eq!(summary.keys, keys, "every key is imported");
    Row {
        variant,
        window: name,
        keys,
        snapshot: snapshot_time,
        json_bytes,
        json_encode,
        postcard_bytes: bytes.len(),
        postcard_encode,
        postcard_decode,
        restore,
        import,
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e3)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut keys = 1_000_000usize;
    let mut out = Some(PathBuf::from("results/snapshot.md"));
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--out" => match rest.next().map(String::as_str) {
                Some("-") => out = None,
                Some(path) => out = Some(PathBuf::from(path)),
                None => {
                    eprintln!("--out needs a file or -");
                    return ExitCode::FAILURE;
                }
            },
            number => match number.replace('_', "").parse() {
                Ok(n) if n > 0 => keys = n,
                _ => {
                    eprintln!("usage: snapshot_cost [KEYS] [--out FILE | --out -]");
                    return ExitCode::FAILURE;
                }
            },
        }
    }
    let exact = ExactLog::new(Limit::new(10, WINDOW_MS).expect("valid"));
    let buckets = RollingBuckets::new(Limit::new(1_000, WINDOW_MS).expect("valid"), 10)
        .expect("valid buckets");
    let options = Options::default();
    let rows = [
        measure("lock-free", exact, keys, |w| {
            LockFreeLimiter::<u64>::with_options(w, options)
        }),
        measure("mutex", exact, keys, |w| {
            MutexLimiter::<u64>::with_options(w, options)
        }),
        measure("lock-free", buckets, keys, |w| {
            LockFreeLimiter::<u64, RollingBuckets>::with_options(w, options)
        }),
        measure("mutex", buckets, keys, |w| {
            MutexLimiter::<u64, RollingBuckets>::with_options(w, options)
        }),
    ];

    let mut table = String::new();
    let _ = writeln!(
        table,
        "| variant | window | keys | snapshot (ms) | JSON B/key | JSON encode (ms) | postcard B/key | postcard encode (ms) | postcard decode (ms) | restore (ms) | import, random order (ms) |"
    );
    let _ = writeln!(
        table,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in &rows {
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {:.1} | {} | {:.1} | {} | {} | {} | {} |",
            row.variant,
            row.window,
            row.keys,
            ms(row.snapshot),
            row.json_bytes as f64 / row.keys as f64,
            ms(row.json_encode),
            row.postcard_bytes as f64 / row.keys as f64,
            ms(row.postcard_encode),
            ms(row.postcard_decode),
            ms(row.restore),
            ms(row.import),
        );
    }
    let Some(path) = out else {
        print!("{table}");
        return ExitCode::SUCCESS;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut report = String::new();
    let _ = writeln!(report, "# Snapshot size and speed\n");
    let _ = writeln!(
        report,
        "{keys} keys, {HITS_PER_KEY} hits each spread over the last window (exact log: limit 10 per 60,000 ms ticks; \
         buckets: limit 1,000 per 60,000 ms in 10 buckets, weights 1-50). `snapshot` reads every key \
         (one thread, no other load); `restore` installs every key into an empty limiter of the same \
         variant; `import` builds the same state from the fill's hits as `(key, tick, weight)` records in random order. Sizes are the encoded snapshot divided by the keys (keys are `u64`).\n"
    );
    let _ = writeln!(report, "| | |\n|---|---|");
    let _ = writeln!(
        report,
        "| command | `cargo run --release -p slidelimit-bench --bin snapshot_cost -- {keys}` |"
    );
    let _ = writeln!(
        report,
        "| commit | {} |",
        provenance::git_commit(&root, &["crates", "benches"])
    );
    let _ = writeln!(
        report,
        "| CPU | {} ({} cores) |",
        provenance::cpu_model(),
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let _ = writeln!(report, "| rustc | {rustc} |\n");
    report.push_str(&table);
    if let Err(error) = std::fs::write(&path, report) {
        eprintln!("cannot write {}: {error}", path.display());
        return ExitCode::FAILURE;
    }
    print!("{table}");
    ExitCode::SUCCESS
}

//! A flood of fresh keys against the key budget (`Options::max_keys`): `KEYS` distinct keys,
//! each asking four times in a row, all within one window (one tick per key), against a
//! budget of `BUDGET` keys and a limit of 3 per window, while one well-behaved client (its key
//! created before the flood) asks 100 times spread over the flood. Each variant runs in a child
//! process of its own, so its resident memory is its own.
//!
//! Reported per variant: resident memory (RSS) before the flood, at its peak and after
//! `remove_idle` once every key has gone idle; the keys tracked at the peak; the time per
//! decision during the flood; the flood's admissions; the well-behaved client's admissions
//! beside those of the same client on an unbudgeted limiter without the flood; and the most
//! admissions any key got in its four calls (every admission is counted as it happens: more
//! than 3 would be an over-admission). Writes `results/flood.md` unless told otherwise.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin flood -- [KEYS [BUDGET]] [--out FILE | --out -]
//! ```
//!
//! `KEYS` defaults to 10,000,000 and `BUDGET` to 100,000 (the issue's figures).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

use slidelimit::{Limit, LockFreeLimiter, Options, RateLimiter};
use slidelimit_bench::provenance::Facts;
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

const VARIANTS: [&str; 4] = ["lock-free", "mutex", "per-key-lock", "rwlock"];
const CHILD_FLAG: &str = "--flood-child";
/// Calls per flood key: one more than the limit, so a key that got state must refuse one.
const CALLS_PER_KEY: u64 = 4;
const MAX_REQUESTS: u64 = 3;
/// The well-behaved client's key (no flood key is this large).
const GOOD: u64 = u64::MAX;
const GOOD_ASKS: u64 = 100;

/// The resident set size of this process, from `/proc/self/status` (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let kib = line.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?;
                kib.trim().parse::<u64>().ok()
            })
        })
        .map_or(0, |kib| kib * 1024)
}

fn limiter(name: &str, limit: Limit, options: Options) -> Box<dyn RateLimiter<u64>> {
    let window = slidelimit::ExactLog::new(limit);
    match name {
        "lock-free" => Box::new(LockFreeLimiter::<u64>::with_options(window, options)),
        "mutex" => Box::new(MutexLimiter::<u64>::with_options(window, options)),
        "per-key-lock" => Box::new(PerKeyLockLimiter::<u64>::with_options(window, options)),
        "rwlock" => Box::new(RwLockLimiter::<u64>::with_options(window, options)),
        other => panic!("unknown variant {other}"),
    }
}

/// One variant's flood, in this process: prints one tab-separated line of results.
fn child(name: &str, keys: u64, budget: usize) {
    // One tick per flood key: the whole flood falls in one window.
    let limit = Limit::new(MAX_REQUESTS, keys + 1).expect("a valid limit");
    let options = if budget == usize::MAX {
        Options::default()
    } else {
        Options::default().max_keys(budget)
    };
    let flooded = limiter(name, limit, options);
    let quiet = limiter(name, limit, Options::default());
    let rss_before = rss_bytes();
    let (mut good, mut good_quiet) = (0u64, 0u64);
    let (mut flood_admitted, mut most_per_key, mut peak_rss, mut peak_tracked) = (0u64, 0, 0, 0);
    let every = (keys / GOOD_ASKS).max(1);
    let start = Instant::now();
    for key in 0..keys {
        let now = key;
        if key % every == 0 {
            good += u64::from(flooded.check_and_hit(&GOOD, now));
            good_quiet += u64::from(quiet.check_and_hit(&GOOD, now));
        }
        let admitted = (0..CALLS_PER_KEY)
            .filter(|_| flooded.check_and_hit(&key, now))
            .count() as u64;
        flood_admitted += admitted;
        most_per_key = most_per_key.max(admitted);
        if key % 65_536 == 0 {
            peak_rss = peak_rss.max(rss_bytes());
            peak_tracked = peak_tracked.max(flooded.tracked_keys());
        }
    }
    let elapsed = start.elapsed();
    peak_rss = peak_rss.max(rss_bytes());
    peak_tracked = peak_tracked.max(flooded.tracked_keys());
    let decisions = keys * CALLS_PER_KEY;
    let ns_per_decision = elapsed.as_nanos() as f64 / decisions as f64;
    // Long after: every key is idle; remove_idle frees them.
    flooded.remove_idle(keys.saturating_mul(4));
    let rss_after = rss_bytes();
    println!(
        "{name}\t{rss_before}\t{peak_rss}\t{rss_after}\t{peak_tracked}\t{ns_per_decision:.1}\t\
         {flood_admitted}\t{good}\t{good_quiet}\t{most_per_key}\t{}",
        flooded.tracked_keys()
    );
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        let parse = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
        let (Some(name), Some(keys), Some(budget)) = (args.get(1), parse(2), parse(3)) else {
            eprintln!("usage: {CHILD_FLAG} VARIANT KEYS BUDGET");
            return ExitCode::FAILURE;
        };
        child(name, keys, usize::try_from(budget).unwrap_or(usize::MAX));
        return ExitCode::SUCCESS;
    }
    let mut numbers = Vec::new();
    let mut out = Some(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../results/flood.md"
    )));
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--out" => {
                out = match rest.next().map(String::as_str) {
                    Some("-") => None,
                    Some(path) => Some(PathBuf::from(path)),
                    None => {
                        eprintln!("--out needs a file, or - for the table only");
                        return ExitCode::FAILURE;
                    }
                };
            }
            number => match number.parse::<u64>() {
                Ok(n) => numbers.push(n),
                Err(_) => {
                    eprintln!("not a number: {number}");
                    return ExitCode::FAILURE;
                }
            },
        }
    }
    let keys = numbers.first().copied().unwrap_or(10_000_000);
    let budget = numbers.get(1).copied().unwrap_or(100_000);
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("cannot find this binary: {error}");
            return ExitCode::FAILURE;
        }
    };
    let facts = Facts::collect("flood");
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| variant | RSS before | RSS peak | RSS after `remove_idle` | keys tracked at peak | ns per decision | flood admissions | good client (flood / none) | most admissions of a key | keys left |"
    );
    let _ = writeln!(table, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Every variant under the budget, then the lock-free limiter without one, for contrast.
    let runs = VARIANTS
        .iter()
        .map(|&name| (name, budget))
        .chain([("lock-free", u64::MAX)]);
    for (name, budget) in runs {
        let output = Command::new(&exe)
            .args([CHILD_FLAG, name, &keys.to_string(), &budget.to_string()])
            .output();
        let line = match output {
            Ok(output) if output.status.success() => {
                String::from_utf8_lossy(&output.stdout).trim().to_owned()
            }
            Ok(output) => {
                eprintln!(
                    "{name}: the child failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("{name}: cannot start the child: {error}");
                return ExitCode::FAILURE;
            }
        };
        let fields: Vec<&str> = line.split('\t').collect();
        let [variant, before, peak, after, tracked, ns, admitted, good, quiet, most, left] =
            fields[..]
        else {
            eprintln!("{name}: unexpected child output: {line}");
            return ExitCode::FAILURE;
        };
        let bytes = |field: &str| field.parse::<u64>().map_or_else(|_| field.to_owned(), mib);
        let variant = if budget == u64::MAX {
            format!("{variant}, no budget")
        } else {
            variant.to_owned()
        };
        let _ = writeln!(
            table,
            "| {variant} | {} MiB | {} MiB | {} MiB | {tracked} | {ns} | {admitted} | {good} / {quiet} | {most} | {left} |",
            bytes(before),
            bytes(peak),
            bytes(after)
        );
        eprintln!("{name} done");
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# A flood of fresh keys against the key budget\n\n\
         {keys} distinct keys, each asking {CALLS_PER_KEY} times in a row, one tick per key (the \
         whole flood within one window of {} ticks), limit {MAX_REQUESTS} per window, against \
         `Options::max_keys({budget})` and the default 512 shards; one well-behaved client, its \
         key created before the flood, asks {GOOD_ASKS} times spread over it, and the same \
         client asks an unbudgeted limiter with no flood at the same ticks. The last row is the \
         lock-free limiter without a budget, for contrast. Each variant runs in \
         a child process of its own (RSS is the process's resident memory, allocator included). \
         \"Most admissions of a key\" counts every admission of each key's {CALLS_PER_KEY} calls \
         as it happens: above {MAX_REQUESTS} would be an over-admission.\n",
        keys + 1
    );
    let _ = writeln!(
        text,
        "| | |\n|---|---|\n| CPU | {} ({} cores) |\n| rustc | {} |\n| profile | {} |\n| commit | {} |\n| command | `{}` |\n",
        facts.cpu_model, facts.cores, facts.rustc, facts.profile, facts.commit, facts.command
    );
    text.push_str(&table);
    match out {
        Some(path) => {
            if let Err(error) = std::fs::write(&path, &text) {
                eprintln!("cannot write {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
            eprintln!("wrote {}", path.display());
        }
        None => print!("{table}"),
    }
    ExitCode::SUCCESS
}

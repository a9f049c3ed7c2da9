//! The rolling-bucket window's error against the exact log, measured on the same traces.
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin accuracy [-- --out DIR] [--scale F]
//! ```
//!
//! Four single-threaded traces of unit requests with in-order timestamps (uniform arrivals,
//! bursts, Zipf-distributed keys, a steady rate just under the limit), each replayed through
//! `RollingBuckets` for several bucket counts `B` (lateness 1). Beside every key's bucket
//! window runs an *oracle*: the exact log fed the very hits the buckets admitted. Each
//! request is then classified on one history:
//! - **false negative**: the buckets refuse, the exact log over the same admitted hits
//!   would admit (the price of the approximation);
//! - **false positive**: the buckets admit, the exact log would refuse (a safety violation:
//!   must be zero);
//! - **excess**: how much more weight the buckets count than the exact log does, as a
//!   fraction of the limit, `(bucket count − exact count) / max_requests`; the worst case
//!   over all requests is the *worst excess ratio*.
//!
//! Each trace is also replayed independently through an exact-log limiter, for the
//! admitted-request ratio, and both are timed (single thread, median of 5 replays,
//! indicative).
//! Writes `accuracy.md`, `accuracy.json` and `accuracy.svg` (default directory: `results/`
//! at the workspace root), with the machine facts and the command.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use slidelimit::raw::{Algorithm, SequentialWindow};
use slidelimit::{ExactLog, Limit, LockFreeLimiter, Options, RollingBuckets};
use slidelimit_bench::plot::{self, Line, Panel, PALETTE};
use slidelimit_bench::provenance::Facts;
use slidelimit_trace::rng::SplitMix64;
use slidelimit_trace::zipf::Zipf;

/// Ticks are milliseconds: 100 requests per minute per key.
const MAX_REQUESTS: u64 = 100;
const WINDOW_TICKS: u64 = 60_000;
/// The bucket counts compared.
const BUCKET_COUNTS: [u64; 5] = [1, 4, 10, 30, 60];

/// One request: `(key, tick)`.
type Trace = Vec<(u64, u64)>;

/// The four traces, each about `scale × 150,000` requests over 20 minutes (`scale` sets the
/// number of keys, or of requests for the Zipf trace, never a key's rate).
fn traces(scale: f64) -> Vec<(&'static str, &'static str, Trace)> {
    let duration = 20 * WINDOW_TICKS;
    let per_window = MAX_REQUESTS as f64;
    let mut rng = SplitMix64::new(0x5EED_0003);
    let mut out = Vec::new();

    // Uniform: 60 keys (times the scale), each at 1.25x its limit, ticks uniform at random.
    let keys = ((60.0 * scale).round() as u64).max(1);
    let n = (keys as f64 * 1.25 * per_window * 20.0) as u64;
    let mut trace: Trace = (0..n)
        .map(|_| (rng.below(keys), rng.below(duration)))
        .collect();
    sort_by_tick(&mut trace);
    out.push((
        "uniform",
        "60 keys, each at 1.25x its limit, arrival ticks uniform at random",
        trace,
    ));

    // Bursty: each key idle 10-50 s, then a burst of 40-160 requests within 2 s.
    let mut trace = Trace::new();
    for key in 0..keys {
        let mut t = rng.below(30_000);
        while t < duration {
            for _ in 0..40 + rng.below(121) {
                trace.push((key, t + rng.below(2_000)));
            }
            t += 2_000 + 10_000 + rng.below(40_000);
        }
    }
    trace.retain(|&(_, t)| t < duration);
    sort_by_tick(&mut trace);
    out.push((
        "bursty",
        "60 keys, each idle 10-50 s, then a burst of 40-160 requests within 2 s",
        trace,
    ));

    // Zipf keys: 2,000 keys drawn Zipf(s = 1.1); the hottest ones far over the limit.
    let zipf = Zipf::new(2_000, 1.1).expect("2,000 ranks at exponent 1.1 are a Zipf law");
    let n = (150_000.0 * scale) as u64;
    let mut trace: Trace = (0..n)
        .map(|_| (zipf.sample(&mut rng), rng.below(duration)))
        .collect();
    sort_by_tick(&mut trace);
    out.push((
        "zipf",
        "2,000 keys drawn Zipf(1.1), arrival ticks uniform at random",
        trace,
    ));

    // Steady: 60 keys, each evenly spaced at 0.98x its limit, +-100 ms jitter.
    let mut trace = Trace::new();
    let gap = WINDOW_TICKS as f64 / (0.98 * per_window);
    for key in 0..keys {
        let mut t = rng.next_f64() * gap;
        while t < duration as f64 {
            let jitter = rng.below(201) as f64 - 100.0;
            trace.push((key, (t + jitter).max(0.0) as u64));
            t += gap;
        }
    }
    sort_by_tick(&mut trace);
    out.push((
        "steady",
        "60 keys, each evenly spaced at 0.98x its limit, +-100 ms jitter",
        trace,
    ));
    out
}

fn sort_by_tick(trace: &mut Trace) {
    trace.sort_by_key(|&(key, t)| (t, key));
}

/// One trace replayed through the buckets with `B` buckets.
#[derive(Clone, Debug, Serialize)]
struct Row {
    trace: &'static str,
    buckets: u64,
    bucket_ticks: u64,
    physical_buckets: u64,
    requests: u64,
    admitted: u64,
    false_negatives: u64,
    false_negative_fraction: f64,
    false_positives: u64,
    /// The worst excess ratio: `(bucket count − exact count) / max_requests`, maximum over
    /// all requests.
    worst_excess: f64,
    /// Requests the buckets admitted / requests an exact-log limiter admits on the trace.
    admitted_vs_exact: f64,
    /// Single-thread replay through `LockFreeLimiter`, nanoseconds per `check_and_hit`.
    replay_ns_per_decision: f64,
}

/// The exact log's own replay of one trace.
#[derive(Clone, Debug, Serialize)]
struct ExactRow {
    trace: &'static str,
    description: &'static str,
    requests: u64,
    keys: usize,
    admitted: u64,
    replay_ns_per_decision: f64,
}

fn options() -> Options {
    // Every key is kept: removal would add watermark refusals that are not the window's.
    Options::default().sweep_floor_keys(usize::MAX)
}

/// Timed replays per measurement; the median is kept.
const TIMED_REPLAYS: usize = 5;

/// Replays `trace` through a fresh lock-free limiter with `window`, [`TIMED_REPLAYS`] times;
/// returns (admitted, median ns per decision).
fn timed_replay<W: Algorithm>(window: W, trace: &Trace) -> (u64, f64) {
    let mut admitted = 0;
    let mut ns: Vec<f64> = (0..TIMED_REPLAYS)
        .map(|_| {
            let limiter = LockFreeLimiter::<u64, W>::with_options(window.clone(), options());
            let start = Instant::now();
            admitted = trace
                .iter()
                .filter(|&&(key, t)| limiter.check_and_hit(&key, t))
                .count() as u64;
            start.elapsed().as_nanos() as f64 / trace.len().max(1) as f64
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    (admitted, ns[TIMED_REPLAYS / 2])
}

/// Replays `trace` through a fresh lock-free limiter with `window`: how many it admitted.
fn replay<W: Algorithm>(window: W, trace: &Trace) -> u64 {
    let limiter = LockFreeLimiter::<u64, W>::with_options(window, options());
    trace
        .iter()
        .filter(|&&(key, t)| limiter.check_and_hit(&key, t))
        .count() as u64
}

/// Replays `trace` through the buckets with the exact oracle beside them.
fn compare(name: &'static str, trace: &Trace, window: RollingBuckets, exact_admitted: u64) -> Row {
    let limit = window.limit();
    let oracle_window = ExactLog::new(limit);
    let mut keys: HashMap<u64, (<RollingBuckets as Algorithm>::Sequential, _)> = HashMap::new();
    let (mut admitted, mut false_negatives, mut false_positives) = (0u64, 0u64, 0u64);
    let mut worst_excess = 0u64;
    for &(key, t) in trace {
        let (buckets, oracle) = keys
            .entry(key)
            .or_insert_with(|| (window.new_sequential(), oracle_window.new_sequential()));
        let exact_count = oracle.status(t).count;
        let oracle_admits = oracle.allowed_n(t, 1);
        let bucket_count = buckets.status(t).count;
        worst_excess = worst_excess.max(bucket_count.saturating_sub(exact_count));
        let admits = buckets.check_and_hit_n(t, 1);
        if admits {
            admitted += 1;
            oracle.hit_n(t, 1);
        }
        false_negatives += u64::from(!admits && oracle_admits);
        false_positives += u64::from(admits && !oracle_admits);
    }
    let requests = trace.len() as u64;
    Row {
        trace: name,
        buckets: window.buckets(),
        bucket_ticks: window.bucket_ticks(),
        physical_buckets: window.physical_buckets(),
        requests,
        admitted,
        false_negatives,
        false_negative_fraction: false_negatives as f64 / requests as f64,
        false_positives,
        worst_excess: worst_excess as f64 / limit.max_requests() as f64,
        admitted_vs_exact: admitted as f64 / exact_admitted.max(1) as f64,
        // Timed afterwards, alone (see main).
        replay_ns_per_decision: f64::NAN,
    }
}

#[derive(Serialize)]
struct Report {
    machine: Facts,
    max_requests: u64,
    window_ticks: u64,
    lateness_buckets: u64,
    exact: Vec<ExactRow>,
    rows: Vec<Row>,
}

fn percent(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

fn markdown(report: &Report) -> String {
    let m = &report.machine;
    let mut md = String::new();
    let _ = writeln!(md, "# Rolling buckets against the exact log\n");
    let _ = writeln!(
        md,
        "Limit {} requests per {} ticks (ms), lateness 1 bucket, unit requests, in-order \
         timestamps. Every request is judged on one history: beside each key's bucket window \
         runs the exact log fed the hits the buckets admitted.\n",
        report.max_requests, report.window_ticks
    );
    let _ = writeln!(md, "- **False negative**: refused by the buckets, admitted by the exact log on the same history. Shown as a fraction of all requests.");
    let _ = writeln!(md, "- **False positive**: admitted by the buckets, refused by the exact log: a safety violation, must be 0.");
    let _ = writeln!(md, "- **Worst excess**: the largest `(bucket count - exact count) / max_requests` seen by any request: how much fuller than the truth the window can look. What the buckets count lies within the last `W + (L + 1)·w` ticks, so the excess is weight from at most `(L + 1)·w` ticks before the exact window (a burst there can make it 100 %).");
    let _ = writeln!(md, "- **Admitted vs exact**: requests admitted by the buckets / requests admitted by an exact-log limiter replaying the same trace on its own.");
    let _ = writeln!(md, "- **ns/decision**: a single-threaded replay through `LockFreeLimiter` (map lookup included), median of 5, on a shared machine: indicative only; `results/comparison.md` has the benchmark.\n");
    let _ = writeln!(md, "| trace | B | width (ticks) | requests | false negatives | false positives | worst excess | admitted vs exact | ns/decision |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for exact in &report.exact {
        let _ = writeln!(
            md,
            "| {} | exact log | – | {} | – | – | – | 100.00 % | {:.0} |",
            exact.trace, exact.requests, exact.replay_ns_per_decision
        );
        for row in report.rows.iter().filter(|r| r.trace == exact.trace) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} ({}) | {} | {} | {} | {:.0} |",
                row.trace,
                row.buckets,
                row.bucket_ticks,
                row.requests,
                percent(row.false_negative_fraction),
                row.false_negatives,
                row.false_positives,
                percent(row.worst_excess),
                percent(row.admitted_vs_exact),
                row.replay_ns_per_decision
            );
        }
    }
    let _ = writeln!(md, "\nReading the table: on a trace that keeps a key saturated (`uniform` at 1.25x, and the hot keys of `zipf`), the buckets settle a little below the limit in the exact window, so nearly every refusal they make is one the exact log would not make on that history: the false-negative fraction is close to the refusal rate, and **admitted vs exact** is the better measure of the capacity lost. On `steady` (just under the limit) and `bursty`, false negatives come from the `(L + 1)·w` ticks the buckets look back beyond `W`, and shrink with `w = W / B`.");
    let _ = writeln!(md, "\nTraces:\n");
    for exact in &report.exact {
        let _ = writeln!(
            md,
            "- `{}`: {} ({} requests, {} keys).",
            exact.trace, exact.description, exact.requests, exact.keys
        );
    }
    let _ = writeln!(md, "\n![false negatives per bucket count](accuracy.svg)\n");
    let _ = writeln!(md, "## Machine\n");
    let _ = writeln!(md, "- CPU: {} ({} logical CPUs)", m.cpu_model, m.cores);
    let _ = writeln!(md, "- rustc: {} ({} profile)", m.rustc, m.profile);
    let _ = writeln!(md, "- commit: `{}`", m.commit);
    let _ = writeln!(md, "- command: `{}`", m.command);
    md
}

/// A line chart: false-negative fraction (%) against B, one line per trace.
fn svg(report: &Report) -> Result<String, String> {
    let x: Vec<String> = BUCKET_COUNTS.iter().map(u64::to_string).collect();
    let lines: Vec<Line> = report
        .exact
        .iter()
        .enumerate()
        .map(|(k, exact)| {
            let points = report
                .rows
                .iter()
                .filter(|r| r.trace == exact.trace)
                .enumerate()
                .map(|(i, r)| (i, 100.0 * r.false_negative_fraction))
                .collect();
            Line {
                marker: 4,
                ..Line::new(exact.trace, PALETTE[[0, 1, 2, 4][k % 4]], points)
            }
        })
        .collect();
    let max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.5, f64::max);
    let false_positives: u64 = report.rows.iter().map(|r| r.false_positives).sum();
    let title = format!(
        "Rolling buckets: false negatives vs the exact log (limit {} per {} ms)",
        report.max_requests, report.window_ticks
    );
    plot::svg((720, 420), &title, &[], |area| {
        let (chart, side) = area.split_horizontally(580);
        Panel {
            caption: "",
            x: &x,
            x_desc: "buckets B (lateness 1)",
            y_desc: "false negatives, % of requests",
            lines: &lines,
        }
        .draw_linear(&chart, 0.0..max * 1.08)?;
        plot::legend(&side, &lines, (10, 20), (0, 20))?;
        let y = 30 + 20 * lines.len() as i32;
        plot::note(
            &side,
            &format!("false positives: {false_positives}"),
            (10, y),
        )?;
        plot::note(&side, "(must be 0)", (10, y + 16))
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut out = root.join("results");
    let mut scale = 1.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--scale" => scale = args.next().ok_or("--scale needs a number")?.parse()?,
            "-h" | "--help" => {
                println!("usage: accuracy [--out DIR] [--scale F]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let started = Instant::now();
    let limit = Limit::new(MAX_REQUESTS, WINDOW_TICKS)?;
    let traces = traces(scale);
    let windows = BUCKET_COUNTS
        .iter()
        .map(|&b| RollingBuckets::new(limit, b))
        .collect::<Result<Vec<_>, _>>()?;
    // The grid (every trace, every (trace, B)) is classified in parallel: each point is
    // independent and deterministic, and rayon collects in grid order.
    let exact_admitted: Vec<u64> = traces
        .par_iter()
        .map(|(_, _, trace)| replay(ExactLog::new(limit), trace))
        .collect();
    let grid: Vec<(usize, usize)> = (0..traces.len())
        .flat_map(|t| (0..windows.len()).map(move |w| (t, w)))
        .collect();
    let mut rows: Vec<Row> = grid
        .par_iter()
        .map(|&(t, w)| compare(traces[t].0, &traces[t].2, windows[w], exact_admitted[t]))
        .collect();
    // The timings afterwards, one replay at a time: replays in parallel would time each other.
    let mut exact_rows = Vec::new();
    for (t, (name, description, trace)) in traces.iter().enumerate() {
        let (admitted, exact_ns) = timed_replay(ExactLog::new(limit), trace);
        assert_eq!(admitted, exact_admitted[t], "every replay must admit alike");
        let keys = trace
            .iter()
            .map(|&(key, _)| key)
            .collect::<std::collections::HashSet<_>>()
            .len();
        exact_rows.push(ExactRow {
            trace: name,
            description,
            requests: trace.len() as u64,
            keys,
            admitted,
            replay_ns_per_decision: exact_ns,
        });
        for (row, &(_, w)) in rows.iter_mut().zip(&grid).filter(|(_, g)| g.0 == t) {
            let (admitted, ns) = timed_replay(windows[w], trace);
            assert_eq!(
                admitted, row.admitted,
                "the lock-free limiter and the sequential window must agree"
            );
            row.replay_ns_per_decision = ns;
            eprintln!(
                "{name:>8} B={:<3} false negatives {:>8} false positives {} worst excess {}",
                row.buckets,
                percent(row.false_negative_fraction),
                row.false_positives,
                percent(row.worst_excess)
            );
        }
    }
    let report = Report {
        machine: Facts::collect("accuracy"),
        max_requests: MAX_REQUESTS,
        window_ticks: WINDOW_TICKS,
        lateness_buckets: 1,
        exact: exact_rows,
        rows,
    };
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("accuracy.md"), markdown(&report))?;
    std::fs::write(
        out.join("accuracy.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    std::fs::write(out.join("accuracy.svg"), svg(&report)?)?;
    eprintln!(
        "wrote {}/accuracy.{{md,json,svg}} in {:.1} s",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    let violations: u64 = report.rows.iter().map(|r| r.false_positives).sum();
    if violations > 0 {
        return Err(format!("{violations} false positives: the buckets over-admitted").into());
    }
    Ok(())
}

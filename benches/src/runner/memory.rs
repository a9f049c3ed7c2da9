//! Memory: per variant, the live heap bytes per tracked key (counted by a global allocator)
//! beside the process's resident-memory growth per key; the tracked-key count and memory
//! while keys rotate at a steady active population; and the Zipf workload's memory before and
//! after `remove_idle`.
//!
//! The counter is `stats_alloc`'s wrapper around the system allocator (the workspace forbids
//! `unsafe`, so the runner cannot implement `GlobalAlloc` itself). It counts requested bytes
//! (allocator headers and rounding are not included). Memory the map or its reclamation
//! scheme has retired but not yet freed (papaya's old tables, seize's deferred entries) is
//! still allocated, so it is counted.
//!
//! Resident memory is `VmRSS` from `/proc/self/status`: what the heap costs once the
//! allocator's headers, rounding, fragmentation and freed-but-kept pages are added. A process
//! that measured other variants first would start with a heap full of their freed pages, so
//! each measurement (a variant at a limit, a rotation, a Zipf removal) runs in a fresh child,
//! started with the hidden `--memory-child` flag; it prints its figures as one JSON line.
//!
//! # Which program the children are
//! The counter adds two `SeqCst` adds on limiter-wide words to every allocation and every
//! free. In a timed cell that creates and removes keys on many threads those words are the
//! most contended lines in the process: on 16 cores they took half the lock-free limiter's
//! churn time (`results/scaling-16/`), and every variant that allocates per key stopped
//! scaling at a few threads because of the harness, not because of itself. So the comparison
//! binary (`slidelimit-bench`) installs no counter, and its children are a second binary,
//! `slidelimit-bench-memory`, which does: see [`memory_program`]. A host that installs the
//! counter itself (the `slidelimit` CLI) is its own child, as before, and its timed cells pay
//! the counter.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::clock::BenchClock;
use crate::drive;
use crate::target::Target;
use crate::variants::{self, Context, Family, Meta, Visitor};
use crate::workload::{self, Mix, Workload};
use serde::{Deserialize, Serialize};
use slidelimit_trace::rng::mix64;
use stats_alloc::INSTRUMENTED_SYSTEM;

use super::args::Args;
use super::matrix::{selected, Progress};
use super::results::{MemoryRow, RotationRow, ZipfMemoryRow};

/// Live heap bytes (requested sizes) right now, as counted by [`INSTRUMENTED_SYSTEM`] (zero
/// unless the host installed it: see [`counting_active`]).
///
/// `stats_alloc` already adds a `realloc`'s growth to `bytes_allocated` (and its shrinkage to
/// `bytes_deallocated`); `bytes_reallocated` is the same change again, so it is not added.
fn live_bytes() -> i64 {
    let stats = INSTRUMENTED_SYSTEM.stats();
    let as_i64 = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    as_i64(stats.bytes_allocated) - as_i64(stats.bytes_deallocated)
}

/// Whether this process's global allocator is the counting one: an allocation must show in
/// its statistics.
#[must_use]
pub fn counting_active() -> bool {
    let before = INSTRUMENTED_SYSTEM.stats().allocations;
    drop(std::hint::black_box(Box::new([0u8; 64])));
    INSTRUMENTED_SYSTEM.stats().allocations > before
}

/// The error a child gives when its program has no counting allocator.
pub const NOT_COUNTING: &str = "the memory measurements need the counting global allocator: \
     the program must invoke `slidelimit_bench::counting_allocator!()` (or the run passes \
     --skip-memory)";

/// The memory children's own binary, beside the comparison runner's (see the module docs).
pub const MEMORY_BIN: &str = "slidelimit-bench-memory";

/// The program the memory children run: this one, if it counts allocations; otherwise
/// [`MEMORY_BIN`] beside it, built first when this run was started by `cargo run` (cargo
/// builds only the binary it runs), so that the children are never older than the runner.
///
/// # Errors
/// No counting allocator here and no [`MEMORY_BIN`] beside this program.
pub fn memory_program() -> Result<PathBuf, String> {
    let this = std::env::current_exe().map_err(|e| format!("cannot find the runner: {e}"))?;
    if counting_active() {
        return Ok(this);
    }
    let sibling = this.with_file_name(format!("{MEMORY_BIN}{}", std::env::consts::EXE_SUFFIX));
    // `cargo run` passes its own path in CARGO: build the sibling with the same profile into
    // the same target directory (the environment carries CARGO_TARGET_DIR, if set).
    if let Some(cargo) = std::env::var_os("CARGO") {
        let profile = match env!("SLIDELIMIT_BENCH_PROFILE") {
            "debug" => "dev",
            other => other,
        };
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--profile",
                profile,
                "--bin",
                MEMORY_BIN,
            ])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .status()
            .map_err(|e| format!("cannot run cargo to build {MEMORY_BIN}: {e}"))?;
        if !status.success() {
            return Err(format!("cargo could not build {MEMORY_BIN} ({status})"));
        }
    }
    if sibling.is_file() {
        Ok(sibling)
    } else {
        Err(format!(
            "no {MEMORY_BIN} beside this program ({}): build it with `cargo build --release -p \
             slidelimit-bench --bins`, or pass --skip-memory",
            sibling.display()
        ))
    }
}

/// This process's resident memory (`VmRSS`), bytes; None where `/proc` does not say.
fn resident_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Keys created for the bytes-per-key figure (fewer for large limits: see [`keys_for`]).
pub const KEYS: usize = 200_000;
/// The limits (`N`) the bytes-per-key figure is measured at.
pub const PER_KEY_LIMITS: [u64; 3] = [1, 32, 1000];

/// Keys for a full-window measurement at limit `n`: at most forty million calls in all (40k
/// keys at N = 1000; with 10k, the limiter's fixed resident overhead, the created shards and
/// the allocator's arena, weighed 2x on the rolling buckets' small entries).
#[must_use]
pub fn keys_for(n: u64) -> usize {
    KEYS.min(usize::try_from(40_000_000 / n.max(1)).unwrap_or(KEYS))
}
/// Calls made on the Zipf stream before measuring removal.
pub const ZIPF_OPS: u64 = 2_000_000;

/// Rotation: keys in rotation at any time (each called once per window).
pub const ROTATION_ACTIVE: usize = 50_000;
/// Rotation: windows each key stays in rotation before it is never seen again.
pub const ROTATION_LIFETIME_WINDOWS: usize = 8;
/// Rotation: windows run (three lifetimes: the population is steady after the first).
pub const ROTATION_WINDOWS: usize = 24;
/// Rotation: the window, in the limiter's units (nanoseconds of the fake clock: 4000 ticks).
const ROTATION_WINDOW: u64 = 4_000_000;
/// Rotation: the limit per window (every call admitted: each key gets one call a window).
const ROTATION_MAX_REQUESTS: u64 = 32;
/// Rotation: `tracked_keys` is read once per this many calls.
const ROTATION_PROBE_EVERY: usize = 64;

/// The hidden flag that makes the runner a memory child.
pub const CHILD_FLAG: &str = "--memory-child";

/// Measures every selected variant (the floor excepted), each in a child of `program`: bytes
/// per key per limit, the rotation (ours only) and the Zipf removal.
pub struct MemoryRun<'a> {
    /// The run's flags.
    pub args: &'a Args,
    /// The children's program ([`memory_program`]).
    pub program: &'a Path,
    /// The limits the per-key keys are created under (uniform-allowed's window and keys).
    pub per_key_limits: &'a [u64],
    /// The Zipf workload, if selected.
    pub zipf: Option<&'a Workload>,
    /// Progress display.
    pub progress: &'a Progress,
    /// Bytes per key.
    pub rows: Vec<MemoryRow>,
    /// Rotation.
    pub rotation_rows: Vec<RotationRow>,
    /// Zipf removal.
    pub zipf_rows: Vec<ZipfMemoryRow>,
}

impl Visitor for MemoryRun<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, _make: &dyn Fn(&Context<'_>) -> T) {
        if !selected(self.args, meta) || meta.family == Family::Floor {
            return;
        }
        for &n in self.per_key_limits {
            let Ok(workload) = per_key_workload(n) else {
                continue;
            };
            if !(meta.supports)(&workload) {
                continue;
            }
            match spawn_child::<PerKeyChild>(self.program, &["per-key", meta.name, &n.to_string()])
            {
                Ok(child) => {
                    let row = child.row(meta, &workload);
                    self.progress.note(&format!(
                        "memory · {} · N = {}: heap {:.0} B/key after one hit, {:.0} with a full \
                         window; RSS {} B/key ({} × heap)",
                        meta.name,
                        row.max_requests,
                        row.bytes_per_key_one_hit,
                        row.bytes_per_key_full,
                        opt(row.rss_bytes_per_key.map(|r| format!("{r:.0}"))),
                        opt(row.rss_over_heap.map(|r| format!("{r:.2}"))),
                    ));
                    self.rows.push(row);
                }
                Err(e) => self
                    .progress
                    .note(&format!("memory · {} · N = {n}: {e}", meta.name)),
            }
        }
        if meta.family == Family::Ours {
            match spawn_child::<RotationChild>(self.program, &["rotation", meta.name]) {
                Ok(child) => {
                    let row = child.row(meta);
                    self.progress.note(&format!(
                        "memory · {} · rotation: {} active keys, at most {} tracked ({} ×); \
                         heap {:.0} B, RSS {} B per active key",
                        meta.name,
                        row.active_keys,
                        opt(row.max_tracked),
                        opt(row.max_tracked_over_active.map(|r| format!("{r:.2}"))),
                        row.heap_bytes_per_active_key,
                        opt(row.rss_bytes_per_active_key.map(|r| format!("{r:.0}"))),
                    ));
                    self.rotation_rows.push(row);
                }
                Err(e) => self
                    .progress
                    .note(&format!("memory · {} · rotation: {e}", meta.name)),
            }
        }
        if self.zipf.is_some_and(|zipf| (meta.supports)(zipf)) {
            match spawn_child::<ZipfChild>(self.program, &["zipf", meta.name]) {
                Ok(child) => {
                    let row = child.row(meta);
                    self.progress.note(&format!(
                    "memory · {} · zipf: {} keys / {} before remove_idle, {} keys / {} after ({:.1} ms)",
                    meta.name,
                    opt(row.tracked_before),
                    super::report::human_bytes(row.bytes_before),
                    opt(row.tracked_after),
                    super::report::human_bytes(row.bytes_after),
                    row.remove_ms
                ));
                    self.zipf_rows.push(row);
                }
                Err(e) => self
                    .progress
                    .note(&format!("memory · {} · zipf: {e}", meta.name)),
            }
        }
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

/// uniform-allowed's keys and window at limit `n`.
fn per_key_workload(n: u64) -> Result<Workload, String> {
    let uniform = workload::find("uniform-allowed").ok_or("uniform-allowed workload missing")?;
    Ok(Workload {
        max_requests: n,
        ..uniform
    })
}

/// The rotation's limit, on uniform-allowed's keys otherwise.
fn rotation_workload() -> Result<Workload, String> {
    let uniform = workload::find("uniform-allowed").ok_or("uniform-allowed workload missing")?;
    Ok(Workload {
        max_requests: ROTATION_MAX_REQUESTS,
        window_ns: ROTATION_WINDOW,
        ..uniform
    })
}

/// Runs this binary as a memory child with `what` and parses the JSON line it prints.
fn spawn_child<R: for<'de> Deserialize<'de>>(program: &Path, what: &[&str]) -> Result<R, String> {
    let out = Command::new(program)
        .arg(CHILD_FLAG)
        .args(what)
        .output()
        .map_err(|e| format!("cannot start the memory child: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the memory child failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("the memory child said {line:?}: {e}"))
}

/// The memory child's entry point: `argv` is what follows [`CHILD_FLAG`]. Prints one JSON
/// line.
#[must_use]
pub fn child_main(argv: &[String]) -> ExitCode {
    if !counting_active() {
        eprintln!("error: {NOT_COUNTING}");
        return ExitCode::FAILURE;
    }
    let result = match argv {
        // An optional key count after the limit, for trying other sizes by hand.
        [kind, variant, n, rest @ ..] if kind == "per-key" && rest.len() <= 1 => n
            .parse::<u64>()
            .map_err(|_| format!("bad limit {n:?}"))
            .and_then(|n| {
                let keys = match rest {
                    [keys] => keys
                        .parse()
                        .map_err(|_| format!("bad key count {keys:?}"))?,
                    _ => keys_for(n),
                };
                Ok((per_key_workload(n)?, keys))
            })
            .and_then(|(workload, keys)| {
                let mut child = PerKeyVisit {
                    variant,
                    workload: &workload,
                    keys,
                    out: None,
                };
                variants::for_each(&mut child);
                child.out.ok_or_else(|| format!("no variant {variant:?}"))
            }),
        [kind, variant] if kind == "rotation" => rotation_workload().and_then(|workload| {
            let mut child = RotationVisit {
                variant,
                workload: &workload,
                out: None,
            };
            variants::for_each(&mut child);
            child.out.ok_or_else(|| format!("no variant {variant:?}"))
        }),
        [kind, variant] if kind == "zipf" => workload::all()
            .into_iter()
            .find(|w| w.name == "zipf")
            .ok_or_else(|| "no zipf workload".to_owned())
            .and_then(|workload| {
                let mut child = ZipfVisit {
                    variant,
                    workload: &workload,
                    out: None,
                };
                variants::for_each(&mut child);
                child.out.ok_or_else(|| format!("no variant {variant:?}"))
            }),
        _ => Err(format!(
            "usage: {CHILD_FLAG} per-key VARIANT N [KEYS] | {CHILD_FLAG} rotation VARIANT | \
             {CHILD_FLAG} zipf VARIANT"
        )),
    };
    match result {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

struct PerKeyVisit<'a> {
    variant: &'a str,
    workload: &'a Workload,
    keys: usize,
    out: Option<String>,
}

impl Visitor for PerKeyVisit<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if meta.name == self.variant {
            let child = per_key(self.workload, self.keys, make);
            self.out = serde_json::to_string(&child).ok();
        }
    }
}

struct RotationVisit<'a> {
    variant: &'a str,
    workload: &'a Workload,
    out: Option<String>,
}

impl Visitor for RotationVisit<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if meta.name == self.variant {
            let child = rotation(self.workload, make);
            self.out = serde_json::to_string(&child).ok();
        }
    }
}

struct ZipfVisit<'a> {
    variant: &'a str,
    workload: &'a Workload,
    out: Option<String>,
}

impl Visitor for ZipfVisit<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if meta.name == self.variant && (meta.supports)(self.workload) {
            let child = zipf_removal(self.workload, make);
            self.out = serde_json::to_string(&child).ok();
        }
    }
}

/// What a per-key child measured (totals, bytes).
#[derive(Debug, Serialize, Deserialize)]
struct PerKeyChild {
    keys: usize,
    tracked: Option<usize>,
    heap_one_hit: i64,
    heap_full: i64,
    heap_settled: i64,
    rss_settled: Option<i64>,
}

impl PerKeyChild {
    fn row(&self, meta: &Meta, workload: &Workload) -> MemoryRow {
        let per = |bytes: i64| bytes as f64 / self.tracked.unwrap_or(self.keys).max(1) as f64;
        let heap = per(self.heap_settled);
        let rss = self.rss_settled.map(per);
        MemoryRow {
            variant: meta.name,
            limit: workload.describe_limit(),
            max_requests: workload.max_requests,
            keys: self.keys,
            tracked: self.tracked,
            bytes_per_key_one_hit: per(self.heap_one_hit),
            bytes_per_key_full: per(self.heap_full),
            heap_bytes_per_key_settled: heap,
            rss_bytes_per_key: rss,
            rss_over_heap: rss.map(|r| r / heap),
        }
    }
}

/// Creates `keys` keys at one tick, one hit each, then fills their windows; then one
/// `remove_idle` (nothing is idle: it only runs the sweep's walk) and one more
/// `check_and_hit` per key (refused: every window is full, so nothing changes; governor has no
/// `allowed`), so that deferred frees have had their chance, before heap and resident memory
/// are read.
fn per_key<T: Target>(
    workload: &Workload,
    keys: usize,
    make: &dyn Fn(&Context<'_>) -> T,
) -> PerKeyChild {
    // Every hit at tick 1: nothing expires, so each key ends with exactly the hits it got.
    let clock = BenchClock::fake();
    clock.tick();
    let now = clock.now();
    let rss_base = resident_bytes();
    let base = live_bytes();
    let target = make(&Context {
        workload,
        clock: &clock,
    });
    for k in 0..keys as u64 {
        let _ = target.check_and_hit(mix64(k), now);
    }
    let heap_one_hit = live_bytes() - base;
    let tracked = target.tracked_keys();
    for _ in 1..workload.max_requests {
        for k in 0..keys as u64 {
            let _ = target.check_and_hit(mix64(k), now);
        }
    }
    let heap_full = live_bytes() - base;
    let _ = target.remove_idle(now);
    for k in 0..keys as u64 {
        let _ = target.check_and_hit(mix64(k), now);
    }
    let heap_settled = live_bytes() - base;
    let rss_settled = resident_bytes()
        .zip(rss_base)
        .map(|(after, before)| after - before);
    drop(target);
    PerKeyChild {
        keys,
        tracked,
        heap_one_hit,
        heap_full,
        heap_settled,
        rss_settled,
    }
}

/// What a rotation child measured (totals, bytes).
#[derive(Debug, Serialize, Deserialize)]
struct RotationChild {
    calls: u64,
    max_tracked: Option<usize>,
    final_tracked: Option<usize>,
    heap_max: i64,
    heap_end: i64,
    rss_end: Option<i64>,
}

impl RotationChild {
    fn row(&self, meta: &Meta) -> RotationRow {
        let active = ROTATION_ACTIVE as f64;
        RotationRow {
            variant: meta.name,
            active_keys: ROTATION_ACTIVE,
            lifetime_windows: ROTATION_LIFETIME_WINDOWS,
            windows: ROTATION_WINDOWS,
            calls: self.calls,
            max_tracked: self.max_tracked,
            final_tracked: self.final_tracked,
            max_tracked_over_active: self.max_tracked.map(|t| t as f64 / active),
            heap_bytes_per_active_key: self.heap_end as f64 / active,
            max_heap_bytes_per_active_key: self.heap_max as f64 / active,
            rss_bytes_per_active_key: self.rss_end.map(|r| r as f64 / active),
        }
    }
}

/// Keys rotate at a steady active population: in window `w`, the keys
/// `w·A/L .. w·A/L + A` are each called once (`A` = [`ROTATION_ACTIVE`], `L` =
/// [`ROTATION_LIFETIME_WINDOWS`]), spread evenly over the window; so each key is called once
/// a window for `L` windows and then never again, and `A/L` new keys join every window.
fn rotation<T: Target>(workload: &Workload, make: &dyn Fn(&Context<'_>) -> T) -> RotationChild {
    let clock = BenchClock::fake();
    let rss_base = resident_bytes();
    let base = live_bytes();
    let target = make(&Context {
        workload,
        clock: &clock,
    });
    let active = ROTATION_ACTIVE as u64;
    let joining = active / ROTATION_LIFETIME_WINDOWS as u64;
    let spacing = ROTATION_WINDOW / active;
    let (mut max_tracked, mut heap_max, mut calls) = (None, 0i64, 0u64);
    for window in 0..ROTATION_WINDOWS as u64 {
        let first_key = window * joining;
        for j in 0..active {
            let now = window * ROTATION_WINDOW + j * spacing;
            let _ = target.check_and_hit(mix64(first_key + j), now);
            calls += 1;
            if j as usize % ROTATION_PROBE_EVERY == 0 {
                max_tracked = max_tracked.max(target.tracked_keys());
                heap_max = heap_max.max(live_bytes() - base);
            }
        }
    }
    let final_tracked = target.tracked_keys();
    let heap_end = live_bytes() - base;
    let rss_end = resident_bytes()
        .zip(rss_base)
        .map(|(after, before)| after - before);
    drop(target);
    RotationChild {
        calls,
        max_tracked: max_tracked.max(final_tracked),
        final_tracked,
        heap_max: heap_max.max(heap_end),
        heap_end,
        rss_end,
    }
}

/// What a Zipf-removal child measured.
#[derive(Debug, Serialize, Deserialize)]
struct ZipfChild {
    tracked_before: Option<usize>,
    bytes_before: i64,
    removed: Option<usize>,
    tracked_after: Option<usize>,
    bytes_after: i64,
    remove_ms: f64,
}

impl ZipfChild {
    fn row(&self, meta: &Meta) -> ZipfMemoryRow {
        ZipfMemoryRow {
            variant: meta.name,
            ops: ZIPF_OPS,
            tracked_before: self.tracked_before,
            bytes_before: self.bytes_before,
            removed: self.removed,
            tracked_after: self.tracked_after,
            bytes_after: self.bytes_after,
            remove_ms: self.remove_ms,
        }
    }
}

/// [`ZIPF_OPS`] calls of the Zipf stream on one thread, then `remove_idle`: heap and tracked
/// keys before and after.
fn zipf_removal<T: Target>(workload: &Workload, make: &dyn Fn(&Context<'_>) -> T) -> ZipfChild {
    let stream = workload.stream();
    let clock = BenchClock::fake();
    let base = live_bytes();
    let target = make(&Context {
        workload,
        clock: &clock,
    });
    let _ = drive::run_inline(&target, Mix::CheckAndHit, &stream, &clock, 0, ZIPF_OPS);
    let bytes_before = live_bytes() - base;
    let tracked_before = target.tracked_keys();
    let started = Instant::now();
    let removed = target.remove_idle(clock.now());
    let remove_ms = started.elapsed().as_secs_f64() * 1e3;
    let bytes_after = live_bytes() - base;
    let tracked_after = target.tracked_keys();
    drop(target);
    ZipfChild {
        tracked_before,
        bytes_before,
        removed,
        tracked_after,
        bytes_after,
        remove_ms,
    }
}

#[cfg(test)]
mod tests {
    /// The library's own test binary installs no counting allocator, so the check must say so
    /// (a host that forgot it gets an error, not heap figures of zero).
    #[test]
    fn counting_is_detected_as_absent() {
        assert!(!super::counting_active());
    }
}

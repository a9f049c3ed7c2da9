//! Memory: live heap bytes per tracked key for each variant, and the Zipf workload's memory
//! before and after `remove_idle`, through a counting global allocator.
//!
//! The counter is `stats_alloc`'s wrapper around the system allocator (the workspace forbids
//! `unsafe`, so the runner cannot implement `GlobalAlloc` itself). It counts requested bytes
//! (allocator headers and rounding are not included) and adds two atomic adds to every
//! allocation in the whole run, timed cells included; only allocating paths pay them (new
//! keys, the seed's deques), the steady hot path of every variant allocates nothing.

use std::alloc::System;
use std::time::Instant;

use slidelimit_bench::clock::BenchClock;
use slidelimit_bench::drive;
use slidelimit_bench::rng::mix64;
use slidelimit_bench::target::Target;
use slidelimit_bench::variants::{Context, Family, Meta, Visitor};
use slidelimit_bench::workload::{KeyStream, Mix, Workload};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

use crate::args::Args;
use crate::matrix::{selected, Progress};
use crate::results::{MemoryRow, ZipfMemoryRow};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Live heap bytes (requested sizes) right now.
fn live_bytes() -> i64 {
    let stats = GLOBAL.stats();
    let as_i64 = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    as_i64(stats.bytes_allocated) - as_i64(stats.bytes_deallocated)
        + i64::try_from(stats.bytes_reallocated).unwrap_or(0)
}

/// Keys created for the bytes-per-key figure (fewer for large limits: see [`keys_for`]).
pub const KEYS: usize = 100_000;
/// The limits (`N`) the bytes-per-key figure is measured at.
pub const PER_KEY_LIMITS: [u64; 3] = [1, 32, 1000];

/// Keys for a full-window measurement at limit `n`: at most ten million calls in all.
fn keys_for(n: u64) -> usize {
    KEYS.min(usize::try_from(10_000_000 / n.max(1)).unwrap_or(KEYS))
}
/// Calls made on the Zipf stream before measuring removal.
pub const ZIPF_OPS: u64 = 2_000_000;

/// Measures bytes per key for every selected variant (the floor excepted) on `per_key`'s
/// limit, and the Zipf removal figures on `zipf` (if given).
pub struct MemoryRun<'a> {
    /// The run's flags.
    pub args: &'a Args,
    /// The workloads whose limits the per-key keys are created under.
    pub per_key: &'a [Workload],
    /// The Zipf workload and its stream, if selected.
    pub zipf: Option<(&'a Workload, &'a KeyStream)>,
    /// Progress display.
    pub progress: &'a Progress,
    /// Bytes per key.
    pub rows: Vec<MemoryRow>,
    /// Zipf removal.
    pub zipf_rows: Vec<ZipfMemoryRow>,
}

impl Visitor for MemoryRun<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if !selected(self.args, meta) || meta.family == Family::Floor {
            return;
        }
        for workload in self.per_key {
            if !(meta.supports)(workload) {
                continue;
            }
            self.rows.push(per_key(meta, workload, make));
            let row = self.rows.last().expect("just pushed");
            self.progress.note(&format!(
                "memory · {} · N = {}: {:.0} B/key after one hit, {:.0} B/key with a full window",
                meta.name, row.max_requests, row.bytes_per_key_one_hit, row.bytes_per_key_full
            ));
        }
        if let Some((zipf, stream)) = self.zipf {
            if (meta.supports)(zipf) {
                let row = zipf_removal(meta, zipf, stream, make);
                self.progress.note(&format!(
                    "memory · {} · zipf: {} keys / {} before remove_idle, {} keys / {} after ({:.1} ms)",
                    meta.name,
                    opt(row.tracked_before),
                    crate::report::human_bytes(row.bytes_before),
                    opt(row.tracked_after),
                    crate::report::human_bytes(row.bytes_after),
                    row.remove_ms
                ));
                self.zipf_rows.push(row);
            }
        }
    }
}

fn opt(v: Option<usize>) -> String {
    v.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

fn per_key<T: Target>(
    meta: &Meta,
    workload: &Workload,
    make: &dyn Fn(&Context<'_>) -> T,
) -> MemoryRow {
    // Every hit at tick 1: nothing expires, so each key ends with exactly the hits it got.
    let clock = BenchClock::fake();
    clock.tick();
    let now = clock.now();
    let base = live_bytes();
    let target = make(&Context {
        workload,
        clock: &clock,
    });
    let keys = keys_for(workload.max_requests);
    for k in 0..keys as u64 {
        let _ = target.check_and_hit(mix64(k), now);
    }
    let one = live_bytes() - base;
    let tracked = target.tracked_keys();
    for _ in 1..workload.max_requests {
        for k in 0..keys as u64 {
            let _ = target.check_and_hit(mix64(k), now);
        }
    }
    let full = live_bytes() - base;
    drop(target);
    let per = |bytes: i64| bytes as f64 / tracked.unwrap_or(keys).max(1) as f64;
    MemoryRow {
        variant: meta.name,
        limit: workload.describe_limit(),
        max_requests: workload.max_requests,
        keys,
        tracked,
        bytes_per_key_one_hit: per(one),
        bytes_per_key_full: per(full),
    }
}

fn zipf_removal<T: Target>(
    meta: &Meta,
    workload: &Workload,
    stream: &KeyStream,
    make: &dyn Fn(&Context<'_>) -> T,
) -> ZipfMemoryRow {
    let clock = BenchClock::fake();
    let base = live_bytes();
    let target = make(&Context {
        workload,
        clock: &clock,
    });
    let _ = drive::run_inline(&target, Mix::CheckAndHit, stream, &clock, 0, ZIPF_OPS);
    let bytes_before = live_bytes() - base;
    let tracked_before = target.tracked_keys();
    let started = Instant::now();
    let removed = target.remove_idle(clock.now());
    let remove_ms = started.elapsed().as_secs_f64() * 1e3;
    let bytes_after = live_bytes() - base;
    let tracked_after = target.tracked_keys();
    drop(target);
    ZipfMemoryRow {
        variant: meta.name,
        ops: ZIPF_OPS,
        tracked_before,
        bytes_before,
        removed,
        tracked_after,
        bytes_after,
        remove_ms,
    }
}

//! Single-thread cost per decision: every variant on every workload it supports, and the key
//! pool's `get_next_key` (its two variants on its two setups).
//!
//! Each iteration makes [`BATCH`] calls on the calling thread from the workload's key stream,
//! reading and advancing the shared fake clock exactly as the runner's workers do, so the
//! window keeps sliding across iterations.

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use slidelimit_bench::target::Target;
use slidelimit_bench::variants::{self, Context, Meta, Visitor};
use slidelimit_bench::workload::{self, KeyStream, Workload};
use slidelimit_bench::{drive, pool_cells};

/// Calls per iteration.
const BATCH: u64 = 1024;

struct Single<'a, 'g> {
    group: &'a mut BenchmarkGroup<'g, WallTime>,
    workload: &'a Workload,
    stream: &'a KeyStream,
}

impl Visitor for Single<'_, '_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if !(meta.supports)(self.workload) {
            return;
        }
        let clock = self.workload.new_clock();
        let target = make(&Context {
            workload: self.workload,
            clock: &clock,
        });
        let mix = self.workload.mix;
        // Steady state first, as in the runner.
        let (_, mut next) = drive::run_inline(
            &target,
            mix,
            self.stream,
            &clock,
            0,
            self.workload.warmup_ops(),
        );
        self.group.throughput(Throughput::Elements(BATCH));
        self.group
            .bench_function(BenchmarkId::new(meta.name, self.workload.name), |b| {
                b.iter(|| {
                    let (allowed, after) =
                        drive::run_inline(&target, mix, self.stream, &clock, next, BATCH);
                    next = after;
                    black_box(allowed)
                });
            });
    }
}

/// Registers the single-thread benches.
pub fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("single");
    for workload in workload::all() {
        let stream = workload.stream();
        variants::for_each(&mut Single {
            group: &mut group,
            workload: &workload,
            stream: &stream,
        });
    }
    for setup in pool_cells::setups() {
        let workload = setup.workload();
        let stream = workload.stream();
        pool_cells::for_each(&mut Single {
            group: &mut group,
            workload: &workload,
            stream: &stream,
        });
    }
    group.finish();
}

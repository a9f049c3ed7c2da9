//! Contended throughput: every variant on the hot key and on Zipf keys at 2, 4 and 8 threads,
//! and the key pool's `get_next_key` on its two setups (groups `contended/pool-exact`,
//! `contended/pool-ab`).
//!
//! `iter_custom`: for each sample, the threads are spawned and given their stream offsets,
//! then released together by a barrier; only the span from the first release to the last
//! finish is timed. Each thread makes `iters × OPS_PER_THREAD` calls, so one sample's thread
//! start-up is paid once, outside the timed region, however many iterations it holds.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use slidelimit_bench::drive::{self, Cell};
use slidelimit_bench::pool_cells;
use slidelimit_bench::target::Target;
use slidelimit_bench::variants::{self, Context, Meta, Visitor};
use slidelimit_bench::workload::{self, KeyStream, Workload};

/// Calls per thread per iteration.
const OPS_PER_THREAD: u64 = 4096;
/// Thread counts.
const THREADS: [usize; 3] = [2, 4, 8];
/// The contended workloads.
const WORKLOADS: [&str; 2] = ["hot-allowed", "zipf"];

struct Contended<'a, 'g> {
    group: &'a mut BenchmarkGroup<'g, WallTime>,
    workload: &'a Workload,
    stream: &'a KeyStream,
    timer: &'a quanta::Clock,
}

impl Visitor for Contended<'_, '_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if !(meta.supports)(self.workload) {
            return;
        }
        for threads in THREADS {
            let clock = self.workload.new_clock();
            let target = make(&Context {
                workload: self.workload,
                clock: &clock,
            });
            let cell = Cell {
                workload: self.workload,
                stream: self.stream,
                clock: &clock,
                timer: self.timer,
                threads,
            };
            drive::warm_up(&target, &cell);
            self.group
                .throughput(Throughput::Elements(OPS_PER_THREAD * threads as u64));
            self.group
                .bench_function(BenchmarkId::new(meta.name, threads), |b| {
                    b.iter_custom(|iters| drive::run_fixed(&target, &cell, iters * OPS_PER_THREAD));
                });
        }
    }
}

/// Registers the contended benches.
pub fn bench(c: &mut Criterion) {
    let timer = quanta::Clock::new();
    for name in WORKLOADS {
        let workload = workload::find(name).expect("a default workload");
        let stream = workload.stream();
        let mut group = c.benchmark_group(format!("contended/{name}"));
        variants::for_each(&mut Contended {
            group: &mut group,
            workload: &workload,
            stream: &stream,
            timer: &timer,
        });
        group.finish();
    }
    for setup in pool_cells::setups() {
        let workload = setup.workload();
        let stream = workload.stream();
        let mut group = c.benchmark_group(format!("contended/{}", setup.name));
        pool_cells::for_each(&mut Contended {
            group: &mut group,
            workload: &workload,
            stream: &stream,
            timer: &timer,
        });
        group.finish();
    }
}

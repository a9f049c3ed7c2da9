//! The timed matrix: every selected variant on every selected workload at every thread count.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::drive::{self, Cell};
use crate::pool_cells;
use crate::target::Target;
use crate::variants::{self, Context, Meta, Visitor};
use crate::workload::{KeyStream, Workload};

use super::args::Args;
use super::results::{CellResult, Latency};

/// Progress on stderr. On a terminal, a bar with the cell being timed (i of n, workload,
/// variant, threads), elapsed time and ETA, and the finished cells and notes printed above
/// it; elsewhere (a log, a pipe) the bar is hidden and each finished cell and note is one
/// line.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A display for `total` cells.
    #[must_use]
    pub fn new(total: usize) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        // A constant template: it always parses.
        if let Ok(style) =
            ProgressStyle::with_template("[{elapsed_precise} eta {eta:>4}] {bar:24} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        // Redraw during a cell too, so that elapsed time and ETA keep moving.
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(500));
        }
        Self { bar }
    }

    /// `[  5/56 0:13 eta 0:13]`: the log's prefix for the cell after the finished ones.
    fn prefix(&self) -> String {
        let (elapsed, eta) = (self.bar.elapsed().as_secs(), self.bar.eta().as_secs());
        format!(
            "[{:>3}/{} {}:{:02} eta {}:{:02}]",
            self.bar.position() + 1,
            self.bar.length().unwrap_or(0),
            elapsed / 60,
            elapsed % 60,
            eta / 60,
            eta % 60
        )
    }

    /// Says what is starting.
    pub fn start(&self, what: &str) {
        self.bar.set_message(format!(
            "cell {}/{}: {what}",
            self.bar.position() + 1,
            self.bar.length().unwrap_or(0)
        ));
    }

    /// Says how it went.
    pub fn finish(&mut self, what: &str, summary: &str) {
        self.note(&format!("{} {what}: {summary}", self.prefix()));
        self.bar.inc(1);
        if self.bar.position() >= self.bar.length().unwrap_or(0) {
            self.bar.finish_and_clear();
        }
    }

    /// A line of its own (kept on screen, above the bar).
    pub fn note(&self, text: &str) {
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }
}

/// Whether `meta` was selected by `--variants`.
#[must_use]
pub fn selected(args: &Args, meta: &Meta) -> bool {
    args.variants.is_empty() || args.variants.iter().any(|v| v == meta.name)
}

/// How many cells (trials included) the run will time.
#[must_use]
pub fn count_cells(args: &Args, workloads: &[Workload]) -> usize {
    let metas = variants::metas();
    workloads
        .iter()
        .map(|w| {
            metas
                .iter()
                .filter(|m| selected(args, m) && (m.supports)(w))
                .count()
        })
        .sum::<usize>()
        * args.threads.len()
        * args.trials
}

/// How many key-pool cells (trials included) the run will time.
#[must_use]
pub fn count_pool_cells(args: &Args, pool_workloads: &[Workload]) -> usize {
    let mut metas = Vec::new();
    pool_cells::for_each(&mut CollectMetas(&mut metas));
    pool_workloads
        .iter()
        .map(|w| {
            metas
                .iter()
                .filter(|m| selected(args, m) && (m.supports)(w))
                .count()
        })
        .sum::<usize>()
        * args.threads.len()
        * args.trials
}

struct CollectMetas<'a>(&'a mut Vec<Meta>);

impl Visitor for CollectMetas<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, _: &dyn Fn(&Context<'_>) -> T) {
        self.0.push(*meta);
    }
}

/// Runs one workload's row of the matrix (a limiter workload with [`variants::for_each`], a
/// key-pool workload with [`pool_cells::for_each`]).
pub struct WorkloadRun<'a> {
    /// The run's flags.
    pub args: &'a Args,
    /// The workload.
    pub workload: &'a Workload,
    /// Its key stream.
    pub stream: &'a KeyStream,
    /// The latency timer.
    pub timer: &'a quanta::Clock,
    /// Progress display.
    pub progress: &'a mut Progress,
    /// Where results go.
    pub cells: &'a mut Vec<CellResult>,
}

impl Visitor for WorkloadRun<'_> {
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
        if !selected(self.args, meta) || !(meta.supports)(self.workload) {
            return;
        }
        for &threads in &self.args.threads {
            let mut trials = Vec::with_capacity(self.args.trials);
            for trial in 0..self.args.trials {
                let what = if self.args.trials > 1 {
                    format!(
                        "{} · {} · {threads} thr · trial {}",
                        self.workload.name,
                        meta.name,
                        trial + 1
                    )
                } else {
                    format!("{} · {} · {threads} thr", self.workload.name, meta.name)
                };
                self.progress.start(&what);
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
                let outcome = drive::run_timed(&target, &cell, self.args.duration);
                let tracked = target.tracked_keys();
                drop(target);
                let result = to_result(meta, self.workload, threads, &outcome, tracked);
                self.progress.finish(
                    &what,
                    &format!(
                        "{:.2} Mops/s, allowed {:.1}%, p99.9 {}",
                        result.mops,
                        result.allowed_fraction * 100.0,
                        super::report::human_ns(result.latency.p999)
                    ),
                );
                trials.push(result);
            }
            // Report the median trial by throughput, with every trial's figure beside it.
            let all: Vec<f64> = trials.iter().map(|r| r.mops).collect();
            trials.sort_by(|a, b| a.mops.total_cmp(&b.mops));
            let mut median = trials.swap_remove(trials.len() / 2);
            median.trials_mops = all;
            self.cells.push(median);
        }
    }
}

fn to_result(
    meta: &Meta,
    workload: &Workload,
    threads: usize,
    outcome: &drive::Outcome,
    tracked_keys: Option<usize>,
) -> CellResult {
    let secs = outcome.elapsed.max(Duration::from_nanos(1)).as_secs_f64();
    let mops = outcome.ops as f64 / secs / 1e6;
    let hist = &outcome.latency;
    CellResult {
        workload: workload.name,
        variant: meta.name,
        family: meta.family,
        threads,
        ops: outcome.ops,
        elapsed_s: secs,
        mops,
        ns_per_decision: if mops > 0.0 {
            1e3 / mops
        } else {
            f64::INFINITY
        },
        allowed_fraction: if outcome.ops == 0 {
            0.0
        } else {
            outcome.allowed as f64 / outcome.ops as f64
        },
        latency: Latency {
            samples: hist.len(),
            p50: hist.value_at_quantile(0.5),
            p99: hist.value_at_quantile(0.99),
            p999: hist.value_at_quantile(0.999),
            p9999: hist.value_at_quantile(0.9999),
            max: hist.max(),
        },
        worst_call_bound_ns: outcome.worst_round_ns,
        tracked_keys,
        trials_mops: Vec::new(),
    }
}

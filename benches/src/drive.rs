//! The thread driver: runs one variant on one workload at one thread count.
//!
//! Threads are spawned and their histograms allocated before the timed region; a barrier
//! releases them together. Each worker walks the shared key stream from its own offset, reads
//! the shared clock before each call, and advances it one tick every [`OPS_PER_TICK`] of its
//! own calls. The timed region runs from the first worker's release to the last worker's stop.
//!
//! Latency is sampled: one call in [`SAMPLE_EVERY`] is timed on its own with the TSC (quanta's
//! raw counter, a few nanoseconds per read), so the timer costs the throughput figure about
//! `2 × read / SAMPLE_EVERY` per call instead of `2 × read`, while each sample is still one
//! call's true latency (a stall inside that call shows in full, not averaged over a batch).
//! Where the workload asks for it ([`Workload::worst_call`]), each round of [`SAMPLE_EVERY`]
//! calls is also timed as a whole, so the slowest call is bounded even when it was not sampled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::clock::{BenchClock, OPS_PER_TICK};
use crate::target::Target;
use crate::workload::{KeyStream, Mix, Workload};

/// One call in this many is timed for the latency histogram.
pub const SAMPLE_EVERY: usize = 16;

/// The longest latency the histograms hold (60 s); longer samples are clamped.
const HIST_MAX_NS: u64 = 60_000_000_000;

/// What one cell needs besides the variant.
pub struct Cell<'a> {
    /// The workload (its call mix and warm-up length).
    pub workload: &'a Workload,
    /// The workload's key stream.
    pub stream: &'a KeyStream,
    /// The cell's clock (shared with governor when fake).
    pub clock: &'a BenchClock,
    /// The TSC timer for latency samples.
    pub timer: &'a quanta::Clock,
    /// Worker threads.
    pub threads: usize,
}

/// What one timed run measured.
pub struct Outcome {
    /// Decisions made in the timed region, all threads.
    pub ops: u64,
    /// How many of them said yes.
    pub allowed: u64,
    /// From the first worker's release to the last worker's stop.
    pub elapsed: Duration,
    /// Sampled per-call latencies, nanoseconds.
    pub latency: Histogram<u64>,
    /// Where the workload covers every call: the slowest round of [`SAMPLE_EVERY`] consecutive
    /// calls on one thread, nanoseconds; an upper bound on the slowest single call.
    pub worst_round_ns: Option<u64>,
    /// The clock's reading after the run.
    pub end_now: u64,
}

/// A histogram for latency samples, in nanoseconds, 3 significant digits.
///
/// # Panics
/// Never: the bounds are valid.
#[must_use]
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds")
}

#[inline(always)]
fn decide<T: Target>(
    target: &T,
    mix: Mix,
    stream: &KeyStream,
    clock: &BenchClock,
    i: usize,
) -> bool {
    let key = stream.get(i);
    let now = if T::READS_NOW { clock.now() } else { 0 };
    if mix.is_read(i) {
        target.allowed(key, now)
    } else {
        target.check_and_hit(key, now)
    }
}

/// A worker's latency sampler: the timer, the histogram its samples go to, and (where every
/// call is covered) the slowest round so far.
struct Sampler<'a> {
    timer: &'a quanta::Clock,
    latency: &'a mut Histogram<u64>,
    worst_round_ns: Option<&'a mut u64>,
}

/// The worker loop: `chunks` rounds of [`OPS_PER_TICK`] calls (or until `stop`), one clock
/// tick after each round. Returns (calls, allowed, next index).
#[inline(always)]
fn work<T: Target>(
    target: &T,
    cell: (Mix, &KeyStream, &BenchClock),
    mut i: usize,
    chunks: u64,
    stop: &AtomicBool,
    mut sampler: Option<Sampler<'_>>,
) -> (u64, u64, usize) {
    const ROUNDS: usize = OPS_PER_TICK as usize / SAMPLE_EVERY;
    let (mix, stream, clock) = cell;
    let mut allowed = 0u64;
    let mut done = 0u64;
    // Relaxed: the flag carries no data; a worker that stops one round late costs nothing.
    while done < chunks && !stop.load(Ordering::Relaxed) {
        for _ in 0..ROUNDS {
            let round_start = if let Some(s) = sampler.as_mut() {
                let start = s.timer.raw();
                let ok = decide(target, mix, stream, clock, i);
                let end = s.timer.raw();
                s.latency
                    .saturating_record(s.timer.delta_as_nanos(start, end).max(1));
                allowed += u64::from(ok);
                start
            } else {
                allowed += u64::from(decide(target, mix, stream, clock, i));
                0
            };
            i = i.wrapping_add(1);
            for _ in 1..SAMPLE_EVERY {
                allowed += u64::from(decide(target, mix, stream, clock, i));
                i = i.wrapping_add(1);
            }
            if let Some(Sampler {
                timer,
                worst_round_ns: Some(worst),
                ..
            }) = sampler.as_mut()
            {
                // The round includes the sample's own timer reads and its histogram record
                // (tens of nanoseconds): an upper bound, tight for the stalls it is for.
                let round = timer.delta_as_nanos(round_start, timer.raw());
                **worst = (**worst).max(round);
            }
        }
        clock.tick();
        done += 1;
    }
    (done * OPS_PER_TICK, allowed, i)
}

/// Runs about `ops` calls on this thread (rounded up to whole clock ticks), starting at stream
/// index `start`, untimed and unsampled. Returns (allowed, next index): for warm-ups and for
/// single-threaded criterion benches.
#[inline]
pub fn run_inline<T: Target>(
    target: &T,
    mix: Mix,
    stream: &KeyStream,
    clock: &BenchClock,
    start: usize,
    ops: u64,
) -> (u64, usize) {
    let never = AtomicBool::new(false);
    let (_, allowed, next) = work(
        target,
        (mix, stream, clock),
        start,
        ops.div_ceil(OPS_PER_TICK),
        &never,
        None,
    );
    (allowed, next)
}

/// The workload's warm-up, single-threaded on the calling thread.
pub fn warm_up<T: Target>(target: &T, cell: &Cell<'_>) {
    let _ = run_inline(
        target,
        cell.workload.mix,
        cell.stream,
        cell.clock,
        cell.stream.len() / 2 + 7,
        cell.workload.warmup_ops(),
    );
}

/// Runs `cell.threads` workers on `target` for `duration` (after the workload's warm-up) and
/// returns what they measured.
///
/// # Panics
/// If a worker panics.
pub fn run_timed<T: Target>(target: &T, cell: &Cell<'_>, duration: Duration) -> Outcome {
    warm_up(target, cell);
    let stop = AtomicBool::new(false);
    let (ops, allowed, elapsed, latency, worst_round_ns) =
        run_workers(target, cell, u64::MAX, &stop, true, || {
            thread::sleep(duration);
            // Relaxed: see `work`.
            stop.store(true, Ordering::Relaxed);
        });
    Outcome {
        ops,
        allowed,
        elapsed,
        latency,
        worst_round_ns,
        end_now: cell.clock.now(),
    }
}

/// Runs `cell.threads` workers, each making `ops_per_thread` calls (rounded up to whole clock
/// ticks), unsampled; returns the timed region's length. For criterion's `iter_custom`.
///
/// # Panics
/// If a worker panics.
pub fn run_fixed<T: Target>(target: &T, cell: &Cell<'_>, ops_per_thread: u64) -> Duration {
    let never = AtomicBool::new(false);
    run_workers(
        target,
        cell,
        ops_per_thread.div_ceil(OPS_PER_TICK),
        &never,
        false,
        || {},
    )
    .2
}

fn run_workers<T: Target>(
    target: &T,
    cell: &Cell<'_>,
    chunks: u64,
    stop: &AtomicBool,
    sample: bool,
    main: impl FnOnce(),
) -> (u64, u64, Duration, Histogram<u64>, Option<u64>) {
    let threads = cell.threads.max(1);
    let barrier = Barrier::new(threads + 1);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut latency = sample.then(new_histogram);
                    let mut worst_round_ns = 0u64;
                    let cover_every_call = cell.workload.worst_call;
                    let offset = cell.stream.offset(t, threads);
                    barrier.wait();
                    let start = Instant::now();
                    let (ops, allowed, _) = work(
                        target,
                        (cell.workload.mix, cell.stream, cell.clock),
                        offset,
                        chunks,
                        stop,
                        latency.as_mut().map(|latency| Sampler {
                            timer: cell.timer,
                            latency,
                            worst_round_ns: cover_every_call.then_some(&mut worst_round_ns),
                        }),
                    );
                    let worst = (sample && cover_every_call).then_some(worst_round_ns);
                    (ops, allowed, start, Instant::now(), latency, worst)
                })
            })
            .collect();
        barrier.wait();
        main();
        let mut total_ops = 0;
        let mut total_allowed = 0;
        let mut first_start: Option<Instant> = None;
        let mut last_end: Option<Instant> = None;
        let mut latency = new_histogram();
        let mut worst_round_ns: Option<u64> = None;
        for worker in workers {
            let (ops, allowed, start, end, hist, worst) = worker.join().expect("worker panicked");
            worst_round_ns = worst_round_ns.max(worst);
            total_ops += ops;
            total_allowed += allowed;
            first_start = Some(first_start.map_or(start, |s| s.min(start)));
            last_end = Some(last_end.map_or(end, |e| e.max(end)));
            if let Some(hist) = hist {
                latency.add(&hist).expect("same bounds");
            }
        }
        let elapsed = match (first_start, last_end) {
            (Some(start), Some(end)) => end.duration_since(start),
            _ => Duration::ZERO,
        };
        (total_ops, total_allowed, elapsed, latency, worst_round_ns)
    })
}

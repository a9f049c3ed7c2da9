//! What a run produced: the raw numbers behind every table and plot, serialised as JSON.

use crate::pool_cells::PoolSetup;
use crate::variants::{Family, Meta};
use crate::workload::Workload;
use serde::Serialize;
use slidelimit::pool::{AtomicLedger, PoolMode, UseLedger};

use super::machine::Machine;

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Where and how.
    pub machine: Machine,
    /// With which settings.
    pub config: Config,
    /// The variants that ran.
    pub variants: Vec<VariantInfo>,
    /// The workloads that ran.
    pub workloads: Vec<WorkloadInfo>,
    /// One entry per (workload, variant, threads).
    pub cells: Vec<CellResult>,
    /// Bytes per tracked key.
    pub memory: Vec<MemoryRow>,
    /// Keys rotating at a steady active population.
    pub rotation: Vec<RotationRow>,
    /// The Zipf workload's memory before and after idle keys are removed.
    pub zipf_memory: Vec<ZipfMemoryRow>,
    /// The targets, computed from this run.
    pub targets: Vec<TargetCheck>,
    /// The key pool's setups that ran (`get_next_key`).
    pub pool_setups: Vec<PoolSetupInfo>,
    /// One entry per (pool setup, variant, threads): `workload` is the setup's name.
    pub pool_cells: Vec<CellResult>,
    /// Wall time of the whole run, seconds.
    pub runtime_s: f64,
    /// `/proc/loadavg` when the run ended.
    pub loadavg_end: String,
}

/// The run's settings.
#[derive(Debug, Serialize)]
pub struct Config {
    /// Measured time per cell and trial, milliseconds.
    pub duration_ms: u128,
    /// Trials per cell (the median-throughput trial is reported).
    pub trials: usize,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// One call in this many is timed.
    pub sample_every: usize,
    /// The fake clock advances one tick per this many calls of each thread.
    pub ops_per_tick: u64,
    /// One fake tick, nanoseconds.
    pub tick_ns: u64,
}

/// A variant as reported.
#[derive(Debug, Serialize)]
pub struct VariantInfo {
    /// Its name.
    pub name: &'static str,
    /// Ours, peer or floor.
    pub family: Family,
    /// Its window algorithm.
    pub algorithm: &'static str,
    /// One line about it.
    pub about: &'static str,
}

impl From<&Meta> for VariantInfo {
    fn from(meta: &Meta) -> Self {
        Self {
            name: meta.name,
            family: meta.family,
            algorithm: meta.algorithm,
            about: meta.about,
        }
    }
}

/// A workload as reported.
#[derive(Debug, Serialize)]
pub struct WorkloadInfo {
    /// Its name.
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// Its keys.
    pub keys: String,
    /// Its limit.
    pub limit: String,
    /// `max_requests`.
    pub max_requests: u64,
    /// The window, nanoseconds.
    pub window_ns: u64,
    /// Its call mix.
    pub mix: &'static str,
    /// `fake` or `real`.
    pub clock: &'static str,
}

impl From<&Workload> for WorkloadInfo {
    fn from(w: &Workload) -> Self {
        Self {
            name: w.name,
            about: w.about,
            keys: w.keys.describe(),
            limit: w.describe_limit(),
            max_requests: w.max_requests,
            window_ns: w.window_ns,
            mix: w.mix.describe(),
            clock: match w.clock {
                crate::workload::ClockKind::Fake => "fake",
                crate::workload::ClockKind::Real => "real",
            },
        }
    }
}

/// A key-pool setup as reported.
#[derive(Debug, Serialize)]
pub struct PoolSetupInfo {
    /// Its workload name.
    pub name: &'static str,
    /// `exact` or `AB`.
    pub mode: &'static str,
    /// Keys in the pool.
    pub keys: u64,
    /// `L`: uses per cooldown, all keys.
    pub total_uses: u64,
    /// `T`, nanoseconds (fake-clock ticks).
    pub cooldown_ns: u64,
    /// `τ`, nanoseconds (AB only).
    pub threshold_ns: Option<u64>,
    /// `k` (AB only).
    pub key_threshold: Option<u64>,
    /// The most buckets held at once.
    pub bucket_bound: u64,
    /// Slots in the ledger's ring (the bound plus its spares).
    pub ring_slots: u64,
    /// Bytes the ledger holds, ring included (lock-free form).
    pub ledger_bytes: usize,
    /// The largest share of calls any pool can grant at the fake clock's pace.
    pub grant_ceiling: f64,
}

impl From<&PoolSetup> for PoolSetupInfo {
    fn from(setup: &PoolSetup) -> Self {
        let pool = setup.build::<AtomicLedger>();
        let geometry = pool.geometry();
        let (threshold_ns, key_threshold) = match setup.mode {
            PoolMode::Both {
                threshold_ticks,
                key_threshold,
            } => (Some(threshold_ticks), Some(key_threshold)),
            _ => (None, None),
        };
        Self {
            name: setup.name,
            mode: setup.mode.label(),
            keys: geometry.keys(),
            total_uses: geometry.total_uses(),
            cooldown_ns: geometry.cooldown_ticks(),
            threshold_ns,
            key_threshold,
            bucket_bound: geometry.bucket_bound(),
            ring_slots: geometry.slots(),
            ledger_bytes: pool.ledger().ledger_bytes(),
            grant_ceiling: setup.grant_ceiling(),
        }
    }
}

/// Sampled per-call latency, nanoseconds (each sample includes one timer overhead).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Latency {
    /// How many calls were timed.
    pub samples: u64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile (of the samples: below 10,000 of them, the slowest sample).
    pub p9999: u64,
    /// The slowest sample.
    pub max: u64,
}

/// One (workload, variant, threads) cell.
#[derive(Debug, Serialize)]
pub struct CellResult {
    /// The workload.
    pub workload: &'static str,
    /// The variant.
    pub variant: &'static str,
    /// Its family.
    pub family: Family,
    /// Worker threads.
    pub threads: usize,
    /// Decisions in the timed region (reported trial).
    pub ops: u64,
    /// The timed region, seconds.
    pub elapsed_s: f64,
    /// Decisions per second, millions, all threads together.
    pub mops: f64,
    /// Wall nanoseconds per decision (1e3 / mops): at 1 thread, the cost of one call.
    pub ns_per_decision: f64,
    /// Share of decisions that said yes.
    pub allowed_fraction: f64,
    /// Sampled per-call latency.
    pub latency: Latency,
    /// Where the workload covers every call (`zipf`): the slowest round of 16 consecutive
    /// calls on one thread, nanoseconds, an upper bound on the slowest single call (the
    /// sampled `max` sees one call in 16). None elsewhere.
    pub worst_call_bound_ns: Option<u64>,
    /// Keys held after the run, where the variant says.
    pub tracked_keys: Option<usize>,
    /// Every trial's throughput, millions per second.
    pub trials_mops: Vec<f64>,
}

/// Bytes per tracked key for one variant.
#[derive(Debug, Serialize)]
pub struct MemoryRow {
    /// The variant.
    pub variant: &'static str,
    /// The limit the keys were created under.
    pub limit: String,
    /// Its `max_requests` (`N`).
    pub max_requests: u64,
    /// Keys created.
    pub keys: usize,
    /// Keys the variant reports holding.
    pub tracked: Option<usize>,
    /// Live heap bytes per key after one hit on each.
    pub bytes_per_key_one_hit: f64,
    /// Live heap bytes per key after `max_requests` hits on each (a full window).
    pub bytes_per_key_full: f64,
    /// Live heap bytes per key when resident memory is read: the full window, after one
    /// `remove_idle` and one more (refused) `check_and_hit` per key gave deferred frees their
    /// chance (memory the map has retired but not yet freed is still counted).
    pub heap_bytes_per_key_settled: f64,
    /// The child process's resident-memory growth (`VmRSS`) per key at the same moment.
    pub rss_bytes_per_key: Option<f64>,
    /// `rss_bytes_per_key / heap_bytes_per_key_settled`.
    pub rss_over_heap: Option<f64>,
}

/// Keys rotating at a steady active population, for one variant (in a child process).
#[derive(Debug, Serialize)]
pub struct RotationRow {
    /// The variant.
    pub variant: &'static str,
    /// Keys in rotation at any time, each called once per window.
    pub active_keys: usize,
    /// Windows each key stays in rotation before it is never seen again.
    pub lifetime_windows: usize,
    /// Windows run.
    pub windows: usize,
    /// Calls made.
    pub calls: u64,
    /// The most keys the variant said it tracked (read every 64 calls).
    pub max_tracked: Option<usize>,
    /// Keys tracked at the end.
    pub final_tracked: Option<usize>,
    /// `max_tracked / active_keys`.
    pub max_tracked_over_active: Option<f64>,
    /// Live heap bytes at the end, per active key.
    pub heap_bytes_per_active_key: f64,
    /// The most live heap bytes seen (read every 64 calls), per active key.
    pub max_heap_bytes_per_active_key: f64,
    /// The child's resident-memory growth at the end, per active key.
    pub rss_bytes_per_active_key: Option<f64>,
}

/// The Zipf workload's memory around one `remove_idle`.
#[derive(Debug, Serialize)]
pub struct ZipfMemoryRow {
    /// The variant.
    pub variant: &'static str,
    /// Calls made (single thread, fake clock) before measuring.
    pub ops: u64,
    /// Keys held before removal.
    pub tracked_before: Option<usize>,
    /// Live heap bytes before removal.
    pub bytes_before: i64,
    /// Keys removed.
    pub removed: Option<usize>,
    /// Keys held after.
    pub tracked_after: Option<usize>,
    /// Live heap bytes after.
    pub bytes_after: i64,
    /// How long the removal took, milliseconds.
    pub remove_ms: f64,
}

/// One of the targets, evaluated on this run.
#[derive(Debug, Serialize)]
pub struct TargetCheck {
    /// What is compared.
    pub target: String,
    /// On which workload.
    pub workload: &'static str,
    /// At how many threads.
    pub threads: usize,
    /// The measured ratio (None: a cell was not run).
    pub ratio: Option<f64>,
    /// `<= x` or `>= x`.
    pub threshold: String,
    /// Met, missed, or not run.
    pub verdict: Verdict,
    /// The two numbers behind the ratio.
    pub detail: String,
}

/// A target's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Reached.
    Met,
    /// Not reached.
    Missed,
    /// A cell it needs was not run.
    NotRun,
}

impl Verdict {
    /// As printed.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::Missed => "MISSED",
            Self::NotRun => "not run",
        }
    }
}

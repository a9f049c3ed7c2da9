//! The targets, as ratios computed from this run's cells and memory rows: one
//! variant against another, a variant against itself at fewer threads, a tail against an
//! absolute ceiling, and the memory budgets.

use crate::variants::{self, Family};

use super::report::human_ns;
use super::results::{CellResult, MemoryRow, RotationRow, TargetCheck, Verdict};

fn cell<'a>(
    cells: &'a [CellResult],
    workload: &str,
    variant: &str,
    threads: usize,
) -> Option<&'a CellResult> {
    cells
        .iter()
        .find(|c| c.workload == workload && c.variant == variant && c.threads == threads)
}

/// How a ratio is judged.
#[derive(Clone, Copy)]
enum Bound {
    AtMost(f64),
    AtLeast(f64),
}

impl Bound {
    /// Met, missed, or not run when `ratio` is None (a cell it needs did not run).
    fn judge(self, ratio: Option<f64>) -> Verdict {
        match (ratio, self) {
            (None, _) => Verdict::NotRun,
            (Some(r), Self::AtMost(x)) if r <= x => Verdict::Met,
            (Some(r), Self::AtLeast(x)) if r >= x => Verdict::Met,
            _ => Verdict::Missed,
        }
    }

    /// As printed in the `want` column.
    fn threshold(self) -> String {
        match self {
            Self::AtMost(x) => format!("<= {x}"),
            Self::AtLeast(x) => format!(">= {x}"),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check(
    cells: &[CellResult],
    target: &str,
    workload: &'static str,
    threads: usize,
    ours: &str,
    theirs: &str,
    metric: (&str, fn(&CellResult) -> f64),
    bound: Bound,
) -> TargetCheck {
    let (metric_name, value) = metric;
    let pair = cell(cells, workload, ours, threads).zip(cell(cells, workload, theirs, threads));
    let ratio = pair.map(|(a, b)| value(a) / value(b));
    TargetCheck {
        target: target.to_owned(),
        workload,
        threads,
        ratio,
        threshold: bound.threshold(),
        verdict: bound.judge(ratio),
        detail: pair.map_or_else(
            || format!("needs {ours} and {theirs} at {threads} thread(s) on {workload}"),
            |(a, b)| {
                format!(
                    "{metric_name}: {ours} {:.1} vs {theirs} {:.1}",
                    value(a),
                    value(b)
                )
            },
        ),
    }
}

/// What a target compares.
#[derive(Clone, Copy)]
enum Metric {
    NsPerDecision,
    Throughput,
    P999,
}

impl Metric {
    fn name_and_value(self) -> (&'static str, fn(&CellResult) -> f64) {
        match self {
            Self::NsPerDecision => ("ns/decision", |c| c.ns_per_decision),
            Self::Throughput => ("Mops/s", |c| c.mops),
            Self::P999 => ("p99.9 ns", |c| c.latency.p999 as f64),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::NsPerDecision => "ns/decision",
            Self::Throughput => "throughput",
            Self::P999 => "p99.9",
        }
    }
}

/// Every target of one variant against another: (ours, theirs, metric, workload, threads,
/// bound). One thread against the mutex, governor and the floor; two threads against the
/// mutex and governor; the bucketed lock-free limiter against the exact one. On churn and
/// Zipf (the key-lifecycle issue): the mutex and rwlock variants against the plain deque
/// limiter at one thread, lock-free against governor at one thread (within 2x) and against
/// the mutex at two threads. Lock-free and per-key-lock are no longer held to the deque at one
/// thread: they are held to scaling instead ([`SCALING`]).
const TARGETS: &[(&str, &str, Metric, &str, usize, Bound)] = {
    use Bound::{AtLeast, AtMost};
    use Metric::{NsPerDecision as Ns, Throughput as Mops, P999};
    const LF: &str = "lock-free";
    const BUCKETS: &str = "lock-free-buckets";
    const GOV: &str = "governor-keyed";
    const HOT: &str = "hot-allowed";
    const UNI: &str = "uniform-allowed";
    const CHURN: &str = "churn";
    const DEQUE: &str = "deque-mutex";
    &[
        (LF, "mutex", Ns, HOT, 1, AtMost(1.0)),
        (LF, "mutex", Ns, UNI, 1, AtMost(1.0)),
        (LF, "mutex", Ns, "zipf", 1, AtMost(1.0)),
        (LF, GOV, Ns, UNI, 1, AtMost(1.0)),
        (LF, "floor", Ns, HOT, 1, AtMost(2.0)),
        (LF, "floor", Ns, UNI, 1, AtMost(2.0)),
        (LF, GOV, Ns, "zipf", 1, AtMost(1.5)),
        (LF, "mutex", Mops, HOT, 2, AtLeast(1.0)),
        (LF, "mutex", Mops, UNI, 2, AtLeast(1.5)),
        (LF, GOV, Mops, UNI, 2, AtLeast(1.0)),
        (LF, "mutex", P999, HOT, 2, AtMost(1.0)),
        (LF, "mutex", P999, UNI, 2, AtMost(1.0)),
        (BUCKETS, LF, Ns, HOT, 1, AtMost(1.2)),
        (BUCKETS, LF, Ns, UNI, 1, AtMost(1.2)),
        // The key lifecycle (churn: nearly every call creates a key; Zipf: a long tail of
        // keys seen once) against the plain deque limiter, the mutex and governor.
        (LF, "mutex", Mops, CHURN, 2, AtLeast(1.5)),
        (LF, "mutex", Mops, "zipf", 2, AtLeast(1.5)),
        ("mutex", DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        ("rwlock", DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        ("mutex", DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        ("rwlock", DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        (LF, GOV, Ns, CHURN, 1, AtMost(2.0)),
        (LF, GOV, Ns, "zipf", 1, AtMost(2.0)),
    ]
};

/// Every variant held to its own throughput at fewer threads: (variant, workload, more
/// threads, fewer threads, bound on the ratio of the two throughputs). On churn, where nearly
/// every call creates a key, the limiters that take no global lock must scale.
const SCALING: &[(&str, &str, usize, usize, Bound)] = &[
    ("lock-free", "churn", 2, 1, Bound::AtLeast(1.8)),
    ("per-key-lock", "churn", 2, 1, Bound::AtLeast(1.8)),
];

/// Every absolute ceiling on a sampled p99.9: (variant, workload, threads, ceiling in ns).
/// Under key churn a call that creates a key must not stall behind the map's growth or the
/// sweep.
const P999_CEILINGS: &[(&str, &str, usize, u64)] = &[
    ("lock-free", "churn", 1, 5_000),
    ("lock-free", "zipf", 1, 5_000),
];

/// Every target of [`TARGETS`], [`SCALING`] and [`P999_CEILINGS`], judged on this run's cells.
#[must_use]
pub fn evaluate(cells: &[CellResult]) -> Vec<TargetCheck> {
    let pairs = TARGETS
        .iter()
        .map(|&(ours, theirs, metric, workload, threads, bound)| {
            let target = format!("{ours} {} ÷ {theirs}", metric.label());
            check(
                cells,
                &target,
                workload,
                threads,
                ours,
                theirs,
                metric.name_and_value(),
                bound,
            )
        });
    let scaling = SCALING
        .iter()
        .map(|&(variant, workload, more, fewer, bound)| {
            scaling_check(cells, variant, workload, (more, fewer), bound)
        });
    let ceilings = P999_CEILINGS
        .iter()
        .map(|&(variant, workload, threads, ceiling_ns)| {
            p999_ceiling_check(cells, variant, workload, threads, ceiling_ns)
        });
    pairs.chain(scaling).chain(ceilings).collect()
}

/// `variant`'s throughput at `more` threads ÷ at `fewer` threads; the check is filed under
/// the higher thread count.
fn scaling_check(
    cells: &[CellResult],
    variant: &str,
    workload: &'static str,
    (more, fewer): (usize, usize),
    bound: Bound,
) -> TargetCheck {
    let pair = cell(cells, workload, variant, more).zip(cell(cells, workload, variant, fewer));
    let ratio = pair.map(|(hi, lo)| hi.mops / lo.mops);
    TargetCheck {
        target: format!("{variant} throughput {more}t ÷ {fewer}t"),
        workload,
        threads: more,
        ratio,
        threshold: bound.threshold(),
        verdict: bound.judge(ratio),
        detail: pair.map_or_else(
            || format!("needs {variant} at {more} and {fewer} thread(s) on {workload}"),
            |(hi, lo)| {
                format!(
                    "Mops/s: {variant} {more}t {:.2} vs {fewer}t {:.2}",
                    hi.mops, lo.mops
                )
            },
        ),
    }
}

/// `variant`'s sampled p99.9 against an absolute ceiling, as the ratio p99.9 ÷ ceiling (at
/// most 1 to meet it), so that it reads like every other target.
fn p999_ceiling_check(
    cells: &[CellResult],
    variant: &str,
    workload: &'static str,
    threads: usize,
    ceiling_ns: u64,
) -> TargetCheck {
    let measured = cell(cells, workload, variant, threads);
    let ratio = measured.map(|c| c.latency.p999 as f64 / ceiling_ns as f64);
    let bound = Bound::AtMost(1.0);
    TargetCheck {
        target: format!("{variant} p99.9 ÷ {}", human_ns(ceiling_ns)),
        workload,
        threads,
        ratio,
        threshold: bound.threshold(),
        verdict: bound.judge(ratio),
        detail: measured.map_or_else(
            || format!("needs {variant} at {threads} thread(s) on {workload}"),
            |c| {
                format!(
                    "p99.9: {variant} {} vs {}",
                    human_ns(c.latency.p999),
                    human_ns(ceiling_ns)
                )
            },
        ),
    }
}

/// Whether `variant` is one of slidelimit's limiters (not a peer or the floor).
fn is_ours(variant: &str) -> bool {
    variants::metas()
        .iter()
        .any(|m| m.name == variant && m.family == Family::Ours)
}

/// The memory targets. The lock-free exact log holds at most `8·N + 160` live heap bytes per
/// key (the key map's share included) with a full window of `N` hits. For every one of our
/// variants, the resident-memory growth per key is at most twice the heap bytes per key (one
/// row per limit, judged on the worst variant), and under key rotation the tracked keys are
/// at most twice the active ones (judged on the worst variant).
#[must_use]
pub fn evaluate_memory(rows: &[MemoryRow], rotation: &[RotationRow]) -> Vec<TargetCheck> {
    let mut checks = lock_free_budget(rows);
    for n in super::memory::PER_KEY_LIMITS {
        let worst = rows
            .iter()
            .filter(|r| r.max_requests == n && is_ours(r.variant))
            .filter_map(|r| r.rss_over_heap.map(|ratio| (ratio, r)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        checks.push(TargetCheck {
            target: format!("RSS ÷ heap bytes per key, N = {n} (worst of ours)"),
            workload: "memory",
            threads: 1,
            ratio: worst.map(|w| w.0),
            threshold: "<= 2".to_owned(),
            verdict: Bound::AtMost(2.0).judge(worst.map(|w| w.0)),
            detail: worst.map_or_else(
                || "needs a resident-memory reading".to_owned(),
                |(_, r)| {
                    format!(
                        "{}: RSS {:.0} vs heap {:.0} B/key",
                        r.variant,
                        r.rss_bytes_per_key.unwrap_or(f64::NAN),
                        r.heap_bytes_per_key_settled
                    )
                },
            ),
        });
    }
    let worst = rotation
        .iter()
        .filter(|r| is_ours(r.variant))
        .filter_map(|r| r.max_tracked_over_active.map(|ratio| (ratio, r)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    checks.push(TargetCheck {
        target: "tracked ÷ active keys under rotation (worst of ours)".to_owned(),
        workload: "memory",
        threads: 1,
        ratio: worst.map(|w| w.0),
        threshold: "<= 2".to_owned(),
        verdict: Bound::AtMost(2.0).judge(worst.map(|w| w.0)),
        detail: worst.map_or_else(
            || "needs the rotation run".to_owned(),
            |(_, r)| {
                format!(
                    "{}: at most {} tracked vs {} active",
                    r.variant,
                    r.max_tracked.unwrap_or(0),
                    r.active_keys
                )
            },
        ),
    });
    checks
}

fn lock_free_budget(rows: &[MemoryRow]) -> Vec<TargetCheck> {
    rows.iter()
        .filter(|row| row.variant == "lock-free")
        .map(|row| {
            let budget = 8.0 * row.max_requests as f64 + 160.0;
            let ratio = row.bytes_per_key_full / budget;
            TargetCheck {
                target: format!(
                    "lock-free bytes/key ÷ (8·N + 160), N = {}",
                    row.max_requests
                ),
                workload: "memory",
                threads: 1,
                ratio: Some(ratio),
                threshold: "<= 1".to_owned(),
                verdict: Bound::AtMost(1.0).judge(Some(ratio)),
                detail: format!(
                    "{:.0} B/key with a full window vs a budget of {budget:.0}",
                    row.bytes_per_key_full
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::results::Latency;

    fn cell_of(variant: &'static str, threads: usize, mops: f64, p999: u64) -> CellResult {
        CellResult {
            workload: "churn",
            variant,
            family: Family::Ours,
            threads,
            ops: 1,
            elapsed_s: 1.0,
            mops,
            ns_per_decision: 1e3 / mops,
            allowed_fraction: 1.0,
            latency: Latency {
                samples: 1,
                p50: p999,
                p99: p999,
                p999,
                p9999: p999,
                max: p999,
            },
            worst_call_bound_ns: None,
            tracked_keys: None,
            trials_mops: Vec::new(),
        }
    }

    fn find<'a>(checks: &'a [TargetCheck], target: &str) -> &'a TargetCheck {
        checks
            .iter()
            .find(|c| c.target == target && c.workload == "churn")
            .unwrap_or_else(|| panic!("no target {target:?} on churn"))
    }

    #[test]
    fn scaling_is_judged_on_the_variant_against_itself() {
        let cells = [
            cell_of("lock-free", 1, 1.28, 0),
            cell_of("lock-free", 2, 2.31, 0),
            cell_of("per-key-lock", 1, 2.0, 0),
            cell_of("per-key-lock", 2, 3.0, 0),
        ];
        let checks = evaluate(&cells);
        let lock_free = find(&checks, "lock-free throughput 2t ÷ 1t");
        assert_eq!(lock_free.threads, 2);
        assert_eq!(lock_free.verdict, Verdict::Met);
        assert_eq!(lock_free.detail, "Mops/s: lock-free 2t 2.31 vs 1t 1.28");
        let per_key_lock = find(&checks, "per-key-lock throughput 2t ÷ 1t");
        assert_eq!(per_key_lock.ratio, Some(1.5));
        assert_eq!(per_key_lock.verdict, Verdict::Missed);
    }

    #[test]
    fn a_p999_ceiling_is_a_ratio_to_the_ceiling() {
        let missed = evaluate(&[cell_of("lock-free", 1, 1.0, 14_500)]);
        let check = find(&missed, "lock-free p99.9 ÷ 5.0 µs");
        assert_eq!(check.ratio, Some(2.9));
        assert_eq!(check.verdict, Verdict::Missed);
        assert_eq!(check.detail, "p99.9: lock-free 14.5 µs vs 5.0 µs");
        let met = evaluate(&[cell_of("lock-free", 1, 1.0, 5_000)]);
        assert_eq!(find(&met, "lock-free p99.9 ÷ 5.0 µs").verdict, Verdict::Met);
        let not_run = evaluate(&[]);
        assert_eq!(
            find(&not_run, "lock-free p99.9 ÷ 5.0 µs").verdict,
            Verdict::NotRun
        );
    }
}

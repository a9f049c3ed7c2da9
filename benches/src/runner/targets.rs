//! The hot-path issue's targets, as ratios computed from this run's cells and memory rows.

use crate::variants::{self, Family};

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
    let verdict = match (ratio, bound) {
        (None, _) => Verdict::NotRun,
        (Some(r), Bound::AtMost(x)) if r <= x => Verdict::Met,
        (Some(r), Bound::AtLeast(x)) if r >= x => Verdict::Met,
        _ => Verdict::Missed,
    };
    TargetCheck {
        target: target.to_owned(),
        workload,
        threads,
        ratio,
        threshold: match bound {
            Bound::AtMost(x) => format!("<= {x}"),
            Bound::AtLeast(x) => format!(">= {x}"),
        },
        verdict,
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

/// Every target: (ours, theirs, metric, workload, threads, bound). One thread against the
/// mutex, governor and the floor; two threads against the mutex and governor; the bucketed
/// lock-free limiter against the exact one; on churn and Zipf, every variant against the
/// plain deque limiter (the key-lifecycle issue; governor keyed within 2x is its stretch).
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
        (LF, DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        (LF, "mutex", Ns, CHURN, 1, AtMost(1.1)),
        (LF, DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        (LF, "mutex", Ns, "zipf", 1, AtMost(1.1)),
        ("mutex", DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        ("per-key-lock", DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        ("rwlock", DEQUE, Ns, CHURN, 1, AtMost(1.0)),
        ("mutex", DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        ("per-key-lock", DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        ("rwlock", DEQUE, Ns, "zipf", 1, AtMost(1.0)),
        (LF, GOV, Ns, CHURN, 1, AtMost(2.0)),
        (LF, GOV, Ns, "zipf", 1, AtMost(2.0)),
    ]
};

/// Every target of [`TARGETS`], judged on this run's cells.
#[must_use]
pub fn evaluate(cells: &[CellResult]) -> Vec<TargetCheck> {
    TARGETS
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
        })
        .collect()
}

/// Whether `variant` is one of slidelimit's limiters (not a peer or the floor).
fn is_ours(variant: &str) -> bool {
    variants::metas()
        .iter()
        .any(|m| m.name == variant && m.family == Family::Ours)
}

fn verdict_at_most(ratio: Option<f64>, bound: f64) -> Verdict {
    match ratio {
        None => Verdict::NotRun,
        Some(r) if r <= bound => Verdict::Met,
        Some(_) => Verdict::Missed,
    }
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
            verdict: verdict_at_most(worst.map(|w| w.0), 2.0),
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
        verdict: verdict_at_most(worst.map(|w| w.0), 2.0),
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
                verdict: if ratio <= 1.0 {
                    Verdict::Met
                } else {
                    Verdict::Missed
                },
                detail: format!(
                    "{:.0} B/key with a full window vs a budget of {budget:.0}",
                    row.bytes_per_key_full
                ),
            }
        })
        .collect()
}

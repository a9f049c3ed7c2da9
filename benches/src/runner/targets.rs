//! The hot-path issue's targets, as ratios computed from this run's cells and memory rows.

use crate::results::{CellResult, MemoryRow, TargetCheck, Verdict};

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

/// Every target of the hot-path issue, on every workload it names: one thread against the
/// mutex, governor and the floor; two threads against the mutex and governor; the bucketed
/// lock-free limiter against the exact one.
#[must_use]
pub fn evaluate(cells: &[CellResult]) -> Vec<TargetCheck> {
    let ns = (
        "ns/decision",
        (|c: &CellResult| c.ns_per_decision) as fn(&CellResult) -> f64,
    );
    let mops = (
        "Mops/s",
        (|c: &CellResult| c.mops) as fn(&CellResult) -> f64,
    );
    let p999 = (
        "p99.9 ns",
        (|c: &CellResult| c.latency.p999 as f64) as fn(&CellResult) -> f64,
    );
    let mut checks = Vec::new();
    let mut add = |target: &str, workload, threads, theirs, metric, bound| {
        checks.push(check(
            cells,
            target,
            workload,
            threads,
            "lock-free",
            theirs,
            metric,
            bound,
        ));
    };
    for workload in ["hot-allowed", "uniform-allowed", "zipf"] {
        add(
            "lock-free ns/decision ÷ mutex",
            workload,
            1,
            "mutex",
            ns,
            Bound::AtMost(1.0),
        );
    }
    add(
        "lock-free ns/decision ÷ governor-keyed",
        "uniform-allowed",
        1,
        "governor-keyed",
        ns,
        Bound::AtMost(1.0),
    );
    for workload in ["hot-allowed", "uniform-allowed"] {
        add(
            "lock-free ns/decision ÷ floor",
            workload,
            1,
            "floor",
            ns,
            Bound::AtMost(2.0),
        );
    }
    add(
        "lock-free ns/decision ÷ governor-keyed",
        "zipf",
        1,
        "governor-keyed",
        ns,
        Bound::AtMost(1.5),
    );
    add(
        "lock-free throughput ÷ mutex",
        "hot-allowed",
        2,
        "mutex",
        mops,
        Bound::AtLeast(1.0),
    );
    add(
        "lock-free throughput ÷ mutex",
        "uniform-allowed",
        2,
        "mutex",
        mops,
        Bound::AtLeast(1.5),
    );
    add(
        "lock-free throughput ÷ governor-keyed",
        "uniform-allowed",
        2,
        "governor-keyed",
        mops,
        Bound::AtLeast(1.0),
    );
    for workload in ["hot-allowed", "uniform-allowed"] {
        add(
            "lock-free p99.9 ÷ mutex",
            workload,
            2,
            "mutex",
            p999,
            Bound::AtMost(1.0),
        );
    }
    for workload in ["hot-allowed", "uniform-allowed"] {
        checks.push(check(
            cells,
            "lock-free-buckets ns/decision ÷ lock-free",
            workload,
            1,
            "lock-free-buckets",
            "lock-free",
            ns,
            Bound::AtMost(1.2),
        ));
    }
    checks
}

/// The memory target: the lock-free exact log holds at most `8·N + 160` live heap bytes per
/// key (the key map's share included) with a full window of `N` hits.
#[must_use]
pub fn evaluate_memory(rows: &[MemoryRow]) -> Vec<TargetCheck> {
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

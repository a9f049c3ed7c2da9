//! The targets, as ratios computed from this run's cells.

use crate::results::{CellResult, TargetCheck, Verdict};

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

/// Every target the issue sets, on every workload it names.
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
    let mut checks = vec![check(
        cells,
        "lock-free ns/decision ÷ governor-keyed",
        "uniform-allowed",
        1,
        "lock-free",
        "governor-keyed",
        ns,
        Bound::AtMost(0.75),
    )];
    for workload in ["hot-allowed", "hot-refused", "zipf"] {
        for threads in [4, 8] {
            checks.push(check(
                cells,
                "lock-free throughput ÷ mutex",
                workload,
                threads,
                "lock-free",
                "mutex",
                mops,
                Bound::AtLeast(2.0),
            ));
            checks.push(check(
                cells,
                "lock-free p99.9 ÷ mutex",
                workload,
                threads,
                "lock-free",
                "mutex",
                p999,
                Bound::AtMost(0.5),
            ));
        }
    }
    for workload in ["uniform-allowed", "hot-allowed", "zipf"] {
        checks.push(check(
            cells,
            "lock-free ns/decision ÷ floor",
            workload,
            1,
            "lock-free",
            "floor",
            ns,
            Bound::AtMost(2.0),
        ));
    }
    checks
}

//! The plots ([`crate::plot`]): throughput against threads per workload, and latency
//! percentiles against threads per variant. Each carries the machine facts.

use crate::plot::{self, Line, Panel, PALETTE};
use crate::variants::Family;

use super::results::{CellResult, Report};

/// Picks one percentile out of a cell.
type Pick = fn(&CellResult) -> u64;

/// The machine facts, as footer lines.
fn footer(report: &Report) -> Vec<String> {
    let m = &report.machine;
    vec![
        format!("{} · {} cores · {}", m.cpu_model, m.cores, m.rustc),
        format!("commit {} · {}", m.commit, m.date_utc),
        m.reproduce.clone(),
    ]
}

fn cell_of<'a>(
    report: &'a Report,
    workload: &str,
    variant: &str,
    threads: usize,
) -> Option<&'a CellResult> {
    report
        .cells
        .iter()
        .find(|c| c.workload == workload && c.variant == variant && c.threads == threads)
}

fn thread_labels(report: &Report) -> Vec<String> {
    report
        .config
        .threads
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Throughput (M decisions/s) against threads for every variant on `workload`; peers and the
/// floor dashed.
///
/// # Errors
/// What plotters reported.
pub fn throughput(report: &Report, workload: &str) -> Result<String, String> {
    let threads = &report.config.threads;
    let title = report
        .workloads
        .iter()
        .find(|w| w.name == workload)
        .map_or_else(
            || format!("{workload}: throughput"),
            |w| {
                format!(
                    "{workload}: throughput vs threads ({}, {})",
                    w.keys, w.limit
                )
            },
        );
    let lines: Vec<Line> = report
        .variants
        .iter()
        .map(|v| {
            let points = (0..threads.len())
                .filter_map(|i| cell_of(report, workload, v.name, threads[i]).map(|c| (i, c.mops)))
                .collect();
            (v, points)
        })
        .filter(|(_, points): &(_, Vec<_>)| !points.is_empty())
        .enumerate()
        .map(|(k, (v, points))| Line {
            dashed: v.family != Family::Ours,
            marker: 4,
            ..Line::new(v.name, PALETTE[k % PALETTE.len()], points)
        })
        .collect();
    let max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1e-3, f64::max);
    let x = thread_labels(report);
    let x_desc = format!("threads (machine has {} cores)", report.machine.cores);
    plot::svg((820, 520), &title, &footer(report), |area| {
        let (chart, legend) = area.split_horizontally(640);
        Panel {
            caption: "",
            x: &x,
            x_desc: &x_desc,
            y_desc: "million decisions per second (all threads)",
            lines: &lines,
        }
        .draw_linear(&chart, 0.0..max * 1.08)?;
        plot::legend(&legend, &lines, (10, 20), (0, 20))
    })
}

/// Latency percentiles (p50, p99, p99.9, max) against threads for `variant`, one panel per
/// workload, on a shared log scale.
///
/// # Errors
/// What plotters reported.
pub fn latency(report: &Report, variant: &str) -> Result<String, String> {
    let workloads: Vec<&str> = report
        .workloads
        .iter()
        .map(|w| w.name)
        .filter(|w| {
            report
                .cells
                .iter()
                .any(|c| c.workload == *w && c.variant == variant)
        })
        .collect();
    let threads = &report.config.threads;
    let cols = workloads.len().clamp(1, 4);
    let rows = workloads.len().div_ceil(cols).max(1);
    let percentiles: [(&str, Pick); 4] = [
        ("p50", |c| c.latency.p50),
        ("p99", |c| c.latency.p99),
        ("p99.9", |c| c.latency.p999),
        ("max", |c| c.latency.max),
    ];
    let cells = report.cells.iter().filter(|c| c.variant == variant);
    let lo = cells
        .clone()
        .map(|c| c.latency.p50.max(1))
        .min()
        .unwrap_or(1) as f64;
    let hi = cells.map(|c| c.latency.max.max(1)).max().unwrap_or(10) as f64;
    let lo_dec = lo.log10().floor();
    let hi_dec = hi.log10().ceil().max(lo_dec + 1.0);
    let x = thread_labels(report);
    let legend: Vec<Line> = percentiles
        .iter()
        .enumerate()
        .map(|(k, (label, _))| Line::new(*label, PALETTE[k], Vec::new()))
        .collect();
    let (width, height) = (80 + 270 * cols as u32, 130 + 250 * rows as u32);
    let title = format!("{variant}: sampled per-call latency vs threads");
    plot::svg((width, height), &title, &footer(report), |area| {
        let (top, grid) = area.split_vertically(30);
        plot::legend(&top, &legend, (70, 14), (110, 0))?;
        for (panel_area, workload) in grid.split_evenly((rows, cols)).iter().zip(&workloads) {
            let lines: Vec<Line> = percentiles
                .iter()
                .enumerate()
                .map(|(k, (label, value))| {
                    let points = (0..threads.len())
                        .filter_map(|i| {
                            cell_of(report, workload, variant, threads[i])
                                .map(|c| (i, value(c).max(1) as f64))
                        })
                        .collect();
                    Line::new(*label, PALETTE[k], points)
                })
                .collect();
            Panel {
                caption: workload,
                x: &x,
                x_desc: "threads",
                y_desc: "",
                lines: &lines,
            }
            .draw_log(panel_area, 10f64.powf(lo_dec)..10f64.powf(hi_dec), &|ns| {
                decade_label(ns.log10().round())
            })?;
        }
        Ok(())
    })
}

/// `10^dec` nanoseconds as an axis label: `10 ns`, `1 µs`, `100 ms`.
fn decade_label(dec: f64) -> String {
    let dec = dec.max(0.0) as u32;
    let unit = ["ns", "µs", "ms", "s"][(dec / 3).min(3) as usize];
    let mantissa = 10u64.pow(if dec >= 9 { dec - 9 } else { dec % 3 });
    format!("{mantissa} {unit}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn decades() {
        assert_eq!(super::decade_label(0.0), "1 ns");
        assert_eq!(super::decade_label(4.0), "10 µs");
        assert_eq!(super::decade_label(8.0), "100 ms");
        assert_eq!(super::decade_label(10.0), "10 s");
    }
}

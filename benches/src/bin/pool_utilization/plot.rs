//! The plots, SVG written as text: one panel per stream, a metric against the bucket budget,
//! one line per pool strategy (A time-strict … B key-strict, and B with eager release
//! dashed), the machine facts underneath.

use slidelimit_bench::plot::{self, Line, Panel, RGBColor, PALETTE};

use super::report::{Report, Summary};

/// Which palette entries the strategies take, A (time-strict) to B (key-strict).
const STRATEGY_COLORS: [usize; 5] = [0, 9, 2, 3, 1];
/// The eager-release model's colour.
const EAGER: RGBColor = PALETTE[7];

/// What a plot shows.
#[derive(Clone, Copy, Debug)]
pub enum Metric {
    /// Grants / the exact pool's grants, %.
    Served,
    /// False negatives / requests, %.
    FalseNegatives,
}

impl Metric {
    fn value(self, s: &Summary, eager: bool) -> f64 {
        100.0
            * match (self, eager) {
                (Self::Served, false) => s.served_vs_exact.mean,
                (Self::Served, true) => s.eager_served_vs_exact.mean,
                (Self::FalseNegatives, false) => s.false_negative_rate.mean,
                (Self::FalseNegatives, true) => s.eager_false_negative_rate.mean,
            }
    }

    fn title(self) -> &'static str {
        match self {
            Self::Served => {
                "Requests served relative to the exact pool (%), against the bucket budget"
            }
            Self::FalseNegatives => "False negatives (% of requests), against the bucket budget",
        }
    }

    /// The y range for a panel whose values span `lo..=hi` (%): served down from 100, false
    /// negatives up from 0, never narrower than a few hundredths of a point, so a flat panel
    /// still has an axis.
    fn range(self, lo: f64, hi: f64) -> std::ops::Range<f64> {
        match self {
            Self::Served => {
                let span = (100.0 - lo).max(0.05);
                (100.0 - span * 1.1)..100.0 + span * 0.05
            }
            Self::FalseNegatives => 0.0..hi.max(0.005) * 1.1,
        }
    }
}

/// A grid of panels, one per stream: `metric` against the budget, a line per strategy (A
/// time-strict ... B key-strict) and B with eager release dashed, under the others.
///
/// # Errors
/// What plotters reported.
pub fn per_stream(report: &Report, metric: Metric) -> Result<String, String> {
    let budgets: Vec<String> = report.params.budgets.iter().map(u64::to_string).collect();
    // (label, eager): every strategy, then B's eager-release model.
    let mut series: Vec<(String, bool)> = report
        .strategies()
        .into_iter()
        .map(|l| (l, false))
        .collect();
    series.push(("B".to_owned(), true));
    let legend: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(k, (label, eager))| Line {
            dashed: *eager,
            ..Line::new(
                if *eager {
                    format!("{label} eager")
                } else {
                    label.clone()
                },
                if *eager {
                    EAGER
                } else {
                    PALETTE[STRATEGY_COLORS[k % STRATEGY_COLORS.len()]]
                },
                Vec::new(),
            )
        })
        .collect();
    let cols = 4usize;
    let rows = report.streams.len().div_ceil(cols).max(1);
    let p = &report.params;
    let subtitle = format!(
        "L = {} uses ({} keys × {}) per T = {} min; {} h per trace, mean of {} seeds; \
         thresholds as strict as the budget allows",
        p.total_uses,
        p.keys,
        p.uses_per_key,
        p.cooldown_ticks / 60_000,
        p.hours,
        p.seeds
    );
    let m = &report.machine.facts;
    let footer = [
        format!(
            "{} · {} cores · {} · commit {}",
            m.cpu_model, m.cores, m.rustc, m.commit
        ),
        m.command.clone(),
    ];
    let size = (60 + 280 * cols as u32, 150 + 240 * rows as u32);
    plot::svg(size, metric.title(), &footer, |area| {
        let (top, grid) = area.split_vertically(76);
        plot::note(&top, &subtitle, (60, 0))?;
        plot::legend(&top, &legend, (60, 28), (95, 0))?;
        plot::note(
            &top,
            "A: every bucket closed by time · B: by count · AB-tNN: about NN % of the budget by \
             time · eager: B with every cooled bucket released first (the seed's way)",
            (60, 48),
        )?;
        for (panel_area, stream) in grid.split_evenly((rows, cols)).iter().zip(&report.streams) {
            // The eager line first, under the others: it shows only where it differs from B.
            let lines: Vec<Line> = std::iter::once(legend.len() - 1)
                .chain(0..legend.len() - 1)
                .map(|k| {
                    let (label, eager) = &series[k];
                    let points = (0..budgets.len())
                        .filter_map(|j| {
                            report
                                .summary(stream.name, label, Some(report.params.budgets[j]))
                                .map(|x| (j, metric.value(x, *eager)))
                        })
                        .collect();
                    Line {
                        points,
                        marker: if *eager { 2 } else { 3 },
                        ..legend[k].clone()
                    }
                })
                .collect();
            let (lo, hi) = lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.1))
                .filter(|v| v.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                    (a.min(v), b.max(v))
                });
            Panel {
                caption: stream.name,
                x: &budgets,
                x_desc: "bucket budget",
                y_desc: "",
                lines: &lines,
            }
            .draw_linear(panel_area, metric.range(lo, hi))?;
        }
        Ok(())
    })
}

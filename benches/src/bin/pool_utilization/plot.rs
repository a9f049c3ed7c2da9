//! The plots, SVG written as text: one panel per stream, a metric against the bucket budget,
//! one line per pool strategy (A time-strict … B key-strict, and B with eager release
//! dashed), the machine facts underneath.

use std::fmt::Write as _;

use super::report::{Report, Summary};

const PALETTE: [&str; 5] = ["#1f77b4", "#17becf", "#2ca02c", "#ff7f0e", "#d62728"];
const EAGER_COLOR: &str = "#7f7f7f";
const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

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
}

/// One line of a panel: a strategy label, and whether it is the eager-release model's.
struct Series {
    label: String,
    eager: bool,
    color: &'static str,
}

impl Series {
    fn name(&self) -> String {
        if self.eager {
            format!("{} eager", self.label)
        } else {
            self.label.clone()
        }
    }

    fn dash(&self) -> &'static str {
        if self.eager {
            " stroke-dasharray=\"5 3\""
        } else {
            ""
        }
    }
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `target` ticks over `span`.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A grid of panels, one per stream: `metric` against the budget, a line per strategy.
pub fn per_stream(report: &Report, metric: Metric) -> String {
    let budgets = &report.params.budgets;
    let mut series: Vec<Series> = report
        .strategies()
        .into_iter()
        .enumerate()
        .map(|(k, label)| Series {
            label,
            eager: false,
            color: PALETTE[k % PALETTE.len()],
        })
        .collect();
    series.push(Series {
        label: "B".to_owned(),
        eager: true,
        color: EAGER_COLOR,
    });
    let cols = 4usize;
    let rows = report.streams.len().div_ceil(cols);
    let (panel_w, panel_h) = (230.0, 180.0);
    let (left, top, gap_x, gap_y) = (60.0, 112.0, 50.0, 60.0);
    let width = left + cols as f64 * (panel_w + gap_x);
    let height = top + rows as f64 * (panel_h + gap_y) + 60.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" {FONT} font-size=\"11\">"
    );
    let _ = writeln!(svg, "<title>{}</title>", esc(metric.title()));
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let p = &report.params;
    let _ = writeln!(
        svg,
        "<text x=\"{:.0}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        width / 2.0,
        esc(metric.title())
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.0}\" y=\"40\" text-anchor=\"middle\">L = {} uses ({} keys × {}) per T = {} min; {} h per trace, mean of {} seeds; thresholds as strict as the budget allows</text>",
        width / 2.0,
        p.total_uses,
        p.keys,
        p.uses_per_key,
        p.cooldown_ticks / 60_000,
        p.hours,
        p.seeds
    );
    for (k, s) in series.iter().enumerate() {
        let x = left + 95.0 * k as f64;
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.0}\" y1=\"60\" x2=\"{:.0}\" y2=\"60\" stroke=\"{}\" stroke-width=\"3\"{}/><text x=\"{:.0}\" y=\"64\">{}</text>",
            x + 22.0,
            s.color,
            s.dash(),
            x + 28.0,
            esc(&s.name())
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{left:.0}\" y=\"82\" fill=\"#555\">A: every bucket closed by time · B: by count · AB-tNN: about NN % of the budget by time · eager: B with every cooled bucket released first (the seed's way)</text>"
    );
    for (i, stream) in report.streams.iter().enumerate() {
        let x0 = left + (i % cols) as f64 * (panel_w + gap_x);
        let y0 = top + (i / cols) as f64 * (panel_h + gap_y);
        let values: Vec<Vec<f64>> = series
            .iter()
            .map(|s| {
                budgets
                    .iter()
                    .map(|&b| {
                        report
                            .summary(stream.name, &s.label, Some(b))
                            .map_or(f64::NAN, |x| metric.value(x, s.eager))
                    })
                    .collect()
            })
            .collect();
        let (lo, hi) = values
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let (y_lo, y_hi, step) = match metric {
            Metric::Served => {
                // A span of at least 0.05 points, so a panel where every pool serves
                // 100 % still has an axis.
                let step = nice_step((100.0 - lo).max(0.05), 4.0);
                let y_lo = ((lo / step).floor() * step).min(100.0 - 2.0 * step);
                (y_lo, 100.0, step)
            }
            Metric::FalseNegatives => {
                let step = nice_step(hi.max(0.005), 4.0);
                (0.0, (hi / step).ceil().max(1.0) * step, step)
            }
        };
        let x_of = |j: usize| x0 + panel_w * (j as f64 + 0.5) / budgets.len() as f64;
        let y_of = |v: f64| y0 + panel_h * (1.0 - (v - y_lo) / (y_hi - y_lo));
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
            x0 + panel_w / 2.0,
            y0 - 8.0,
            esc(stream.name)
        );
        // As many decimals as the step needs (0.5 -> 1, 0.02 -> 2, 0.002 -> 3).
        let digits = (-step.log10().floor()).max(0.0) as usize;
        let mut tick = y_lo;
        while tick <= y_hi + step / 2.0 {
            let y = y_of(tick);
            let _ = writeln!(
                svg,
                "<line x1=\"{x0:.0}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444\">{tick:.digits$}</text>",
                x0 + panel_w,
                x0 - 4.0,
                y + 4.0
            );
            tick += step;
        }
        for (j, b) in budgets.iter().enumerate() {
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#444\">{b}</text>",
                x_of(j),
                y0 + panel_h + 14.0
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#444\">bucket budget</text>",
            x0 + panel_w / 2.0,
            y0 + panel_h + 28.0
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{x0:.0}\" y=\"{y0:.0}\" width=\"{panel_w:.0}\" height=\"{panel_h:.0}\" fill=\"none\" stroke=\"#333\"/>"
        );
        // The eager line first, under the others: it shows only where it differs from B.
        let order = (0..series.len()).map(|k| (k + series.len() - 1) % series.len());
        for (s, points) in order.map(|k| (&series[k], &values[k])) {
            let path: Vec<String> = points
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(j, &v)| format!("{:.1},{:.1}", x_of(j), y_of(v)))
                .collect();
            let _ = writeln!(
                svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                path.join(" "),
                s.color,
                s.dash()
            );
            for (j, &v) in points.iter().enumerate().filter(|(_, v)| v.is_finite()) {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{}\" fill=\"{}\"><title>{} · {} · {} buckets: {v:.3} %</title></circle>",
                    x_of(j),
                    y_of(v),
                    if s.eager { 2 } else { 3 },
                    s.color,
                    esc(stream.name),
                    esc(&s.name()),
                    budgets[j]
                );
            }
        }
    }
    let m = &report.machine;
    let lines = [
        format!(
            "{} · {} cores · {} · commit {}",
            m.cpu_model, m.cores, m.rustc, m.commit
        ),
        m.command.clone(),
    ];
    for (i, line) in lines.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"{:.0}\" font-size=\"10\" fill=\"#555\">{}</text>",
            height - 24.0 + 14.0 * i as f64,
            esc(line)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

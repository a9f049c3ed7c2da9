//! The plots, written as SVG text by hand: throughput against threads per workload, and
//! latency percentiles against threads per variant. Each carries the machine facts.

use std::fmt::Write as _;

use super::results::{CellResult, Report};

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Picks one percentile out of a cell.
type Pick = fn(&CellResult) -> u64;

const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

/// Escapes text for SVG.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn open(svg: &mut String, width: u32, height: u32, title: &str) {
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" {FONT} font-size=\"12\">"
    );
    let _ = writeln!(svg, "<title>{}</title>", esc(title));
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        width / 2,
        esc(title)
    );
}

/// The machine facts as footer lines at the bottom of the picture.
fn footer(svg: &mut String, report: &Report, height: u32) {
    let m = &report.machine;
    let lines = [
        format!("{} · {} cores · {}", m.cpu_model, m.cores, m.rustc),
        format!("commit {} · {}", m.commit, m.date_utc),
        m.reproduce.clone(),
    ];
    for (i, line) in lines.iter().enumerate() {
        let y = height - 10 - 14 * (lines.len() - 1 - i) as u32;
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"{y}\" font-size=\"10\" fill=\"#555\">{}</text>",
            esc(line)
        );
    }
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `target` ticks up to `max`.
fn nice_step(max: f64, target: f64) -> f64 {
    let raw = (max / target).max(f64::MIN_POSITIVE);
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

/// Throughput (M decisions/s) against threads for every variant on `workload`.
#[must_use]
pub fn throughput(report: &Report, workload: &str) -> String {
    let (width, height) = (820u32, 520u32);
    let (left, right, top, bottom) = (70.0, 190.0, 50.0, 120.0);
    let plot_w = f64::from(width) - left - right;
    let plot_h = f64::from(height) - top - bottom;
    let threads = &report.config.threads;
    let info = report.workloads.iter().find(|w| w.name == workload);
    let title = info.map_or_else(
        || format!("{workload}: throughput"),
        |w| {
            format!(
                "{workload}: throughput vs threads ({}, {})",
                w.keys, w.limit
            )
        },
    );
    let mut svg = String::new();
    open(&mut svg, width, height, &title);

    let series: Vec<(&str, Vec<Option<f64>>)> = report
        .variants
        .iter()
        .map(|v| {
            (
                v.name,
                threads
                    .iter()
                    .map(|&t| cell_of(report, workload, v.name, t).map(|c| c.mops))
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, points)| points.iter().any(Option::is_some))
        .collect();
    let max = series
        .iter()
        .flat_map(|(_, p)| p.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b))
        .max(1e-3);
    let step = nice_step(max, 6.0);
    let y_max = (max / step).ceil() * step;
    let x_of = |i: usize| {
        if threads.len() <= 1 {
            left + plot_w / 2.0
        } else {
            left + plot_w * i as f64 / (threads.len() - 1) as f64
        }
    };
    let y_of = |v: f64| top + plot_h * (1.0 - v / y_max);

    // Grid and axes.
    let mut tick = 0.0;
    while tick <= y_max + step / 2.0 {
        let y = y_of(tick);
        let _ = writeln!(
            svg,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + plot_w,
            left - 6.0,
            y + 4.0,
            trim_float(tick)
        );
        tick += step;
    }
    for (i, t) in threads.iter().enumerate() {
        let x = x_of(i);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
            top + plot_h,
            top + plot_h + 18.0
        );
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{plot_w:.1}\" height=\"{plot_h:.1}\" fill=\"none\" stroke=\"#333\"/>"
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">threads (machine has {} cores)</text>",
        left + plot_w / 2.0,
        top + plot_h + 38.0,
        report.machine.cores
    );
    let _ = writeln!(
        svg,
        "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">million decisions per second (all threads)</text>",
        top + plot_h / 2.0
    );

    for (k, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let path: Vec<String> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|v| format!("{:.1},{:.1}", x_of(i), y_of(v))))
            .collect();
        let dash = if report
            .variants
            .iter()
            .any(|v| v.name == *name && v.family != crate::variants::Family::Ours)
        {
            " stroke-dasharray=\"6 3\""
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
            path.join(" ")
        );
        for (i, p) in points.iter().enumerate() {
            if let Some(v) = p {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{color}\"><title>{} · {} threads: {:.2} M/s</title></circle>",
                    x_of(i),
                    y_of(*v),
                    esc(name),
                    threads[i],
                    v
                );
            }
        }
        let ly = top + 10.0 + 20.0 * k as f64;
        let lx = left + plot_w + 16.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" stroke-width=\"3\"{dash}/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            esc(name)
        );
    }
    footer(&mut svg, report, height);
    svg.push_str("</svg>\n");
    svg
}

/// Latency percentiles (p50, p99, p99.9, max) against threads for `variant`, one panel per
/// workload, on a shared log scale.
#[must_use]
pub fn latency(report: &Report, variant: &str) -> String {
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
    let (panel_w, panel_h) = (230.0, 200.0);
    let (left, top, gap_x, gap_y) = (70.0, 74.0, 30.0, 56.0);
    let width = (left + cols as f64 * (panel_w + gap_x) + 10.0) as u32;
    let height = (top + rows as f64 * (panel_h + gap_y) + 70.0) as u32;
    let mut svg = String::new();
    open(
        &mut svg,
        width,
        height,
        &format!("{variant}: sampled per-call latency vs threads"),
    );
    let percentiles: [(&str, Pick); 4] = [
        ("p50", |c| c.latency.p50),
        ("p99", |c| c.latency.p99),
        ("p99.9", |c| c.latency.p999),
        ("max", |c| c.latency.max),
    ];
    // Legend.
    for (k, (label, _)) in percentiles.iter().enumerate() {
        let x = left + 110.0 * k as f64;
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"46\" x2=\"{:.1}\" y2=\"46\" stroke=\"{}\" stroke-width=\"3\"/>\
             <text x=\"{:.1}\" y=\"50\">{label}</text>",
            x + 22.0,
            PALETTE[k],
            x + 28.0
        );
    }
    let cells: Vec<&CellResult> = report
        .cells
        .iter()
        .filter(|c| c.variant == variant)
        .collect();
    let lo = cells
        .iter()
        .map(|c| c.latency.p50.max(1))
        .min()
        .unwrap_or(1) as f64;
    let hi = cells
        .iter()
        .map(|c| c.latency.max.max(1))
        .max()
        .unwrap_or(10) as f64;
    let (lo_dec, hi_dec) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    for (p, workload) in workloads.iter().enumerate() {
        let px = left + (p % cols) as f64 * (panel_w + gap_x);
        let py = top + (p / cols) as f64 * (panel_h + gap_y);
        let x_of = |i: usize| {
            if threads.len() <= 1 {
                px + panel_w / 2.0
            } else {
                px + 12.0 + (panel_w - 24.0) * i as f64 / (threads.len() - 1) as f64
            }
        };
        let y_of =
            |ns: f64| py + panel_h * (1.0 - (ns.max(1.0).log10() - lo_dec) / (hi_dec - lo_dec));
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
            px + panel_w / 2.0,
            py - 8.0,
            esc(workload)
        );
        let mut dec = lo_dec;
        while dec <= hi_dec + 0.5 {
            let y = y_of(10f64.powf(dec));
            let _ = writeln!(
                svg,
                "<line x1=\"{px:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>",
                px + panel_w
            );
            if p % cols == 0 {
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                    px - 6.0,
                    y + 4.0,
                    decade_label(dec)
                );
            }
            dec += 1.0;
        }
        for (i, t) in threads.iter().enumerate() {
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
                x_of(i),
                py + panel_h + 16.0
            );
        }
        let _ = writeln!(
            svg,
            "<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{panel_w}\" height=\"{panel_h}\" fill=\"none\" stroke=\"#333\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">threads</text>",
            px + panel_w / 2.0,
            py + panel_h + 30.0
        );
        for (k, (label, value)) in percentiles.iter().enumerate() {
            let points: Vec<(usize, u64)> = threads
                .iter()
                .enumerate()
                .filter_map(|(i, &t)| cell_of(report, workload, variant, t).map(|c| (i, value(c))))
                .collect();
            let path: Vec<String> = points
                .iter()
                .map(|&(i, v)| format!("{:.1},{:.1}", x_of(i), y_of(v as f64)))
                .collect();
            let _ = writeln!(
                svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
                path.join(" "),
                PALETTE[k]
            );
            for &(i, v) in &points {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{label} at {} threads: {}</title></circle>",
                    x_of(i),
                    y_of(v as f64),
                    PALETTE[k],
                    threads[i],
                    super::report::human_ns(v)
                );
            }
        }
    }
    footer(&mut svg, report, height);
    svg.push_str("</svg>\n");
    svg
}

/// `10^dec` nanoseconds as an axis label: `10 ns`, `1 µs`, `100 ms`.
fn decade_label(dec: f64) -> String {
    let dec = dec.max(0.0) as u32;
    let unit = ["ns", "µs", "ms", "s"][(dec / 3).min(3) as usize];
    let mantissa = 10u64.pow(if dec >= 9 { dec - 9 } else { dec % 3 });
    format!("{mantissa} {unit}")
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::{esc, nice_step, trim_float};

    #[test]
    fn helpers() {
        assert_eq!(esc("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
        assert!((nice_step(37.0, 6.0) - 10.0).abs() < 1e-9);
        assert!((nice_step(0.9, 6.0) - 0.2).abs() < 1e-9);
        assert_eq!(trim_float(2.5), "2.5");
        assert_eq!(trim_float(10.0), "10");
        assert_eq!(super::decade_label(0.0), "1 ns");
        assert_eq!(super::decade_label(4.0), "10 µs");
        assert_eq!(super::decade_label(8.0), "100 ms");
        assert_eq!(super::decade_label(10.0), "10 s");
    }
}

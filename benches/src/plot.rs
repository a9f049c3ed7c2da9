//! The benchmarks' line charts, drawn with plotters' SVG backend: a figure with a title and
//! footer lines ([`svg`]), panels of lines over evenly spaced categories (thread counts,
//! bucket counts, budgets) on a linear or a logarithmic axis ([`Panel`]), and legends
//! ([`legend`]).
//!
//! Text is written as SVG `<text>` elements (plotters is built without its font features), so
//! no font file is read and the viewer picks the face.
//!
//! ```
//! use slidelimit_bench::plot::{self, Line, Panel, PALETTE};
//! let line = Line::new("lock-free", PALETTE[0], vec![(0, 1.5), (1, 2.9)]);
//! let lines = [line];
//! let threads = ["1".to_owned(), "2".to_owned()];
//! let svg = plot::svg((400, 300), "throughput", &["a footer".to_owned()], |area| {
//!     let panel = Panel { caption: "", x: &threads, x_desc: "threads", y_desc: "M/s", lines: &lines };
//!     panel.draw_linear(area, 0.0..3.0)
//! })
//! .unwrap();
//! assert!(svg.contains("<text") && svg.contains(">\nthroughput\n</text>"));
//! ```

use std::ops::Range;

use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub use plotters::style::RGBColor;

/// Where a figure's parts are drawn.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What drawing returns: plotters' errors, boxed.
pub type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// The font family written into every `<text>`.
pub const FONT: &str = "sans-serif";
/// Line colours, in order of use.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];
/// plotters writes `font-size` as the given size over 1.24; this gives sizes in pixels.
fn font(px: f64) -> FontDesc<'static> {
    (FONT, px * 1.24).into_font()
}

const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const MUTED: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// One line of a panel: points `(category index, value)`, non-finite values skipped.
#[derive(Clone, Debug)]
pub struct Line {
    /// The legend's label.
    pub label: String,
    /// Its colour.
    pub color: RGBColor,
    /// Dashed (peers, models) or solid.
    pub dashed: bool,
    /// The markers' radius, pixels.
    pub marker: u32,
    /// `(category index, value)`.
    pub points: Vec<(usize, f64)>,
}

impl Line {
    /// A solid line with 3-pixel markers.
    #[must_use]
    pub fn new(label: impl Into<String>, color: RGBColor, points: Vec<(usize, f64)>) -> Self {
        Self {
            label: label.into(),
            color,
            dashed: false,
            marker: 3,
            points,
        }
    }
}

/// One chart: lines over evenly spaced categories.
#[derive(Clone, Copy, Debug)]
pub struct Panel<'a> {
    /// Drawn above the chart (empty: none).
    pub caption: &'a str,
    /// The categories' labels, left to right.
    pub x: &'a [String],
    /// The x axis' description.
    pub x_desc: &'a str,
    /// The y axis' description.
    pub y_desc: &'a str,
    /// The lines, drawn in order (later ones on top).
    pub lines: &'a [Line],
}

impl Panel<'_> {
    /// Draws the panel on `area` with a linear y axis over `y`.
    ///
    /// # Errors
    /// What plotters reports (an empty range, a failed write into the SVG string).
    pub fn draw_linear(&self, area: &Area<'_>, y: Range<f64>) -> DrawResult {
        self.draw(area, y, 6, &|v| trim_float(*v))
    }

    /// Draws the panel on `area` with a logarithmic y axis over `y` (positive), one label per
    /// decade written by `label`.
    ///
    /// # Errors
    /// What plotters reports (an empty range, a failed write into the SVG string).
    pub fn draw_log(
        &self,
        area: &Area<'_>,
        y: Range<f64>,
        label: &dyn Fn(&f64) -> String,
    ) -> DrawResult {
        // One label per decade: plotters adds intermediate ones only past that many.
        let decades = (y.end / y.start).log10().round().max(1.0) as usize + 1;
        self.draw(area, y.log_scale(), decades, label)
    }

    fn draw<Y>(
        &self,
        area: &Area<'_>,
        y: Y,
        y_labels: usize,
        y_format: &dyn Fn(&f64) -> String,
    ) -> DrawResult
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        // Category i sits in the middle of segment i + offset of `0..=last`. plotters maps a
        // one-value range to a relative pixel, so a single category gets the middle of three.
        let (offset, last) = match self.x.len() {
            0 | 1 => (1, 2),
            n => (0, n - 1),
        };
        let mut builder = ChartBuilder::on(area);
        if !self.caption.is_empty() {
            builder.caption(self.caption, font(13.0).style(FontStyle::Bold));
        }
        let mut chart = builder
            .margin(8)
            .x_label_area_size(if self.x_desc.is_empty() { 20 } else { 36 })
            .y_label_area_size(if self.y_desc.is_empty() { 48 } else { 62 })
            .build_cartesian_2d((0..last).into_segmented(), y)?;
        let x_format = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => i
                .checked_sub(offset)
                .and_then(|i| self.x.get(i))
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        };
        let mut mesh = chart.configure_mesh();
        if !self.x_desc.is_empty() {
            mesh.x_desc(self.x_desc);
        }
        if !self.y_desc.is_empty() {
            mesh.y_desc(self.y_desc);
        }
        mesh.x_labels(last + 1)
            .y_labels(y_labels)
            .x_label_formatter(&x_format)
            .y_label_formatter(y_format)
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .bold_line_style(GRID)
            // Light lines invisible (the SVG backend skips them) rather than `max_light_lines(0)`,
            // which never returns on an integer axis in plotters 0.3.7.
            .light_line_style(TRANSPARENT)
            .disable_x_mesh()
            .draw()?;
        for line in self.lines {
            let points: Vec<(SegmentValue<usize>, f64)> = line
                .points
                .iter()
                .filter(|(i, v)| *i < self.x.len() && v.is_finite())
                .map(|&(i, v)| (SegmentValue::CenterOf(i + offset), v))
                .collect();
            let style = line.color.stroke_width(2);
            if line.dashed {
                chart.draw_series(DashedLineSeries::new(points.iter().cloned(), 6, 3, style))?;
            } else {
                chart.draw_series(LineSeries::new(points.iter().cloned(), style))?;
            }
            chart.draw_series(
                points
                    .iter()
                    .map(|p| Circle::new(p.clone(), line.marker, line.color.filled())),
            )?;
        }
        Ok(())
    }
}

/// A white figure of `size` pixels with `title` on top and `footer` lines (machine facts,
/// the command) at the bottom; `draw` fills what lies between. Returns the SVG text.
///
/// # Errors
/// The message of what `draw` or plotters reported.
pub fn svg(
    size: (u32, u32),
    title: &str,
    footer: &[String],
    draw: impl FnOnce(&Area<'_>) -> DrawResult,
) -> Result<String, String> {
    const FOOTER_LINE: u32 = 14;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        let result: DrawResult = (|| {
            root.fill(&WHITE)?;
            let body = root.titled(title, font(15.0).style(FontStyle::Bold))?;
            let footer_h =
                FOOTER_LINE * footer.len() as u32 + if footer.is_empty() { 0 } else { 8 };
            let body_h = body.dim_in_pixel().1.saturating_sub(footer_h);
            let (body, bottom) = body.split_vertically(body_h);
            draw(&body)?;
            let style = TextStyle::from(font(10.0)).color(&MUTED);
            for (i, line) in footer.iter().enumerate() {
                bottom.draw(&Text::new(
                    line.as_str(),
                    (10, 4 + (FOOTER_LINE * i as u32) as i32),
                    style.clone(),
                ))?;
            }
            root.present()?;
            Ok(())
        })();
        result.map_err(|e| format!("drawing {title:?}: {e}"))?;
    }
    text.push('\n');
    Ok(text)
}

/// A legend: for each line a short sample of its stroke and its label, the first at `at`
/// (pixels in `area`), each next one `step` further.
///
/// # Errors
/// What plotters reports.
pub fn legend(area: &Area<'_>, lines: &[Line], at: (i32, i32), step: (i32, i32)) -> DrawResult {
    let style = TextStyle::from(font(12.0)).pos(Pos::new(HPos::Left, VPos::Center));
    for (k, line) in lines.iter().enumerate() {
        let (x, y) = (at.0 + step.0 * k as i32, at.1 + step.1 * k as i32);
        let stroke = line.color.stroke_width(3);
        let dashes: &[(i32, i32)] = if line.dashed {
            &[(0, 8), (12, 22)]
        } else {
            &[(0, 22)]
        };
        for &(a, b) in dashes {
            area.draw(&PathElement::new(vec![(x + a, y), (x + b, y)], stroke))?;
        }
        area.draw(&Text::new(line.label.as_str(), (x + 28, y), style.clone()))?;
    }
    Ok(())
}

/// A note in muted text at `at` (pixels in `area`), left-aligned.
///
/// # Errors
/// What plotters reports.
pub fn note(area: &Area<'_>, text: &str, at: (i32, i32)) -> DrawResult {
    let style = TextStyle::from(font(11.0)).color(&MUTED);
    area.draw(&Text::new(text, at, style))?;
    Ok(())
}

/// A tick value without trailing zeros: `2.5`, `10`, `0.05`.
#[must_use]
pub fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{svg, trim_float, Line, Panel, PALETTE};

    /// plotters writes a `<text>` element's content on a line of its own.
    fn has_text(svg: &str, text: &str) -> bool {
        svg.contains(&format!(">\n{text}\n</text>"))
    }

    #[test]
    fn ticks() {
        assert_eq!(trim_float(2.5), "2.5");
        assert_eq!(trim_float(10.0), "10");
        assert_eq!(trim_float(0.05), "0.05");
        assert_eq!(trim_float(-0.0), "0");
    }

    /// One category and many, on a linear axis: both finish (plotters' key points once looped
    /// for ever here) and label every category.
    #[test]
    fn linear_panels_of_any_width() {
        for n in [1usize, 2, 5] {
            let x: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
            let lines = [Line::new(
                "l",
                PALETTE[0],
                (0..n).map(|i| (i, i as f64)).collect(),
            )];
            let out = svg((300, 200), "t", &[], |area| {
                let panel = Panel {
                    caption: "",
                    x: &x,
                    x_desc: "",
                    y_desc: "",
                    lines: &lines,
                };
                panel.draw_linear(area, 0.0..5.0)
            })
            .unwrap();
            assert!(x.iter().all(|c| has_text(&out, c)), "{out}");
            assert!(
                n == 1 || !has_text(&out, ""),
                "no empty labels or descriptions"
            );
            assert_eq!(out.matches("<circle").count(), n);
        }
    }

    /// Every label is SVG text (no font features: nothing is rasterised), with its characters
    /// escaped.
    #[test]
    fn text_is_svg_text() {
        let x = ["1".to_owned(), "8".to_owned()];
        let lines = [Line::new("a<b", PALETTE[1], vec![(0, 10.0), (1, 1000.0)])];
        let out = svg((300, 200), "title & more", &["footer".to_owned()], |area| {
            let panel = Panel {
                caption: "panel",
                x: &x,
                x_desc: "threads",
                y_desc: "ns",
                lines: &lines,
            };
            panel.draw_log(area, 1.0..10_000.0, &|v| format!("{v:.0}"))?;
            super::legend(area, &lines, (10, 10), (0, 20))
        })
        .unwrap();
        for text in [
            "title &amp; more",
            "footer",
            "panel",
            "threads",
            "a&lt;b",
            "8",
            "ns",
        ] {
            assert!(has_text(&out, text), "{text} missing from {out}");
        }
        for decade in ["1", "10", "100", "1000", "10000"] {
            assert!(has_text(&out, decade), "{decade} missing");
        }
        assert!(out.contains("font-size=\"15"), "sizes are pixels");
        assert!(!out.contains("<image"), "nothing rasterised");
    }
}

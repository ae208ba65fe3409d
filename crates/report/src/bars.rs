//! One bar chart, drawn by plotters into SVG text: a bar per engine (its
//! parts stacked), an optional min–max whisker, the value written above it,
//! and in place of a missing bar the reason it is missing. [`super::charts`]
//! decides what the bars are; this file only draws them.
//!
//! Only plotters' SVG backend and its naive text layout are used: no system
//! fonts are read, so the same bars give the same bytes on every machine.

use std::ops::Range;

use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Pixels: wide enough for six engine names under their bars.
const SIZE: (u32, u32) = (720, 420);

/// What `draw` draws on an SVG canvas of `size`, as SVG text (every chart's
/// way out of plotters).
pub(super) fn svg_text<E: std::fmt::Display>(size: (u32, u32), draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), E>) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}
/// Medians further apart than this factor go on a log axis: on a linear one
/// the fast engines' bars would be invisible.
const LOG_ABOVE: f64 = 30.0;
pub(super) const FONT: &str = "sans-serif";
/// Half a bar's width, in slots (one slot per engine).
const HALF_BAR: f64 = 0.32;
const HALF_CAP: f64 = 0.1;

/// Engine colours, by the engine's place in the run (the same engine has the
/// same colour in every chart of a run); from the Tableau 10 palette.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
];

/// A chart's bars and words.
pub(crate) struct Bars {
    /// The first line on top.
    pub title: String,
    /// The second, smaller line on top.
    pub subtitle: String,
    pub y_label: String,
    pub bars: Vec<Bar>,
    /// A line under the chart, e.g. which engines have no bar and why.
    pub note: Option<String>,
}

pub(crate) struct Bar {
    /// Under the bar: the engine.
    pub label: String,
    pub color: RGBColor,
    /// The bar's parts, stacked from the axis up, each a lighter shade of
    /// `color`; Err: there is no bar, and the text says why.
    pub parts: Result<Vec<f64>, String>,
    /// (min, max) drawn as a whisker over the bar.
    pub whisker: Option<(f64, f64)>,
    /// Above the bar (or its whisker).
    pub value_label: String,
}

impl Bar {
    fn total(&self) -> Option<f64> {
        self.parts.as_ref().ok().map(|p| p.iter().sum())
    }

    fn top(&self) -> Option<f64> {
        let total = self.total()?;
        Some(self.whisker.map_or(total, |(_, max)| max.max(total)))
    }

    fn bottom(&self) -> Option<f64> {
        let total = self.total()?;
        Some(self.whisker.map_or(total, |(min, _)| min.min(total)))
    }
}

/// How the value axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    Linear,
    Log,
}

impl Bars {
    /// Log when the bars' totals differ by more than [`LOG_ABOVE`] times.
    /// Stacked bars stay linear: their parts' lengths only add up on a linear axis.
    pub fn scale(&self) -> Scale {
        if self.bars.iter().any(|b| b.parts.as_ref().is_ok_and(|p| p.len() > 1)) {
            return Scale::Linear;
        }
        let totals: Vec<f64> = self.bars.iter().filter_map(Bar::total).filter(|t| *t > 0.0).collect();
        let (min, max) = totals.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
        if totals.len() > 1 && max / min > LOG_ABOVE {
            Scale::Log
        } else {
            Scale::Linear
        }
    }

    /// The chart as SVG text.
    pub fn svg(&self) -> Result<String, String> {
        svg_text(SIZE, |root| self.draw_all(root))
    }

    fn draw_all<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = root.titled(&self.title, (FONT, 20))?.titled(&self.subtitle, (FONT, 14))?;
        let plot = with_note(area, self.note.as_deref())?;
        let tops = self.bars.iter().filter_map(Bar::top);
        match self.scale() {
            Scale::Linear => {
                // Headroom for the labels above the tallest bar.
                let max = tops.fold(0.0, f64::max);
                let top = if max > 0.0 { max * 1.15 } else { 1.0 };
                self.draw(&plot, 0.0..top, 0.0)
            }
            Scale::Log => {
                let lowest = self.bars.iter().filter_map(Bar::bottom).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
                // Whole decades, and one more above for the labels.
                let bottom = 10f64.powf(lowest.log10().floor());
                let top = 10f64.powf(tops.fold(0.0, f64::max).log10().floor() + 1.0);
                self.draw(&plot, (bottom..top).log_scale(), bottom)
            }
        }
    }

    /// Axes, bars, whiskers and labels on a value axis `y` whose lowest value is `floor`.
    fn draw<DB, Y>(&self, area: &DrawingArea<DB, Shift>, y: Y, floor: f64) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let n = self.bars.len().max(1);
        let mut chart =
            ChartBuilder::on(area).margin(12).x_label_area_size(36).y_label_area_size(80).build_cartesian_2d(Slots(n), y)?;
        let labels: Vec<&str> = self.bars.iter().map(|b| b.label.as_str()).collect();
        let engine_at = |v: &f64| labels.get(v.round() as usize).map(|s| s.to_string()).unwrap_or_default();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&engine_at)
            .y_label_formatter(&|v| tick(*v))
            .y_desc(self.y_label.as_str())
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()?;
        let above = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        for (i, bar) in self.bars.iter().enumerate() {
            let x = i as f64;
            let parts = match &bar.parts {
                Ok(parts) => parts,
                Err(why) => {
                    let style = above.color(&RED);
                    chart.draw_series(std::iter::once(EmptyElement::at((x, floor)) + Text::new(why.clone(), (0, -6), style)))?;
                    continue;
                }
            };
            // Nothing below the axis's floor: a log axis has no zero.
            let at = |v: f64| v.max(floor);
            let mut sum = 0.0;
            for (k, part) in parts.iter().enumerate() {
                let color = bar.color.mix(1.0 - 0.45 * k as f64);
                let from = if k == 0 { floor } else { at(sum) };
                sum += part;
                chart.draw_series(std::iter::once(Rectangle::new([(x - HALF_BAR, from), (x + HALF_BAR, at(sum))], color.filled())))?;
            }
            if let Some((min, max)) = bar.whisker {
                let (min, max) = (at(min), at(max));
                let stroke = BLACK.stroke_width(2);
                let lines = [
                    vec![(x, min), (x, max)],
                    vec![(x - HALF_CAP, min), (x + HALF_CAP, min)],
                    vec![(x - HALF_CAP, max), (x + HALF_CAP, max)],
                ];
                chart.draw_series(lines.into_iter().map(|line| PathElement::new(line, stroke)))?;
            }
            let top = at(bar.top().unwrap_or(sum));
            chart.draw_series(std::iter::once(EmptyElement::at((x, top)) + Text::new(bar.value_label.clone(), (0, -4), above.clone())))?;
        }
        Ok(())
    }
}

/// The x axis: one slot per bar, centred on 0, 1, …, with a tick (the bar's
/// label) at each centre and nowhere else.
pub(super) struct Slots(pub usize);

impl Ranged for Slots {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let Range { start, end } = self.range();
        limit.0 + ((value - start) / (end - start) * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64).collect()
    }

    fn range(&self) -> Range<f64> {
        -0.5..self.0 as f64 - 0.5
    }
}

/// `area` less a line at its foot holding `note` (all of it without one):
/// what a chart leaves out is said under it, in every chart the same way.
pub(super) fn with_note<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, note: Option<&str>) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let Some(note) = note else { return Ok(area) };
    let (_, height) = area.dim_in_pixel();
    let (plot, foot) = area.split_vertically(height.saturating_sub(24));
    let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    let (w, h) = foot.dim_in_pixel();
    foot.draw_text(note, &style, (w as i32 / 2, h as i32 / 2))?;
    Ok(plot)
}

/// The legend of every chart here, on a nearly opaque white box: top left
/// unless the chart found a place where it hides less (see `lines`).
pub(super) fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(chart: &mut ChartContext<'a, DB, CT>) -> DrawResult<DB> {
    draw_legend_at(chart, SeriesLabelPosition::UpperLeft)
}

pub(super) fn draw_legend_at<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> DrawResult<DB> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .draw()
}

pub(super) type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// An axis tick: four significant digits, without a float's noise (0.30000000000000004).
pub(super) fn tick(v: f64) -> String {
    format!("{v:.3e}").parse::<f64>().map_or_else(|_| v.to_string(), |r| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(totals: &[Result<Vec<f64>, String>]) -> Bars {
        Bars {
            title: "t".into(),
            subtitle: String::new(),
            y_label: "s".into(),
            bars: totals
                .iter()
                .map(|parts| Bar { label: "e".into(), color: PALETTE[0], parts: parts.clone(), whisker: None, value_label: String::new() })
                .collect(),
            note: None,
        }
    }

    #[test]
    fn log_scale_only_when_bars_differ_by_orders_of_magnitude() {
        assert_eq!(bars(&[Ok(vec![0.01]), Ok(vec![0.2])]).scale(), Scale::Linear);
        assert_eq!(bars(&[Ok(vec![0.01]), Ok(vec![0.5])]).scale(), Scale::Log);
        // A missing bar or a zero does not make a ratio.
        assert_eq!(bars(&[Ok(vec![0.0]), Ok(vec![0.5]), Err("failed".into())]).scale(), Scale::Linear);
        // Stacked parts stay linear whatever their sizes.
        assert_eq!(bars(&[Ok(vec![1.0, 1.0]), Ok(vec![100.0, 1.0])]).scale(), Scale::Linear);
    }

    #[test]
    fn ticks_drop_float_noise() {
        assert_eq!(tick(0.1 + 0.2), "0.3");
        assert_eq!(tick(25000.0), "25000");
        assert_eq!(tick(0.001), "0.001");
    }

    #[test]
    fn no_bars_at_all_still_draws() {
        let svg = bars(&[Err("failed".into()), Err("failed".into())]).svg().unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("failed"));
        assert!(bars(&[]).svg().unwrap().contains("</svg>"));
    }
}

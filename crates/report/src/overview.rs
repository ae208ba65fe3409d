//! One chart of the whole run: every query and variant along the bottom, a
//! bar per engine beside each other in every group (median seconds), on a log
//! axis so a 30× slower engine and a fast one are both readable. The first
//! picture of the report; the per-query charts follow in the detail.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bars::{draw_legend, svg_text, tick, DrawResult, Slots, FONT, PALETTE};
use super::{answered_median, query_label, ResultsView};

const SIZE: (u32, u32) = (900, 460);
/// The share of a query's slot its bars take together.
const GROUP: f64 = 0.8;

/// The overview as SVG text.
pub(crate) fn overview_svg(view: &ResultsView) -> Result<String, String> {
    svg_text(SIZE, |root| draw(view, root))
}

/// The bars' values: per query, per engine of the run, its median when it
/// answered (a failed engine has no bar, and a gap says so).
fn medians(view: &ResultsView) -> Vec<Vec<Option<f64>>> {
    view.record.queries.iter().map(|q| view.engines.iter().map(|e| answered_median(q, e)).collect()).collect()
}

fn draw<DB: DrawingBackend>(view: &ResultsView, root: &DrawingArea<DB, plotters::coord::Shift>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let subtitle = format!("median of {} per engine and query, log scale; a gap is an engine that failed or did not run", super::timed_runs_said(&view.record.context));
    let area = root.titled("Every query, every engine: seconds", (FONT, 20))?.titled(&subtitle, (FONT, 13))?;
    let values = medians(view);
    let all = values.iter().flatten().flatten().copied();
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // Whole decades, the lowest strictly below the fastest bar (so it has a
    // height), and a whole empty decade above the tallest for the legend;
    // one decade when nothing answered.
    let (bottom, top) = if lo.is_finite() { (10f64.powf(lo.log10().ceil() - 1.0), 10f64.powf(hi.log10().floor() + 2.0)) } else { (0.1, 1.0) };
    let labels: Vec<String> = view.record.queries.iter().map(query_label).collect();
    let slots = labels.len().max(1);
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(Slots(slots), (bottom..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(slots)
        .x_label_formatter(&|v| labels.get(v.round() as usize).cloned().unwrap_or_default())
        .y_label_formatter(&|v| tick(*v))
        .y_desc("seconds")
        .label_style((FONT, 13))
        .draw()?;
    let engines = view.engines.len().max(1);
    let width = GROUP / engines as f64;
    let gap = TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom)).color(&RED);
    for (e, engine) in view.engines.iter().enumerate() {
        let color = PALETTE[e % PALETTE.len()];
        let left = |q: usize| q as f64 - GROUP / 2.0 + e as f64 * width;
        let bars = values.iter().enumerate().filter_map(|(q, row)| Some((q, row[e]?)));
        chart
            .draw_series(bars.map(|(q, v)| Rectangle::new([(left(q) + width * 0.08, bottom), (left(q) + width * 0.92, v)], color.filled())))?
            .label(engine.name())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let gaps = values.iter().enumerate().filter(|(_, row)| row[e].is_none()).map(|(q, _)| q);
        chart.draw_series(gaps.map(|q| EmptyElement::at((left(q) + width / 2.0, bottom)) + Text::new("×", (0, -2), gap.clone())))?;
    }
    draw_legend(&mut chart)?;
    Ok(())
}

//! One line chart on log–log axes, drawn by plotters into SVG text: a line
//! with marked points per engine, and a legend. `ghbench bench --scale` draws
//! with it how each engine's query time (and load rate) grows with the data.
//! Like [`super::bars`], only the SVG backend and its naive text layout are
//! used, so the same lines give the same bytes on every machine.

use plotters::prelude::*;

use super::bars::PALETTE;

const SIZE: (u32, u32) = (720, 440);
const FONT: &str = "sans-serif";

/// A chart's lines and words.
pub(crate) struct Lines {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    /// One per engine, in the run's order (which gives its colour).
    pub lines: Vec<Line>,
}

pub(crate) struct Line {
    pub label: String,
    /// The engine's place in the run, for its colour.
    pub place: usize,
    /// (x, y), both above zero to be drawn on log axes.
    pub points: Vec<(f64, f64)>,
}

impl Lines {
    pub fn svg(&self) -> Result<String, String> {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
            self.draw(&root).map_err(|e| e.to_string())?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        let area = root.titled(&self.title, (FONT, 20))?.titled(&self.subtitle, (FONT, 14))?;
        let drawn: Vec<&Line> = self.lines.iter().filter(|l| !l.points.is_empty()).collect();
        let points = || drawn.iter().flat_map(|l| l.points.iter().copied());
        let (x, y) = (span(points().map(|p| p.0)), span(points().map(|p| p.1)));
        let mut chart = ChartBuilder::on(&area)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(x.log_scale(), y.log_scale())?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .label_style((FONT, 12))
            .draw()?;
        for line in drawn {
            let color = PALETTE[line.place % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))?
                .label(&line.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 13))
            .draw()?;
        Ok(())
    }
}

/// The points' range with a margin on a log axis (a fixed one when there is
/// a single value, so the axis never collapses).
fn span(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.filter(|v| *v > 0.0).fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return 0.1..10.0;
    }
    lo / 1.5..hi * 1.5
}

/// An axis tick: three significant digits, large numbers in thousands or millions.
fn tick(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", trim(v / 1e6)),
        v if v >= 1e3 => format!("{}k", trim(v / 1e3)),
        v => trim(v),
    }
}

fn trim(v: f64) -> String {
    format!("{v:.2e}").parse::<f64>().map_or_else(|_| v.to_string(), |r| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(points: Vec<Vec<(f64, f64)>>) -> Lines {
        Lines {
            title: "t".into(),
            subtitle: String::new(),
            x_label: "events".into(),
            y_label: "seconds".into(),
            lines: points.into_iter().enumerate().map(|(place, points)| Line { label: format!("e{place}"), place, points }).collect(),
        }
    }

    #[test]
    fn draws_a_line_per_engine_in_its_colour() {
        let svg = lines(vec![vec![(1e5, 0.01), (1e6, 0.1)], vec![(1e5, 0.5), (1e6, 0.6)]]).svg().unwrap();
        assert!(svg.starts_with("<svg"));
        for (place, &RGBColor(r, g, b)) in PALETTE.iter().enumerate().take(2) {
            assert!(svg.contains(&format!("#{r:02X}{g:02X}{b:02X}")), "engine {place}'s colour");
            assert!(svg.contains(&format!("e{place}")), "engine {place}'s legend");
        }
        assert!(svg.contains("<polyline"), "lines are drawn");
    }

    #[test]
    fn one_point_or_none_still_draws() {
        assert!(lines(vec![vec![(1e6, 0.2)]]).svg().unwrap().contains("</svg>"));
        assert!(lines(vec![vec![]]).svg().unwrap().contains("</svg>"));
    }

    #[test]
    fn ticks_read_as_people_write_numbers() {
        assert_eq!(tick(2_500_000.0), "2.5M");
        assert_eq!(tick(25_000.0), "25k");
        assert_eq!(tick(0.0123), "0.0123");
    }
}

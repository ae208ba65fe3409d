//! One line chart on log–log axes, drawn by plotters into SVG text: a line
//! with marked points per engine, and a legend. `ghbench bench --scale` draws
//! with it how each engine's query time (and load rate) grows with the data,
//! and [`super::charts`] the concurrency phase's rate and latency against clients.
//! Like [`super::bars`], only the SVG backend and its naive text layout are
//! used, so the same lines give the same bytes on every machine.

use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bars::{draw_legend_at, svg_text, with_note, PALETTE};

const SIZE: (u32, u32) = (720, 440);
const FONT: &str = "sans-serif";

/// A chart's lines and words.
pub(crate) struct Lines {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    /// Where the x axis is numbered (those within its range), e.g. the client
    /// counts asked for; empty: at 1, 2 and 5 of each decade.
    pub x_ticks: Vec<f64>,
    /// One per engine, in the run's order (which gives its colour).
    pub lines: Vec<Line>,
    /// A line under the chart, e.g. which points are left out and why.
    pub note: Option<String>,
    /// Dashed vertical lines across the chart, each labelled at its top: where
    /// something changes along x (an engine's data stops fitting in memory).
    pub marks: Vec<Mark>,
}

/// A dashed vertical line at `x`, labelled.
pub(crate) struct Mark {
    pub x: f64,
    pub label: String,
}

pub(crate) struct Line {
    pub label: String,
    /// Its place, for its colour: the engine's in the run, or the query's
    /// in a chart of one engine's queries.
    pub place: usize,
    /// (x, y); one not above zero has no place on a log axis and is not
    /// drawn (the chart's note should say so).
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed, in its place's colour: the cold runs beside the hot
    /// ones of the same query.
    pub dashed: bool,
}

/// A legend's box as plotters draws it for these labels: its SVG text is
/// about 7 px a character and 20 px a line, plus a marker and a margin.
fn legend_box(labels: &[&str]) -> (i32, i32) {
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as i32;
    (35 + 7 * widest + 12, 20 * labels.len() as i32 + 12)
}

impl Lines {
    /// The chart, its legend inside where a place hides no point and it is
    /// under half the plot's height, else beside the plot on a wider canvas
    /// (the 16 lines of a sweep's disk chart fill the plot).
    pub fn svg(&self) -> Result<String, String> {
        let mut hides_points = false;
        let inside = svg_text(SIZE, |root| self.draw(root, None).map(|hides| hides_points = hides))?;
        if !hides_points {
            return Ok(inside);
        }
        let labels: Vec<&str> = self.lines.iter().map(|l| l.label.as_str()).collect();
        let side = legend_box(&labels).0 as u32 + 10;
        svg_text((SIZE.0 + side, SIZE.1), |root| self.draw(root, Some(side)).map(|_| ()))
    }

    /// Draws the chart; `side`: the legend in a column that wide right of
    /// the plot. Whether the legend, inside, hides a point or is too tall.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>, side: Option<u32>) -> Result<bool, DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        let area = root.titled(&self.title, (FONT, 20))?.titled(&self.subtitle, (FONT, 14))?;
        let area = with_note(area, self.note.as_deref())?;
        let (area, column) = match side {
            Some(width) => {
                let (plot, column) = area.split_horizontally(area.dim_in_pixel().0.saturating_sub(width));
                (plot, Some(column))
            }
            None => (area, None),
        };
        let drawable = |&(x, y): &(f64, f64)| x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite();
        let drawn: Vec<(&Line, Vec<(f64, f64)>)> =
            self.lines.iter().map(|l| (l, l.points.iter().copied().filter(drawable).collect::<Vec<_>>())).filter(|(_, p)| !p.is_empty()).collect();
        let points = || drawn.iter().flat_map(|(_, p)| p.iter().copied());
        let marks: Vec<&Mark> = self.marks.iter().filter(|m| m.x > 0.0 && m.x.is_finite()).collect();
        // A mark widens the x axis so it is seen.
        let (x, y) = (span(points().map(|p| p.0).chain(marks.iter().map(|m| m.x))), span(points().map(|p| p.1)));
        let x_ticks = match self.x_ticks.iter().copied().filter(|t| x.contains(t)).collect::<Vec<f64>>() {
            given if given.is_empty() => ticks_in(&x),
            given => given,
        };
        let mut chart = ChartBuilder::on(&area)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(80)
            // Ticks at 1, 2 and 5 of each power of ten: plotters' own log ticks
            // are powers of ten only (one tick on a narrow axis) with a dense
            // minor grid; these read better and need no minor grid.
            .build_cartesian_2d(x.clone().log_scale().with_key_points(x_ticks), y.clone().log_scale().with_key_points(ticks_in(&y)))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .label_style((FONT, 12))
            .draw()?;
        let grey = RGBColor(110, 110, 110);
        for mark in &marks {
            // Twenty dashes, each a fortieth of the (log) y axis.
            let (low, high) = (y.start.ln(), y.end.ln());
            let dashes = (0..40).step_by(2).map(|i| {
                let at = |i: i32| (low + (high - low) * f64::from(i) / 40.0).exp();
                PathElement::new(vec![(mark.x, at(i)), (mark.x, at(i + 1))], grey.stroke_width(1))
            });
            chart.draw_series(dashes)?;
            // Right of its line in the axis' left half, else left of it: a
            // mark near the right edge kept its label off the canvas.
            let left_half = mark.x.ln() < (x.start.ln() + x.end.ln()) / 2.0;
            let (anchor, dx) = if left_half { (HPos::Left, 4) } else { (HPos::Right, -4) };
            let style = TextStyle::from((FONT, 12).into_font()).color(&grey).pos(Pos::new(anchor, VPos::Top));
            chart.draw_series(std::iter::once(EmptyElement::at((mark.x, y.end)) + Text::new(mark.label.clone(), (dx, 4), style)))?;
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let in_pixels: Vec<Vec<(i32, i32)>> =
            drawn.iter().map(|(_, points)| points.iter().map(|p| chart.backend_coord(p)).map(|(x, y)| (x - xs.start, y - ys.start)).collect()).collect();
        let labels: Vec<&str> = drawn.iter().map(|(line, _)| line.label.as_str()).collect();
        let (legend, hidden) = clearest_place((xs.end - xs.start, ys.end - ys.start), &in_pixels, &labels);
        for (line, points) in &drawn {
            let color = PALETTE[line.place % PALETTE.len()];
            let (dashed, stroke) = (line.dashed, color.stroke_width(2));
            let [first, second] = marker_pieces(dashed);
            let marker = move |(x, y): (i32, i32)| EmptyElement::at((x, y)) + PathElement::new(vec![(first.0, 0), (first.1, 0)], stroke) + PathElement::new(vec![(second.0, 0), (second.1, 0)], stroke);
            let series = match line.dashed {
                true => chart.draw_series(DashedLineSeries::new(points.iter().copied(), 6, 4, color.stroke_width(2)))?,
                false => chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?,
            };
            if column.is_none() {
                series.label(&line.label).legend(marker);
            }
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        match column {
            Some(column) => draw_side_legend(&column, &drawn.iter().map(|(line, _)| *line).collect::<Vec<_>>())?,
            None => draw_legend_at(&mut chart, legend)?,
        }
        // A legend half the plot's height hides lines wherever it goes.
        let tall = legend_box(&labels).1 > (ys.end - ys.start) / 2;
        Ok(hidden > 0 || tall)
    }
}

/// The two pieces of a legend's marker, in pixels from its left end.
fn marker_pieces(dashed: bool) -> [(i32, i32); 2] {
    if dashed { [(0, 6), (10, 16)] } else { [(0, 9), (9, 18)] }
}

/// The legend in its own column right of the plot, top aligned.
fn draw_side_legend<DB: DrawingBackend>(column: &DrawingArea<DB, plotters::coord::Shift>, lines: &[&Line]) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, line) in lines.iter().enumerate() {
        let y = 24 + 20 * row as i32;
        let color = PALETTE[line.place % PALETTE.len()];
        for (from, to) in marker_pieces(line.dashed) {
            column.draw(&PathElement::new(vec![(4 + from, y), (4 + to, y)], color.stroke_width(2)))?;
        }
        column.draw_text(&line.label, &style, (28, y))?;
    }
    Ok(())
}

/// Where the legend hides the fewest points and the least of the lines, of
/// nine places tried top left first: lines of engines of like speed can run
/// along the top left and would vanish under it. `lines`: each line's points
/// in pixels from the plotting area's top left corner. With the place, how
/// many points it hides.
fn clearest_place(area: (i32, i32), lines: &[Vec<(i32, i32)>], labels: &[&str]) -> (SeriesLabelPosition, usize) {
    use SeriesLabelPosition::*;
    let (w, h) = legend_box(labels);
    let hidden = |place: &SeriesLabelPosition| {
        let x = match place {
            UpperLeft | MiddleLeft | LowerLeft => 5,
            UpperMiddle | MiddleMiddle | LowerMiddle => (area.0 - w) / 2,
            _ => area.0 - w - 5,
        };
        let y = match place {
            UpperLeft | UpperMiddle | UpperRight => 5,
            MiddleLeft | MiddleMiddle | MiddleRight => (area.1 - h) / 2,
            _ => area.1 - h - 5,
        };
        let inside = |(px, py): (i32, i32)| (x - 6..x + w).contains(&px) && (y - 6..y + h).contains(&py);
        let points = lines.iter().flatten().filter(|&&p| inside(p)).count();
        let along = lines
            .iter()
            .flat_map(|line| line.windows(2))
            .flat_map(|pair| (1..40).map(move |i| (pair[0].0 + (pair[1].0 - pair[0].0) * i / 40, pair[0].1 + (pair[1].1 - pair[0].1) * i / 40)))
            .filter(|&p| inside(p))
            .count();
        // A point counts as much as a quarter of a line's length.
        (points * 10 + along, points)
    };
    let places = [UpperLeft, UpperRight, LowerRight, LowerLeft, MiddleRight, MiddleLeft, UpperMiddle, LowerMiddle, MiddleMiddle];
    places.into_iter().map(|place| (hidden(&place), place)).min_by_key(|((score, _), _)| *score).map_or((UpperLeft, 0), |((_, points), place)| (place, points))
}

/// The points' range with a margin on a log axis, at least a decade wide
/// (centred on the points) so the axis always has numbered ticks, even for a
/// single value; a fixed one when there are no values.
fn span(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.filter(|v| *v > 0.0).fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return 0.1..10.0;
    }
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    if hi / lo >= 10.0 {
        return lo..hi;
    }
    let (centre, half_decade) = ((lo * hi).sqrt(), 10f64.sqrt());
    centre / half_decade..centre * half_decade
}

/// 1, 2 and 5 times each power of ten within `range`.
fn ticks_in(range: &std::ops::Range<f64>) -> Vec<f64> {
    let (first, last) = (range.start.log10().floor() as i32, range.end.log10().ceil() as i32);
    (first..=last).flat_map(|power| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(power))).filter(|v| range.contains(v)).collect()
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
            x_ticks: Vec::new(),
            lines: points.into_iter().enumerate().map(|(place, points)| Line { label: format!("e{place}"), place, points, dashed: false }).collect(),
            note: None,
            marks: Vec::new(),
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
    fn a_point_at_zero_is_left_out_not_drawn_off_the_axis() {
        let svg = lines(vec![vec![(1.0, 0.0), (4.0, 20.0), (16.0, 30.0)], vec![(1.0, 0.0)]]).svg().unwrap();
        assert_eq!(svg.matches("<circle").count(), 2, "the two points above zero: {svg:.400}");
        assert!(!svg.contains("e1"), "a line with no point left has no legend entry");
    }

    #[test]
    fn given_x_ticks_number_the_axis_and_a_note_goes_under_it() {
        let mut chart = lines(vec![vec![(1.0, 5.0), (4.0, 9.0), (16.0, 12.0)]]);
        chart.x_ticks = vec![1.0, 4.0, 16.0];
        chart.note = Some("no point for e1".into());
        let svg = chart.svg().unwrap();
        let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
        for label in ["1", "4", "16", "no point for e1"] {
            assert!(texts.contains(&label), "{label} in {texts:?}");
        }
        assert!(!texts.contains(&"2"), "no 1-2-5 ticks on x when given: {texts:?}");
    }

    #[test]
    fn a_mark_is_drawn_dashed_and_labelled_even_beyond_the_points() {
        let mut chart = lines(vec![vec![(100.0, 5.0), (400.0, 2.0)]]);
        chart.marks = vec![Mark { x: 1600.0, label: "e0 data".into() }];
        let svg = chart.svg().unwrap();
        assert!(svg.contains("e0 data"), "the mark's label");
        let dashes = svg.split("<polyline").filter(|l| l.contains("stroke=\"#6E6E6E\"")).count();
        assert_eq!(dashes, 20, "twenty grey dashes");
        let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
        assert!(texts.contains(&"1k"), "the x axis reaches the mark: {texts:?}");
    }

    #[test]
    fn a_single_size_still_gets_numbered_axes() {
        let svg = lines(vec![vec![(46_212.0, 4_643.0)], vec![(46_212.0, 8_166.0)]]).svg().unwrap();
        let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
        let ticks = texts.iter().filter(|t| t.starts_with(|c: char| c.is_ascii_digit())).count();
        assert!(ticks >= 4, "at least two numbered ticks per axis: {texts:?}");
    }

    #[test]
    fn the_legend_goes_where_it_hides_nothing() {
        use SeriesLabelPosition::*;
        let labels = ["postgres", "postgres-tuned"];
        // Two lines along the top, from left to right: the legend goes low.
        let along_the_top = vec![vec![(10, 20), (300, 25), (600, 30)], vec![(10, 40), (300, 45), (600, 50)]];
        assert!(matches!(clearest_place((620, 330), &along_the_top, &labels).0, LowerRight), "along the top");
        // Lines everywhere but the upper left: the first place tried.
        let low = vec![vec![(10, 300), (600, 300)], vec![(600, 10), (600, 300)]];
        assert!(matches!(clearest_place((620, 330), &low, &labels).0, UpperLeft));
        // A rising line and one along the bottom: upper left.
        let rising = vec![vec![(10, 300), (600, 10)], vec![(10, 320), (600, 320)]];
        assert!(matches!(clearest_place((620, 330), &rising, &labels).0, UpperLeft));
    }

    #[test]
    fn a_legend_that_would_hide_a_point_goes_beside_the_plot_and_cold_lines_are_dashed() {
        // Sixteen lines over the whole plot, as a sweep's disk chart draws:
        // no place inside is clear.
        let mut chart = lines((0..16).map(|i| vec![(1e3, 50.0 / f64::from(i + 1)), (5e3, 10.0 / f64::from(i + 1)), (1e4, 2.0 + f64::from(i))]).collect());
        for (i, line) in chart.lines.iter_mut().enumerate() {
            line.place = i / 2;
            line.dashed = i % 2 == 1;
        }
        let svg = chart.svg().unwrap();
        let width: u32 = svg.split("width=\"").nth(1).and_then(|w| w.split('"').next()).and_then(|w| w.parse().ok()).unwrap();
        assert!(width > SIZE.0, "a wider canvas for the legend beside the plot: {width}");
        let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
        for i in 0..16 {
            assert!(texts.contains(&format!("e{i}").as_str()), "e{i} in the legend: {texts:?}");
        }
        // A solid line is one polyline; a dashed one, many short ones.
        let polylines = svg.matches("<polyline").count();
        assert!(polylines > 16 * 2 + 8 * 10, "the dashed lines drawn in pieces: {polylines}");
        // Two lines that leave a corner free keep the legend inside, on the canvas asked for.
        let svg = lines(vec![vec![(1e5, 0.01), (1e6, 0.1)], vec![(1e5, 0.5), (1e6, 0.6)]]).svg().unwrap();
        assert!(svg.contains(&format!("width=\"{}\"", SIZE.0)), "{svg:.200}");
    }

    #[test]
    fn a_mark_near_the_right_edge_is_labelled_to_its_left() {
        let mut chart = lines(vec![vec![(1e3, 5.0), (5e3, 2.0)]]);
        chart.marks = vec![Mark { x: 1e4, label: "free: this disk, 9975 random reads/s measured".into() }];
        let svg = chart.svg().unwrap();
        let text = svg.split("<text").find(|t| t.contains("free: this disk")).unwrap();
        assert!(text.contains("text-anchor=\"end\""), "ends at its line, on the canvas: {text}");
    }

    #[test]
    fn ticks_are_one_two_five_of_each_decade() {
        assert_eq!(ticks_in(&(0.15..60.0)), [0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(ticks_in(&(3.0..4.0)), Vec::<f64>::new());
    }

    #[test]
    fn ticks_read_as_people_write_numbers() {
        assert_eq!(tick(2_500_000.0), "2.5M");
        assert_eq!(tick(25_000.0), "25k");
        assert_eq!(tick(0.0123), "0.0123");
    }
}

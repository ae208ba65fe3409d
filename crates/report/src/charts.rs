//! The run as SVG charts: per query and variant a bar per engine (median
//! seconds, min–max whisker), then load throughput and storage per engine,
//! then (with a concurrency phase) rate and latency against clients.
//! An engine without a number gets a labelled gap, not a bar, so a failed
//! engine is seen as failed rather than as fast.

use ghbench_core::Engine;
use plotters::style::RGBColor;

use super::bars::{Bar, Bars, PALETTE};
use super::lines::Lines;
use super::{failed_said, mark, result_for, seconds, verdict, ResultsView};
use ghbench_record::run::{EngineRecord, QueryRecord, RunRecord};

/// One chart, drawn.
pub struct Chart {
    /// Names its file: `A-corrected`, `load`, `storage`.
    pub name: String,
    /// What it shows, in a line (alt text, captions).
    pub title: String,
    pub svg: String,
}

impl Chart {
    /// `<name>.svg`.
    pub fn file_name(&self) -> String {
        format!("{}.svg", self.name)
    }
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {name}: {reason}")]
pub struct ChartError {
    pub name: String,
    pub reason: String,
}

/// The name of the chart of every query and engine, drawn first.
pub const OVERVIEW: &str = "overview";

/// Every chart of a run: the overview, the queries in run order, then load,
/// then storage, then the concurrency phase's (see
/// [`super::concurrency::CHARTS`]) when it ran.
pub fn charts(record: &RunRecord) -> Result<Vec<Chart>, ChartError> {
    let view = ResultsView::of(record);
    let overview = super::overview::overview_svg(&view).map_err(|reason| ChartError { name: OVERVIEW.into(), reason })?;
    let mut drawn = vec![Chart { name: OVERVIEW.into(), title: "Every query, every engine: seconds (log scale)".into(), svg: overview }];
    for q in &record.queries {
        drawn.push(draw(file_stem(&format!("{}-{}", q.query, q.variant)), query_bars(&view, q))?);
    }
    drawn.push(draw("load".into(), load_bars(&view))?);
    drawn.push(draw("storage".into(), storage_bars(&view))?);
    drawn.extend(super::concurrency::charts(record)?);
    Ok(drawn)
}

/// A line chart named `name` (made a file stem).
pub(crate) fn draw_lines(name: &str, lines: Lines) -> Result<Chart, ChartError> {
    let name = file_stem(name);
    let svg = lines.svg().map_err(|reason| ChartError { name: name.clone(), reason })?;
    Ok(Chart { name, title: lines.title, svg })
}

/// An engine's place in the run, which gives its colour in every chart; one
/// the run does not list gets a colour none of its engines has.
pub(crate) fn engine_place(record: &RunRecord, engine: &Engine) -> usize {
    let engines = &record.context.engines;
    engines.iter().position(|e| e.engine == *engine).unwrap_or(engines.len())
}

fn draw(name: String, bars: Bars) -> Result<Chart, ChartError> {
    let svg = bars.svg().map_err(|reason| ChartError { name: name.clone(), reason })?;
    Ok(Chart { name, title: bars.title, svg })
}

/// Letters, digits, `-` and `_` only: query and variant names come from a
/// catalog folder, and a file name must not climb out of the charts folder.
pub(crate) fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// What a chart says of one engine: its bar's parts (or why it has none),
/// its whisker, and the label above it.
type EngineBar = (Result<Vec<f64>, String>, Option<(f64, f64)>, String);

/// A bar per engine of the run, in the run's order and colours.
fn per_engine(view: &ResultsView, bar: impl Fn(&EngineRecord) -> EngineBar) -> Vec<Bar> {
    view.record
        .context
        .engines
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (parts, whisker, value_label) = bar(e);
            Bar { label: e.engine.to_string(), color: PALETTE[i % PALETTE.len()], parts, whisker, value_label }
        })
        .collect()
}

/// The bars with their words; under them "no bar for x, y: `gaps`" when
/// some engine has no bar.
fn titled(bars: Vec<Bar>, title: String, subtitle: String, y_label: &str, gaps: &str) -> Bars {
    let missing: Vec<&str> = bars.iter().filter(|b| b.parts.is_err()).map(|b| b.label.as_str()).collect();
    let note = (!missing.is_empty()).then(|| format!("no bar for {}: {gaps}", missing.join(", ")));
    Bars { title, subtitle, y_label: y_label.into(), bars, note }
}

fn query_bars(view: &ResultsView, q: &QueryRecord) -> Bars {
    let bars = per_engine(view, |e| match result_for(q, &e.engine) {
        None => (Err("not run".into()), None, String::new()),
        Some(r) if r.error.is_some() => (Err(failed_said(r)), None, String::new()),
        Some(r) => match r.stats {
            None => (Err("no timing".into()), None, String::new()),
            Some(s) => (Ok(vec![s.median]), Some((s.min, s.max)), format!("{} {}", seconds(s.median), mark(r))),
        },
    });
    let title = format!("Query {} ({}): {}", q.query, q.variant, verdict(q.verification.status));
    let subtitle = format!("{}; median of {}, whisker min–max", q.title, super::timed_runs_said(&view.record.context));
    titled(bars, title, subtitle, "seconds", "see the results table")
}

fn load_bars(view: &ResultsView) -> Bars {
    let bars = per_engine(view, |e| match e.data.as_ref().and_then(|d| Some((d.events_per_second()?, d.load_retries))) {
        // A rate from a time that includes retries says so, as the time does.
        Some((rate, retries)) => (Ok(vec![rate]), None, format!("{rate:.0}{}", super::retries_note(retries).map(|n| format!(" ({n})")).unwrap_or_default())),
        None => (Err("no load time".into()), None, String::new()),
    });
    let subtitle = "events per second of loading, per the ingest ledger (hours' times summed)";
    titled(bars, "Load throughput".into(), subtitle.into(), "events/s", "their ledgers hold no load time")
}

pub(crate) const MIB: f64 = (1u64 << 20) as f64;

fn storage_bars(view: &ResultsView) -> Bars {
    let bars = per_engine(view, |e| match &e.storage {
        Some(s) => {
            let (table, indexes) = (s.table_bytes as f64 / MIB, s.index_bytes as f64 / MIB);
            (Ok(vec![table, indexes]), None, format!("{:.1} MiB", table + indexes))
        }
        None => (Err("size unknown".into()), None, String::new()),
    });
    let subtitle = "bytes on disk: table (dark) and its indexes (light, stacked on top)";
    titled(bars, "Storage".into(), subtitle.into(), "MiB", "they could not say their size")
}

/// The colour an engine's bars have in every chart of this run, as `#rrggbb`
/// (for a page's table to match its charts).
pub fn engine_color(view: &ResultsView, engine: &Engine) -> Option<String> {
    let i = view.engines.iter().position(|e| *e == engine)?;
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    Some(format!("#{r:02x}{g:02x}{b:02x}"))
}

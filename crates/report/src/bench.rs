//! Views of a `ghbench bench` record: per size the loads, index builds and
//! the queries' cold and hot times; across sizes the growth of each engine's
//! query time (log–log charts and the fitted slopes). The largest size's run
//! is then shown in full by the run views ([`super::markdown`], [`super::html`]).
//! Tables are built once ([`TextTable`]) and shown by both the Markdown and
//! the HTML page.

use std::fmt::Write as _;

use serde::Serialize;

use super::charts::{charts, draw_lines, engine_place, Chart, ChartError, MIB};
use super::lines::{Line, Lines};
use super::summary::summary_table;
use super::{align_numbers, mark, median_said, new_table, result_for, seconds, terminal_width, verification_summary, ResultsView, Style, TERMINAL_WIDTH};
use ghbench_record::bench::{BenchRecord, SizeRecord};
use ghbench_record::run::RunRecord;

/// A table as text cells, for Markdown and for the page.
#[derive(Debug, Serialize)]
pub struct TextTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines under the table, for what would widen a cell (`postgres: the
    /// load time includes 2 retries`).
    pub notes: Vec<String>,
    /// How many leading columns hold names (left-aligned, never wrapped).
    text_columns: usize,
    /// How many trailing columns hold words, e.g. a reason (left-aligned,
    /// wrapped like the numbers).
    text_last: usize,
}

impl TextTable {
    pub(crate) fn new(header: &[&str]) -> TextTable {
        TextTable { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new(), notes: Vec::new(), text_columns: 1, text_last: 0 }
    }

    /// The same table whose first `n` columns hold names.
    pub(crate) fn with_text_columns(self, n: usize) -> TextTable {
        TextTable { text_columns: n, ..self }
    }

    /// The same table whose last `n` columns hold words.
    pub(crate) fn with_text_last(self, n: usize) -> TextTable {
        TextTable { text_last: n, ..self }
    }

    pub fn render(&self, style: Style) -> String {
        self.render_within(style, TERMINAL_WIDTH)
    }

    /// In a terminal, wrapped to `width` columns (see [`terminal_width`]).
    pub fn render_within(&self, style: Style, width: u16) -> String {
        let mut table = new_table(style, self.header.clone());
        for row in &self.rows {
            // A line break in a cell says where a terminal may wrap it; in
            // Markdown it would end the row.
            table.add_row(row.iter().map(|cell| cell.replace('\n', style.gap())));
        }
        align_numbers(&mut table, self.text_columns);
        for column in table.column_iter_mut().rev().take(self.text_last) {
            column.set_cell_alignment(comfy_table::CellAlignment::Left);
        }
        super::fit(&mut table, style, width, self.text_columns);
        let mut text = table.to_string();
        for note in &self.notes {
            let _ = write!(text, "{}{note}", if let Style::Markdown = style { "\n\n" } else { "\n" });
        }
        text
    }
}

/// The run whose full report follows the bench's own tables: the largest size.
pub fn largest(record: &BenchRecord) -> Option<&RunRecord> {
    record.sizes.last().map(|s| &s.run)
}

/// What the sizes were, in a line.
pub fn data_line(record: &BenchRecord) -> String {
    let d = &record.data;
    let what = match (d.seed, d.events_per_hour) {
        (Some(seed), Some(n)) => format!("generated hours ({n} events each, seed {seed}, {})", d.pools_said().unwrap_or_default()),
        _ => match &d.split {
            Some(split) => format!("hours from {}: {}", d.location, split.said()),
            None => format!("hours from {}", d.location),
        },
    };
    let sizes: Vec<String> = record.sizes.iter().map(|s| format!("{} h = {} events", s.hours, s.events().map_or("?".into(), |n| n.to_string()))).collect();
    format!("{what} from {}; sizes: {}", d.first_hour, sizes.join(", "))
}

/// One row per engine: its load, its index builds, its size on disk; what
/// qualifies a number (retries, a time from the ledger) in a note under it.
pub fn load_table(size: &SizeRecord) -> TextTable {
    let mut table = TextTable::new(&["engine", "hours", "load s", "events/s", "upkeep s", "indexes s", "table MiB", "indexes MiB"]);
    for load in &size.loads {
        let engine = size.run.context.engines.iter().find(|e| e.engine == load.engine);
        let storage = engine.and_then(|e| e.storage.as_ref());
        let index = size.indexes.iter().find(|i| i.engine == load.engine);
        let index_seconds = match index {
            Some(i) if i.error.is_some() => "failed".to_string(),
            Some(i) if i.indexes.is_empty() => "none taken".to_string(),
            Some(i) if i.indexes.iter().all(|b| !b.created) => "already there".to_string(),
            Some(i) => seconds(i.indexes.iter().map(|b| b.seconds).sum()),
            None => "–".to_string(),
        };
        let no_indexes = index.is_some_and(|i| i.error.is_none() && i.indexes.is_empty());
        let opt = |v: Option<String>| v.unwrap_or_else(|| "–".into());
        // Every hour reused: the ledger's own timing stands in, said so: the wall
        // time of the runs that loaded them (less than this command's for a single
        // hour: no connecting, no VACUUM), or their sum, named so, where older.
        let data = engine.and_then(|e| e.data.as_ref()).filter(|_| load.seconds.is_none());
        let (load_seconds, retries) = match (load.seconds, data) {
            (Some(s), _) => (Some(seconds(s)), load.retries),
            (None, Some(d)) => {
                table.notes.push(format!("{}: every hour reused; load s and events/s are from its ingest ledger, the wall time of the runs that loaded them", load.engine));
                // Its retries are said in the cell.
                (super::load_cell(d), 0)
            }
            (None, None) => (None, 0),
        };
        if let Some(note) = super::retries_note(retries) {
            table.notes.push(format!("{}: the load time {note}", load.engine));
        }
        table.notes.extend(load.warnings.iter().map(|w| format!("{}: warning: {w}", load.engine)));
        let rate = load.events_per_second.or_else(|| data?.events_per_second()).map(|r| format!("{r:.0}"));
        let hours = match load.hours_reused {
            0 => load.hours_loaded.to_string(),
            reused => format!("{} + {reused} reused", load.hours_loaded),
        };
        table.rows.push(vec![
            load.engine.to_string(),
            hours,
            opt(load_seconds),
            opt(rate),
            opt(load.upkeep_seconds.map(seconds)),
            index_seconds,
            opt(storage.map(|s| format!("{:.1}", s.table_bytes as f64 / MIB))),
            // An engine that takes no indexes has no index size, not a zero one.
            opt(storage.filter(|s| !(no_indexes && s.index_bytes == 0)).map(|s| format!("{:.1}", s.index_bytes as f64 / MIB))),
        ]);
    }
    table.notes.extend(size.memory_during_load.iter().map(ghbench_record::bench::LoadMemory::said));
    table.notes.extend(size.estimate_lines());
    if let Some(peaks) = &size.ghbench_memory {
        table.notes.push(peaks.said());
    }
    if !size.dropped.is_empty() {
        table.notes.push(format!("tables dropped once measured (--drop-measured): {}", size.dropped.join("; ")));
    }
    let mut at_once: Vec<usize> = size.loads.iter().filter(|l| l.seconds.is_some()).map(|l| l.concurrency).filter(|n| *n > 0).collect();
    at_once.dedup();
    if let [n] = at_once.as_slice() {
        // Within the 80 columns of the table above.
        table.notes.push(format!("hours loaded up to {n} at a time; events/s leave the upkeep out"));
    }
    table
}

/// One size for the terminal, as `ghbench bench` shows it and `ghbench
/// report` again: its data and table, the loads, the damaged input, the queries.
pub fn size_text(size: &SizeRecord) -> String {
    let width = terminal_width(size.run.context.engines.len());
    let loads = load_table(size).render_within(Style::Terminal, width);
    let mut text = format!("{} h, {} events in '{}':\n{loads}\n", size.hours, size.events().unwrap_or(0), size.table);
    for line in size.damage_lines() {
        let _ = writeln!(text, "damaged input: {line}");
    }
    text += &query_table(&size.run).render_within(Style::Terminal, width);
    if let Some(setups) = setups_table(&size.run) {
        let _ = write!(text, "\nEach setup against the one it changes:\n{}", setups.render_within(Style::Terminal, width));
    }
    text
}

/// One row per query, variant and engine: the cold run beside the hot ones
/// (their median, how many and their range); under it the slow first runs.
pub fn query_table(run: &RunRecord) -> TextTable {
    let mut table = TextTable::new(&["query", "engine", "cold s", "hot median s (n, range)", "rows", "verified"]);
    for q in &run.queries {
        for r in &q.engines {
            table.rows.push(vec![
                super::query_label(q),
                r.engine.to_string(),
                super::cold_said(r, "\n").unwrap_or_else(|| "–".into()),
                median_said(r.hot_stats(), "\n"),
                r.rows.map_or_else(|| "–".into(), |n| n.to_string()),
                mark(r).to_string(),
            ]);
        }
    }
    table.notes = super::first_run_notes(run);
    table.with_text_columns(2)
}

/// Each setup against the one it changes (`postgres-tuned` against
/// `postgres`, as its `setup.of` says), one row per query and variant: both
/// hot medians (and cold runs, if any) and how many times faster the setup is.
/// None when the run has no such pair.
pub fn setups_table(run: &RunRecord) -> Option<TextTable> {
    let engines = &run.context.engines;
    let pairs: Vec<(&ghbench_record::run::EngineRecord, &ghbench_record::run::EngineRecord)> = engines
        .iter()
        .filter_map(|tuned| {
            let of = tuned.setup.as_ref()?.of.as_deref()?;
            Some((engines.iter().find(|e| e.engine == *of)?, tuned))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let cold = run.context.cold.requested;
    let mut header = vec!["query", "setup", "of", "hot median s", "its hot median s", "faster by ×"];
    if cold {
        header.extend(["cold s", "its cold s", "cold faster by ×"]);
    }
    let mut table = TextTable::new(&header);
    let cell = |v: Option<f64>| v.map(seconds).unwrap_or_else(|| "–".into());
    let times = |paper: Option<f64>, tuned: Option<f64>| match (paper, tuned) {
        // Two figures below 1 (0.033, not 0.0), as every ratio is said.
        (Some(p), Some(t)) if t > 0.0 => ghbench_record::run::ratio_text(p / t).trim_end_matches('×').to_string(),
        _ => "–".to_string(),
    };
    for q in &run.queries {
        for (paper, tuned) in &pairs {
            let (Some(p), Some(t)) = (result_for(q, &paper.engine), result_for(q, &tuned.engine)) else { continue };
            // The medians alone: their runs and range are in the query table above.
            let (p_hot, t_hot) = (p.stats.map(|s| s.median), t.stats.map(|s| s.median));
            let mut row = vec![super::query_label(q), tuned.engine.to_string(), paper.engine.to_string(), cell(t_hot), cell(p_hot), times(p_hot, t_hot)];
            if cold {
                let (p_cold, t_cold) = (p.cold_seconds(), t.cold_seconds());
                row.extend([cell(t_cold), cell(p_cold), times(p_cold, t_cold)]);
            }
            table.rows.push(row);
        }
    }
    Some(table.with_text_columns(3))
}

pub use super::growth::growth_table;

/// Above a size's concurrency table: every size's is shown, the largest's
/// section (per query, limits, charts) follows with its full report.
pub(crate) const LOAD_HEADING: &str = "Many clients at once (the largest size's in full below):";

/// A bench's charts, drawn once for every view that shows them (none by default).
#[derive(Default)]
pub struct BenchCharts {
    /// How each engine's times grow with the data (none with a single size).
    pub growth: Vec<Chart>,
    /// The largest size's run: a bar chart per query, load and storage.
    pub largest: Vec<Chart>,
    /// `--regime`: per engine its time against memory.
    pub regime: Vec<Chart>,
}

impl BenchCharts {
    pub fn draw(record: &BenchRecord) -> Result<BenchCharts, ChartError> {
        let largest = match largest(record) {
            Some(run) => charts(run)?,
            None => Vec::new(),
        };
        let regime = match &record.regime {
            Some(regime) => super::regime::regime_charts(record, regime)?,
            None => Vec::new(),
        };
        Ok(BenchCharts { growth: growth_charts(record)?, largest, regime })
    }

    pub fn all(&self) -> impl Iterator<Item = &Chart> {
        self.growth.iter().chain(&self.regime).chain(&self.largest)
    }
}

/// The growth charts: per query and variant a line per engine (hot median
/// against events, log–log), then the load rate against events. None with a
/// single size.
fn growth_charts(record: &BenchRecord) -> Result<Vec<Chart>, ChartError> {
    let Some(run) = largest(record).filter(|_| record.sizes.len() > 1) else { return Ok(Vec::new()) };
    let place = |engine: &ghbench_core::Engine| engine_place(run, engine);
    let mut drawn = Vec::new();
    for q in &run.queries {
        let lines = record
            .growth
            .iter()
            .filter(|g| g.query == q.query && g.variant == q.variant)
            .map(|g| Line { label: g.engine.to_string(), place: place(&g.engine), points: g.points.iter().map(|&(n, s)| (n as f64, s)).collect(), dashed: false })
            .collect();
        let chart = Lines {
            title: format!("Query {} ({}): time against data", q.query, q.variant),
            subtitle: format!("{}; hot median per size, log–log", q.title),
            x_label: "events loaded".into(),
            y_label: "seconds".into(),
            x_ticks: Vec::new(),
            lines,
            note: None,
            marks: Vec::new(),
        };
        drawn.push(draw_lines(&format!("growth-{}-{}", q.query, q.variant), chart)?);
    }
    let loads = run
        .context
        .engines
        .iter()
        .map(|e| Line {
            label: e.engine.to_string(),
            place: place(&e.engine),
            points: record
                .sizes
                .iter()
                .filter_map(|s| Some((s.events()? as f64, s.loads.iter().find(|l| l.engine == e.engine)?.events_per_second?)))
                .collect(),
            dashed: false,
        })
        .collect();
    // A reused size has no load of this run to time; the ledger's summed
    // hours measure something else, so the chart leaves it out and says so.
    let reused = record.sizes.iter().any(|s| s.loads.iter().any(|l| l.seconds.is_none()));
    // A point whose load time includes retries is slower than the engine: said.
    let retried: Vec<String> = record
        .sizes
        .iter()
        .flat_map(|s| s.loads.iter().filter(|l| l.seconds.is_some()).filter_map(move |l| Some(format!("{} h {} {}", s.hours, l.engine, super::retries_note(l.retries)?))))
        .collect();
    let subtitle = format!(
        "events per second of each engine's own load run (wall clock), per size{}{}",
        if reused { "; sizes reused from an earlier run have no point (--fresh times every load)" } else { "" },
        if retried.is_empty() { String::new() } else { format!("; {}", retried.join(", ")) }
    );
    let chart = Lines {
        title: "Load rate against data".into(),
        subtitle,
        x_label: "events loaded".into(),
        y_label: "events/s".into(),
        x_ticks: Vec::new(),
        lines: loads,
        note: None,
        marks: Vec::new(),
    };
    drawn.push(draw_lines("growth-load", chart)?);
    Ok(drawn)
}

/// The bench's own part of the Markdown report: the data, per size the loads
/// and the queries, the growth with its charts (linked as `<dir>/<name>.svg`).
/// A bench made in two runs (`--resume`), said: which sizes the first measured.
/// And a bench that stopped before its last size, said.
pub fn partial_lines(record: &BenchRecord) -> Vec<String> {
    let sizes = record.sizes.iter().map(|s| format!("{} h", s.hours)).collect::<Vec<_>>().join(", ");
    // The size it stopped in: the queries it finished there, kept for `--resume`.
    let stopped_in = record.measuring.as_ref().map_or_else(String::new, |m| {
        let queries: Vec<String> = m.run.queries.iter().map(|q| format!("{} {}", q.query, q.variant)).collect();
        format!(" (of the {} h size it stopped in, {} finished: {}, kept to go on from)", m.hours, queries.len(), queries.join(", "))
    });
    // A sweep stopped part way: the points it measured are kept too.
    let points: Vec<String> = record.regime.iter().flat_map(|r| &r.points).map(super::regime::point_heading).collect();
    let swept = match points.as_slice() {
        [] => String::new(),
        points => format!(" and {} of its sweep ({})", ghbench_core::count_of(points.len(), "point"), points.join("; ")),
    };
    let unfinished = (!record.finished).then(|| match record.sizes.is_empty() {
        true => format!("UNFINISHED: the bench stopped before its first size was measured{stopped_in}"),
        false => format!("UNFINISHED: the bench stopped after size(s) {sizes}{swept}; this record holds those alone{stopped_in}"),
    });
    unfinished.into_iter().chain(resumed_line(record)).collect()
}

/// Loud lines for the whole bench: partial, then each size's failed
/// indexes, mismatches and failures (`8 h: MISMATCH …`), then each
/// `--regime` point's (`under a 320.0 MiB limit: …`).
pub fn bench_problems(record: &BenchRecord) -> Vec<String> {
    let sizes = record.sizes.iter().flat_map(|s| s.index_failures().into_iter().chain(super::problems(&s.run)).map(move |p| format!("{} h: {p}", s.hours)));
    let points = record.regime.iter().flat_map(|r| &r.points);
    let limited = points.flat_map(|p| super::problems(&p.run).into_iter().map(move |line| format!("under a {}: {line}", super::regime::point_heading(p))));
    partial_lines(record).into_iter().chain(sizes).chain(limited).collect()
}

fn resumed_line(record: &BenchRecord) -> Option<String> {
    let r = record.resumed.as_ref()?;
    let stopped = if r.runs().len() > 1 { "each of which stopped" } else { "which stopped" };
    Some(format!("RESUMED: sizes {}, {stopped}; the rest by this one, on the same data, servers and settings", r.said("measured", "bench")))
}

/// What a bench ran on, for the terminal: its data, its preset written
/// down, the machine and its disk (as the Markdown says them).
pub fn head_lines(record: &BenchRecord) -> Vec<String> {
    let mut lines = vec![format!("data: {}", data_line(record))];
    if let Some(preset) = &record.preset {
        let mut said = super::setup_said(preset).into_iter();
        lines.push(format!("preset: {}", said.next().unwrap_or_default()));
        lines.extend(said.map(|line| format!("  - {line}")));
    }
    let run = largest(record).or(record.measuring.as_ref().map(|m| &m.run));
    lines.extend(run.map(|run| format!("machine: {}", super::machine_line(&run.context.machine))));
    lines
}

pub fn bench_markdown(record: &BenchRecord, charts: &BenchCharts, dir: &str) -> String {
    let mut md = String::new();
    let Some(run) = largest(record) else { return md };
    let _ = writeln!(md, "# ghbench bench, {}\n", run.context.started_at);
    let _ = writeln!(md, "Data: {}.\n\nFirst runs: {}.\n", data_line(record), run.context.cold.label);
    for line in partial_lines(record) {
        let _ = writeln!(md, "**{line}**\n");
    }
    if let Some(preset) = &record.preset {
        let mut lines = super::setup_said(preset).into_iter();
        let _ = writeln!(md, "Preset: {}\n", lines.next().unwrap_or_default());
        for line in lines {
            let _ = writeln!(md, "- {line}");
        }
        md.push('\n');
    }
    // The answer first: the largest size's summary (its full report follows the sizes).
    let (events, summary) = (run.context.engines.first().and_then(|e| e.data.as_ref()).map_or(0, |d| d.events), summary_table(&ResultsView::of(run)));
    let _ = writeln!(md, "## Summary at the largest size ({events} events)\n\n{}\n", summary.render(Style::Markdown));
    let _ = writeln!(md, "**Verification:** {}\n", verification_summary(run));
    for size in &record.sizes {
        let (verdict, _) = size.verdict();
        let _ = writeln!(md, "## {}, {} events (table `{}`): {verdict}\n", ghbench_core::count_of(size.hours as usize, "hour"), size.events().unwrap_or(0), size.table);
        let _ = writeln!(md, "{}\n", load_table(size).render(Style::Markdown));
        for line in size.damage_lines() {
            let _ = writeln!(md, "**Damaged input**: {line}\n");
        }
        for line in size.index_failures() {
            let _ = writeln!(md, "**{line}**\n");
        }
        let _ = writeln!(md, "{}\n", query_table(&size.run).render(Style::Markdown));
        if let Some(setups) = setups_table(&size.run) {
            let _ = writeln!(md, "Each setup against the one it changes (hot medians; faster by = its time / the setup's):\n\n{}\n", setups.render(Style::Markdown));
        }
        if let Some(load) = &size.run.concurrency {
            let _ = writeln!(md, "{LOAD_HEADING}\n\n{}\n", super::concurrency::load_table(load).render(Style::Markdown));
        }
    }
    if !record.growth.is_empty() {
        let _ = writeln!(md, "## Growth with the data\n\n{}\n", growth_table(record).render(Style::Markdown));
        if let Some(engines) = super::growth::engine_growth_table(record) {
            let _ = writeln!(md, "Each engine's load, index builds and stored bytes against the events:\n\n{}\n", engines.render(Style::Markdown));
        }
        let grew = super::growth::what_grew(record);
        if !grew.is_empty() {
            let _ = writeln!(md, "Faster than the data (a log–log slope above {}), from what the record keeps:\n", ghbench_record::bench::SUPERLINEAR);
            for line in grew {
                let _ = writeln!(md, "- {line}");
            }
            md.push('\n');
        }
        md += &super::markdown::chart_links(&charts.growth, dir);
    }
    if let Some(regime) = &record.regime {
        md += &super::regime::regime_markdown(record, regime, &charts.regime, dir);
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_tables_become_markdown() {
        let mut t = TextTable::new(&["engine", "s"]);
        t.rows.push(vec!["postgres".into(), "0.5".into()]);
        let md = t.render(Style::Markdown);
        assert!(md.contains("| engine") && md.contains("postgres") && md.contains("0.5"), "{md}");
    }
}

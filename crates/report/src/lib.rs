//! Views of a run record, by kind: [`terminal`] (the table and the lines
//! around it), [`markdown`] (the report file), [`comparison`] (two runs),
//! [`charts`] (SVG pictures, drawn by `bars`) and [`html`] (one
//! self-contained page). All read the record only, through one view model
//! ([`ResultsView`]), so a saved JSON file renders exactly as the run that
//! wrote it, and a new view is one more file.
//!
//! This crate depends on the records (`ghbench-record`) and the shared
//! vocabulary (`ghbench-core`) only: nothing here measures, so views can
//! change without touching how a run is timed.

mod bars;
pub mod bench;
pub mod charts;
pub mod comparison;
pub mod concurrency;
pub mod growth;
pub mod html;
mod lines;
mod overview;
pub mod markdown;
pub mod paper;
pub mod regime;
pub mod summary;
pub mod terminal;

use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use std::fmt::Write as _;

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};
use ghbench_core::Engine;

use ghbench_record::run::{faster_by, Context, DataLoaded, EngineRecord, EngineResult, Machine, QueryRecord, RunRecord, Stats, VerificationStatus, SLOW_FIRST_RUN_FACTOR};

pub use charts::{charts, Chart, ChartError};
pub use comparison::{bench_comparison, comparison, DEFAULT_NOISE};
pub use html::{bench_html, html, HtmlError};
pub use markdown::{markdown, markdown_with_charts};
pub use terminal::server_lines;

/// Which table style: for a terminal, or for a Markdown file.
#[derive(Clone, Copy)]
pub enum Style {
    Terminal,
    Markdown,
}

impl Style {
    /// Between a median and the runs under it: a line break a terminal's
    /// narrow cell wraps at; a space in Markdown, where it would end the row.
    pub(crate) fn gap(self) -> &'static str {
        match self {
            Style::Terminal => "\n",
            Style::Markdown => " ",
        }
    }
}

pub(crate) fn new_table(style: Style, header: Vec<String>) -> Table {
    let mut table = Table::new();
    table.load_style(match style {
        Style::Terminal => UTF8_FULL_CONDENSED,
        Style::Markdown => ASCII_MARKDOWN,
    });
    table.set_header(header);
    table
}

/// Right-aligns every column but the first `text_columns`.
pub(crate) fn align_numbers(table: &mut Table, text_columns: usize) {
    for column in table.column_iter_mut().skip(text_columns) {
        column.set_cell_alignment(CellAlignment::Right);
    }
}

pub fn seconds(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.4}")
    }
}

/// The runs a statistic rests on and their range: `n=3, 0.0095 – 0.0110`
/// (seconds; spaced, so a narrow terminal column wraps there, not inside a
/// number); `n=1` alone.
pub(crate) fn runs_said(stats: &Stats) -> String {
    match stats.n {
        0 | 1 => format!("n={}", stats.n),
        n => format!("n={n}, {} – {}", seconds(stats.min), seconds(stats.max)),
    }
}

/// A median with the runs under it, `0.0100 (n=3, 0.0095 – 0.0110)`, the two
/// parts apart by `gap` (a line break lets a terminal's narrow cell wrap
/// there); `–` without one.
pub(crate) fn median_said(stats: Option<Stats>, gap: &str) -> String {
    stats.map_or_else(|| "–".into(), |s| format!("{}{gap}({})", seconds(s.median), runs_said(&s)))
}

/// The cold runs of a result: the one run's time, or with several (`--cold-repeat`)
/// their median and range as [`median_said`] says it; None without a cold run.
pub(crate) fn cold_said(result: &EngineResult, gap: &str) -> Option<String> {
    let stats = result.cold_stats()?;
    Some(match stats.n {
        0 | 1 => seconds(stats.median),
        _ => median_said(Some(stats), gap),
    })
}

/// A line per engine and query whose first hot run was far slower than the
/// others (see [`ghbench_record::run::SlowFirstRun`]): a note beside the numbers,
/// not a failure.
pub fn first_run_notes(record: &RunRecord) -> Vec<String> {
    record.queries.iter().flat_map(|q| q.engines.iter().filter_map(move |r| first_run_note(q, r))).collect()
}

/// `A corrected on postgres: the first hot run took …`, as hyperfine warns.
pub(crate) fn first_run_note(query: &QueryRecord, result: &EngineResult) -> Option<String> {
    let slow = result.slow_first_run()?;
    Some(format!(
        "{} on {}: the first hot run took {} s, more than {SLOW_FIRST_RUN_FACTOR}× the median of the other {} ({} s): caches warming? consider more --repeat",
        query_label(query),
        result.engine,
        seconds(slow.first),
        slow.rest,
        seconds(slow.rest_median)
    ))
}

/// Notes under a table: a line each in a terminal (`note: …`), a quoted
/// paragraph each in Markdown.
fn notes_said(notes: &[String], style: Style) -> String {
    let (prefix, apart) = match style {
        Style::Terminal => ("note: ", "\n"),
        Style::Markdown => ("> **Note**: ", "\n\n"),
    };
    notes.iter().map(|n| format!("{prefix}{n}")).collect::<Vec<_>>().join(apart)
}

pub(crate) fn percent(fraction: f64) -> String {
    format!("{:+.2}%", fraction * 100.0)
}

/// The verification mark of one engine's result.
pub(crate) fn mark(result: &EngineResult) -> &'static str {
    match (result.error.is_some(), result.verified) {
        (true, _) => "error",
        (_, Some(true)) => "✓",
        (_, Some(false)) => "✗",
        (_, None) => "–",
    }
}

pub(crate) fn result_for<'a>(query: &'a QueryRecord, engine: &Engine) -> Option<&'a EngineResult> {
    query.engines.iter().find(|e| &e.engine == engine)
}

pub(crate) fn median(query: &QueryRecord, engine: &Engine) -> Option<f64> {
    result_for(query, engine)?.stats.map(|s| s.median)
}

/// The median of an engine that answered (no error) in a time above zero:
/// what a ratio or a bar on a log axis can be made of.
pub(crate) fn answered_median(query: &QueryRecord, engine: &Engine) -> Option<f64> {
    result_for(query, engine).filter(|r| r.error.is_none())?.stats.map(|s| s.median).filter(|m| *m > 0.0)
}

/// What every view shows of a run: the engines in order, the baseline of the
/// "faster by" columns, and per query each engine's cell.
pub struct ResultsView<'a> {
    pub record: &'a RunRecord,
    pub engines: Vec<&'a Engine>,
    /// None when fewer than two engines ran.
    pub baseline: Option<&'a Engine>,
}

impl<'a> ResultsView<'a> {
    pub fn of(record: &'a RunRecord) -> Self {
        let engines: Vec<&Engine> = record.context.engines.iter().map(|e| &e.engine).collect();
        let chosen = record.context.baseline.as_ref().filter(|b| engines.contains(b));
        let baseline = chosen.or(engines.first().copied()).filter(|_| engines.len() > 1);
        ResultsView { record, engines, baseline }
    }

    /// The engines compared with the baseline.
    pub fn others(&self) -> Vec<&'a Engine> {
        self.engines.iter().copied().filter(|e| Some(*e) != self.baseline).collect()
    }

    /// The baseline's `(S-F)/S` against `other` for one query, as a percentage.
    pub fn faster_by(&self, query: &QueryRecord, other: &Engine) -> String {
        let Some(baseline) = self.baseline else { return String::new() };
        match (median(query, baseline), median(query, other)) {
            (Some(b), Some(o)) => faster_by(b, o).map(percent).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Header of a "faster by" column.
    pub fn faster_by_header(&self, other: &Engine) -> String {
        format!("{} faster than {other} by (S-F)/S", self.baseline.map(Engine::name).unwrap_or(""))
    }

    /// Query × engine: each engine's median and its verification mark in
    /// one cell, and the row count the agreeing engines returned; narrow
    /// enough for a terminal (see [`TERMINAL_WIDTH`]).
    pub fn table(&self, style: Style) -> String {
        let mut header = vec!["query".to_string(), "rows".to_string()];
        header.extend(self.engines.iter().map(|e| engine_header(e, style)));
        let mut table = new_table(style, header);
        for query in &self.record.queries {
            let mut row = vec![query_label(query), agreed_rows(query)];
            row.extend(self.engines.iter().map(|e| timing_cell(result_for(query, e), style)));
            table.add_row(row);
        }
        align_numbers(&mut table, 1);
        fit(&mut table, style, terminal_width(self.engines.len()), 1);
        table.to_string()
    }

    /// Each other engine's median as a multiple of the baseline's, per query,
    /// and their geometric mean (None with fewer than two engines).
    pub fn ratio_table(&self, style: Style) -> Option<String> {
        let baseline = self.baseline?;
        let others = self.others();
        let mut header = vec![format!("time ÷ {baseline}'s")];
        header.extend(others.iter().map(|e| engine_header(e, style)));
        let mut table = new_table(style, header);
        for query in &self.record.queries {
            let mut row = vec![query_label(query)];
            row.extend(others.iter().map(|o| summary::ratio(query, baseline, o).map_or_else(|| "–".to_string(), summary::times)));
            table.add_row(row);
        }
        let summaries = summary::EngineSummary::all(self);
        let mut geomean = vec!["geometric mean".to_string()];
        geomean.extend(others.iter().map(|o| summaries.iter().find(|s| s.engine == *o).map_or_else(|| "–".to_string(), |s| s.ratio_cell())));
        table.add_row(geomean);
        align_numbers(&mut table, 1);
        fit(&mut table, style, terminal_width(self.engines.len()), 1);
        Some(table.to_string())
    }
}

/// The widest a terminal table is laid out: six engines' cells fit in it;
/// wider content is wrapped, never cut.
pub const TERMINAL_WIDTH: u16 = 100;

/// Two engines fit an 80-column terminal, up to six a 100-column one.
pub fn terminal_width(engines: usize) -> u16 {
    if engines <= 2 {
        80
    } else {
        TERMINAL_WIDTH
    }
}

/// The widest a leading text column is kept whole in a terminal: a name
/// (an engine, a query) is narrower; a label wider than this (`323.9 MiB
/// limit (5×), 5,000 read IOPS, 437 MB/s read`) is wrapped to it at its words.
const WIDEST_NAME: u16 = 24;

/// The longest word a terminal table keeps whole in a column of numbers:
/// a median (`31.7181`), a count (`10911686`), a header's word (`throttle`);
/// a longer one (a path in an error) may be split.
const LONGEST_WHOLE_WORD: u16 = 16;

/// comfy-table's padding: a space either side of every cell.
const PADDING: u16 = 2;

/// A terminal table wraps its cells to `width` columns, but never its first
/// `text_columns` when they hold names (`postgres-tuned` split over two
/// lines reads as two engines; longer labels wrap, see [`WIDEST_NAME`]),
/// nor a word of the others (a number split over two lines reads as two):
/// a table that cannot fit `width` so is laid out wider. A Markdown table is
/// never wrapped: a line break ends its row.
pub(crate) fn fit(table: &mut Table, style: Style, width: u16, text_columns: usize) {
    if let Style::Terminal = style {
        let widths = table.column_max_content_widths();
        let words = longest_words(table, widths.len());
        // Borders: one left of every column and one at the right end.
        let mut needed = widths.len() as u16 + 1;
        for (place, (column, (&widest, &word))) in table.column_iter_mut().zip(widths.iter().zip(&words)).enumerate() {
            let (constraint, least) = match (place < text_columns, widest <= WIDEST_NAME) {
                (true, true) => (ColumnConstraint::ContentWidth, widest),
                (true, false) => (ColumnConstraint::Absolute(comfy_table::Width::Fixed(WIDEST_NAME + PADDING)), WIDEST_NAME),
                (false, _) => {
                    let word = word.min(LONGEST_WHOLE_WORD);
                    (ColumnConstraint::LowerBoundary(comfy_table::Width::Fixed(word + PADDING)), word)
                }
            };
            column.set_constraint(constraint);
            needed += least + PADDING;
        }
        table.set_content_arrangement(ContentArrangement::Dynamic).set_width(width.max(needed));
    }
}

/// Per column, the longest word of its header and cells.
fn longest_words(table: &Table, columns: usize) -> Vec<u16> {
    let mut longest = vec![0u16; columns];
    for row in table.header().into_iter().chain(table.row_iter()) {
        for (column, cell) in row.cell_iter().enumerate().take(columns) {
            let word = cell.content().split_whitespace().map(|w| w.chars().count()).max().unwrap_or(0);
            longest[column] = longest[column].max(u16::try_from(word).unwrap_or(u16::MAX));
        }
    }
    longest
}

/// An engine's name as a column header: in a terminal broken after its
/// first hyphen (`postgres-` over `tuned`), so six engines fit side by side.
fn engine_header(engine: &Engine, style: Style) -> String {
    match style {
        Style::Terminal => engine.name().replacen('-', "-\n", 1),
        Style::Markdown => engine.name().to_string(),
    }
}

/// `A corrected`.
pub(crate) fn query_label(query: &QueryRecord) -> String {
    format!("{} {}", query.query, query.variant)
}

/// The rows the agreeing engines returned; `differ` when no majority agrees.
fn agreed_rows(query: &QueryRecord) -> String {
    let v = &query.verification;
    if v.status == VerificationStatus::Mismatch && v.agreeing.is_empty() {
        return "differ".into();
    }
    let rows = v.reference.as_ref().and_then(|r| result_for(query, r)?.rows);
    rows.map_or_else(|| "–".into(), |n| n.to_string())
}

/// One engine's median and mark with the runs under it: `0.0123 ✓
/// (n=3, 0.0120 – 0.0130)`, in a terminal over two lines; `failed`; empty
/// when not run. A lone engine has nothing to be checked against, so no mark.
fn timing_cell(result: Option<&EngineResult>, style: Style) -> String {
    let Some(r) = result else { return String::new() };
    if r.error.is_some() {
        return failed_said(r);
    }
    let Some(stats) = r.hot_stats() else { return "–".into() };
    let gap = style.gap();
    match r.verified {
        Some(_) => format!("{} {}{gap}({})", seconds(stats.median), mark(r), runs_said(&stats)),
        None => median_said(Some(stats), gap),
    }
}

/// The timed runs each median rests on, for a chart's subtitle: `3 run(s)`,
/// or `3 run(s) in rounds` when the queries took turns (`--rounds`): a
/// chart read alone must not pass for each query's runs back to back.
pub(crate) fn timed_runs_said(context: &ghbench_record::run::Context) -> String {
    match context.cold.rounds {
        true => format!("{} run(s) in rounds", context.repeat),
        false => format!("{} run(s)", context.repeat),
    }
}

/// The run's time limit on each query, said: none unless `--query-timeout`.
pub fn limit_label(context: &ghbench_record::run::Context) -> String {
    match context.query_timeout_seconds {
        Some(limit) => format!("each run stopped past --query-timeout {}", ghbench_core::limit::said(std::time::Duration::from_secs_f64(limit))),
        None => "no time limit on any query (ghbench's sessions turn off servers' and roles' defaults)".into(),
    }
}

/// How a failed result reads in a table cell or under a chart: `failed`, or
/// `> 1m 30s (limit)` for a query cut by `--query-timeout`.
pub(crate) fn failed_said(r: &EngineResult) -> String {
    match r.timed_out {
        Some(limit) => format!("> {} (limit)", ghbench_core::limit::said(std::time::Duration::from_secs_f64(limit))),
        None => "failed".into(),
    }
}

/// The results table, then (with two engines or more) each engine's time
/// against the baseline's, captioned; then the concurrency phase's table.
pub fn results_table(record: &RunRecord, style: Style) -> String {
    let mut out = single_client_tables(record, style);
    if let Some(load) = concurrency::concurrency_text(record, style) {
        let _ = write!(out, "\n\n{load}");
    }
    out
}

/// The results table, then (with two engines or more) each engine's time
/// against the baseline's, captioned, then the notes on slow first runs: the
/// Markdown report's results, which show the concurrency phase in a section
/// of its own.
pub(crate) fn single_client_tables(record: &RunRecord, style: Style) -> String {
    let view = ResultsView::of(record);
    let mut out = view.table(style);
    if let Some(ratios) = view.ratio_table(style) {
        let _ = write!(out, "\n\n{}\n\n{ratios}", summary::ratio_caption(&view));
    }
    let notes = first_run_notes(record);
    if !notes.is_empty() {
        let _ = write!(out, "\n\n{}", notes_said(&notes, style));
    }
    out
}

/// Loud lines for every mismatch and failure, the concurrency phase's
/// included (empty when all verified).
pub fn problems(record: &RunRecord) -> Vec<String> {
    let unfinished = (!record.finished).then(|| {
        format!("UNFINISHED: the run stopped after {} query run(s) on every engine; this record holds those alone", record.queries.len())
    });
    // Not wrong, but made in two runs: a reader (and a script, by the exit status) must know.
    let resumed = record.context.resumed.as_ref().map(|r| {
        let stopped = if r.runs().len() > 1 { "each of which stopped" } else { "which stopped" };
        format!("RESUMED: {}, {stopped}; the rest by this one, on the same data, servers and settings", r.said("timed", "run"))
    });
    unfinished.into_iter().chain(resumed).chain(record.queries.iter().flat_map(query_problems)).chain(concurrency::concurrency_problems(record)).collect()
}

/// Loud lines for one query's mismatches and failures.
pub fn query_problems(q: &QueryRecord) -> Vec<String> {
    let mut lines = Vec::new();
    let v = &q.verification;
    let reference = v.reference.as_ref().map_or("?", Engine::name);
    for m in &v.mismatches {
        // Which engine is the odd one out, when a majority says so; else both sides are in doubt.
        let who = match v.agreeing.as_slice() {
            [] => format!("{} and {reference} disagree (no majority of engines says which is right)", m.engine),
            rest => format!("{} disagrees with the rest ({})", m.engine, rest.iter().map(Engine::name).collect::<Vec<_>>().join(", ")),
        };
        lines.push(format!("MISMATCH {} {}: {who}: {}", q.query, q.variant, m.reason));
        lines.extend(v.cause.iter().map(|cause| format!("    cause: {cause}")));
        lines.extend(m.first_differences.iter().map(|d| format!("    {d}")));
    }
    for e in q.engines.iter().filter(|e| e.error.is_some()) {
        let what = if e.timed_out.is_some() { "TIMED OUT" } else { "FAILED" };
        lines.push(format!("{what} {} {} on {}: {}", q.query, q.variant, e.engine, e.error.as_deref().unwrap_or("")));
    }
    lines
}

/// A line per connection lost and replaced during the runs: the numbers stand
/// (the lost attempt was made again and only that one timed), but a reader
/// should know the server went away.
pub fn reconnect_notes(record: &RunRecord) -> Vec<String> {
    let mut lines = Vec::new();
    for q in &record.queries {
        for e in &q.engines {
            for r in &e.reconnects {
                lines.push(format!(
                    "RECONNECTED {} {} on {}, {}: {}; a new connection in {} s, the run made again (the lost attempt is not timed)",
                    q.query,
                    q.variant,
                    e.engine,
                    r.at,
                    r.error,
                    seconds(r.seconds)
                ));
            }
        }
    }
    lines
}

/// One query's verification in a few words, for a chart's title or a heading.
pub fn verdict(status: VerificationStatus) -> &'static str {
    match status {
        VerificationStatus::Agree => "results agree ✓",
        VerificationStatus::Mismatch => "results differ ✗",
        VerificationStatus::Error => "an engine failed ✗",
        VerificationStatus::NotCompared => "not compared",
    }
}

/// The run's verification in a sentence: all agree, nothing compared, or not.
pub fn verification_summary(record: &RunRecord) -> &'static str {
    let compared = record.queries.iter().any(|q| matches!(q.verification.status, VerificationStatus::Agree));
    let single_client_agree = record.queries.iter().all(|q| query_problems(q).is_empty());
    match (single_client_agree, concurrency::concurrency_problems(record).is_empty(), compared) {
        (true, true, true) => "Every query's results agree across engines.",
        (true, true, false) => "Results were not compared across engines (fewer than two engines answered).",
        // A failed phase of many clients must not read as engines disagreeing.
        (true, false, _) => "The single-client results stand, but not every phase of many clients does:",
        (false, _, _) => "Results do not agree:",
    }
}

/// Which ghbench and query catalog ran.
pub fn version_line(context: &Context) -> String {
    format!(
        "ghbench {} (commit {}{}), catalog: {}",
        context.ghbench_version,
        context.git_commit.as_deref().unwrap_or("unknown"),
        if context.git_dirty == Some(true) { ", with uncommitted changes" } else { "" },
        context.catalog
    )
}

/// The machine the run took place on.
pub fn machine_line(m: &Machine) -> String {
    format!(
        "{}, {} logical cores, {:.1} GiB RAM, {}{}",
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.logical_cores.map_or("?".into(), |n| n.to_string()),
        m.memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
        m.os_release.as_deref().unwrap_or("unknown OS"),
        m.disk.as_ref().map(|d| format!("; disk: {}", d.said())).unwrap_or_default()
    )
}

/// An engine's size on disk, or why it is unknown.
pub fn storage_line(engine: &EngineRecord) -> String {
    match (&engine.storage, &engine.storage_error) {
        (Some(s), _) => format!(
            "{} rows{}, on disk: table {} bytes, indexes {} bytes{}",
            s.rows,
            if s.rows_exact { "" } else { " (estimate)" },
            s.table_bytes,
            s.index_bytes,
            s.logical_bytes.map(|b| format!(" (data uncompressed: {b} bytes)")).unwrap_or_default()
        ),
        (None, e) => e.as_deref().unwrap_or("unknown").to_string(),
    }
}

/// Loud lines when the engines hold different data (empty when they hold the
/// same, or the record predates the check). Shown before any result.
pub fn data_warning(context: &Context) -> Vec<String> {
    let Some(data) = context.data_consistency.as_ref().filter(|d| !d.agree) else { return Vec::new() };
    let mut lines = vec![
        "DATA DIFFERS: the engines do not hold the same data (per their ingest ledgers and row counts), so their \
         results cannot agree and their timings measure different work:"
            .to_string(),
    ];
    lines.extend(data.differences.iter().map(|d| format!("  - {d}")));
    lines
}

/// Which data an engine held: hours and events from its ingest ledger, and
/// how long loading them took.
pub fn data_line(engine: &EngineRecord) -> String {
    let Some(d) = &engine.data else { return held_line(engine) };
    let retries = retries_note(d.load_retries).map(|n| format!("; {n}")).unwrap_or_default();
    let upkeep = d.upkeep_seconds.map(|u| format!(", then {} s of upkeep", seconds(u))).unwrap_or_default();
    match (d.wall_seconds, d.events_per_second(), d.hours_summed_seconds()) {
        (Some(wall), Some(rate), _) => format!("{}, loaded in {} s ({rate:.0} events/s{retries}){upkeep}", held_line(engine), seconds(wall)),
        (_, _, Some(sum)) => format!("{}, its hours' own load times summing to {} s (the wall time was not recorded{retries}){upkeep}", held_line(engine), seconds(sum)),
        _ => held_line(engine),
    }
}

/// A load time's cell: the wall time (its retries said); when only the
/// hours' own times are known, their sum, named as such.
pub fn load_cell(d: &DataLoaded) -> Option<String> {
    let note = retries_note(d.load_retries).map(|n| format!(" ({n})")).unwrap_or_default();
    match (d.wall_seconds, d.hours_summed_seconds()) {
        (Some(wall), _) => Some(format!("{}{note}", seconds(wall))),
        (None, Some(sum)) => Some(format!("{} hours summed{note}", seconds(sum))),
        (None, None) => None,
    }
}

/// `includes N retries` when the load time includes attempts made again
/// after faults (their time and the waits between them).
pub fn retries_note(retries: u64) -> Option<String> {
    match retries {
        0 => None,
        1 => Some("includes 1 retry".into()),
        n => Some(format!("includes {n} retries")),
    }
}

/// Which data an engine held, without how long loading it took.
pub fn held_line(engine: &EngineRecord) -> String {
    match (&engine.data, &engine.data_error) {
        (Some(d), _) => format!(
            "{} ({} .. {}), {} events per the ingest ledger",
            ghbench_core::count_of(d.hours as usize, "hour"),
            d.first_hour.as_deref().unwrap_or("?"),
            d.last_hour.as_deref().unwrap_or("?"),
            d.events
        ),
        (None, Some(e)) => format!("data loaded: {e}"),
        (None, None) => "data loaded: unknown".into(),
    }
}

/// `PostgreSQL 15.18; tuned setup, 7 changes`, or why the engine could not
/// say what it is: every number is shown under a label that names its setup.
pub fn server_label(engine: &EngineRecord) -> String {
    let server = match (&engine.server, &engine.server_error) {
        (Some(s), _) => s.label.clone(),
        (None, Some(e)) => format!("unknown server ({e})"),
        (None, None) => "unknown server".into(),
    };
    match &engine.setup {
        Some(setup) => format!("{server}; {}", setup.label()),
        None => server,
    }
}

/// An engine's setup written out: what it is, then each change with why and
/// its source (nothing for an engine whose setup is not written down).
pub fn setup_lines(engine: &EngineRecord) -> Vec<String> {
    engine.setup.as_ref().map(setup_said).unwrap_or_default()
}

/// A setup written out (an engine's, or a bench's preset): what it is, then
/// each change with why and its source.
pub fn setup_said(setup: &ghbench_core::Setup) -> Vec<String> {
    let flag = if setup.tuned { "tuned" } else { "not tuned" };
    let of = setup.of.as_ref().map(|of| format!(", changing {of}'s")).unwrap_or_default();
    let mut lines = vec![format!("setup {} ({flag}{of}): {}", setup.name, setup.about)];
    lines.extend(setup.changes.iter().map(|c| format!("change: {}. Why: {}. Source: {}", c.what, c.why, c.source)));
    lines
}

/// Each engine's own caveat, e.g. that a MongoDB-wire server is not MongoDB.
pub fn caveats(context: &Context) -> Vec<(&Engine, &str)> {
    context.engines.iter().filter_map(|e| Some((&e.engine, e.server.as_ref()?.caveat.as_deref()?))).collect()
}

/// An engine's kernel memory limit and what it counted over the runs, for
/// the lines under every table (None without a limit).
/// Of a server of several nodes, each node's: `127.0.0.1:54331 (data
/// 0.52× memory): limit …`, joined by `; `.
pub fn memory_limit_line(engine: &ghbench_record::run::EngineRecord) -> Option<String> {
    let memory = engine.memory.as_ref()?;
    if memory.nodes.is_empty() {
        return Some(memory.limit.as_ref()?.said(memory.bytes));
    }
    let node = |n: &ghbench_record::run::NodeMemory| {
        let limit = n.limit.as_ref().map_or_else(|| format!("no limit: this machine's {}", ghbench_core::size::said(n.bytes)), |l| l.said(n.bytes));
        format!("{} (data {} memory): {limit}", n.node, ghbench_record::run::ratio_text(n.data_to_memory()))
    };
    Some(memory.nodes.iter().map(node).collect::<Vec<_>>().join("; "))
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_time_says_the_retries_it_includes() {
        assert_eq!(retries_note(3).as_deref(), Some("includes 3 retries"));
        assert_eq!(retries_note(1).as_deref(), Some("includes 1 retry"));
        assert_eq!(retries_note(0), None, "no retries, nothing said");
    }

    #[test]
    fn a_long_label_wraps_at_its_words_and_leaves_the_numbers_whole() {
        let header = ["limit", "engine", "peak", "limit hits", "OOM kills", "refaults", "major faults", "queries read", "through the disk throttle"];
        let mut table = bench::TextTable::new(&header);
        let row = ["323.9 MiB limit (5×), 5,000 read IOPS, 437 MB/s read", "postgres-tuned", "323.9 MiB", "0", "0", "1089849", "48195", "49.2 GiB", "54.8 GiB in 551722 reads"];
        table.rows.push(row.iter().map(|c| c.to_string()).collect());
        let text = table.with_text_columns(2).render(Style::Terminal);
        // Before, the label took its whole width and the numbers one digit a line.
        for whole in ["postgres-tuned", "1089849", "48195", "551722"] {
            assert!(text.contains(whole), "{whole} is split:\n{text}");
        }
        // Laid out wider than 100 columns rather than squeezed: nine columns of
        // numbers and a label do not fit it.
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!((100..=130).contains(&widest), "{widest} columns:\n{text}");
        assert!(text.contains("323.9 MiB limit (5×),") && !text.contains("323.9 MiB limit (5×), 5,000 read IOPS, 437 MB/s read"), "the label wrapped at its words:\n{text}");
        assert!(text.lines().count() <= 12, "{} lines:\n{text}", text.lines().count());
    }

    #[test]
    fn a_chart_says_when_its_runs_went_in_rounds() {
        let mut record = ghbench_testkit::sample::record();
        assert_eq!(timed_runs_said(&record.context), "3 run(s)");
        record.context.cold.rounds = true;
        assert_eq!(timed_runs_said(&record.context), "3 run(s) in rounds");
        let drawn = charts(&record).unwrap();
        assert!(drawn.iter().filter(|c| c.name == "overview" || c.name.ends_with("-corrected")).all(|c| c.svg.contains("run(s) in rounds")));
    }
}

//! Views of the concurrency phase: a row per engine and client count (rate,
//! latency percentiles, answers, ghbench's own CPU), a row per query of the
//! mix, the settings that bound each engine, rate and p95 latency against
//! clients as charts, and the phases that failed said loudly, as a mismatch is.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ghbench_core::Engine;
use serde::Serialize;

use super::bench::TextTable;
use super::charts::{draw_lines, engine_place, Chart, ChartError};
use super::lines::{Line, Lines};
use super::{seconds, Style};
use ghbench_record::concurrency::{clients as clients_said, ConcurrencyRecord, Latency, LoadPhase};
use ghbench_record::run::RunRecord;

/// What a reader must know to read the table: the mix, the window, what
/// every answer was checked against, what the CPU column means.
pub fn caption(record: &ConcurrencyRecord) -> String {
    let mix: Vec<String> = record.mix.iter().map(ToString::to_string).collect();
    format!(
        "Many clients at once: each engine alone, for each client count {} s measured after a {} s warm-up (at most {} queries), \
         every client looping over {} from a different query. Every answer is checked against that engine's single-client answer \
         (what each query was checked against, and any left out of an engine's mix, are said below).",
        record.duration_seconds,
        record.warmup_seconds,
        record.max_queries,
        mix.join(", "),
    )
}

/// A row per engine and client count: queries per second and latency
/// percentiles over the mix; answers (✓, wrong ✗, failed); ghbench's CPU.
/// Narrow enough for four engines and their tuned setups in a terminal (see
/// [`super::TERMINAL_WIDTH`]): the max is in [`per_query_table`].
pub fn load_table(record: &ConcurrencyRecord) -> TextTable {
    let mut table = TextTable::new(&["engine", "clients", "q/s", "p50 s", "p95 s", "p99 s", "queries", "answers", "CPU ghbench / all"]);
    for p in &record.phases {
        let mut row = vec![p.engine.to_string(), p.clients.to_string(), p.queries_per_second.map_or_else(|| "–".into(), rate)];
        row.extend(percentiles(p.latency.as_ref()).into_iter().take(3));
        row.extend([p.completed.to_string(), answers(p), cpu(p)]);
        table.rows.push(row);
    }
    for p in &record.phases {
        // Failed queries alone leave the phase's error empty: they are said here too.
        let said: Vec<String> = p.error.iter().cloned().chain(failed_queries(p)).collect();
        if !said.is_empty() {
            table.notes.push(format!("{}: {}", which(p), said.join("; ")));
        }
    }
    table.notes.extend(left_out_notes(record));
    for p in record.phases.iter().filter(|p| p.stands()) {
        if let Some(l) = p.latency.filter(|l| l.count < FEW) {
            table.notes.push(format!("{}: percentiles from {} queries, so p99 is their maximum and p95 near it", which(p), l.count));
        }
    }
    table.notes.extend(cpu_note(record));
    table.with_text_columns(1)
}

/// Below this many queries a phase's p99 is its slowest query (nearest rank).
const FEW: u64 = 100;

/// A line per engine whose mix lost queries: its rate is over fewer queries
/// than the others', so the rates do not compare.
fn left_out_notes(record: &ConcurrencyRecord) -> Vec<String> {
    let mut notes = Vec::new();
    // An engine's mix is the same at every client count: its first phase says it.
    for engine in engines_where(record.phases.iter(), |_| true) {
        let Some(p) = record.phases.iter().find(|p| p.engine == *engine) else { continue };
        let out: Vec<String> = p.per_query.iter().filter_map(|q| Some(format!("{} {} ({})", q.query, q.variant, q.left_out.as_deref()?))).collect();
        if !out.is_empty() {
            notes.push(format!("left out of {engine}'s mix: {}; its rate is over the rest, not comparable with the other engines'", out.join(", ")));
        }
    }
    notes
}

/// `postgres, 4 clients`: which phase a line is about.
fn which(p: &LoadPhase) -> String {
    format!("{}, {}", p.engine, clients_said(p.clients))
}

/// `3 queries failed; the first: …`, or None when none failed.
fn failed_queries(p: &LoadPhase) -> Option<String> {
    let first = p.errors.first().map(|e| format!("; the first: {e}")).unwrap_or_default();
    (p.failed_queries > 0).then(|| format!("{} queries failed{first}", p.failed_queries))
}

/// p50, p95, p99 and max, or dashes without a query answered.
fn percentiles(latency: Option<&Latency>) -> [String; 4] {
    match latency {
        Some(l) => [l.p50, l.p95, l.p99, l.max].map(seconds),
        None => std::array::from_fn(|_| "–".into()),
    }
}

/// What the CPU column means, naming the engines that run inside ghbench's
/// process (whose share is mostly their own work, not the clients'); None
/// when no phase measured it.
fn cpu_note(record: &ConcurrencyRecord) -> Option<String> {
    let measured: Vec<&LoadPhase> = record.phases.iter().filter(|p| p.client_cpu.is_some()).collect();
    if measured.is_empty() {
        return None;
    }
    let inside = engines_where(measured.iter().copied(), |p| p.client_cpu.is_some_and(|c| c.engine_in_process));
    let mut note = "CPU: ghbench's own process, then the whole machine, as shares of all its cores over the phase, warm-up included: a large share of ghbench's means the clients compete with the engine for the machine".to_string();
    if !inside.is_empty() {
        let _ = write!(note, "; {} run(s) inside ghbench's process (no server), so there ghbench's share includes the engine's own work", names(&inside));
    }
    Some(note)
}

/// The engines, in run order and once each, of the phases that `pick` keeps.
fn engines_where<'a>(phases: impl Iterator<Item = &'a LoadPhase>, pick: impl Fn(&LoadPhase) -> bool) -> Vec<&'a Engine> {
    let mut engines: Vec<&Engine> = Vec::new();
    for p in phases.filter(|p| pick(p)) {
        if !engines.contains(&&p.engine) {
            engines.push(&p.engine);
        }
    }
    engines
}

fn names(engines: &[&Engine]) -> String {
    engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
}

/// A row per engine, client count and query of the mix: what it completed,
/// its latency percentiles, its wrong answers and failures, and why it was
/// left out; under it what each query's answers were checked against.
pub fn per_query_table(record: &ConcurrencyRecord) -> TextTable {
    let mut table = TextTable::new(&["engine", "clients", "query", "completed", "p50 s", "p95 s", "p99 s", "max s", "wrong", "failed", "left out because"]);
    // (query, what it was checked against) -> the engines checked so.
    let mut checked: Vec<((String, &str), Vec<&Engine>)> = Vec::new();
    for p in &record.phases {
        for q in &p.per_query {
            let query = format!("{} {}", q.query, q.variant);
            let mut row = vec![p.engine.to_string(), p.clients.to_string(), query.clone(), q.completed.to_string()];
            row.extend(percentiles(q.latency.as_ref()));
            row.extend([q.wrong.to_string(), q.failed.to_string(), q.left_out.clone().unwrap_or_default()]);
            table.rows.push(row);
            let Some(against) = q.checked_against.as_deref() else { continue };
            match checked.iter_mut().find(|(key, _)| key.0 == query && key.1 == against) {
                Some((_, engines)) if !engines.contains(&&p.engine) => engines.push(&p.engine),
                Some(_) => {}
                None => checked.push(((query, against), vec![&p.engine])),
            }
        }
    }
    for ((query, against), engines) in checked {
        table.notes.push(format!("{query} ({}): answers checked against {against}", names(&engines)));
    }
    table.with_text_columns(3).with_text_last(1)
}

/// A row per engine and setting that bounds how many clients it serves at
/// once (as the engine said it, and ghbench's own), from the phases that
/// read them; a setting that changed between client counts says each.
pub fn limits_table(record: &ConcurrencyRecord) -> TextTable {
    let mut table = TextTable::new(&["engine", "setting", "value (per client count where it changed)"]);
    for engine in engines_where(record.phases.iter(), |_| true) {
        let phases: Vec<&LoadPhase> = record.phases.iter().filter(|p| p.engine == *engine && !p.limits.is_empty()).collect();
        let mut settings: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
        for p in &phases {
            for (setting, value) in &p.limits {
                settings.entry(setting).or_default().push((p.clients, value));
            }
        }
        for (setting, values) in settings {
            let same = values.iter().all(|(_, v)| *v == values[0].1);
            let value = match same {
                true => values[0].1.to_string(),
                false => values.iter().map(|(clients, v)| format!("{clients}: {v}")).collect::<Vec<_>>().join("; "),
            };
            table.rows.push(vec![engine.to_string(), setting.to_string(), value]);
        }
        if phases.is_empty() {
            table.rows.push(vec![engine.to_string(), "–".into(), "not read: no phase of it ran".into()]);
        }
    }
    table.with_text_columns(3)
}

/// Queries per second, to three significant digits or whole.
fn rate(qps: f64) -> String {
    if qps >= 100.0 {
        format!("{qps:.0}")
    } else if qps >= 10.0 {
        format!("{qps:.1}")
    } else {
        format!("{qps:.2}")
    }
}

/// `✓` when every answer was right and none failed; else the counts.
fn answers(p: &LoadPhase) -> String {
    let mut said = Vec::new();
    if p.wrong_answers > 0 {
        said.push(format!("{} ✗", p.wrong_answers));
    }
    if p.failed_queries > 0 {
        said.push(format!("{} failed", p.failed_queries));
    }
    match (said.is_empty(), &p.error) {
        (true, None) => "✓".into(),
        (true, Some(_)) => "✗ (see below)".into(),
        (false, _) => said.join(", "),
    }
}

/// `3% / 96%`: ghbench's process, then the whole machine.
fn cpu(p: &LoadPhase) -> String {
    match &p.client_cpu {
        None => "–".into(),
        Some(c) => {
            let machine = c.machine_busy.map_or_else(|| "–".into(), |m| format!("{:.0}%", m * 100.0));
            format!("{:.0}% / {machine}", c.share_of_machine * 100.0)
        }
    }
}

/// The caption and the table, for the terminal; None without a phase.
pub fn concurrency_text(run: &RunRecord, style: Style) -> Option<String> {
    let record = run.concurrency.as_ref()?;
    let mut text = caption(record);
    let _ = write!(text, "\n{}", load_table(record).render(style));
    Some(text)
}

/// Loud lines for every phase that failed, answered wrongly or met errors.
pub fn concurrency_problems(run: &RunRecord) -> Vec<String> {
    let Some(record) = &run.concurrency else { return Vec::new() };
    let mut lines = Vec::new();
    for p in &record.phases {
        for m in &p.mismatches {
            lines.push(format!(
                "MISMATCH under load {} {} on {} ({}; client {} at {:.1} s): {}",
                m.query, m.variant, p.engine, clients_said(p.clients), m.client, m.at_seconds, m.reason
            ));
            lines.extend(m.first_differences.iter().map(|d| format!("    {d}")));
        }
        if let Some(error) = &p.error {
            lines.push(format!("FAILED under load: {}: {error}", which(p)));
        }
        if let Some(failed) = failed_queries(p) {
            lines.push(format!("ERRORS under load: {}: {failed}", which(p)));
        }
    }
    lines
}

/// The names of the concurrency phase's charts: queries per second, then p95
/// latency, each against clients. The reports show them in the phase's own
/// section, not among the run's other charts.
pub const CHARTS: [&str; 2] = ["clients-qps", "clients-p95"];

/// Rate and p95 latency against clients, a line per engine in its colour;
/// none without a concurrency phase.
pub fn charts(run: &RunRecord) -> Result<Vec<Chart>, ChartError> {
    let Some(record) = &run.concurrency else { return Ok(Vec::new()) };
    let window = format!("{} s measured per client count after a {} s warm-up", record.duration_seconds, record.warmup_seconds);
    let chart = |title: &str, subtitle: String, y_label: &str, (lines, note): (Vec<Line>, Option<String>)| Lines {
        title: title.into(),
        subtitle,
        x_label: "clients at once".into(),
        y_label: y_label.into(),
        // Numbered where measured: 4 and 16 clients fall between 1-2-5 ticks.
        x_ticks: record.clients.iter().map(|&c| c as f64).collect(),
        lines,
        note,
        marks: Vec::new(),
    };
    let qps = chart(
        "Queries per second against clients",
        format!("queries answered rightly, all clients together; {window}; log–log"),
        "queries/s",
        against_clients(run, record, "q/s", |p| p.queries_per_second),
    );
    let p95 = chart(
        "p95 latency against clients",
        format!("95th percentile over every query of the mix; {window}; log–log"),
        "p95 seconds",
        against_clients(run, record, "latency", |p| p.latency.map(|l| l.p95)),
    );
    Ok(vec![draw_lines(CHARTS[0], qps)?, draw_lines(CHARTS[1], p95)?])
}

/// A line per engine of `value` at each client count, and the note that says
/// which points are left out and why: a phase that failed is no measurement,
/// and a value of zero (or none) has no place on a log axis.
fn against_clients(run: &RunRecord, record: &ConcurrencyRecord, what: &str, value: fn(&LoadPhase) -> Option<f64>) -> (Vec<Line>, Option<String>) {
    let mut lines = Vec::new();
    // (engine, why) -> the client counts left out for that reason.
    let mut left_out: Vec<((&Engine, String), Vec<usize>)> = Vec::new();
    for engine in engines_where(record.phases.iter(), |_| true) {
        let mut points = Vec::new();
        for p in record.phases.iter().filter(|p| p.engine == *engine) {
            let why = match value(p) {
                _ if p.error.is_some() => "failed".to_string(),
                _ if !p.stands() => format!("{} queries failed", p.failed_queries),
                None => format!("no {what}"),
                Some(v) if v <= 0.0 => format!("0 {what}"),
                Some(v) => {
                    points.push((p.clients as f64, v));
                    continue;
                }
            };
            match left_out.iter_mut().find(|(key, _)| key.0 == engine && key.1 == why) {
                Some((_, clients)) => clients.push(p.clients),
                None => left_out.push(((engine, why), vec![p.clients])),
            }
        }
        lines.push(Line { label: engine.to_string(), place: engine_place(run, engine), points, dashed: false });
    }
    let said: Vec<String> = left_out
        .into_iter()
        .map(|((engine, why), clients)| {
            let counts: Vec<String> = clients.iter().map(ToString::to_string).collect();
            let plural = if clients == [1] { "client" } else { "clients" };
            format!("{engine} at {} {plural} ({why})", counts.join(", "))
        })
        .collect();
    (lines, (!said.is_empty()).then(|| within_a_line(&said, "no point for ", "see the tables")))
}

/// Characters of a note that fit under a chart on one line.
const NOTE_CHARS: usize = 105;

/// `lead` and as many of `items` as fit on a line under a chart, the rest
/// counted (`… and 3 more: see the tables`).
fn within_a_line(items: &[String], lead: &str, rest: &str) -> String {
    let mut line = lead.to_string();
    for (i, item) in items.iter().enumerate() {
        let left = items.len() - i - 1;
        let tail = if left == 0 { String::new() } else { format!("; … and {left} more: {rest}") };
        let separator = if i == 0 { "" } else { "; " };
        if i > 0 && line.chars().count() + separator.len() + item.chars().count() + tail.chars().count() > NOTE_CHARS {
            let _ = write!(line, "; … and {} more: {rest}", items.len() - i);
            return line;
        }
        let _ = write!(line, "{separator}{item}");
    }
    line
}

/// The concurrency phase as the reports show it, built once for the Markdown
/// and the page alike: what was run, the rates, the queries, the limits, what
/// ended a phase early and what failed.
#[derive(Debug, Serialize)]
pub struct LoadSection {
    /// See [`caption`].
    pub caption: String,
    /// See [`load_table`].
    pub load: TextTable,
    /// See [`per_query_table`].
    pub per_query: TextTable,
    /// See [`limits_table`].
    pub limits: TextTable,
    /// Phases that stood but whose window the query bound cut short.
    pub cut_short: Vec<String>,
    /// See [`concurrency_problems`].
    pub problems: Vec<String>,
}

impl LoadSection {
    /// None without a concurrency phase.
    pub fn of(run: &RunRecord) -> Option<LoadSection> {
        let record = run.concurrency.as_ref()?;
        let cut_short = record
            .phases
            .iter()
            .filter(|p| p.error.is_none() && !p.stopped_by.is_empty() && p.stopped_by != "duration")
            .map(|p| format!("{}: stopped by {} after {:.1} s", which(p), p.stopped_by, p.window_seconds))
            .collect();
        Some(LoadSection {
            caption: caption(record),
            load: load_table(record),
            per_query: per_query_table(record),
            limits: limits_table(record),
            cut_short,
            problems: concurrency_problems(run),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_note_keeps_to_one_line_and_counts_the_rest() {
        let items: Vec<String> = (0..12).map(|i| format!("engine-{i} at 1, 4, 16 clients (failed)")).collect();
        let note = within_a_line(&items, "no point for ", "see the tables");
        assert!(note.chars().count() <= NOTE_CHARS, "{} chars: {note}", note.chars().count());
        assert!(note.starts_with("no point for engine-0 at") && note.ends_with("more: see the tables"), "{note}");
        assert_eq!(within_a_line(&items[..1], "no point for ", "x"), format!("no point for {}", items[0]));
    }
}

//! Views of the concurrency phase: a row per engine and client count (rate,
//! latency percentiles, answers, ghbench's own CPU), the phases that failed
//! said loudly, as a mismatch is.

use std::fmt::Write as _;

use super::bench::TextTable;
use super::{seconds, Style};
use crate::concurrency::{ConcurrencyRecord, LoadPhase};
use crate::record::RunRecord;

/// What a reader must know to read the table: the mix, the window, what
/// every answer was checked against, what the CPU column means.
pub fn caption(record: &ConcurrencyRecord) -> String {
    let mix: Vec<String> = record.mix.iter().map(ToString::to_string).collect();
    format!(
        "Many clients at once: each engine alone, for each client count {} s measured after a {} s warm-up (at most {} queries), \
         every client looping over {} from a different query. Every answer checked against the single-client phase's verified answer.",
        record.duration_seconds,
        record.warmup_seconds,
        record.max_queries,
        mix.join(", "),
    )
}

/// A row per engine and client count: queries per second and latency
/// percentiles over the mix; answers (✓, wrong ✗, failed); ghbench's CPU.
pub fn load_table(record: &ConcurrencyRecord) -> TextTable {
    let mut table = TextTable::new(&["engine", "clients", "q/s", "p50 s", "p95 s", "p99 s", "max s", "queries", "answers", "CPU ghbench / all"]);
    for p in &record.phases {
        let latency = |pick: fn(&crate::concurrency::Latency) -> f64| p.latency.as_ref().map_or_else(|| "–".into(), |l| seconds(pick(l)));
        table.rows.push(vec![
            p.engine.to_string(),
            p.clients.to_string(),
            p.queries_per_second.map_or_else(|| "–".into(), rate),
            latency(|l| l.p50),
            latency(|l| l.p95),
            latency(|l| l.p99),
            latency(|l| l.max),
            p.completed.to_string(),
            answers(p),
            cpu(p),
        ]);
    }
    for p in record.phases.iter().filter(|p| p.error.is_some()) {
        table.notes.push(format!("{}, {} clients: {}", p.engine, p.clients, p.error.as_deref().unwrap_or("")));
    }
    let in_process = record.phases.iter().any(|p| p.client_cpu.is_some_and(|c| c.engine_in_process));
    table.notes.push(format!(
        "CPU: ghbench's own process, then the whole machine, as shares of all its cores over the phase{}",
        if in_process { "; for an engine without a server ghbench's share includes the engine's own work" } else { "" }
    ));
    table.with_text_columns(1)
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
                "MISMATCH under load {} {} on {} ({} clients; client {} at {:.1} s): {}",
                m.query, m.variant, p.engine, p.clients, m.client, m.at_seconds, m.reason
            ));
            lines.extend(m.first_differences.iter().map(|d| format!("    {d}")));
        }
        if let Some(error) = &p.error {
            lines.push(format!("FAILED under load: {}, {} clients: {error}", p.engine, p.clients));
        }
        if p.failed_queries > 0 {
            let first = p.errors.first().map(|e| format!("; the first: {e}")).unwrap_or_default();
            lines.push(format!("ERRORS under load: {}, {} clients: {} queries failed{first}", p.engine, p.clients, p.failed_queries));
        }
    }
    lines
}

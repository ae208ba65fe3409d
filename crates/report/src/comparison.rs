//! Two runs side by side: every query, variant and engine of either run, with
//! the ratio of medians and a verdict (faster, slower, same within the noise,
//! failed, only in one run, answers differ), so nothing of either run drops
//! out unsaid. Two bench records compare size by size.

use std::fmt::Write as _;

use super::{align_numbers, first_run_notes, held_line, median_said, new_table, result_for, server_label, Style};
use ghbench_record::bench::BenchRecord;
use ghbench_record::run::{EngineResult, QueryRecord, RunRecord, VerificationStatus};
use ghbench_core::Engine;

/// Two runs differ when their medians differ by more than this fraction.
pub const DEFAULT_NOISE: f64 = 0.10;

/// The new run against the old, per query × variant × engine of either run:
/// the ratio of medians and a verdict. Named old and new, not A and B, which
/// read as Queries A and B. Errors and differing answers are said in full
/// below the table, so the table stays narrow.
pub fn comparison(a: &RunRecord, b: &RunRecord, noise: f64, style: Style) -> String {
    let mut out = String::new();
    for (label, ra, rb) in [("data", data_summary(a), data_summary(b)), ("servers", servers_summary(a), servers_summary(b))] {
        if ra != rb {
            let _ = writeln!(out, "note: the runs differ in {label}: old {ra}; new {rb}");
        }
    }
    let same_data = data_summary(a) == data_summary(b);
    let header = ["query", "variant", "engine", "old median s (n, range)", "new median s (n, range)", "new/old", "verdict"].map(String::from).to_vec();
    let gap = style.gap();
    let mut table = new_table(style, header);
    let mut details = Vec::new();
    for (query, variant) in keys(a, b) {
        let (qa, qb) = (find(a, &query, &variant), find(b, &query, &variant));
        for engine in engines_of(qa, qb) {
            let (ea, eb) = (qa.and_then(|q| result_for(q, &engine)), qb.and_then(|q| result_for(q, &engine)));
            let (sa, sb) = (ea.and_then(EngineResult::hot_stats), eb.and_then(EngineResult::hot_stats));
            let (ma, mb) = (sa.map(|s| s.median), sb.map(|s| s.median));
            let which = format!("{query} {variant} on {engine}");
            let mut verdict = match (qa.zip(ea), qb.zip(eb)) {
                (None, _) => "only in new".to_string(),
                (_, None) => "only in old".to_string(),
                (Some((_, ea)), Some((_, eb))) => match (&ea.error, &eb.error) {
                    (Some(_), Some(_)) => "failed in both".to_string(),
                    (Some(_), None) => "failed in old".to_string(),
                    (None, Some(_)) => "failed in new".to_string(),
                    (None, None) => speed(ma, mb, noise),
                },
            };
            for (run, result) in [("old", ea), ("new", eb)] {
                if let Some(error) = result.and_then(|r| r.error.as_ref()) {
                    details.push(format!("{which}: failed in the {run} run: {error}"));
                }
            }
            let differ = answers_differ(qa, ea, qb, eb, same_data);
            if let Some(why) = &differ {
                verdict.push_str("; answers differ");
                details.push(format!("{which}: answers differ: {why}"));
            }
            let ratio = ma.zip(mb).filter(|(a, _)| *a > 0.0).map_or_else(|| "–".to_string(), |(a, b)| format!("{:.3}", b / a));
            table.add_row(vec![query.clone(), variant.clone(), engine.to_string(), median_said(sa, gap), median_said(sb, gap), ratio, verdict]);
        }
    }
    align_numbers(&mut table, 3);
    let _ = writeln!(out, "old: {} ({})\nnew: {} ({})\n{table}", a.context.started_at, servers_summary(a), b.context.started_at, servers_summary(b));
    for line in details {
        let _ = writeln!(out, "{line}");
    }
    for (run, record) in [("old", a), ("new", b)] {
        for note in first_run_notes(record) {
            let _ = writeln!(out, "note: in the {run} run, {note}");
        }
    }
    out
}

/// Two bench records, size by size (matched by hours): each size both hold is
/// compared as two runs; a size in one alone is said.
pub fn bench_comparison(a: &BenchRecord, b: &BenchRecord, noise: f64, style: Style) -> String {
    let mut hours: Vec<u32> = a.sizes.iter().chain(&b.sizes).map(|s| s.hours).collect();
    hours.sort_unstable();
    hours.dedup();
    let mut out = String::new();
    for h in hours {
        let (sa, sb) = (a.sizes.iter().find(|s| s.hours == h), b.sizes.iter().find(|s| s.hours == h));
        let events = |s: Option<&ghbench_record::bench::SizeRecord>| s.and_then(|s| s.events()).map_or("?".to_string(), |n| n.to_string());
        match (sa, sb) {
            (Some(sa), Some(sb)) => {
                let _ = writeln!(out, "== {h} h: old {} events, new {} events", events(Some(sa)), events(Some(sb)));
                out.push_str(&comparison(&sa.run, &sb.run, noise, style));
            }
            (Some(_), None) => {
                let _ = writeln!(out, "== {h} h: only in old ({} events); the new run has no such size", events(sa));
            }
            (None, Some(_)) => {
                let _ = writeln!(out, "== {h} h: only in new ({} events); the old run has no such size", events(sb));
            }
            (None, None) => {}
        }
        out.push('\n');
    }
    out
}

/// Why the answers of one engine to one query differ, if they do: the engines
/// disagreed within either run, or (on the same data) the engine's answer
/// changed between the runs.
fn answers_differ(qa: Option<&QueryRecord>, ea: Option<&EngineResult>, qb: Option<&QueryRecord>, eb: Option<&EngineResult>, same_data: bool) -> Option<String> {
    let mut why = Vec::new();
    for (run, q, e) in [("old", qa, ea), ("new", qb, eb)] {
        let (Some(q), Some(e)) = (q, e) else { continue };
        let disagreed = q.verification.status == VerificationStatus::Mismatch
            && (q.verification.mismatches.iter().any(|m| m.engine == e.engine)
                || (q.verification.agreeing.is_empty() && q.verification.reference.as_ref() == Some(&e.engine)));
        if disagreed {
            let reasons: Vec<&str> = q.verification.mismatches.iter().map(|m| m.reason.as_str()).collect();
            why.push(format!("the engines disagreed in the {run} run ({})", reasons.join("; ")));
        }
    }
    if let (Some(ea), Some(eb)) = (ea, eb) {
        let answered = ea.error.is_none() && eb.error.is_none();
        // The whole answers' digests where both runs kept one, else their first rows.
        let other_rows = match (&ea.answer_digest, &eb.answer_digest) {
            (Some(a), Some(b)) => a != b,
            _ => ea.head != eb.head,
        };
        if same_data && answered && (ea.rows != eb.rows || other_rows) {
            why.push(format!("on the same data the old run gave {} rows, the new {} (or other rows)", count(ea.rows), count(eb.rows)));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

fn count(rows: Option<u64>) -> String {
    rows.map_or_else(|| "?".to_string(), |n| n.to_string())
}

/// The verdict on two medians.
fn speed(old: Option<f64>, new: Option<f64>, noise: f64) -> String {
    let (Some(old), Some(new)) = (old, new) else { return "no time to compare".to_string() };
    let ratio = new / old;
    if ratio < 1.0 - noise {
        format!("new faster ({:.0}% less time)", (1.0 - ratio) * 100.0)
    } else if ratio > 1.0 + noise {
        format!("new slower ({:.0}% more time)", (ratio - 1.0) * 100.0)
    } else {
        format!("same within {:.0}%", noise * 100.0)
    }
}

/// Every (query, variant) of either run: the old run's order, then the new's others.
fn keys(a: &RunRecord, b: &RunRecord) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for q in a.queries.iter().chain(&b.queries) {
        let key = (q.query.clone(), q.variant.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

fn find<'a>(r: &'a RunRecord, query: &str, variant: &str) -> Option<&'a QueryRecord> {
    r.queries.iter().find(|q| q.query == query && q.variant == variant)
}

/// The engines of either run's record of a query, the old run's first.
fn engines_of(qa: Option<&QueryRecord>, qb: Option<&QueryRecord>) -> Vec<Engine> {
    let mut engines: Vec<Engine> = Vec::new();
    for e in qa.into_iter().chain(qb).flat_map(|q| &q.engines) {
        if !engines.contains(&e.engine) {
            engines.push(e.engine.clone());
        }
    }
    engines
}

/// Which data each engine held (not how long loading it took, which runs on
/// the same data may differ in, and older files lack).
fn data_summary(r: &RunRecord) -> String {
    let engines = r.context.engines.iter().map(|e| format!("{}: {}", e.engine, held_line(e)));
    format!("table {}; {}", r.context.table, engines.collect::<Vec<_>>().join("; "))
}

fn servers_summary(r: &RunRecord) -> String {
    r.context.engines.iter().map(|e| format!("{} = {}", e.engine, server_label(e))).collect::<Vec<_>>().join(", ")
}

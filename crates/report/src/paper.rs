//! The paper's published numbers beside ours, as a table of text cells that
//! the Markdown report and the HTML page each lay out in their own syntax.

use ghbench_core::Engine;
use serde::Serialize;

use super::{median_said, percent, query_label, result_for, ResultsView};
use ghbench_record::run::RunRecord;

/// The paper's numbers and ours for the engines both ran, per query.
#[derive(Serialize)]
pub(crate) struct PaperTable {
    pub events: u64,
    pub machine: String,
    /// (product, engine) as the paper ran them, its baseline first.
    pub products: Vec<(String, Engine)>,
    /// Which of our variants stands beside the paper's numbers.
    pub variant: &'static str,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl PaperTable {
    /// None when the record carries no published numbers.
    pub fn of(record: &RunRecord) -> Option<PaperTable> {
        let paper = record.published.as_ref()?;
        let ours = |variant: &str| record.queries.iter().filter(|q| q.variant == variant).collect::<Vec<_>>();
        let (variant, queries) = match ours("published") {
            q if !q.is_empty() => ("published", q),
            _ => ("corrected", ours("corrected")),
        };
        // The paper's baseline first, as the paper put it.
        let engines: Vec<&Engine> =
            std::iter::once(&paper.baseline).chain(paper.engines.keys().filter(|e| **e != paper.baseline)).collect();
        let product = |e: &Engine| paper.engines.get(e).cloned().unwrap_or_else(|| e.to_string());
        // Ours beside the paper's for the engines both ran, "faster by" from the paper's baseline.
        let view = ResultsView { baseline: Some(&paper.baseline), ..ResultsView::of(record) };
        let ours: Vec<&Engine> = engines.iter().copied().filter(|e| view.engines.contains(e)).collect();
        let others: Vec<&Engine> = engines[1..].to_vec();
        let mut header = vec!["query".to_string()];
        header.extend(engines.iter().map(|e| format!("paper {} s", product(e))));
        header.extend(others.iter().map(|o| format!("paper {}", view.faster_by_header(o))));
        header.extend(ours.iter().map(|e| format!("ours {e} s")));
        if ours.contains(&&paper.baseline) {
            header.extend(others.iter().filter(|o| ours.contains(o)).map(|o| format!("ours {}", view.faster_by_header(o))));
        }
        let mut rows = Vec::new();
        for (name, secs) in &paper.seconds {
            let q = queries.iter().find(|q| &q.query == name);
            let mut row = vec![name.clone()];
            row.extend(engines.iter().map(|e| secs.get(*e).map(|s| format!("{s:.0}")).unwrap_or_default()));
            row.extend(others.iter().map(|_| paper.faster_by.get(name).map(|f| percent(*f)).unwrap_or_default()));
            row.extend(ours.iter().map(|e| median_said(q.and_then(|q| result_for(q, e)?.hot_stats()), " ")));
            if ours.contains(&&paper.baseline) {
                row.extend(others.iter().filter(|o| ours.contains(o)).map(|o| q.map(|q| view.faster_by(q, o)).unwrap_or_default()));
            }
            rows.push(row);
        }
        Some(PaperTable {
            events: paper.events,
            machine: paper.machine.clone(),
            products: engines.iter().map(|e| (product(e), (*e).clone())).collect(),
            variant,
            header,
            rows,
        })
    }
}

/// A ratio of ours to the paper's within this of 1 (either way) counts as
/// reproducing the paper per event (issue 51's goal).
pub const WITHIN: f64 = 1.5;

/// The paper's engine a run's engine answers like for like: MongoDB's
/// setups beside the paper's MongoDB, every other (the jsonb table, its tuned
/// and normalized layouts, the MySQL family, polars) beside its PostgreSQL,
/// the paper's own proposal being PostgreSQL's.
fn paper_engine<'a>(paper: &'a ghbench_record::catalog::PaperResults, engine: &Engine) -> &'a Engine {
    let mongo = paper.engines.keys().find(|e| e.name() == "mongo");
    match mongo {
        Some(mongo) if engine.name().starts_with("mongo") => mongo,
        _ => &paper.baseline,
    }
}

/// The paper's events per second on `query` for the paper's engine `engine`
/// answers like for like (its events over its mean time), and that engine.
fn paper_rate<'a>(paper: &'a ghbench_record::catalog::PaperResults, query: &str, engine: &Engine) -> Option<(f64, &'a Engine)> {
    let theirs = paper_engine(paper, engine);
    Some((paper.events as f64 / paper.seconds.get(query)?.get(theirs)?, theirs))
}

/// Which queries do like-for-like work in `variant`: every published text;
/// of the corrected ones A–C (they differ from the published only in
/// tie-breaking sort keys), not D (it reads other events than published D).
fn like_for_like(variant: &str, query: &str) -> bool {
    variant == "published" || query != "D"
}

/// Per query, variant and engine: events per second, hot (median) and cold,
/// beside the paper's (its events over its mean time), their ratio, and
/// what limits ours: the plan's indexes and what the engine read from
/// storage. None without the paper's numbers.
pub fn per_event_table(run: &RunRecord) -> Option<super::bench::TextTable> {
    let paper = run.published.as_ref()?;
    let mut table = super::bench::TextTable::new(&["query", "engine", "paper events/s", "ours hot events/s", "hot ÷ paper", "ours cold events/s", "cold ÷ paper", "plan", "read from storage"]);
    for q in run.queries.iter().filter(|q| like_for_like(&q.variant, &q.query)) {
        for r in &q.engines {
            let Some(engine) = run.context.engines.iter().find(|e| e.engine == r.engine) else { continue };
            let Some(events) = engine.data.as_ref().map(|d| d.events).filter(|&n| n > 0) else { continue };
            let Some((paper_rate, theirs)) = paper_rate(paper, &q.query, &r.engine) else { continue };
            let rate = |seconds: f64| events as f64 / seconds;
            let hot = r.hot_stats().map(|s| rate(s.median));
            let cold = r.cold_seconds().map(rate);
            let ratio = |ours: Option<f64>| ours.map_or_else(|| "–".into(), |o| format!("{:.2}×", o / paper_rate));
            let plan = match r.index_used {
                Some(true) => format!("index: {}", r.plan.as_ref().map(|p| p.indexes.join(", ")).unwrap_or_default()),
                Some(false) => "no index".into(),
                None => "–".into(),
            };
            let read = r.read.as_ref().and_then(|read| Some((read.runs, read.kernel.as_ref()?.counters.get("read_bytes")?)));
            table.rows.push(vec![
                query_label(q),
                r.engine.to_string(),
                format!("{paper_rate:.0} ({})", paper.engines.get(theirs).cloned().unwrap_or_else(|| theirs.to_string())),
                hot.map_or_else(|| "–".into(), |h| format!("{h:.0}")),
                ratio(hot),
                cold.map_or_else(|| "–".into(), |c| format!("{c:.0}")),
                ratio(cold),
                plan,
                read.map_or_else(|| "–".into(), |(runs, bytes)| format!("{} over {runs} runs", ghbench_core::size::said(*bytes))),
            ]);
        }
    }
    table.notes.push(format!(
        "events per second: the engine's events over its time; the paper's: {} events over its mean total query time, {}. Ours ÷ the paper's events/s: above 1 ours is faster. Corrected D is left out: it reads other events than published D. Within {WITHIN}× of the paper either way counts as reproducing it per event.",
        paper.events, paper.machine
    ));
    Some(table.with_text_columns(2).with_text_last(2))
}

/// Ours against the paper per event, with its direction (a bare `0.79×`
/// read either way): `0.79× the paper's events/s: slower`.
fn ratio_said(ratio: f64) -> String {
    let direction = if ratio >= 1.0 { "faster" } else { "slower" };
    format!("{ratio:.2}× the paper's events/s: {direction}")
}

/// Per query of `engine`, at which of `runs` (each with its heading) its
/// events per second come within [`WITHIN`]× of the paper's, hot or cold,
/// or the nearest it came: the goal said in words.
pub fn within_lines(runs: &[(String, &RunRecord)], engine: &Engine) -> Vec<String> {
    let mut lines = Vec::new();
    let Some((_, first)) = runs.first() else { return lines };
    let Some(paper) = first.published.as_ref() else { return lines };
    // A ratio per event is only as good as the sizes it sets side by side.
    if let Some(events) = first.context.engines.iter().find(|e| &e.engine == engine).and_then(|e| e.data.as_ref()).map(|d| d.events) {
        let share = events as f64 / paper.events as f64;
        let caveat = match share < 0.001 {
            true => ": too small for these ratios to say much (the paper's regime is reproduced by data ÷ memory, and a run this small is mostly fixed costs)",
            false => "",
        };
        lines.push(format!(
            "On {} events, {:.3}% of the paper's {}{caveat}:",
            ghbench_record::run::thousands(events),
            share * 100.0,
            ghbench_record::run::thousands(paper.events)
        ));
    }
    for q in first.queries.iter().filter(|q| like_for_like(&q.variant, &q.query)) {
        let Some((paper_rate, _)) = paper_rate(paper, &q.query, engine) else { continue };
        // Every (heading, hot or cold, ratio) measured.
        let mut ratios: Vec<(String, f64)> = Vec::new();
        for (heading, run) in runs {
            let Some(events) = run.context.engines.iter().find(|e| &e.engine == engine).and_then(|e| e.data.as_ref()).map(|d| d.events as f64) else { continue };
            let Some(r) = run.queries.iter().find(|o| o.query == q.query && o.variant == q.variant).and_then(|o| result_for(o, engine)) else { continue };
            if let Some(stats) = r.hot_stats() {
                ratios.push((format!("hot, {heading}"), events / stats.median / paper_rate));
            }
            if let Some(cold) = r.cold_seconds() {
                ratios.push((format!("cold, {heading}"), events / cold / paper_rate));
            }
        }
        let distance = |r: f64| r.max(1.0 / r);
        let within: Vec<String> = ratios.iter().filter(|(_, r)| distance(*r) <= WITHIN).map(|(at, r)| format!("{at} ({})", ratio_said(*r))).collect();
        let nearest = ratios.iter().min_by(|a, b| distance(a.1).total_cmp(&distance(b.1)));
        lines.push(match (within.is_empty(), nearest) {
            (false, _) => format!("{} on {engine}: within {WITHIN}× of the paper per event: {}", query_label(q), within.join("; ")),
            (true, Some((at, r))) => format!("{} on {engine}: NOT within {WITHIN}× of the paper per event anywhere; nearest {at} ({})", query_label(q), ratio_said(*r)),
            (true, None) => format!("{} on {engine}: not measured", query_label(q)),
        });
    }
    lines
}

//! How a `bench --scale` grows with the data, beyond the hot medians: the
//! cold runs' and the answers' slopes beside them, each engine's load, index
//! builds and bytes, and, where a query grows faster than the data, what the
//! record says of why (the plan at the largest size, the bytes its runs
//! spilled to temporary files) without running anything again.

use ghbench_record::bench::{BenchRecord, Growth, MIN_FIT_SECONDS, SUPERLINEAR};
use ghbench_record::run::{thousands, EngineResult};

use super::bench::TextTable;

/// One row per query, variant and engine: how its hot median, its cold run
/// and its answer's rows grow; where a fit means nothing, why (hot first).
pub fn growth_table(record: &BenchRecord) -> TextTable {
    let mut table = TextTable::new(&["query", "variant", "engine", "sizes", "s per million events", "hot slope", "cold slope", "rows slope", "not a result because"]);
    for g in &record.growth {
        // A fit that means nothing is not shown as a number.
        let why = g.not_meaningful();
        let fit = |v: Option<f64>, digits: usize| v.filter(|_| why.is_none()).map_or_else(|| "–".into(), |v| format!("{v:.digits$}"));
        table.rows.push(vec![
            g.query.clone(),
            g.variant.clone(),
            g.engine.to_string(),
            g.points.len().to_string(),
            fit(g.seconds_per_million_events, 4),
            fit(g.exponent, 2),
            g.cold.as_ref().map_or_else(|| "–".into(), |c| c.exponent_said(Some(MIN_FIT_SECONDS))),
            g.rows.as_ref().map_or_else(|| "–".into(), |r| r.exponent_said(None)),
            why.clone().unwrap_or_default(),
        ]);
        table.notes.extend(under_floor(g));
    }
    table.with_text_columns(3)
}

/// Where a fit holds but some sizes' times are under the floor (mostly
/// fixed costs there), said: `A corrected postgres: hot under 10 ms at 7,702 events`.
fn under_floor(g: &Growth) -> Vec<String> {
    let runs = [("hot", Some(g.hot())), ("cold", g.cold.clone())];
    runs.into_iter()
        .filter_map(|(which, fit)| {
            let fit = fit.filter(|f| f.not_meaningful(Some(MIN_FIT_SECONDS)).is_none())?;
            let low = fit.under_floor(MIN_FIT_SECONDS);
            (!low.is_empty()).then(|| {
                let sizes: Vec<String> = low.iter().map(|n| thousands(*n)).collect();
                format!("{} {} {}: {which} under {} ms at {} events, mostly fixed costs there", g.query, g.variant, g.engine, MIN_FIT_SECONDS * 1000.0, sizes.join(", "))
            })
        })
        .collect()
}

/// One row per engine: how its load, index builds and stored bytes grow,
/// and its bytes per event at the smallest and the largest size.
pub fn engine_growth_table(record: &BenchRecord) -> Option<TextTable> {
    if record.engine_growth.is_empty() {
        return None;
    }
    let mut table = TextTable::new(&["engine", "load slope", "indexes slope", "bytes slope", "bytes per event"]);
    for e in &record.engine_growth {
        let per_event = match (e.bytes_per_event.first(), e.bytes_per_event.last()) {
            (Some(first), Some(last)) if e.bytes_per_event.len() > 1 => format!("{:.0} → {:.0}", first.1, last.1),
            (Some(only), _) => format!("{:.0}", only.1),
            _ => "–".into(),
        };
        table.rows.push(vec![
            e.engine.to_string(),
            e.load_seconds.exponent_said(Some(MIN_FIT_SECONDS)),
            e.index_seconds.exponent_said(Some(MIN_FIT_SECONDS)),
            e.stored_bytes.exponent_said(None),
            per_event,
        ]);
        // An engine that builds no index has no slope to explain.
        let reasons = [("load", &e.load_seconds), ("indexes", &e.index_seconds)];
        table.notes.extend(reasons.into_iter().filter(|(_, fit)| !fit.points.is_empty()).filter_map(|(what, fit)| Some(format!("{} {what}: no slope ({})", e.engine, fit.not_meaningful(Some(MIN_FIT_SECONDS))?))));
    }
    Some(table.with_text_columns(1))
}

/// Per query, variant and engine whose hot or cold time grew faster than
/// the data (log–log slope above 1.1, a fit that holds): the slopes, the
/// answer's rows, the bytes spilled at the smallest and largest size, and
/// the plan at the largest, as the record keeps them.
pub fn what_grew(record: &BenchRecord) -> Vec<String> {
    let (Some(smallest), Some(largest)) = (record.sizes.first(), record.sizes.last()) else { return Vec::new() };
    let result = |size: &ghbench_record::bench::SizeRecord, g: &Growth| -> Option<EngineResult> {
        let query = size.run.queries.iter().find(|q| q.query == g.query && q.variant == g.variant)?;
        query.engines.iter().find(|r| r.engine == g.engine).cloned()
    };
    let mut lines = Vec::new();
    for g in &record.growth {
        let hot = g.not_meaningful().is_none().then_some(g.exponent).flatten();
        let cold = g.cold.as_ref().filter(|c| c.not_meaningful(Some(MIN_FIT_SECONDS)).is_none()).and_then(|c| c.exponent);
        if !hot.into_iter().chain(cold).any(|e| e > SUPERLINEAR) {
            continue;
        }
        let slopes = [("hot", hot), ("cold", cold)].iter().filter_map(|(w, e)| Some(format!("{w} {:.2}", (*e)?))).collect::<Vec<_>>().join(", ");
        let (first, last) = (result(smallest, g), result(largest, g));
        let mut parts = vec![format!("{} {} {}: slope {slopes}", g.query, g.variant, g.engine)];
        if let Some(rows) = &g.rows {
            parts.push(format!(
                "answer rows {} → {} (slope {})",
                rows.points.first().map_or("?".into(), |p| thousands(p.1 as u64)),
                rows.points.last().map_or("?".into(), |p| thousands(p.1 as u64)),
                rows.exponent_said(None)
            ));
        }
        match (first.as_ref().map(spilled), last.as_ref().map(spilled)) {
            (Some(Ok((_, small))), Some(Ok((what, large)))) => parts.push(format!("spilled {small} → {large} ({what})")),
            (_, Some(Ok((what, large)))) => parts.push(format!("spilled {large} at the largest size ({what})")),
            (_, Some(Err(why))) => parts.push(why),
            (_, None) => parts.push("no result at the largest size".into()),
        }
        parts.push(format!("plan at the largest size: {}", last.as_ref().and_then(plan_outline).unwrap_or_else(|| "none recorded".into())));
        lines.push(parts.join("; "));
    }
    lines
}

/// What a query's runs wrote to temporary files, where the engine counts it,
/// per run: PostgreSQL's `temp_bytes` (its database's, in bytes), MariaDB's
/// on-disk temporary tables (the server's, a count): (the counter, its value
/// said); or why it was not counted.
fn spilled(result: &EngineResult) -> Result<(String, String), String> {
    let read = result.read.as_ref().ok_or("reads not counted")?;
    if let Some(why) = &read.unavailable {
        return Err(format!("reads not counted: {why}"));
    }
    let (name, value) = read
        .counters
        .iter()
        .find(|(name, _)| name.starts_with("temp_bytes") || name.starts_with("created_tmp_disk_tables"))
        .ok_or("spills not counted by this engine")?;
    let per_run = *value / read.runs.max(1) as u64;
    let said = match name.starts_with("temp_bytes") {
        true => ghbench_core::size::said(per_run),
        false => format!("{} tables", thousands(per_run)),
    };
    Ok((format!("{name}, a run's mean over {}", read.runs), said))
}

/// The plan's nodes, outermost first, without their costs: `Limit ← Sort ←
/// HashAggregate ← Seq Scan on t`, from PostgreSQL's text plan or its JSON one
/// (the default); the indexes used for an engine whose plan has no such tree;
/// why there is none when the plan failed.
fn plan_outline(result: &EngineResult) -> Option<String> {
    let plan = result.plan.as_ref()?;
    if let Some(error) = &plan.error {
        return Some(format!("not read ({error})"));
    }
    if let Some(text) = &plan.text {
        // The top node's line, then every node below it (`->  Sort  (cost=…)`);
        // detail lines (`Filter: ((data ->> 'type') …)`) are not nodes.
        let nodes: Vec<String> = text
            .lines()
            .enumerate()
            .filter(|(i, l)| *i == 0 || l.trim_start().starts_with("->"))
            .filter_map(|(_, l)| Some(l.trim().trim_start_matches("->").trim().split("  (").next()?.trim().to_string()))
            .filter(|node| !node.is_empty())
            .take(OUTLINE_NODES)
            .collect();
        return (!nodes.is_empty()).then(|| nodes.join(" ← "));
    }
    let mut nodes = Vec::new();
    if let Some(top) = plan.json.as_ref().and_then(|json| json.get(0)?.get("Plan")) {
        json_nodes(top, &mut nodes);
    }
    Some(match (nodes.is_empty(), plan.indexes.is_empty()) {
        (false, _) => nodes.join(" ← "),
        (true, true) => "no index used".into(),
        (true, false) => format!("indexes {}", plan.indexes.join(", ")),
    })
}

/// Nodes kept of a plan's outline: enough to see what it does.
const OUTLINE_NODES: usize = 6;

/// PostgreSQL's JSON plan node by node, depth first: `Seq Scan on t`.
fn json_nodes(node: &serde_json::Value, nodes: &mut Vec<String>) {
    if nodes.len() >= OUTLINE_NODES {
        return;
    }
    let Some(kind) = node.get("Node Type").and_then(|k| k.as_str()) else { return };
    nodes.push(match node.get("Relation Name").and_then(|r| r.as_str()) {
        Some(relation) => format!("{kind} on {relation}"),
        None => kind.to_string(),
    });
    for child in node.get("Plans").and_then(|p| p.as_array()).into_iter().flatten() {
        json_nodes(child, nodes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_record::run::Plan;

    fn planned(plan: Plan) -> EngineResult {
        let mut result: EngineResult = serde_json::from_value(serde_json::json!({"engine": "postgres", "file": "A.sql", "cold_run": null, "iterations": [], "stats": null, "rows": null, "verified": null, "error": null, "plan": null, "index_used": null, "head": []})).unwrap();
        result.plan = Some(plan);
        result
    }

    #[test]
    fn a_plan_is_outlined_node_by_node_from_text_or_json() {
        // Detail lines carry jsonb's arrows; they are not nodes.
        let text = "Limit  (cost=1..2)\n  ->  HashAggregate  (cost=1..2)\n        Group Key: ((data -> 'repo'::text) ->> 'name'::text)\n        ->  Seq Scan on t  (cost=0..1)\n              Filter: ((data ->> 'type'::text) = 'IssuesEvent'::text)";
        let outline = plan_outline(&planned(Plan { text: Some(text.into()), ..Plan::default() }));
        assert_eq!(outline.as_deref(), Some("Limit ← HashAggregate ← Seq Scan on t"));
        let json = serde_json::json!([{"Plan": {"Node Type": "Sort", "Plans": [{"Node Type": "Aggregate", "Plans": [{"Node Type": "Bitmap Heap Scan", "Relation Name": "t", "Plans": [{"Node Type": "Bitmap Index Scan"}]}]}]}}]);
        let outline = plan_outline(&planned(Plan { json: Some(json), ..Plan::default() }));
        assert_eq!(outline.as_deref(), Some("Sort ← Aggregate ← Bitmap Heap Scan on t ← Bitmap Index Scan"));
        let failed = plan_outline(&planned(Plan { error: Some("EXPLAIN refused".into()), ..Plan::default() }));
        assert_eq!(failed.as_deref(), Some("not read (EXPLAIN refused)"));
    }
}

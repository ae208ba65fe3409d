//! Views of a run record: the terminal table, the Markdown report, and the
//! comparison of two runs. They read the record only, so a saved JSON file
//! renders exactly as the run that wrote it.

use std::fmt::Write as _;

use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{CellAlignment, Table};

use crate::record::{postgres_faster_by, Context, EngineRecord, EngineResult, QueryRecord, RunRecord, VerificationStatus};

/// Two runs differ when their medians differ by more than this fraction.
pub const DEFAULT_NOISE: f64 = 0.10;

/// Which table style: for a terminal, or for a Markdown file.
#[derive(Clone, Copy)]
pub enum Style {
    Terminal,
    Markdown,
}

fn new_table(style: Style, header: Vec<String>) -> Table {
    let mut table = Table::new();
    table.load_style(match style {
        Style::Terminal => UTF8_FULL_CONDENSED,
        Style::Markdown => ASCII_MARKDOWN,
    });
    table.set_header(header);
    table
}

/// Right-aligns every column but the first `text_columns`.
fn align_numbers(table: &mut Table, text_columns: usize) {
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

fn percent(fraction: f64) -> String {
    format!("{:+.2}%", fraction * 100.0)
}

fn mark(result: &EngineResult) -> &'static str {
    match (result.error.is_some(), result.verified) {
        (true, _) => "error",
        (_, Some(true)) => "✓",
        (_, Some(false)) => "✗",
        (_, None) => "–",
    }
}

fn result_for<'a>(query: &'a QueryRecord, engine: &str) -> Option<&'a EngineResult> {
    query.engines.iter().find(|e| e.engine == engine)
}

fn median(query: &QueryRecord, engine: &str) -> Option<f64> {
    result_for(query, engine)?.stats.map(|s| s.median)
}

/// PostgreSQL vs MongoDB for one query, in the paper's `(S-F)/S` form.
fn speedup(query: &QueryRecord) -> String {
    match (median(query, "postgres"), median(query, "mongo")) {
        (Some(pg), Some(mongo)) => postgres_faster_by(pg, mongo).map(percent).unwrap_or_default(),
        _ => String::new(),
    }
}

/// Engine × query: median seconds, rows, verified, and PostgreSQL's speedup.
pub fn results_table(record: &RunRecord, style: Style) -> String {
    let engines: Vec<&str> = record.context.engines.iter().map(|e| e.engine.as_str()).collect();
    let mut header = vec!["query".to_string(), "variant".to_string()];
    for engine in &engines {
        header.extend([format!("{engine} median s"), format!("{engine} rows"), format!("{engine} ok")]);
    }
    let both = engines.contains(&"postgres") && engines.contains(&"mongo");
    if both {
        header.push("PostgreSQL faster by (S-F)/S".into());
    }
    let mut table = new_table(style, header);
    for query in &record.queries {
        let mut row = vec![query.query.clone(), query.variant.clone()];
        for engine in &engines {
            match result_for(query, engine) {
                Some(r) => row.extend([
                    r.stats.map(|s| seconds(s.median)).unwrap_or_else(|| "–".into()),
                    r.rows.map(|n| n.to_string()).unwrap_or_else(|| "–".into()),
                    mark(r).to_string(),
                ]),
                None => row.extend(["".to_string(), "".to_string(), "".to_string()]),
            }
        }
        if both {
            row.push(speedup(query));
        }
        table.add_row(row);
    }
    align_numbers(&mut table, 2);
    table.to_string()
}

/// Loud lines for every mismatch and failure (empty when all verified).
pub fn problems(record: &RunRecord) -> Vec<String> {
    let mut lines = Vec::new();
    for q in &record.queries {
        for m in &q.verification.mismatches {
            let reference = q.verification.reference.as_deref().unwrap_or("?");
            lines.push(format!("MISMATCH {} {}: {} disagrees with {reference}: {}", q.query, q.variant, m.engine, m.reason));
            lines.extend(q.verification.cause.iter().map(|cause| format!("    cause: {cause}")));
            lines.extend(m.first_differences.iter().map(|d| format!("    {d}")));
        }
        for e in q.engines.iter().filter(|e| e.error.is_some()) {
            lines.push(format!("FAILED {} {} on {}: {}", q.query, q.variant, e.engine, e.error.as_deref().unwrap_or("")));
        }
    }
    lines
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

/// No engine disagreed or failed, and all held the same data (a single-engine
/// run has nothing to disagree with).
pub fn no_disagreement(record: &RunRecord) -> bool {
    let same_data = !matches!(&record.context.data_consistency, Some(data) if !data.agree);
    same_data
        && record
            .queries
            .iter()
            .all(|q| matches!(q.verification.status, VerificationStatus::Agree | VerificationStatus::NotCompared))
}

/// The whole report as Markdown: results, the paper beside them, environment, plans.
pub fn markdown(record: &RunRecord) -> String {
    let c = &record.context;
    let mut md = String::new();
    let _ = writeln!(md, "# ghbench OLAP results, {}\n", c.started_at);
    let warning = data_warning(c);
    if let Some((headline, differences)) = warning.split_first() {
        let _ = writeln!(md, "> **{headline}**\n>");
        for line in differences {
            let _ = writeln!(md, "> {}", line.trim_start());
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "Table `{}`; median of {} timed run(s) per engine and query, each from sending the query to receiving \
         its last row; {}.\n",
        c.table, c.repeat, c.cold.label
    );
    for engine in &c.engines {
        let _ = writeln!(md, "- **{}**: {}; {}", engine.engine, engine.server.label, data_line(engine));
    }
    md.push('\n');
    md.push_str(&caveats(record));
    let _ = writeln!(md, "## Results\n\n{}\n", results_table(record, Style::Markdown));
    let problems = problems(record);
    let compared = record.queries.iter().any(|q| matches!(q.verification.status, VerificationStatus::Agree));
    if problems.is_empty() && compared {
        md.push_str("Every query's results agree across engines.\n\n");
    } else if problems.is_empty() {
        md.push_str("Results were not compared across engines (fewer than two engines answered).\n\n");
    } else {
        let _ = writeln!(md, "**Results do not agree:**\n\n```text\n{}\n```\n", problems.join("\n"));
    }
    md.push_str(&paper_section(record));
    md.push_str(&runs_section(record));
    md.push_str(&environment_section(record));
    md.push_str(&plans_section(record));
    md
}

/// Which data an engine held: hours and events from its ingest ledger.
pub fn data_line(engine: &EngineRecord) -> String {
    match (&engine.data, &engine.data_error) {
        (Some(d), _) => format!(
            "{} hours ({} .. {}), {} events per the ingest ledger",
            d.hours,
            d.first_hour.as_deref().unwrap_or("?"),
            d.last_hour.as_deref().unwrap_or("?"),
            d.events
        ),
        (None, Some(e)) => format!("data loaded: {e}"),
        (None, None) => "data loaded: unknown".into(),
    }
}

fn caveats(record: &RunRecord) -> String {
    let mut text = String::new();
    for engine in record.context.engines.iter().filter(|e| e.server.product == "SecantusDB") {
        let _ = writeln!(
            text,
            "> **Caveat:** the `{}` engine is **{}**, a MongoDB-wire server, not MongoDB. Its timings say \
             nothing about MongoDB's speed; they only show this setup.\n",
            engine.engine, engine.server.label
        );
    }
    text
}

/// The paper's numbers beside ours (the published variant when we ran it).
fn paper_section(record: &RunRecord) -> String {
    let Some(paper) = &record.published else { return String::new() };
    let ours = |variant: &str| record.queries.iter().filter(|q| q.variant == variant).collect::<Vec<_>>();
    let (variant, queries) = match ours("published") {
        q if !q.is_empty() => ("published", q),
        _ => ("corrected", ours("corrected")),
    };
    let md = format!(
        "## Beside the paper's published numbers\n\nThe paper: {} events, {}, {} vs {}, mean total query time. \
         Ours: the `{variant}` variant on the data above. Different data size, hardware and servers: context, \
         not a comparison.\n\n",
        paper.events,
        paper.machine,
        paper.engines.get("postgres").map_or("PostgreSQL", String::as_str),
        paper.engines.get("mongo").map_or("MongoDB", String::as_str),
    );
    let header = ["query", "paper PostgreSQL s", "paper MongoDB s", "paper PG faster by", "ours postgres s", "ours mongo s", "ours PG faster by"];
    let mut table = new_table(Style::Markdown, header.map(String::from).to_vec());
    for (name, secs) in &paper.seconds {
        let q = queries.iter().find(|q| &q.query == name);
        let ours = |engine: &str| q.and_then(|q| median(q, engine)).map(seconds).unwrap_or_else(|| "–".into());
        table.add_row(vec![
            name.clone(),
            secs.get("postgres").map(|s| format!("{s:.0}")).unwrap_or_default(),
            secs.get("mongo").map(|s| format!("{s:.0}")).unwrap_or_default(),
            paper.postgres_faster_by.get(name).map(|f| percent(*f)).unwrap_or_default(),
            ours("postgres"),
            ours("mongo"),
            q.map(|q| speedup(q)).unwrap_or_default(),
        ]);
    }
    align_numbers(&mut table, 1);
    format!("{md}{table}\n\n")
}

fn runs_section(record: &RunRecord) -> String {
    let mut table = new_table(
        Style::Markdown,
        ["query", "variant", "engine", "runs (s)", "min", "median", "mean", "max", "cold run (s)", "index used"]
            .map(String::from)
            .to_vec(),
    );
    for q in &record.queries {
        for r in &q.engines {
            let runs: Vec<String> = r.iterations.iter().map(|i| seconds(i.seconds)).collect();
            let stat = |f: fn(&crate::record::Stats) -> f64| r.stats.as_ref().map(|s| seconds(f(s))).unwrap_or_default();
            table.add_row(vec![
                q.query.clone(),
                q.variant.clone(),
                r.engine.clone(),
                runs.join(" "),
                stat(|s| s.min),
                stat(|s| s.median),
                stat(|s| s.mean),
                stat(|s| s.max),
                r.cold_run.map(|c| seconds(c.seconds)).unwrap_or_default(),
                match r.index_used {
                    Some(true) => format!("yes: {}", r.plan.as_ref().map(|p| p.indexes.join(", ")).unwrap_or_default()),
                    Some(false) => "no".into(),
                    None => "unknown".into(),
                },
            ]);
        }
    }
    format!("## Every run\n\n{table}\n\n")
}

fn environment_section(record: &RunRecord) -> String {
    let c = &record.context;
    let m = &c.machine;
    let mut md = String::from("## Environment\n\n");
    let _ = writeln!(
        md,
        "- ghbench {} (commit {}{}), catalog: {}",
        c.ghbench_version,
        c.git_commit.as_deref().unwrap_or("unknown"),
        if c.git_dirty == Some(true) { ", with uncommitted changes" } else { "" },
        c.catalog
    );
    let _ = writeln!(
        md,
        "- machine: {}, {} logical cores, {:.1} GiB RAM, {}",
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.logical_cores.map_or("?".into(), |n| n.to_string()),
        m.memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
        m.os_release.as_deref().unwrap_or("unknown OS")
    );
    let _ = writeln!(md, "- command: `{}`", c.arguments.join(" "));
    let _ = writeln!(md, "- cache state: {}", c.cold.label);
    for action in &c.cold.actions {
        let _ = writeln!(md, "  - {action}");
    }
    for e in &c.engines {
        let _ = writeln!(md, "\n### {} ({})\n", e.engine, e.server.label);
        let _ = writeln!(md, "- build: {}\n- url: {}\n- data: {}", e.server.build, e.server.url, data_line(e));
        for (k, v) in &e.server.settings {
            let _ = writeln!(md, "- `{k}` = {v}");
        }
        match (&e.storage, &e.storage_error) {
            (Some(s), _) => {
                let _ = writeln!(
                    md,
                    "- storage: {} rows{}, table {} bytes, indexes {} bytes",
                    s.rows,
                    if s.rows_exact { "" } else { " (estimate)" },
                    s.table_bytes,
                    s.index_bytes
                );
                for i in &s.indexes {
                    let _ = writeln!(md, "  - index `{}`: {} bytes", i.name, i.bytes);
                }
            }
            (None, e) => {
                let _ = writeln!(md, "- storage: {}", e.as_deref().unwrap_or("unknown"));
            }
        }
    }
    md.push('\n');
    md
}

fn plans_section(record: &RunRecord) -> String {
    let mut md = String::from("## Plans\n\n");
    for q in &record.queries {
        for r in &q.engines {
            let Some(plan) = &r.plan else { continue };
            let body = match (&plan.text, &plan.json, &plan.error) {
                (Some(text), _, _) => text.clone(),
                (_, Some(json), _) => serde_json::to_string_pretty(json).unwrap_or_default(),
                (_, _, Some(err)) => err.clone(),
                _ => String::new(),
            };
            let _ = writeln!(
                md,
                "<details><summary>{} {} on {} ({})</summary>\n\n```text\n{}\n```\n</details>\n",
                q.query, q.variant, r.engine, plan.command, body
            );
        }
    }
    md
}

/// Run B against run A, per query × variant × engine: the ratio of medians and
/// whether B is faster or slower beyond the noise threshold.
pub fn comparison(a: &RunRecord, b: &RunRecord, noise: f64, style: Style) -> String {
    let mut out = String::new();
    for (label, ra, rb) in [("data", data_summary(a), data_summary(b)), ("servers", servers_summary(a), servers_summary(b))] {
        if ra != rb {
            let _ = writeln!(out, "note: the runs differ in {label}: A {ra}; B {rb}");
        }
    }
    let header = ["query", "variant", "engine", "A median s", "B median s", "B/A", "verdict"].map(String::from).to_vec();
    let mut table = new_table(style, header);
    for qa in &a.queries {
        let Some(qb) = b.queries.iter().find(|q| q.query == qa.query && q.variant == qa.variant) else { continue };
        for ea in &qa.engines {
            let (Some(ma), Some(mb)) = (ea.stats.map(|s| s.median), median(qb, &ea.engine)) else { continue };
            let ratio = mb / ma;
            let verdict = if ratio < 1.0 - noise {
                format!("B faster ({:.0}% less time)", (1.0 - ratio) * 100.0)
            } else if ratio > 1.0 + noise {
                format!("B slower ({:.0}% more time)", (ratio - 1.0) * 100.0)
            } else {
                format!("same within {:.0}%", noise * 100.0)
            };
            table.add_row(vec![qa.query.clone(), qa.variant.clone(), ea.engine.clone(), seconds(ma), seconds(mb), format!("{ratio:.3}"), verdict]);
        }
    }
    align_numbers(&mut table, 3);
    let _ = writeln!(out, "A: {} ({})\nB: {} ({})\n{table}", a.context.started_at, servers_summary(a), b.context.started_at, servers_summary(b));
    out
}

fn data_summary(r: &RunRecord) -> String {
    let engines = r.context.engines.iter().map(|e| format!("{}: {}", e.engine, data_line(e)));
    format!("table {}; {}", r.context.table, engines.collect::<Vec<_>>().join("; "))
}

fn servers_summary(r: &RunRecord) -> String {
    r.context.engines.iter().map(|e| format!("{} = {}", e.engine, e.server.label)).collect::<Vec<_>>().join(", ")
}

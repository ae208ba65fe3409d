//! The Markdown report: results, the paper beside them, every run, the
//! environment, the plans.

use std::fmt::Write as _;

use ghbench_core::Engine;

use super::{
    align_numbers, caveats, data_line, data_warning, median, new_table, percent, problems, results_table, seconds, server_label,
    ResultsView, Style,
};
use crate::record::{RunRecord, VerificationStatus};

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
        let _ = writeln!(md, "- **{}**: {}; {}", engine.engine, server_label(engine), data_line(engine));
    }
    md.push('\n');
    for (engine, caveat) in caveats(c) {
        let _ = writeln!(md, "> **Caveat** (`{engine}`): {caveat}.\n");
    }
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

/// The paper's numbers beside ours (the published variant when we ran it).
fn paper_section(record: &RunRecord) -> String {
    let Some(paper) = &record.published else { return String::new() };
    let ours = |variant: &str| record.queries.iter().filter(|q| q.variant == variant).collect::<Vec<_>>();
    let (variant, queries) = match ours("published") {
        q if !q.is_empty() => ("published", q),
        _ => ("corrected", ours("corrected")),
    };
    // The paper's baseline first, as the paper put it.
    let engines: Vec<&Engine> =
        std::iter::once(&paper.baseline).chain(paper.engines.keys().filter(|e| **e != paper.baseline)).collect();
    let product = |e: &Engine| paper.engines.get(e).cloned().unwrap_or_else(|| e.to_string());
    let products: Vec<String> = engines.iter().map(|e| format!("{} (`{e}`)", product(e))).collect();
    let md = format!(
        "## Beside the paper's published numbers\n\nThe paper: {} events, {}, {}, mean total query time. \
         Ours: the `{variant}` variant on the data above. Different data size, hardware and servers: context, \
         not a comparison.\n\n",
        paper.events,
        paper.machine,
        products.join(" vs "),
    );
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
    let mut table = new_table(Style::Markdown, header);
    for (name, secs) in &paper.seconds {
        let q = queries.iter().find(|q| &q.query == name);
        let mut row = vec![name.clone()];
        row.extend(engines.iter().map(|e| secs.get(*e).map(|s| format!("{s:.0}")).unwrap_or_default()));
        row.extend(others.iter().map(|_| paper.faster_by.get(name).map(|f| percent(*f)).unwrap_or_default()));
        row.extend(ours.iter().map(|e| q.and_then(|q| median(q, e)).map(seconds).unwrap_or_else(|| "–".into())));
        if ours.contains(&&paper.baseline) {
            row.extend(others.iter().filter(|o| ours.contains(o)).map(|o| q.map(|q| view.faster_by(q, o)).unwrap_or_default()));
        }
        table.add_row(row);
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
                r.engine.to_string(),
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
        let _ = writeln!(md, "\n### {} ({})\n", e.engine, server_label(e));
        if let Some(server) = &e.server {
            let _ = writeln!(md, "- build: {}\n- url: {}", server.build, server.url);
        }
        let _ = writeln!(md, "- data: {}", data_line(e));
        for (k, v) in e.server.iter().flat_map(|s| &s.settings) {
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


//! The Markdown report: results, the charts, many clients at once (with a
//! concurrency phase), the paper beside them, every run, the environment,
//! the plans.

use std::fmt::Write as _;

use super::paper::PaperTable;
use super::{
    align_numbers, caveats, data_line, data_warning, machine_line, new_table, problems, reconnect_notes, seconds,
    server_label, setup_lines, single_client_tables, storage_line, verification_summary, version_line, Chart, Style,
};
use super::charts::OVERVIEW;
use super::concurrency::{LoadSection, CHARTS as LOAD_CHARTS};
use super::summary::summary_table;
use super::ResultsView;
use ghbench_record::run::RunRecord;

/// The whole report as Markdown: results, the paper beside them, environment, plans.
pub fn markdown(record: &RunRecord) -> String {
    report(record, None)
}

/// The report with a section of charts, linked as `<charts_dir>/<name>.svg`:
/// `charts_dir` relative to the Markdown file, where the caller wrote `charts`.
pub fn markdown_with_charts(record: &RunRecord, charts: &[Chart], charts_dir: &str) -> String {
    report(record, Some((charts, charts_dir)))
}

fn report(record: &RunRecord, charts: Option<(&[Chart], &str)>) -> String {
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
    // The answer first: the summary, the overview chart, the verdict, the
    // caveats. The concurrency phase's charts go in its own section.
    let dir = charts.map_or("", |(_, dir)| dir);
    let (load_charts, run_charts): (Vec<&Chart>, Vec<&Chart>) = charts.into_iter().flat_map(|(c, _)| c).partition(|c| LOAD_CHARTS.contains(&c.name.as_str()));
    let (overview, detail) = match (charts, run_charts.split_first()) {
        (None, _) => (None, None),
        (Some(_), Some((first, rest))) if first.name == OVERVIEW => (Some(*first), Some(rest)),
        (Some(_), _) => (None, Some(run_charts.as_slice())),
    };
    let view = ResultsView::of(record);
    let _ = writeln!(md, "## Summary\n\n{}\n", summary_table(&view).render(Style::Markdown));
    if let Some(chart) = overview {
        md.push_str(&chart_links([chart], dir));
    }
    let problems = problems(record);
    if problems.is_empty() {
        let _ = writeln!(md, "**Verification:** {}\n", verification_summary(record));
    } else {
        let _ = writeln!(md, "**Verification: {}**\n\n```text\n{}\n```\n", verification_summary(record), problems.join("\n"));
    }
    let reconnects = reconnect_notes(record);
    if !reconnects.is_empty() {
        let _ = writeln!(md, "Connections lost and replaced during the runs:\n\n```text\n{}\n```\n", reconnects.join("\n"));
    }
    let _ = writeln!(
        md,
        "Table `{}`; median of {} timed run(s) per engine and query (beside it `n=`, the runs it rests on, and \
         their range, min – max), each from sending the query to receiving its last row; {}; {}. Machine: {}.\n",
        c.table,
        c.repeat,
        c.cold.label,
        super::limit_label(c),
        machine_line(&c.machine)
    );
    for engine in &c.engines {
        let _ = writeln!(md, "- **{}**: {}; {}", engine.engine, server_label(engine), data_line(engine));
        if let Some(said) = super::memory_limit_line(engine) {
            let _ = writeln!(md, "  - memory: {said}");
        }
        if let Some(limit) = &engine.disk_limit {
            let _ = writeln!(md, "  - disk: {}", limit.said());
        }
    }
    md.push('\n');
    for (engine, caveat) in caveats(c) {
        let _ = writeln!(md, "> **Caveat** (`{engine}`): {caveat}.\n");
    }
    let _ = writeln!(md, "## Results\n\n{}\n", single_client_tables(record, Style::Markdown));
    if let Some(charts) = detail {
        md.push_str(&charts_section(charts.iter().copied(), dir));
    }
    if let Some(section) = LoadSection::of(record) {
        md.push_str(&load_section(&section, &load_charts, dir));
    }
    md.push_str(&paper_section(record));
    md.push_str(&runs_section(record));
    md.push_str(&environment_section(record));
    md.push_str(&plans_section(record));
    md
}

/// Every chart as an image linked relative to the report, so the folder can move.
fn charts_section<'a>(charts: impl IntoIterator<Item = &'a Chart>, dir: &str) -> String {
    format!("## Charts\n\n{}", chart_links(charts, dir))
}

/// Each chart as a Markdown image of `<dir>/<name>.svg`, titled.
pub(crate) fn chart_links<'a>(charts: impl IntoIterator<Item = &'a Chart>, dir: &str) -> String {
    let mut md = String::new();
    for chart in charts {
        // Brackets would end the alt text early.
        let alt = chart.title.replace(['[', ']'], "");
        let _ = writeln!(md, "![{alt}]({dir}/{})\n", chart.file_name());
    }
    md
}

/// Many clients at once: what ran, the rate and latency per engine and client
/// count, per query, the settings that bound them, the charts, what failed.
fn load_section(section: &LoadSection, charts: &[&Chart], dir: &str) -> String {
    let mut md = format!("## Many clients at once\n\n{}\n\n{}\n\n", section.caption, section.load.render(Style::Markdown));
    let _ = writeln!(md, "Per query of the mix (latency over the queries it completed):\n\n{}\n", section.per_query.render(Style::Markdown));
    let _ = writeln!(md, "What bounds how many clients each engine serves at once:\n\n{}\n", section.limits.render(Style::Markdown));
    md.push_str(&chart_links(charts.iter().copied(), dir));
    if !section.cut_short.is_empty() {
        let _ = writeln!(md, "Windows the query bound (`--max-queries`) cut short:\n");
        for line in &section.cut_short {
            let _ = writeln!(md, "- {line}");
        }
        md.push('\n');
    }
    match section.problems.is_empty() {
        true => md.push_str("**Under load:** every answer right, no query failed.\n\n"),
        false => {
            let _ = writeln!(md, "**Under load, failures:**\n\n```text\n{}\n```\n", section.problems.join("\n"));
        }
    }
    md
}

/// The paper's numbers beside ours (the published variant when we ran it).
fn paper_section(record: &RunRecord) -> String {
    let Some(paper) = PaperTable::of(record) else { return String::new() };
    let products: Vec<String> = paper.products.iter().map(|(product, e)| format!("{product} (`{e}`)")).collect();
    let md = format!(
        "## Beside the paper's published numbers\n\nThe paper: {} events, {}, {}, mean total query time. \
         Ours: the `{}` variant on the data above. Different data size, hardware and servers: context, \
         not a comparison.\n\n",
        paper.events,
        paper.machine,
        products.join(" vs "),
        paper.variant,
    );
    let mut table = new_table(Style::Markdown, paper.header);
    for row in paper.rows {
        table.add_row(row);
    }
    align_numbers(&mut table, 1);
    let per_event = super::paper::per_event_table(record).map_or_else(String::new, |t| format!("Per event, every engine beside the paper's engine it answers like for like:\n\n{}\n\n", t.render(Style::Markdown)));
    format!("{md}{table}\n\n{per_event}")
}

fn runs_section(record: &RunRecord) -> String {
    let mut table = new_table(
        Style::Markdown,
        ["query", "variant", "engine", "runs (s)", "n", "min", "median", "mean", "max", "cold run(s) (s)", "index used"]
            .map(String::from)
            .to_vec(),
    );
    for q in &record.queries {
        for r in &q.engines {
            let runs: Vec<String> = r.iterations.iter().map(|i| seconds(i.seconds)).collect();
            let stats = r.hot_stats();
            let stat = |f: fn(&ghbench_record::run::Stats) -> f64| stats.as_ref().map(|s| seconds(f(s))).unwrap_or_default();
            table.add_row(vec![
                q.query.clone(),
                q.variant.clone(),
                r.engine.to_string(),
                runs.join(" "),
                stats.map(|s| s.n.to_string()).unwrap_or_default(),
                stat(|s| s.min),
                stat(|s| s.median),
                stat(|s| s.mean),
                stat(|s| s.max),
                super::cold_said(r, " ").unwrap_or_default(),
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
    let mut md = String::from("## Environment\n\n");
    let _ = writeln!(md, "- {}", version_line(c));
    let _ = writeln!(md, "- machine: {}", machine_line(&c.machine));
    let _ = writeln!(md, "- command: `{}`", c.arguments.join(" "));
    let _ = writeln!(md, "- time limit: {}", super::limit_label(c));
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
        if let Some((what, changes)) = setup_lines(e).split_first() {
            let _ = writeln!(md, "- {what}");
            for change in changes {
                let _ = writeln!(md, "  - {change}");
            }
        }
        for (k, v) in e.server.iter().flat_map(|s| &s.settings) {
            let _ = writeln!(md, "- `{k}` = {v}");
        }
        let _ = writeln!(md, "- storage: {}", storage_line(e));
        for i in e.storage.iter().flat_map(|s| &s.indexes) {
            let _ = writeln!(md, "  - index `{}`: {} bytes", i.name, i.bytes);
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
            if let Some(read) = &r.read {
                let _ = writeln!(md, "Read: {}.\n", read.said());
            }
        }
    }
    md
}


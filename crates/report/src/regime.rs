//! Views of `bench --regime`: the same data queried with memory free and under
//! limits chosen from it. What each engine stores per event (its compression
//! decides where its data stops fitting), each query's hot median at every
//! memory, the kernel's counters that show each limit held and what was read
//! from disk, and per engine a chart of time against memory on log axes with
//! a dashed line where its data stops fitting.

use std::fmt::Write as _;

use super::bench::{query_table, TextTable};
use super::charts::{draw_lines, Chart, ChartError, MIB};
use super::lines::{Line, Lines, Mark};
use super::{first_run_notes, median_said, memory_limit_line, query_label, result_for, terminal_width, Style};
use ghbench_record::bench::{BenchRecord, Regime, RegimePoint};
use ghbench_record::run::{EngineRecord, EngineResult, MemoryCounters, QueryRecord, RunRecord};
use ghbench_core::size::said;

/// Every run of the sweep, memory free first, each with its heading
/// (`memory free` / `a 320.0 MiB limit (5×)`).
pub fn runs<'a>(record: &'a BenchRecord, regime: &'a Regime) -> Vec<(String, &'a RunRecord)> {
    // The size's own run: memory free, its disk as --disk left it.
    let free = record.sizes.last().map(|s| {
        let disk = s.run.context.engines.iter().find_map(|e| e.disk_limit.as_ref()).map_or(String::new(), |l| format!(", {}", l.rules.said()));
        (format!("memory free{disk}"), &s.run)
    });
    let limited = regime.points.iter().map(|p| (point_heading(p), &p.run));
    free.into_iter().chain(limited).collect()
}

/// `320.0 MiB limit (5×)`, with its disk throttle where it had one:
/// `320.0 MiB limit (5×), 1,000 read IOPS, 437 MB/s read`.
pub fn point_heading(point: &RegimePoint) -> String {
    let disk = point.disk.as_ref().map_or(String::new(), |d| format!(", {}", d.said()));
    format!("{} limit ({}×){disk}", said(point.memory_bytes), point.ratio)
}

/// Printed as each point finishes: its queries, and each engine's limit and counters.
pub fn point_text(point: &RegimePoint) -> String {
    let width = terminal_width(point.run.context.engines.len());
    let disk = point.disk.as_ref().map_or(String::new(), |d| format!(", the disk throttled to {}", d.said()));
    let mut text = format!("Under a {} limit (data ÷ memory {}× for the first engine){disk}:\n", said(point.memory_bytes), point.ratio);
    text += &query_table(&point.run).render_within(Style::Terminal, width);
    for engine in &point.run.context.engines {
        if let Some(line) = memory_limit_line(engine) {
            let _ = write!(text, "\nmemory {}: {line}", engine.engine);
        }
        if let Some(limit) = &engine.disk_limit {
            let _ = write!(text, "\ndisk {}: {}", engine.engine, limit.said());
        }
    }
    if let Some(load) = super::concurrency::concurrency_text(&point.run, Style::Terminal) {
        let _ = write!(text, "\n{load}");
    }
    text
}

fn stored(engine: &EngineRecord) -> Option<u64> {
    engine.storage.as_ref().map(|s| s.table_bytes + s.index_bytes)
}

/// Per engine what it stores (table and indexes) and per event, and its data ÷
/// memory in every run: where each engine's knee falls.
pub fn fit_table(record: &BenchRecord, regime: &Regime) -> TextTable {
    let runs = runs(record, regime);
    let mut header = vec!["engine".to_string(), "stored".into(), "bytes per event".into()];
    header.extend(runs.iter().map(|(heading, _)| format!("data ÷ memory, {heading}")));
    let mut table = TextTable::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    let Some((_, free)) = runs.first() else { return table };
    for engine in &free.context.engines {
        let bytes = stored(engine);
        let events = engine.data.as_ref().map(|d| d.events).filter(|&n| n > 0);
        let mut row = vec![
            engine.engine.to_string(),
            bytes.map_or_else(|| "–".into(), said),
            bytes.zip(events).map_or_else(|| "–".into(), |(b, n)| format!("{:.0}", b as f64 / n as f64)),
        ];
        for (_, run) in &runs {
            let ratio = run.context.engines.iter().find(|e| e.engine == engine.engine).and_then(EngineRecord::data_to_memory);
            row.push(ratio.map_or_else(|| "–".into(), ghbench_record::run::ratio_text));
        }
        table.rows.push(row);
    }
    // Engines on one server share its limit: a hot run finds what the engine
    // queried just before left in it, not its own share.
    let mut servers: Vec<(&str, Vec<String>)> = Vec::new();
    for engine in &free.context.engines {
        let Some(server) = engine.server.as_ref().filter(|s| !s.url.is_empty()) else { continue };
        match servers.iter_mut().find(|(url, _)| *url == server.url) {
            Some((_, names)) => names.push(engine.engine.to_string()),
            None => servers.push((&server.url, vec![engine.engine.to_string()])),
        }
    }
    for (_, names) in servers.into_iter().filter(|(_, names)| names.len() > 1) {
        table.notes.push(format!("{} share one server and its limit", names.join(", ")));
    }
    table.with_text_columns(1)
}

/// Per query and engine, the hot median in every run (memory free first),
/// with how many runs it rests on and their range; under it each run's slow
/// first runs.
pub fn times_table(record: &BenchRecord, regime: &Regime) -> TextTable {
    let runs = runs(record, regime);
    let mut header = vec!["query".to_string(), "engine".into()];
    header.extend(runs.iter().map(|(heading, _)| format!("hot median s (n, range), {heading}")));
    let mut table = TextTable::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    let Some((_, free)) = runs.first() else { return table };
    for q in &free.queries {
        for r in &q.engines {
            let mut row = vec![query_label(q), r.engine.to_string()];
            for (_, run) in &runs {
                let result = run.queries.iter().find(|o| o.query == q.query && o.variant == q.variant).and_then(|o| result_for(o, &r.engine));
                row.push(match result.map(|r| r.hot_stats()) {
                    Some(None) => "failed".into(),
                    stats => median_said(stats.flatten(), "\n"),
                });
            }
            table.rows.push(row);
        }
    }
    table.notes = runs.iter().flat_map(|(heading, run)| first_run_notes(run).into_iter().map(move |n| format!("{heading}: {n}"))).collect();
    table.with_text_columns(2)
}

/// What an engine's processes read from storage over a run's queries, as
/// the kernel counted it per query (`/proc/<pid>/io` `read_bytes`); None
/// when no query was counted.
fn queries_read(run: &RunRecord, engine: &ghbench_core::Engine) -> Option<u64> {
    let counted = run.queries.iter().filter_map(|q| result_for(q, engine)?.read.as_ref()?.kernel.as_ref()?.counters.get("read_bytes").copied());
    counted.fold(None, |sum, n| Some(sum.unwrap_or(0) + n))
}

/// Per limit and engine what the kernel counted over the runs: the proof the
/// limit held (peak, OOM kills) and what was read again (refaults: pages
/// read back after the limit evicted them; the queries' reads from storage).
pub fn counters_table(regime: &Regime) -> TextTable {
    let mut table = TextTable::new(&["limit", "engine", "peak", "limit hits", "OOM kills", "refaults", "major faults", "queries read", "through the disk throttle"]);
    for point in &regime.points {
        let heading = point_heading(point);
        for engine in &point.run.context.engines {
            // (Of a cluster whose nodes each ran under a limit: summed, the peak the fullest node's.)
            let over = engine.memory.as_ref().and_then(|m| m.over_runs());
            let read = queries_read(&point.run, &engine.engine).map_or_else(|| "–".into(), said);
            // What the throttle let through over the runs: bytes, in how many reads.
            let throttled = engine.disk_limit.as_ref().and_then(|l| l.over_runs.as_ref()).map_or_else(
                || "–".to_string(),
                |o| match (o.read_bytes, o.reads) {
                    (Some(bytes), Some(reads)) => format!("{} in {reads} reads", said(bytes)),
                    (Some(bytes), None) => said(bytes),
                    _ => "not counted".into(),
                },
            );
            let Some(MemoryCounters { peak_bytes, limit_hits, oom_kills, refaults, major_faults, .. }) = over else {
                table.rows.push(vec![heading.clone(), engine.engine.to_string(), "not counted".into(), "–".into(), "–".into(), "–".into(), "–".into(), read, throttled]);
                continue;
            };
            let count = |n: Option<u64>| n.map_or_else(|| "–".into(), |n| n.to_string());
            table.rows.push(vec![
                heading.clone(),
                engine.engine.to_string(),
                peak_bytes.map_or_else(|| "–".into(), said),
                count(limit_hits),
                count(oom_kills),
                count(refaults),
                count(major_faults),
                read,
                throttled,
            ]);
        }
    }
    table.with_text_columns(2)
}

/// Per engine, each query's hot median against the memory it had (MiB; the
/// machine's for the free run), log–log, with a dashed line at its stored
/// size: to the right of it its data fits.
pub fn regime_charts(record: &BenchRecord, regime: &Regime) -> Result<Vec<Chart>, ChartError> {
    // Against memory: the points on the disk the memory-free run read (no
    // read IOPS of --regime-iops' own). A sweep of throttled points alone (a
    // narrowed preset) has none: its times would show the disk's slowdown as
    // memory's, so it gets no memory chart.
    let mut drawn = match regime.points.iter().find(|p| p.on_free_disk()) {
        Some(first) => memory_charts(record, regime, &first.disk)?,
        None => Vec::new(),
    };
    drawn.extend(iops_charts(regime)?);
    Ok(drawn)
}

/// Per engine, time against memory over the points on `disk`.
fn memory_charts(record: &BenchRecord, regime: &Regime, disk: &Option<ghbench_record::run::DiskRules>) -> Result<Vec<Chart>, ChartError> {
    let on_one_disk = Regime { points: regime.points.iter().filter(|p| &p.disk == disk).cloned().collect(), ..regime.clone() };
    let runs = runs(record, &on_one_disk);
    let Some((_, free)) = runs.first() else { return Ok(Vec::new()) };
    let mut drawn = Vec::new();
    for engine in &free.context.engines {
        let lines = free
            .queries
            .iter()
            .enumerate()
            .map(|(place, q)| Line {
                label: query_label(q),
                place,
                points: runs
                    .iter()
                    .filter_map(|(_, run)| {
                        let memory = run.context.engines.iter().find(|e| e.engine == engine.engine)?.memory.as_ref()?.bytes;
                        let query = run.queries.iter().find(|o| o.query == q.query && o.variant == q.variant)?;
                        Some((memory as f64 / MIB, result_for(query, &engine.engine)?.stats?.median))
                    })
                    .collect(),
                dashed: false,
            })
            .collect();
        let marks = stored(engine).map(|b| Mark { x: b as f64 / MIB, label: format!("its data, {}", said(b)) }).into_iter().collect();
        let chart = Lines {
            title: format!("{}: time against memory", engine.engine),
            subtitle: "hot median per query; left of the dashed line its data does not fit in memory".into(),
            x_label: "memory, MiB (the limit; the machine's when free)".into(),
            y_label: "seconds".into(),
            x_ticks: Vec::new(),
            lines,
            note: Some(regime.load_memory.clone()),
            marks,
        };
        drawn.push(draw_lines(&format!("regime-{}", engine.engine), chart)?);
    }
    Ok(drawn)
}

/// Per ratio with two disk points or more, and per engine, each query's time
/// against the read IOPS its disk allowed (log–log): the free disk at the
/// random-read rate measured on it, each cold run beside the hot median.
fn iops_charts(regime: &Regime) -> Result<Vec<Chart>, ChartError> {
    let mut drawn = Vec::new();
    let mut ratios: Vec<f64> = regime.points.iter().map(|p| p.ratio).collect();
    ratios.dedup();
    for ratio in ratios {
        let points: Vec<&RegimePoint> = regime.points.iter().filter(|p| p.ratio == ratio).collect();
        if points.len() < 2 {
            continue;
        }
        // Where the free disk goes on the axis: what it measured (None: not drawn).
        let iops = |p: &RegimePoint| p.disk.as_ref().and_then(|d| d.read_iops).map(|n| n as f64).or(p.run.context.machine.disk.as_ref()?.random_reads_per_second);
        let free_measured = points.iter().find(|p| p.on_free_disk()).and_then(|p| iops(p));
        let Some(first) = points.first() else { continue };
        for engine in &first.run.context.engines {
            let mut lines = Vec::new();
            for (place, q) in first.run.queries.iter().enumerate() {
                fn of<'a>(p: &'a RegimePoint, q: &QueryRecord, engine: &ghbench_core::Engine) -> Option<&'a EngineResult> {
                    p.run.queries.iter().find(|o| o.query == q.query && o.variant == q.variant).and_then(|o| result_for(o, engine))
                }
                let hot = points.iter().filter_map(|p| Some((iops(p)?, of(p, q, &engine.engine)?.stats?.median))).collect();
                lines.push(Line { label: query_label(q), place, points: hot, dashed: false });
                let cold: Vec<(f64, f64)> = points.iter().filter_map(|p| Some((iops(p)?, of(p, q, &engine.engine)?.cold_seconds()?))).collect();
                if !cold.is_empty() {
                    // The same colour as its hot line, dashed.
                    lines.push(Line { label: format!("{}, cold", query_label(q)), place, points: cold, dashed: true });
                }
            }
            let marks = free_measured.map(|x| Mark { x, label: format!("free: this disk, {x:.0} random reads/s measured") }).into_iter().collect();
            // A throttle above what the disk does unthrottled holds nothing back.
            let loose: Vec<String> = points
                .iter()
                .filter_map(|p| p.disk.as_ref()?.read_iops)
                .filter(|&n| free_measured.is_some_and(|free| n as f64 >= free))
                .map(|n| format!("{n}"))
                .collect();
            let note = (!loose.is_empty()).then(|| {
                format!("{} read IOPS: not below the free disk's measured rate, so that throttle does not bind random reads", loose.join(" and "))
            });
            let chart = Lines {
                title: format!("{}: time against read IOPS at {ratio}× memory", engine.engine),
                subtitle: format!(
                    "{} limit; hot median and cold run per query, the disk throttled to each point's read IOPS{}",
                    said(first.memory_bytes),
                    regime.iops_size.map_or(String::new(), |size| format!(" and IOPS × {} a second", said(size)))
                ),
                x_label: "read IOPS the disk allowed (the throttle; the free disk's measured random-read rate)".into(),
                y_label: "seconds".into(),
                x_ticks: Vec::new(),
                lines,
                note,
                marks,
            };
            drawn.push(draw_lines(&format!("regime-iops-{}-{ratio}x", engine.engine), chart)?);
        }
    }
    Ok(drawn)
}

/// Per run of the sweep, each engine's events per second beside the paper's,
/// and per query of the first engine where it comes within
/// [`super::paper::WITHIN`]× of the paper (empty without the paper's numbers).
fn paper_markdown(record: &BenchRecord, regime: &Regime) -> String {
    let runs = runs(record, regime);
    let Some(first) = runs.first().and_then(|(_, run)| run.context.engines.first()).map(|e| e.engine.clone()) else { return String::new() };
    let within = super::paper::within_lines(&runs, &first);
    if within.is_empty() {
        return String::new();
    }
    let mut md = format!("### Beside the paper, per event\n\n{}\n\n", within.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n"));
    for (heading, run) in &runs {
        if let Some(table) = super::paper::per_event_table(run) {
            let _ = writeln!(md, "{heading}:\n\n{}\n", table.render(Style::Markdown));
        }
    }
    md
}

/// What the sweep did, in one paragraph.
pub fn regime_intro(regime: &Regime) -> String {
    format!(
        "The same tables queried with memory free, then with every engine's server (or worker process) inside memory limits (the page cache dropped first) chosen so {}'s {} of data is {} its memory; {}.",
        regime.reference,
        said(regime.reference_bytes),
        regime.ratios.iter().map(|r| format!("{r}×")).collect::<Vec<_>>().join(", "),
        regime.load_memory
    )
}

/// The sweep's tables for the terminal; None without a sweep.
pub fn regime_text(record: &BenchRecord) -> Option<String> {
    let regime = record.regime.as_ref()?;
    let width = terminal_width(record.sizes.last().map_or(1, |s| s.run.context.engines.len()));
    let runs = runs(record, regime);
    let first = runs.first().and_then(|(_, run)| run.context.engines.first()).map(|e| e.engine.clone());
    let within = first.map(|engine| super::paper::within_lines(&runs, &engine)).unwrap_or_default();
    let within = within.iter().map(|l| format!("\n{l}")).collect::<String>();
    Some(format!(
        "Data against memory ({} at {}; {}):\n{}\n{}\n{}",
        regime.reference,
        regime.ratios.iter().map(|r| format!("{r}×")).collect::<Vec<_>>().join(", "),
        regime.load_memory,
        fit_table(record, regime).render_within(Style::Terminal, width),
        times_table(record, regime).render_within(Style::Terminal, width),
        counters_table(regime).render_within(Style::Terminal, width)
    ) + &within)
}

/// The sweep's section of the Markdown report, charts linked as `<dir>/<name>.svg`.
pub fn regime_markdown(record: &BenchRecord, regime: &Regime, charts: &[Chart], dir: &str) -> String {
    let mut md = format!("## Data against memory (`--regime`)\n\n{}\n\n", regime_intro(regime));
    let _ = writeln!(md, "What each engine stores, and its data ÷ memory in each run:\n\n{}\n", fit_table(record, regime).render(Style::Markdown));
    let _ = writeln!(md, "{}\n", times_table(record, regime).render(Style::Markdown));
    let _ = writeln!(md, "What the kernel counted under each limit, over the runs:\n\n{}\n", counters_table(regime).render(Style::Markdown));
    md += &paper_markdown(record, regime);
    md += &super::markdown::chart_links(charts, dir);
    md
}

//! The concurrency phase in the reports, rendered from the sample run
//! (`ghbench_testkit::sample`) with a phase built here: the two charts against
//! clients, the Markdown section and the page's, the terminal table's width,
//! and a run without the phase rendered as it was before the phase existed.


use std::collections::BTreeMap;

use ghbench_testkit::sample;
use ghbench_record::concurrency::{ClientCpu, ConcurrencyRecord, Latency, LoadMismatch, LoadPhase, MixQuery, QueryLoad};
use ghbench_record::run::RunRecord;
use ghbench_report::concurrency::{load_table, CHARTS};
use ghbench_report::{charts, html, markdown, markdown_with_charts, query_problems, verification_summary, Chart, Style, TERMINAL_WIDTH};

const POSTGRES: &str = "#1F77B4";
const MONGO: &str = "#FF7F0E";
const NORMALIZED: &str = "#2CA02C";
const CLIENTS: [usize; 3] = [1, 4, 16];
const FAILED: &str = "client 3 of 16 could not be opened: too many connections for role \"ghbench\"";

fn mix() -> Vec<MixQuery> {
    ["A", "C"].map(|q| MixQuery { query: q.into(), variant: "corrected".into() }).to_vec()
}

/// `engine` under `clients` clients: rates that grow with the clients, every
/// answer right; `place` scales its numbers so engines differ.
fn phase(engine: &str, place: usize, clients: usize) -> LoadPhase {
    let qps = 40.0 * clients as f64 / (place + 1) as f64;
    let latency = |p50: f64| Latency { count: 1000, p50, p95: p50 * 3.0, p99: p50 * 5.0, max: p50 * 9.0 };
    let p50 = 0.004 * clients as f64 * (place + 1) as f64;
    let per_query = mix()
        .into_iter()
        .map(|m| QueryLoad {
            query: m.query,
            variant: m.variant,
            completed: 1200 * clients as u64,
            latency: Some(latency(p50)),
            failed: 0,
            wrong: 0,
            checked_against: Some("the answer verified across engines (postgres's single-client answer)".into()),
            left_out: None,
        })
        .collect();
    LoadPhase {
        engine: engine.into(),
        clients,
        connections: format!("{clients} connections of their own"),
        window_seconds: 60.0,
        completed: 2400 * clients as u64,
        queries_per_second: Some(qps),
        latency: Some(latency(p50)),
        per_query,
        failed_queries: 0,
        errors: Vec::new(),
        wrong_answers: 0,
        mismatches: Vec::new(),
        warmup_queries: 300,
        abandoned: 0,
        stopped_by: "duration".into(),
        client_cpu: Some(ClientCpu { seconds: 3.0, share_of_machine: 0.03, machine_busy: Some(0.96), engine_in_process: false }),
        limits: BTreeMap::from([
            ("max_connections".to_string(), "100".to_string()),
            ("ghbench clients".to_string(), format!("{clients} connections of their own")),
        ]),
        error: None,
    }
}

/// The sample's three engines at 1, 4 and 16 clients; mongo's 16 clients
/// could not all connect (a failed phase, no measurement) and at 4 one of
/// its answers was wrong; normalized left query C out.
fn concurrency() -> ConcurrencyRecord {
    let mut phases = Vec::new();
    for (place, engine) in sample::ENGINES.iter().enumerate() {
        phases.extend(CLIENTS.map(|c| phase(engine, place, c)));
    }
    let mongo_4 = &mut phases[4];
    mongo_4.wrong_answers = 1;
    mongo_4.mismatches.push(LoadMismatch {
        query: "A".into(),
        variant: "corrected".into(),
        client: 2,
        at_seconds: 12.5,
        reason: "row 3 differs".into(),
        first_differences: vec!["row 3: [\"rails/rails\", 7] vs [\"rails/rails\", 6]".into()],
    });
    mongo_4.error = Some("1 wrong answer(s) under load, the first A corrected on client 2 at 12.5 s: row 3 differs".into());
    let mongo_16 = &mut phases[5];
    mongo_16.per_query.iter_mut().for_each(|q| (q.completed, q.latency) = (0, None));
    mongo_16.completed = 0;
    mongo_16.queries_per_second = None;
    mongo_16.latency = None;
    mongo_16.client_cpu = None;
    mongo_16.stopped_by = "not run".into();
    mongo_16.error = Some(FAILED.into());
    for p in phases.iter_mut().filter(|p| p.engine.name() == "normalized") {
        let c = &mut p.per_query[1];
        (c.completed, c.latency, c.checked_against) = (0, None, None);
        c.left_out = Some("it failed in the single-client phase".into());
    }
    ConcurrencyRecord { clients: CLIENTS.to_vec(), duration_seconds: 60.0, warmup_seconds: 5.0, max_queries: 100_000, mix: mix(), phases }
}

fn record() -> RunRecord {
    RunRecord { concurrency: Some(concurrency()), ..sample::record() }
}

fn chart<'a>(charts: &'a [Chart], name: &str) -> &'a Chart {
    charts.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no chart {name}"))
}

/// The marked points of one colour (plotters writes each as a `<circle>`).
fn points(svg: &str, fill: &str) -> usize {
    svg.lines().filter(|l| l.starts_with("<circle") && l.contains(&format!("fill=\"{fill}\""))).count()
}

/// The texts of an SVG, as plotters writes them.
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect()
}

#[test]
fn rate_and_p95_against_clients_a_line_per_engine_without_the_phases_that_failed() {
    let drawn = charts(&record()).unwrap();
    let names: Vec<&str> = drawn.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[names.len() - 2..], CHARTS, "drawn last, after the run's own charts: {names:?}");
    for name in CHARTS {
        let svg = &chart(&drawn, name).svg;
        // Every engine in its colour of the other charts, with its legend entry.
        assert_eq!(points(svg, POSTGRES), 3, "{name}: postgres at 1, 4 and 16 clients");
        assert_eq!(points(svg, NORMALIZED), 3, "{name}");
        // mongo answered wrongly at 4 and could not connect at 16: one point left.
        assert_eq!(points(svg, MONGO), 1, "{name}: only mongo's phase that stands");
        let said = texts(svg);
        for engine in sample::ENGINES {
            assert!(said.contains(&engine), "{name}: {engine} in the legend: {said:?}");
        }
        for clients in ["1", "4", "16"] {
            assert!(said.contains(&clients), "{name}: the x axis numbered at {clients} clients: {said:?}");
        }
        assert!(said.contains(&"no point for mongo at 4, 16 clients (failed)"), "{name}: the note says what is left out: {said:?}");
    }
    let qps = &chart(&drawn, CHARTS[0]).svg;
    assert!(qps.contains("Queries per second against clients") && qps.contains("queries/s"));
    assert!(chart(&drawn, CHARTS[1]).svg.contains("p95 seconds"));
}

#[test]
fn a_single_client_count_and_a_rate_of_zero_still_draw_and_say_so() {
    let mut record = record();
    let load = record.concurrency.as_mut().unwrap();
    load.clients = vec![4];
    load.phases.retain(|p| p.clients == 4 && p.error.is_none());
    load.phases[0].queries_per_second = Some(0.0);
    let drawn = charts(&record).unwrap();
    let qps = &chart(&drawn, CHARTS[0]).svg;
    assert!(qps.trim_end().ends_with("</svg>"));
    assert_eq!(points(qps, POSTGRES), 0, "0 q/s has no place on a log axis");
    assert_eq!(points(qps, NORMALIZED), 1);
    assert!(texts(qps).contains(&"no point for postgres at 4 clients (0 q/s)"), "{:?}", texts(qps));
    // postgres's latency is still a point: only its rate was zero.
    assert_eq!(points(&chart(&drawn, CHARTS[1]).svg, POSTGRES), 1);
}

#[test]
fn the_markdown_section_comes_after_the_results_in_order_and_says_the_failure() {
    let record = record();
    let drawn = charts(&record).unwrap();
    let md = markdown_with_charts(&record, &drawn, "olap-x-charts");
    let at = |needle: &str| md.find(needle).unwrap_or_else(|| panic!("{needle} in:\n{md}"));
    let section = at("## Many clients at once");
    let order = [
        at("## Results"),
        at("## Charts"),
        section,
        at("Many clients at once: each engine alone"),
        at("| engine     | clients |  q/s |"),
        at("Per query of the mix"),
        at("| engine     | clients | query       | completed |"),
        at("What bounds how many clients"),
        at("| engine     | setting         | value"),
        at("](olap-x-charts/clients-qps.svg)"),
        at("](olap-x-charts/clients-p95.svg)"),
        at("**Under load, failures:**"),
        at("## Beside the paper's published numbers"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "in order: {order:?}\n{md}");
    let body = &md[section..at("## Beside")];
    assert!(body.contains(&format!("FAILED under load: mongo, 16 clients: {FAILED}")), "{body}");
    assert!(body.contains("MISMATCH under load A corrected on mongo (4 clients; client 2 at 12.5 s): row 3 differs"), "{body}");
    // The query normalized left out, and why; the setting that bounds the clients.
    assert!(body.contains("| normalized | 4       | C corrected |") && body.contains("it failed in the single-client phase"), "{body}");
    assert!(body.contains("| postgres   | max_connections"), "{body}");
    assert!(body.contains("| 1: 1 connections of their own; 4: 4 connections of their own; 16: "), "a setting that changed says each: {body}");
    assert!(body.contains("CPU: ghbench's own process, then the whole machine, as shares of all its cores"), "what the CPU column means: {body}");
    // Its charts are in the section only, not again among the run's.
    assert_eq!(md.matches("clients-qps.svg").count(), 1, "{md}");
    // Without charts the section is still there, without links.
    let plain = markdown(&record);
    assert!(plain.contains("## Many clients at once") && !plain.contains("clients-qps"));
}

#[test]
fn an_engine_inside_ghbench_is_named_in_what_the_cpu_column_means() {
    let mut record = record();
    for p in record.concurrency.as_mut().unwrap().phases.iter_mut().filter(|p| p.engine.name() == "normalized") {
        p.client_cpu.as_mut().unwrap().engine_in_process = true;
    }
    let md = markdown(&record);
    assert!(md.contains("normalized run(s) inside ghbench's process (no server), so there ghbench's share includes the engine's own work"), "{md}");
}

#[test]
fn the_page_has_the_section_with_its_two_charts_inline() {
    let page = html(&record()).unwrap();
    let (section, engines) = (page.find("id=\"many-clients\"").expect("the section"), page.find("id=\"engines\"").unwrap());
    assert!(page.find("id=\"results\"").unwrap() < section && section < engines);
    let body = &page[section..engines];
    assert_eq!(body.matches("<svg").count(), 2, "rate and p95 against clients");
    assert_eq!(page[engines..].matches("<svg").count(), 2, "load and storage stay where they were");
    assert_eq!(page.matches("<svg").count(), 9);
    for needle in ["Many clients at once: each engine alone", "max_connections", "it failed in the single-client phase", "FAILED under load: mongo, 16 clients", "Queries per second against clients"] {
        assert!(body.contains(&needle.replace('"', "&quot;")), "{needle}");
    }
    assert!(body.contains("<td class=\"name\">postgres</td><td class=\"num\">16</td>"), "the load table's rows: {body:.2000}");
    // Words are left-aligned like names, numbers right-aligned.
    for words in ["<td class=\"name\">C corrected</td><td class=\"num\">0</td>", "<td>it failed in the single-client phase</td>", "<td class=\"name\">max_connections</td>"] {
        assert!(body.contains(words), "{words}");
    }
}

#[test]
fn the_load_table_of_four_engines_and_three_client_counts_fits_a_terminal() {
    let mut load = concurrency();
    // The widest cells a phase can have: a long name, large numbers, every count.
    let mut slow = phase("postgres-tuned", 3, 16);
    (slow.completed, slow.queries_per_second, slow.wrong_answers, slow.failed_queries) = (1_234_567, Some(20_576.1), 12, 345);
    slow.latency = Some(Latency { count: 1, p50: 123.4, p95: 234.5, p99: 345.6, max: 3599.9 });
    slow.client_cpu = Some(ClientCpu { seconds: 100.0, share_of_machine: 1.0, machine_busy: Some(1.0), engine_in_process: true });
    load.phases.extend([phase("postgres-tuned", 3, 1), phase("postgres-tuned", 3, 4), slow]);
    assert_eq!(load.phases.len(), 12);
    let text = load_table(&load).render(Style::Terminal);
    // The table itself (the notes under it are prose the terminal wraps).
    let table: Vec<&str> = text.lines().take_while(|l| l.starts_with(['┌', '│', '╞', '├', '└'])).collect();
    let widest = table.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= usize::from(TERMINAL_WIDTH), "{widest} columns:\n{text}");
    assert_eq!(table.iter().filter(|l| l.contains("postgres-tuned")).count(), 3, "{text}");
    // A row of ordinary numbers stays on one line, its cells whole.
    let row = table.iter().find(|l| l.contains("postgres-tuned") && l.contains("  4 ")).expect("postgres-tuned at 4 clients");
    for cell in ["40.0", "0.0640", "0.1920", "0.3200", "9600", "✓", "3% / 96%"] {
        assert!(row.contains(cell), "{cell} in {row}:\n{text}");
    }
    // The widest cells wrap, at their spaces, but every number is there.
    for cell in ["20576", "123.4", "345.6", "1234567", "345", "failed", "100%"] {
        assert!(text.contains(cell), "{cell} in:\n{text}");
    }
}

#[test]
fn a_bench_shows_every_size_s_table_and_the_largest_size_s_section_and_charts() {
    use ghbench_record::bench::{BenchRecord, DataSource, SizeRecord, BENCH_SCHEMA};
    use ghbench_report::bench::{bench_markdown, BenchCharts};
    use ghbench_report::bench_html;
    let size = |hours: u32| SizeRecord { hours, table: format!("bench_{hours}h"), loads: Vec::new(), indexes: Vec::new(), run: record(), memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None };
    let data = DataSource { kind: "generated".into(), location: "gen".into(), first_hour: "2015-01-01T00".into(), seed: Some(42), events_per_hour: Some(100), identity: None, split: None, pools: None };
    let bench = BenchRecord { schema: BENCH_SCHEMA.into(), data, sizes: vec![size(1), size(2)], growth: Vec::new(), engine_growth: Vec::new(), report_peak_bytes: None, measuring: None, finished: true, resumed: None, regime: None, preset: None };
    let charts = BenchCharts::draw(&bench).unwrap();
    assert!(CHARTS.iter().all(|name| charts.largest.iter().any(|c| c.name == *name)), "the largest size's run draws them");
    let heading = "Many clients at once (the largest size's in full below):";
    let md = bench_markdown(&bench, &charts, "d");
    assert_eq!(md.matches(heading).count(), 2, "a table per size:\n{md}");
    let page = bench_html(&bench, &charts).unwrap();
    assert_eq!(page.matches(&heading.replace('\'', "&#x27;")).count(), 2, "a table per size");
    let (section, engines) = (page.find("id=\"many-clients\"").expect("the largest size's section"), page.find("id=\"engines\"").unwrap());
    assert_eq!(page[section..engines].matches("<svg").count(), 2);
}

#[test]
fn a_run_without_the_phase_renders_as_before() {
    let plain = sample::record();
    // tests/reports.rs names the run's own charts; none of the phase's is drawn.
    let drawn = charts(&plain).unwrap();
    assert!(drawn.iter().all(|c| !CHARTS.contains(&c.name.as_str())) && drawn.len() == 7);
    let md = markdown_with_charts(&plain, &drawn, "d");
    assert!(!md.contains("Many clients") && !md.contains("under load"), "{md}");
    let page = html(&plain).unwrap();
    assert!(!page.contains("many-clients") && !page.contains("Many clients"));
    assert_eq!(page.matches("<svg").count(), 7);
    // The section is all a phase adds when it stands: cut out, the report is
    // the run's without it.
    let mut standing = record();
    standing.concurrency.as_mut().unwrap().phases.retain(|p| p.error.is_none());
    let with = markdown(&standing);
    let (from, to) = (with.find("## Many clients at once").unwrap(), with.find("## Beside").unwrap());
    assert!(with[from..to].contains("**Under load:** every answer right, no query failed."));
    assert_eq!(format!("{}{}", &with[..from], &with[to..]), markdown(&plain));
}


#[test]
fn failed_queries_under_load_are_said_and_a_failed_phase_does_not_read_as_engines_disagreeing() {
    let mut record = record();
    let postgres_4 = &mut record.concurrency.as_mut().unwrap().phases[1];
    // Failed queries alone (no wrong answer, no lost client) leave the phase's error empty.
    (postgres_4.failed_queries, postgres_4.errors) = (3, vec!["A corrected on client 2 at 3.0 s: canceling statement due to statement timeout".into()]);
    assert!(postgres_4.error.is_none() && !postgres_4.stands());
    let text = load_table(record.concurrency.as_ref().unwrap()).render(Style::Terminal);
    assert!(text.contains("postgres, 4 clients: 3 queries failed; the first: A corrected on client 2 at 3.0 s: canceling statement"), "{text}");
    // What the table's rates rest on: an engine's shorter mix, a phase of few queries.
    assert!(text.contains("left out of normalized's mix: C corrected (it failed in the single-client phase)"), "{text}");
    assert!(!text.contains("left out of postgres"), "{text}");
    assert!(!text.contains("percentiles from"), "1000 queries a phase in the sample: {text}");
    let few = &mut record.concurrency.as_mut().unwrap().phases[0];
    few.latency.as_mut().unwrap().count = 24;
    let text = load_table(record.concurrency.as_ref().unwrap()).render(Style::Terminal);
    assert!(text.contains("postgres, 1 client: percentiles from 24 queries, so p99 is their maximum"), "{text}");
    // The sample has a mismatch between engines: that is said first.
    assert_eq!(verification_summary(&record), "Results do not agree:");
    record.queries.retain(|q| query_problems(q).is_empty());
    let agreeing = RunRecord { concurrency: None, ..record.clone() };
    assert_eq!(verification_summary(&agreeing), "Every query's results agree across engines.", "the sample's agreeing queries");
    assert_eq!(verification_summary(&record), "The single-client results stand, but not every phase of many clients does:");
    let md = markdown(&record);
    assert!(md.contains("The single-client results stand, but not every phase of many clients does:") && !md.contains("Results do not agree"), "{md}");
}

//! The HTML report: one self-contained page (charts inline as `<svg>`, styles
//! in the page, nothing fetched) with the results and their verification,
//! many clients at once (with a concurrency phase), each engine's caveat, the
//! environment, the data each engine held and the paper's numbers. The page's
//! markup lives in `templates/report.html.j2`; this file only gathers what it
//! shows into a view the template reads.

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use serde::Serialize;

use super::charts::{charts, engine_color, Chart, ChartError};
use super::concurrency::{LoadSection, CHARTS as LOAD_CHARTS};
use super::paper::PaperTable;
use super::{
    caveats, data_warning, first_run_note, held_line, machine_line, mark, problems, query_problems, reconnect_notes, result_for, seconds, server_label, setup_lines,
    storage_line, verdict, verification_summary, version_line, ResultsView,
};
use super::bench::{self, largest, BenchCharts, TextTable};
use super::summary::summary_table;
use ghbench_record::bench::BenchRecord;
use ghbench_record::run::{EngineRecord, QueryRecord, RunRecord, VerificationStatus};

const TEMPLATE_NAME: &str = "report.html";
const TEMPLATE: &str = include_str!("../templates/report.html.j2");
/// Extends the run's page with the bench's sections.
const BENCH_TEMPLATE_NAME: &str = "bench.html";
const BENCH_TEMPLATE: &str = include_str!("../templates/bench.html.j2");
/// Macros both pages import (a table of text cells).
const TABLES_TEMPLATE_NAME: &str = "tables.html";
const TABLES_TEMPLATE: &str = include_str!("../templates/tables.html.j2");

/// Why the page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error("rendering the HTML template: {0:#}")]
    Template(#[from] minijinja::Error),
    #[error("the bench record holds no size: nothing to show")]
    Empty,
}

/// The whole report as one HTML page.
pub fn html(record: &RunRecord) -> Result<String, HtmlError> {
    render(TEMPLATE_NAME, &Page::with_charts(record, &charts(record)?))
}

/// `ghbench bench`'s page: the run page of the largest size, with the bench's
/// own sections (every size's loads and queries, the growth charts) on top.
pub fn bench_html(record: &BenchRecord, charts: &BenchCharts) -> Result<String, HtmlError> {
    #[derive(Serialize)]
    struct BenchPage<'a> {
        #[serde(flatten)]
        page: Page<'a>,
        bench: BenchView,
    }
    let Some(run) = largest(record) else { return Err(HtmlError::Empty) };
    let bench = BenchView {
        data: bench::data_line(record),
        preset: record.preset.as_ref().map(super::setup_said).unwrap_or_default(),
        sizes: record
            .sizes
            .iter()
            .map(|s| (s, s.verdict()))
            .map(|(s, (verdict, verified))| SizeView {
                hours: s.hours,
                size: ghbench_core::count_of(s.hours as usize, "hour"),
                events: s.events().unwrap_or(0),
                table: s.table.clone(),
                verdict,
                verified,
                loads: bench::load_table(s),
                damage: s.damage_lines(),
                index_failures: s.index_failures(),
                queries: bench::query_table(&s.run),
                setups: bench::setups_table(&s.run),
                load: s.run.concurrency.as_ref().map(super::concurrency::load_table),
            })
            .collect(),
        growth: bench::growth_table(record),
        load_heading: bench::LOAD_HEADING,
        charts: charts.growth.iter().map(|c| Value::from_safe_string(c.svg.clone())).collect(),
        regime: record.regime.as_ref().map(|regime| RegimeView {
            intro: super::regime::regime_intro(regime),
            fit: super::regime::fit_table(record, regime),
            times: super::regime::times_table(record, regime),
            counters: super::regime::counters_table(regime),
            charts: charts.regime.iter().map(|c| Value::from_safe_string(c.svg.clone())).collect(),
        }),
    };
    let mut page = Page::with_charts(run, &charts.largest);
    page.heading = format!("ghbench bench, {}", run.context.started_at);
    page.problems.splice(0..0, bench::partial_lines(record));
    page.all_agree &= page.problems.is_empty();
    render(BENCH_TEMPLATE_NAME, &BenchPage { page, bench })
}

fn render(name: &str, page: &impl Serialize) -> Result<String, HtmlError> {
    let mut env = Environment::new();
    // Every value is escaped but the charts, which come in as safe strings.
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // A misspelt field fails the render (and the tests) instead of showing nothing.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template(TEMPLATE_NAME, TEMPLATE)?;
    env.add_template(BENCH_TEMPLATE_NAME, BENCH_TEMPLATE)?;
    env.add_template(TABLES_TEMPLATE_NAME, TABLES_TEMPLATE)?;
    Ok(env.get_template(name)?.render(Value::from(Serde(page)))?)
}

#[derive(Serialize)]
struct BenchView {
    data: String,
    /// `--preset`'s setup as it ran, written out (first line, then each value).
    preset: Vec<String>,
    /// Above each size's concurrency table.
    load_heading: &'static str,
    sizes: Vec<SizeView>,
    growth: TextTable,
    charts: Vec<Value>,
    /// `--regime`'s section, when the bench swept memory.
    regime: Option<RegimeView>,
}

#[derive(Serialize)]
struct RegimeView {
    intro: String,
    fit: TextTable,
    times: TextTable,
    counters: TextTable,
    charts: Vec<Value>,
}

#[derive(Serialize)]
struct SizeView {
    hours: u32,
    /// `1 hour`, `6 hours`.
    size: String,
    events: u64,
    table: String,
    verdict: &'static str,
    verified: bool,
    loads: TextTable,
    /// What the data held besides events, per engine (see `SizeRecord::damage_lines`).
    damage: Vec<String>,
    /// Engines whose indexes could not all be built, and why.
    index_failures: Vec<String>,
    queries: TextTable,
    /// Each setup against the one it changes (see `bench::setups_table`).
    setups: Option<TextTable>,
    /// The concurrency phase's table at this size, when it ran.
    load: Option<TextTable>,
}

#[derive(Serialize)]
struct Page<'a> {
    /// The page's title and first heading.
    heading: String,
    started_at: &'a str,
    table: &'a str,
    repeat: usize,
    /// The runs began with a cold run (`--cold`): its column is shown.
    cold_requested: bool,
    cache: &'a str,
    limit: String,
    cache_actions: &'a [String],
    /// Lines that say the engines hold different data (headline first).
    data_warning: Vec<String>,
    caveats: Vec<(String, &'a str)>,
    /// Per engine: its time against the baseline's, answers, load, size.
    summary_table: TextTable,
    /// Every query and engine in one chart, as inline SVG.
    overview: Value,
    /// The run's verification in a sentence, and whether it is good news.
    summary: &'static str,
    all_agree: bool,
    problems: Vec<String>,
    /// Connections lost and replaced (see `reconnect_notes`): said, not failures.
    reconnects: Vec<String>,
    queries: Vec<QueryView<'a>>,
    /// Load throughput and storage, as inline SVG.
    engine_charts: Vec<Value>,
    /// The concurrency phase, when it ran.
    load: Option<LoadView>,
    engines: Vec<EngineView<'a>>,
    version: String,
    machine: String,
    command: String,
    paper: Option<PaperTable>,
}

/// The concurrency phase's section and its charts (rate and p95 latency
/// against clients), as inline SVG.
#[derive(Serialize)]
struct LoadView {
    #[serde(flatten)]
    section: LoadSection,
    charts: Vec<Value>,
}

#[derive(Serialize)]
struct QueryView<'a> {
    query: &'a str,
    variant: &'a str,
    title: &'a str,
    verdict: &'static str,
    /// The verdict's style: `ok`, `bad`, or none when nothing was compared.
    state: &'static str,
    reference: Option<String>,
    chart: Value,
    rows: Vec<ResultRow>,
    problems: Vec<String>,
    /// First hot runs far slower than the others (see `first_run_notes`).
    notes: Vec<String>,
}

/// One engine's cells in a query's table.
#[derive(Serialize)]
struct ResultRow {
    engine: String,
    color: Option<String>,
    cold: String,
    median: String,
    /// How many hot runs the median, min and max rest on.
    n: String,
    min: String,
    max: String,
    rows: String,
    mark: &'static str,
    error: Option<String>,
}

#[derive(Serialize)]
struct EngineView<'a> {
    engine: String,
    color: Option<String>,
    label: String,
    build: Option<&'a str>,
    url: Option<&'a str>,
    settings: Vec<(&'a String, &'a String)>,
    caveat: Option<&'a str>,
    /// The setup in a line, then its changes (see `setup_lines`).
    setup: Vec<String>,
    held: String,
    events: Option<u64>,
    hours: Option<u64>,
    load_seconds: Option<String>,
    events_per_second: Option<String>,
    storage: String,
    indexes: Vec<(&'a str, u64)>,
}

impl<'a> Page<'a> {
    /// The page of `record`, with its charts as `charts::charts` drew them.
    fn with_charts(record: &'a RunRecord, charts: &[Chart]) -> Page<'a> {
        let c = &record.context;
        let view = ResultsView::of(record);
        let inline = |chart: &Chart| Value::from_safe_string(chart.svg.clone());
        // The concurrency phase's charts go in its own section.
        let (load_charts, run_charts): (Vec<&Chart>, Vec<&Chart>) = charts.iter().partition(|c| LOAD_CHARTS.contains(&c.name.as_str()));
        let load = LoadSection::of(record).map(|section| LoadView { section, charts: load_charts.into_iter().map(inline).collect() });
        let mut drawn = run_charts.into_iter().map(inline);
        // The rest come as `charts::charts` draws them: the overview, the
        // record's queries in order, then load and storage.
        let overview = drawn.next().unwrap_or_default();
        let queries = record.queries.iter().map(|q| query_view(&view, q, drawn.next().unwrap_or_default())).collect();
        let problems = problems(record);
        Page {
            heading: format!("ghbench OLAP results, {}", c.started_at),
            started_at: &c.started_at,
            table: &c.table,
            repeat: c.repeat,
            cold_requested: c.cold.requested,
            cache: &c.cold.label,
            limit: super::limit_label(c),
            cache_actions: &c.cold.actions,
            data_warning: data_warning(c),
            caveats: caveats(c).into_iter().map(|(e, text)| (e.to_string(), text)).collect(),
            summary_table: summary_table(&view),
            overview,
            summary: verification_summary(record),
            all_agree: problems.is_empty(),
            problems,
            reconnects: reconnect_notes(record),
            queries,
            engine_charts: drawn.collect(),
            load,
            engines: c.engines.iter().map(|e| engine_view(&view, e)).collect(),
            version: version_line(c),
            machine: machine_line(&c.machine),
            command: c.arguments.join(" "),
            paper: PaperTable::of(record),
        }
    }
}

fn query_view<'a>(view: &ResultsView, q: &'a QueryRecord, chart: Value) -> QueryView<'a> {
    let cell = |v: Option<f64>| v.map(seconds).unwrap_or_else(|| "–".into());
    let rows = view
        .engines
        .iter()
        .map(|engine| {
            let r = result_for(q, engine);
            let stats = r.and_then(|r| r.hot_stats());
            ResultRow {
                engine: engine.to_string(),
                color: engine_color(view, engine),
                cold: cell(r.and_then(|r| r.cold_seconds())),
                median: cell(stats.map(|s| s.median)),
                n: stats.map_or_else(|| "–".into(), |s| s.n.to_string()),
                min: cell(stats.map(|s| s.min)),
                max: cell(stats.map(|s| s.max)),
                rows: r.and_then(|r| r.rows).map_or_else(|| "–".into(), |n| n.to_string()),
                mark: r.map_or("not run", mark),
                error: r.and_then(|r| r.error.clone()),
            }
        })
        .collect();
    QueryView {
        query: &q.query,
        variant: &q.variant,
        title: &q.title,
        verdict: verdict(q.verification.status),
        state: match q.verification.status {
            VerificationStatus::Agree => "ok",
            VerificationStatus::NotCompared => "",
            _ => "bad",
        },
        reference: q.verification.reference.as_ref().map(|e| e.to_string()),
        chart,
        rows,
        problems: query_problems(q),
        notes: q.engines.iter().filter_map(|r| first_run_note(q, r)).collect(),
    }
}

fn engine_view<'a>(view: &ResultsView, e: &'a EngineRecord) -> EngineView<'a> {
    let data = e.data.as_ref();
    EngineView {
        engine: e.engine.to_string(),
        color: engine_color(view, &e.engine),
        label: server_label(e),
        build: e.server.as_ref().map(|s| s.build.as_str()),
        url: e.server.as_ref().map(|s| s.url.as_str()),
        settings: e.server.iter().flat_map(|s| &s.settings).collect(),
        caveat: e.server.as_ref().and_then(|s| s.caveat.as_deref()),
        setup: setup_lines(e),
        held: held_line(e),
        events: data.map(|d| d.events),
        hours: data.map(|d| d.hours),
        load_seconds: data.and_then(super::load_cell),
        events_per_second: data.and_then(|d| d.events_per_second()).map(|r| format!("{r:.0}")),
        storage: storage_line(e),
        indexes: e.storage.iter().flat_map(|s| &s.indexes).map(|i| (i.name.as_str(), i.bytes)).collect(),
    }
}

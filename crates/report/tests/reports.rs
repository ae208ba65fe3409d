//! The charts, the Markdown that links them and the HTML page, rendered from
//! a realistic record (`ghbench_testkit::sample`) and read back.


use ghbench_testkit::sample;
use ghbench_report::{charts, html, markdown, markdown_with_charts, Chart};

fn chart<'a>(charts: &'a [Chart], name: &str) -> &'a Chart {
    charts.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no chart {name}"))
}

/// Heights of the filled rectangles of one colour (`#RRGGBB` as plotters writes it).
fn bar_heights(svg: &str, fill: &str) -> Vec<f64> {
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{fill}\"")))
        .filter_map(|l| l.split("height=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect()
}

const POSTGRES: &str = "#1F77B4";
const MONGO: &str = "#FF7F0E";
const NORMALIZED: &str = "#2CA02C";

#[test]
fn the_overview_then_a_chart_per_query_then_load_and_storage_drawn_the_same_every_time() {
    let record = sample::record();
    let drawn = charts(&record).unwrap();
    let names: Vec<&str> = drawn.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["overview", "A-corrected", "B-corrected", "C-corrected", "D-corrected", "load", "storage"]);
    for c in &drawn {
        assert!(c.svg.starts_with("<svg") && c.svg.trim_end().ends_with("</svg>"), "{}", c.name);
        // Self-contained: the SVG namespace is the only address in it.
        assert_eq!(c.svg.matches("http").count(), 1, "{}", c.name);
        assert!(!c.svg.contains("href") && !c.svg.contains("url("), "{}", c.name);
    }
    let again = charts(&record).unwrap();
    assert!(drawn.iter().zip(&again).all(|(a, b)| a.svg == b.svg), "same record, same bytes");
}

#[test]
fn titles_say_the_verification_and_gaps_say_why() {
    let drawn = charts(&sample::record()).unwrap();
    assert!(chart(&drawn, "A-corrected").svg.contains("Query A (corrected): results agree ✓"));
    assert!(chart(&drawn, "B-corrected").svg.contains("Query B (corrected): results differ ✗"));
    let d = &chart(&drawn, "D-corrected").svg;
    assert!(d.contains("an engine failed ✗") && d.contains("failed") && d.contains("no bar for normalized"));
    assert!(bar_heights(d, NORMALIZED).is_empty(), "no bar for the engine that failed");
    assert_eq!(bar_heights(d, POSTGRES).len(), 1);
    let load = &chart(&drawn, "load").svg;
    assert!(load.contains("no load time") && load.contains("no bar for mongo"));
    let storage = &chart(&drawn, "storage").svg;
    assert!(storage.contains("size unknown") && storage.contains("11.2 MiB"));
}

#[test]
fn orders_of_magnitude_go_on_a_log_axis_the_rest_on_a_linear_one() {
    let drawn = charts(&sample::record()).unwrap();
    // Query A: mongo's median is 31x postgres's: on a linear axis its bar
    // would be 31x as tall; on the log axis it is a few times as tall.
    let a = &chart(&drawn, "A-corrected").svg;
    let (pg, mongo) = (bar_heights(a, POSTGRES)[0], bar_heights(a, MONGO)[0]);
    assert!(mongo / pg > 1.5 && mongo / pg < 5.0, "log axis: {pg} vs {mongo}");
    // Load: 11003 vs 3106 events/s, 3.5x: linear, heights in proportion.
    let load = &chart(&drawn, "load").svg;
    let (pg, normalized) = (bar_heights(load, POSTGRES)[0], bar_heights(load, NORMALIZED)[0]);
    assert!((pg / normalized - 7702.0 / 0.70 / (7702.0 / 2.48)).abs() < 0.05, "linear axis: {pg} vs {normalized}");
}

#[test]
fn markdown_links_the_charts_only_when_asked() {
    let record = sample::record();
    let drawn = charts(&record).unwrap();
    let md = markdown_with_charts(&record, &drawn, "olap-x-charts");
    assert!(md.contains("## Charts"));
    for c in &drawn {
        assert!(md.contains(&format!("](olap-x-charts/{}.svg)", c.name)), "{}", c.name);
    }
    assert!(md.contains("![Query B (corrected): results differ ✗](olap-x-charts/B-corrected.svg)"));
    let plain = markdown(&record);
    assert!(!plain.contains("## Charts") && !plain.contains(".svg"));
    let overview = "![Every query, every engine: seconds (log scale)](olap-x-charts/overview.svg)\n\n";
    assert!(md.find(overview) < md.find("## Results"), "the overview opens the report, beside the summary");
    let without_charts = md.replace(&md[md.find("## Charts").unwrap()..md.find("## Beside").unwrap()], "").replace(overview, "");
    assert_eq!(without_charts, plain);
}

#[test]
fn the_page_holds_results_marks_caveats_environment_and_the_paper() {
    let mut record = sample::record();
    // A server's words reach the page as text, never as markup.
    record.queries[3].engines[2].error = Some("<script>alert(1)</script>".into());
    let page = html(&record).unwrap();
    assert!(page.contains("<title>ghbench OLAP results, 2026-11-22T12:00:00Z</title>"));
    assert_eq!(page.matches("<svg").count(), 7, "the overview, four queries, load, storage");
    assert!(page.contains("&lt;script&gt;") && !page.contains("<script>"));
    // In full, its apostrophe escaped as minijinja escapes it.
    assert!(page.contains(&sample::CAVEAT.replace('\'', "&#x27;")), "the caveat");
    assert!(page.contains("MISMATCH B corrected: normalized disagrees with the rest (postgres, mongo)"));
    // The answer first: the summary (mongo 31× postgres's time over all queries) and the overview, then the detail.
    let (summary, results) = (page.find("<h2>Summary</h2>").unwrap(), page.find("id=\"results\"").unwrap());
    assert!(summary < page.find("id=\"overview\"").unwrap() && page.find("id=\"overview\"").unwrap() < results);
    assert!(page[summary..results].contains("31.0×") && page[summary..results].contains("1.60× (3 of 4)"), "{}", &page[summary..results]);
    for needle in ["✓", "✗", "SecantusDB 0.7.0b3", "shared_buffers", "Test CPU", "021f662", "11003", "5295", "8624", "paper PostgreSQL 11.1 s"] {
        assert!(page.contains(needle), "{needle}");
    }
    // Nothing from the network: no links, scripts, stylesheets or fonts to fetch.
    for outside in ["src=", "href=", "@import", "url(", "<link", "<script"] {
        assert!(!page.contains(outside), "{outside}");
    }
}

#[test]
fn a_query_nothing_was_compared_on_is_not_marked_as_failed() {
    use ghbench_record::run::VerificationStatus;
    let mut record = sample::record();
    record.queries[0].verification.status = VerificationStatus::NotCompared;
    let page = html(&record).unwrap();
    assert!(page.contains(r#"<span class="">not compared</span>"#), "neutral, neither ok nor bad");
    assert!(!page.contains(r#"<span class="bad">not compared</span>"#));
}

#[test]
fn a_bench_size_says_whether_its_engines_agree_and_one_engine_alone_is_no_failure() {
    use ghbench_record::bench::SizeRecord;
    use ghbench_record::run::{RunRecord, VerificationStatus};
    let size = |run: RunRecord| SizeRecord { hours: 1, table: "bench_1h".into(), loads: Vec::new(), indexes: Vec::new(), run, memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None };
    let with_status = |mut run: RunRecord, status: VerificationStatus| {
        run.queries.iter_mut().for_each(|q| q.verification.status = status);
        run
    };
    let agreeing = with_status(sample::record(), VerificationStatus::Agree);
    assert_eq!(size(agreeing.clone()).verdict(), ("every query verified: the engines agree", true));
    let mut differing = agreeing.clone();
    differing.queries[0].verification.status = VerificationStatus::Mismatch;
    assert_eq!(size(differing).verdict(), ("NOT every query verified (see below)", false));
    let mut alone = with_status(agreeing, VerificationStatus::NotCompared);
    alone.context.engines.truncate(1);
    assert_eq!(size(alone).verdict(), ("one engine: nothing to compare", true));
}

#[test]
fn the_overview_shows_every_query_and_engine_on_one_log_axis() {
    let drawn = charts(&sample::record()).unwrap();
    let overview = &chart(&drawn, "overview").svg;
    // Four bars each, and one swatch in the legend; normalized failed D: a gap, marked.
    assert_eq!(bar_heights(overview, POSTGRES).len(), 5, "{overview:.300}");
    assert_eq!(bar_heights(overview, MONGO).len(), 5);
    assert_eq!(bar_heights(overview, NORMALIZED).len(), 4);
    assert!(overview.contains("×"), "the gap is marked");
    for label in ["A corrected", "D corrected", "postgres", "mongo", "normalized"] {
        assert!(overview.contains(label), "{label}");
    }
    // mongo is 31x postgres: on the log axis its bar is a few times as tall, not 31.
    let (pg, mongo) = (bar_heights(overview, POSTGRES)[0], bar_heights(overview, MONGO)[0]);
    assert!(mongo / pg > 1.2 && mongo / pg < 8.0, "log axis: {pg} vs {mongo}");
}

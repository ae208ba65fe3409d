//! Every median is shown with the runs it rests on and their range, and a
//! first hot run far slower than the others is noted, in every view: the
//! terminal, the Markdown report, the page, a bench's sizes, `--regime`'s
//! times and a comparison. Read back from the sample record (postgres's
//! Query A: 0.0110, 0.0100, 0.0095 s).


use ghbench_testkit::sample;
use ghbench_record::bench::{BenchRecord, DataSource, Regime, RegimePoint, SizeRecord, BENCH_SCHEMA};
use ghbench_record::run::{RunRecord, Stats};
use ghbench_report::bench::{bench_markdown, size_text, BenchCharts};
use ghbench_report::regime::regime_text;
use ghbench_report::{bench_html, comparison, html, markdown, problems, results_table, Style};

/// postgres's Query A with its first hot run 5× the others'.
fn slow_first() -> RunRecord {
    let mut record = sample::record();
    let a = &mut record.queries[0].engines[0];
    a.iterations[0].seconds = 0.05;
    a.stats = Stats::of(&a.iterations.iter().map(|i| i.seconds).collect::<Vec<_>>());
    record
}

const NOTE: &str = "A corrected on postgres: the first hot run took 0.0500 s, more than 2× the median of the other 2 (0.0097 s): caches warming? consider more --repeat";

/// One size, then one `--regime` point under a 1 MiB limit, of `run`.
fn bench(run: RunRecord) -> BenchRecord {
    let data = DataSource { kind: "generated".into(), location: "gen".into(), first_hour: "2015-01-01T00".into(), seed: Some(42), events_per_hour: Some(100), identity: None, split: None, pools: None };
    let size = SizeRecord { hours: 1, table: "bench_1h".into(), loads: Vec::new(), indexes: Vec::new(), run: run.clone(), memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None };
    let point = RegimePoint { ratio: 5.0, memory_bytes: 1 << 20, disk: None, run };
    let regime = Regime { reference: "postgres".into(), reference_bytes: 5 << 20, ratios: vec![5.0], load_memory: "loaded without a limit".into(), iops_size: None, points: vec![point] };
    BenchRecord { schema: BENCH_SCHEMA.into(), data, sizes: vec![size], growth: Vec::new(), engine_growth: Vec::new(), report_peak_bytes: None, measuring: None, finished: true, resumed: None, regime: Some(regime), preset: None }
}

#[test]
fn every_median_shows_how_many_runs_it_rests_on_and_their_range() {
    let record = sample::record();
    let runs = "(n=3, 0.0095 – 0.0110)";
    let terminal = results_table(&record, Style::Terminal);
    let a = terminal.lines().skip_while(|l| !l.contains("A corrected")).take(2).collect::<Vec<_>>().join("\n");
    assert!(a.contains("0.0100 ✓") && a.contains(runs), "the median, then the runs under it:\n{terminal}");
    let md = markdown(&record);
    assert!(md.contains(&format!("| 0.0100 ✓ {runs} |")), "the results table:\n{md}");
    assert!(md.contains("| n | min    | median | mean   | max    |"), "every run's table counts them:\n{md}");
    assert!(md.contains(&format!("| 0.0100 {runs} |")), "beside the paper's numbers:\n{md}");
    let page = html(&record).unwrap();
    let row = r#"<td class="num">0.0100</td><td class="num">3</td><td class="num">0.0095</td><td class="num">0.0110</td>"#;
    assert!(page.contains(">n</th>") && page.contains(row), "median, n, min, max:\n{page}");
    let both = bench(record.clone());
    let size = size_text(&both.sizes[0]);
    assert!(size.contains("0.0100") && size.contains(runs), "a bench size's table:\n{size}");
    let md = bench_markdown(&both, &BenchCharts::default(), "d");
    assert!(md.contains(&format!("| 0.0100 {runs} |")), "a bench's Markdown: its sizes and the regime's times:\n{md}");
    let regime = md.split("## Data against memory").nth(1).expect("the regime's section");
    assert_eq!(regime.matches(&format!("0.0100 {runs}")).count(), 2, "free and under the limit:\n{regime}");
    let page = bench_html(&both, &BenchCharts::draw(&both).unwrap()).unwrap();
    assert!(page.contains(&format!("0.0100\n{runs}")), "the bench page's tables:\n{page}");
    let compared = comparison(&record, &record, 0.1, Style::Markdown);
    assert!(compared.contains(&format!("| 0.0100 {runs} | 0.0100 {runs} |")), "old and new:\n{compared}");
    // One run has no range to show.
    let mut once = sample::record();
    let a = &mut once.queries[0].engines[0];
    a.iterations.truncate(1);
    a.stats = Stats::of(&[a.iterations[0].seconds]);
    let md = markdown(&once);
    assert!(md.contains("0.0110 ✓ (n=1) ") && !md.contains("(n=1,"), "{md}");
}

#[test]
fn an_older_record_without_n_counts_the_runs_it_kept() {
    let mut json = serde_json::to_value(sample::record()).unwrap();
    for q in json["queries"].as_array_mut().unwrap() {
        for e in q["engines"].as_array_mut().unwrap() {
            if let Some(stats) = e["stats"].as_object_mut() {
                assert!(stats.remove("n").is_some(), "written with n");
            }
        }
    }
    let old = RunRecord::read(&json.to_string()).unwrap();
    assert!(markdown(&old).contains("| 0.0100 ✓ (n=3, 0.0095 – 0.0110) |"));
}

#[test]
fn a_slow_first_run_is_noted_in_every_view_and_is_no_failure() {
    let record = slow_first();
    let terminal = results_table(&record, Style::Terminal);
    assert!(terminal.contains(&format!("note: {NOTE}")), "{terminal}");
    let md = markdown(&record);
    assert!(md.contains(&format!("> **Note**: {NOTE}")), "{md}");
    let page = html(&record).unwrap();
    let query_a = &page[page.find("id=\"query-A-corrected\"").unwrap()..page.find("id=\"query-B-corrected\"").unwrap()];
    assert!(query_a.contains(NOTE), "in Query A's section:\n{query_a}");
    let both = bench(record.clone());
    assert!(size_text(&both.sizes[0]).contains(NOTE), "under a bench size's table");
    let regime = regime_text(&both).unwrap();
    assert!(regime.contains(&format!("memory free: {NOTE}")) && regime.contains(&format!("1.0 MiB limit (5×): {NOTE}")), "each run of the sweep:\n{regime}");
    let md = bench_markdown(&both, &BenchCharts::default(), "d");
    assert_eq!(md.matches(NOTE).count(), 3, "the size, and the regime's two runs:\n{md}");
    let page = bench_html(&both, &BenchCharts::draw(&both).unwrap()).unwrap();
    assert!(page.matches(NOTE).count() >= 3, "the size, the regime and the largest size's query:\n{page}");
    let compared = comparison(&sample::record(), &record, 0.1, Style::Terminal);
    assert!(compared.contains(&format!("note: in the new run, {NOTE}")), "{compared}");
    // A note, not a failure: the exit status stays the verification's.
    assert!(problems(&record).iter().all(|p| !p.contains("first hot run")));
    assert_eq!(problems(&record), problems(&sample::record()));
    // None without a slow first run.
    let steady = sample::record();
    let views = [results_table(&steady, Style::Terminal), markdown(&steady), html(&steady).unwrap(), regime_text(&bench(steady.clone())).unwrap()];
    assert!(views.iter().all(|v| !v.contains("first hot run")));
}

//! The terminal's tables, measured: six engines fit 100 columns and two fit
//! 80 (a terminal that wraps a row over several lines is unreadable), no
//! column means nothing, and the engine that disagrees is the one marked.


use ghbench_testkit::sample;
use ghbench_record::bench::{LoadRecord, SizeRecord};
use ghbench_record::run::RunRecord;
use ghbench_report::bench::size_text;
use ghbench_report::{problems, results_table, Style};

/// The sample run with its engines renamed and copied up to `names`.
fn with_engines(names: &[&str]) -> RunRecord {
    let mut record = sample::record();
    let rename = |i: usize| sample::ENGINES[i % sample::ENGINES.len()];
    let engines = names.iter().enumerate().map(|(i, name)| {
        let mut e = record.context.engines.iter().find(|e| e.engine.name() == rename(i)).unwrap().clone();
        e.engine = (*name).into();
        e
    });
    record.context.engines = engines.collect();
    for q in &mut record.queries {
        let results = names.iter().enumerate().map(|(i, name)| {
            let mut r = q.engines.iter().find(|r| r.engine.name() == rename(i)).unwrap().clone();
            r.engine = (*name).into();
            r
        });
        q.engines = results.collect();
        q.verification.agreeing.retain(|e| names.contains(&e.name()));
        q.verification.mismatches.retain(|m| names.contains(&m.engine.name()));
    }
    record
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

const SIX: [&str; 6] = ["postgres", "mongo", "normalized", "polars", "postgres-tuned", "mongo-tuned"];

#[test]
fn six_engines_fit_a_hundred_columns_and_two_fit_eighty() {
    let six = results_table(&with_engines(&SIX), Style::Terminal);
    assert!(widest(&six) <= 100, "{} columns:\n{six}", widest(&six));
    for engine in ["postgres", "normalized", "polars", "tuned"] {
        assert!(six.contains(engine), "{engine} has a column:\n{six}");
    }
    assert!(six.contains("geometric mean"), "{six}");
    let two = results_table(&with_engines(&SIX[..2]), Style::Terminal);
    assert!(widest(&two) <= 80, "{} columns:\n{two}", widest(&two));
    // Every number is still there: postgres's median of A and mongo's ratio to it.
    assert!(two.contains("0.0100 ✓") && two.contains("31.0×"), "{two}");
}

#[test]
fn one_engine_has_no_comparison_and_no_marks() {
    let mut alone = with_engines(&SIX[..1]);
    for q in &mut alone.queries {
        q.verification = ghbench_record::run::Verification { status: ghbench_record::run::VerificationStatus::NotCompared, ..q.verification.clone() };
        q.verification.mismatches.clear();
        q.engines.iter_mut().for_each(|r| r.verified = None);
    }
    alone.context.baseline = None;
    let table = results_table(&alone, Style::Terminal);
    for meaningless in ["÷", "faster", "geometric", "✓", "✗"] {
        assert!(!table.contains(meaningless), "{meaningless} with one engine:\n{table}");
    }
    assert!(table.contains("0.0100"), "{table}");
}

#[test]
fn the_engine_that_disagrees_is_named_and_the_rest_keep_their_marks() {
    let record = sample::record();
    let table = results_table(&record, Style::Terminal);
    let b = table.lines().find(|l| l.contains("B corrected")).expect("a row for B");
    assert_eq!(b.matches('✓').count(), 2, "postgres and mongo agree on B: {b}");
    assert_eq!(b.matches('✗').count(), 1, "normalized does not: {b}");
    let said = problems(&record).join("\n");
    assert!(said.contains("normalized disagrees with the rest (postgres, mongo)"), "{said}");
}

#[test]
fn a_bench_size_with_two_engines_fits_eighty_columns() {
    let run = with_engines(&SIX[..2]);
    let load = |engine: &str| LoadRecord {
        engine: engine.into(),
        hours_loaded: 40,
        hours_reused: 0,
        events_loaded: 1_000_000,
        seconds: Some(123.4),
        events_per_second: Some(8103.0),
        concurrency: 4,
        upkeep: Some("VACUUM (ANALYZE)".into()),
        upkeep_seconds: Some(4.2),
        retries: 2,
        hours_retried: 1,
        damage: Default::default(),
        warnings: Vec::new(),
    };
    let warned = LoadRecord { warnings: vec!["VACUUM failed".into()], ..load("postgres") };
    let size = SizeRecord { hours: 40, table: "bench_40h".into(), loads: vec![warned, load("mongo")], indexes: Vec::new(), run, memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None };
    let text = size_text(&size);
    assert!(widest(&text) <= 80, "{} columns:\n{text}", widest(&text));
    assert!(text.contains("includes 2") && text.contains("8103") && text.contains("hours loaded up to 4 at a time"), "{text}");
    assert!(text.contains("postgres: warning: VACUUM failed") && !text.contains("mongo: warning"), "a load's warnings are said under it: {text}");
}


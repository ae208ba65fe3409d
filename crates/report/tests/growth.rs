//! `bench --scale`'s growth beyond the hot medians, read back from three
//! sizes spanning 4x made of the sample record: the cold runs' and the
//! answers' slopes, each engine's load, index builds and bytes, a time under
//! the fit's floor said, and for a query that grows faster than the data the
//! bytes it spilled and its plan, from the record alone.

use ghbench_record::bench::{engine_growth, growth, BenchRecord, DataSource, LoadRecord, SizeRecord, BENCH_SCHEMA};
use ghbench_record::run::{IndexBuild, IndexEngineRecord, Iteration, Plan, Reads, RunRecord, Stats};
use ghbench_report::bench::{bench_markdown, BenchCharts};
use ghbench_report::growth::{engine_growth_table, growth_table, what_grew};
use ghbench_testkit::sample;

const SIZES: [u64; 3] = [10_000, 20_000, 40_000];

/// The sample record at `events`: every time and size grows as events^slope,
/// postgres's Query A as events^1.5 (hot and cold) with a spill and a plan.
fn size_of(events: u64) -> SizeRecord {
    let scale = events as f64 / SIZES[0] as f64;
    let mut run: RunRecord = sample::record();
    for engine in &mut run.context.engines {
        engine.data.as_mut().unwrap().events = events;
        if let Some(storage) = engine.storage.as_mut() {
            storage.table_bytes = (storage.table_bytes as f64 * scale) as u64;
            storage.index_bytes = (storage.index_bytes as f64 * scale) as u64;
        }
    }
    for query in &mut run.queries {
        for result in &mut query.engines {
            let superlinear = query.query == "A" && result.engine.name() == "postgres";
            let slope = if superlinear { 1.5 } else { 1.0 };
            // postgres's B stays under 10 ms at the smallest size.
            let base = if query.query == "B" && result.engine.name() == "postgres" { 0.006 } else { 0.05 };
            let hot = base * scale.powf(slope);
            result.iterations = (0..3).map(|_| Iteration { seconds: hot, rows: 10 }).collect();
            result.stats = Stats::of(&[hot, hot, hot]);
            result.cold_run = Some(Iteration { seconds: 3.0 * hot, rows: 10 });
            result.rows = Some((100.0 * scale.powf(0.5)) as u64);
            result.error = None;
            if superlinear {
                let counters = [("temp_bytes (database-wide)".to_string(), (scale * scale * 1_048_576.0) as u64)].into();
                result.read = Some(Reads { runs: 4, counters, ..Reads::default() });
                let text = "Limit  (cost=1.00..2.00 rows=10 width=40)\n  ->  Sort  (cost=1.00..2.00 rows=10 width=40)\n        Sort Key: (count(*)) DESC\n        ->  HashAggregate  (cost=1.00..2.00 rows=10 width=40)\n              ->  Seq Scan on t  (cost=0.00..1.00 rows=100 width=32)";
                result.plan = Some(Plan { command: "EXPLAIN".into(), text: Some(text.into()), ..Plan::default() });
            }
        }
    }
    let engines: Vec<_> = run.context.engines.iter().map(|e| e.engine.clone()).collect();
    let loads = engines
        .iter()
        .map(|engine| LoadRecord {
            engine: engine.clone(),
            hours_loaded: 1,
            hours_reused: 0,
            events_loaded: events,
            seconds: Some(0.5 * scale),
            events_per_second: Some(events as f64 / (0.5 * scale)),
            concurrency: 1,
            upkeep: None,
            upkeep_seconds: None,
            retries: 0,
            hours_retried: 0,
            damage: Default::default(),
            warnings: Vec::new(),
        })
        .collect();
    let build = |seconds: f64| IndexBuild { name: "i".into(), definition: "i".into(), created: true, seconds, bytes: None, skipped: None, commit_quorum: None };
    let indexes = engines.iter().map(|engine| IndexEngineRecord { engine: engine.clone(), indexes: vec![build(0.2 * scale.powf(1.2))], error: None, statistics: None }).collect();
    SizeRecord { hours: (events / SIZES[0]) as u32, table: format!("t_{events}"), loads, indexes, run, memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None }
}

fn bench() -> BenchRecord {
    let sizes: Vec<SizeRecord> = SIZES.iter().map(|&n| size_of(n)).collect();
    let data = DataSource { kind: "generated".into(), location: "gen".into(), first_hour: "2015-01-01T00".into(), seed: Some(42), events_per_hour: Some(10_000), identity: None, split: None, pools: None };
    BenchRecord {
        schema: BENCH_SCHEMA.into(),
        data,
        growth: growth(&sizes),
        engine_growth: engine_growth(&sizes),
        sizes,
        report_peak_bytes: None,
        measuring: None,
        finished: true,
        resumed: None,
        regime: None,
        preset: None,
    }
}

fn near(value: Option<f64>, expected: f64) -> bool {
    value.is_some_and(|v| (v - expected).abs() < 1e-6)
}

#[test]
fn cold_runs_answers_loads_index_builds_and_bytes_have_slopes_of_their_own() {
    let record = bench();
    let a = record.growth.iter().find(|g| g.query == "A" && g.variant == "corrected" && g.engine.name() == "postgres").unwrap();
    assert!(near(a.exponent, 1.5) && near(a.cold.as_ref().unwrap().exponent, 1.5), "{a:?}");
    assert!(near(a.rows.as_ref().unwrap().exponent, 0.5), "the answer grows as the groups do: {a:?}");
    let normalized = record.engine_growth.iter().find(|e| e.engine.name() == "normalized").unwrap();
    assert!(near(normalized.load_seconds.exponent, 1.0) && near(normalized.index_seconds.exponent, 1.2), "{normalized:?}");
    let postgres = record.engine_growth.iter().find(|e| e.engine.name() == "postgres").unwrap();
    assert!((postgres.stored_bytes.exponent.unwrap() - 1.0).abs() < 0.01, "{postgres:?}");
    assert_eq!(postgres.bytes_per_event.len(), 3);

    let table = growth_table(&record).render(ghbench_report::Style::Markdown);
    assert!(table.contains("cold slope") && table.contains("rows slope") && table.contains(" 1.50 |"), "{table}");
    // Under 10 ms at the smallest size only: the fit holds, the size is said.
    assert!(table.contains("B corrected postgres: hot under 10 ms at 10,000 events"), "{table}");
    let engines = engine_growth_table(&record).unwrap().render(ghbench_report::Style::Markdown);
    assert!(engines.contains("| postgres") && engines.contains("1.20"), "{engines}");
}

#[test]
fn what_grew_faster_than_the_data_is_explained_from_the_record() {
    let record = bench();
    let grew = what_grew(&record);
    assert_eq!(grew.len(), 1, "only postgres's A grows faster than the data: {grew:?}");
    let line = &grew[0];
    assert!(line.starts_with("A corrected postgres: slope hot 1.50, cold 1.50"), "{line}");
    assert!(line.contains("spilled 256.0 KiB → 4.0 MiB (temp_bytes (database-wide), a run's mean over 4)"), "{line}");
    assert!(line.contains("plan at the largest size: Limit ← Sort ← HashAggregate ← Seq Scan on t"), "{line}");
    let md = bench_markdown(&record, &BenchCharts::default(), "d");
    assert!(md.contains("Faster than the data") && md.contains(line.as_str()), "{md}");
}

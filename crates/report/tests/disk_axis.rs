//! The sweep's disk axis charted: per engine, time against read IOPS, the
//! free disk at its measured random-read rate, and a note where a point's
//! throttle is no tighter than the free disk (it cannot bind). Read back
//! from the sample record, its machine given a measured disk.

use ghbench_record::bench::{BenchRecord, DataSource, Regime, RegimePoint, SizeRecord, BENCH_SCHEMA};
use ghbench_record::run::{Disk, DiskRules, RunRecord};
use ghbench_report::regime::regime_charts;
use ghbench_testkit::sample;

/// The sample run on a disk measured at `random` random reads a second.
fn run_on_disk(random: f64) -> RunRecord {
    let mut run = sample::record();
    run.context.machine.disk = Some(Disk {
        folder: "data".into(),
        device: Some("/dev/vda (ext4)".into()),
        model: None,
        rotational: None,
        sequential_read_bytes_per_second: Some(5e8),
        sequential_reads: vec![5e8],
        random_reads_per_second: Some(random),
        measured_with: String::new(),
        error: None,
    });
    run
}

/// At 5×: the disk free, then one point per read IOPS given.
fn swept(iops: &[u64]) -> BenchRecord {
    swept_from(true, iops)
}

/// At 5×: the disk free (unless `with_free` is false: a preset narrowed to
/// throttled points), then one point per read IOPS given.
fn swept_from(with_free: bool, iops: &[u64]) -> BenchRecord {
    let run = run_on_disk(9975.0);
    let data = DataSource { kind: "generated".into(), location: "gen".into(), first_hour: "2015-01-01T00".into(), seed: Some(42), events_per_hour: Some(100), identity: None, split: None, pools: None };
    let size = SizeRecord { hours: 1, table: "bench_1h".into(), loads: Vec::new(), indexes: Vec::new(), run: run.clone(), memory_during_load: Vec::new(), dropped: Vec::new(), disk_plan: None, ghbench_memory: None };
    let point = |disk: Option<DiskRules>| RegimePoint { ratio: 5.0, memory_bytes: 1 << 20, disk, run: run.clone() };
    let points = with_free.then(|| point(None)).into_iter().chain(iops.iter().map(|&n| point(Some(DiskRules { read_iops: Some(n), ..Default::default() })))).collect();
    let regime = Regime { reference: "postgres".into(), reference_bytes: 5 << 20, ratios: vec![5.0], load_memory: "loaded without a limit".into(), iops_size: None, points };
    BenchRecord { schema: BENCH_SCHEMA.into(), data, sizes: vec![size], growth: Vec::new(), engine_growth: Vec::new(), report_peak_bytes: None, measuring: None, finished: true, resumed: None, regime: Some(regime), preset: None }
}

fn iops_chart(record: &BenchRecord) -> String {
    let charts = regime_charts(record, record.regime.as_ref().unwrap()).unwrap();
    charts.into_iter().find(|c| c.name.starts_with("regime-iops-postgres")).map(|c| c.svg).expect("a disk chart for postgres")
}

#[test]
fn a_throttle_no_tighter_than_the_free_disk_is_said_not_to_bind() {
    let svg = iops_chart(&swept(&[20_000, 1000]));
    let note = svg.split("<text").find(|t| t.contains("does not bind")).unwrap_or_else(|| panic!("no note: {svg}"));
    assert!(note.contains("20000 read IOPS: not below the free disk") && note.contains("so that throttle does not bind random reads"), "{note}");
    assert!(svg.contains("free: this disk, 9975 random reads/s measured"), "the free disk's mark");
    let svg = iops_chart(&swept(&[5000, 1000]));
    assert!(!svg.contains("does not bind"), "every throttle below the free disk's rate binds");
}

/// A sweep whose points are all throttled (`--preset paper2019 --regime-iops
/// 5000,1000`) has no point on the disk the memory-free run read: a memory
/// chart would show the disk's slowdown as memory's, so there is none; the
/// disk chart stays.
#[test]
fn a_sweep_of_throttled_points_alone_has_no_memory_chart() {
    let names = |record: &BenchRecord| regime_charts(record, record.regime.as_ref().unwrap()).unwrap().into_iter().map(|c| c.name).collect::<Vec<_>>();
    let whole = names(&swept(&[5000, 1000]));
    assert!(whole.iter().any(|n| n.starts_with("regime-postgres")) && whole.iter().any(|n| n.starts_with("regime-iops-postgres")), "{whole:?}");
    let narrowed = names(&swept_from(false, &[5000, 1000]));
    assert!(!narrowed.iter().any(|n| n.starts_with("regime-postgres")), "{narrowed:?}");
    assert!(narrowed.iter().any(|n| n.starts_with("regime-iops-postgres")), "{narrowed:?}");
}

/// The preset a bench ran (narrowed, here) is on its page as in its Markdown
/// and on the terminal: its line, then each value with why and its source.
#[test]
fn the_bench_page_writes_out_the_preset_it_ran() {
    use ghbench_report::bench::{bench_markdown, BenchCharts};
    let mut record = swept_from(false, &[1000]);
    let change = ghbench_core::Change { what: "narrowed to --regime-iops 1000".into(), why: "given with the preset".into(), source: "the bench's command line".into() };
    record.preset = Some(ghbench_core::Setup { name: "paper2019".into(), tuned: false, of: None, about: "the paper's machine; NARROWED: --regime-iops 1000".into(), namespace: None, queries: None, loaded_columns: Default::default(), changes: vec![change] });
    let page = ghbench_report::bench_html(&record, &BenchCharts::draw(&record).unwrap()).unwrap();
    let preset = page.split("Preset: ").nth(1).unwrap_or_else(|| panic!("no preset on the page: {page}"));
    assert!(preset.starts_with("setup paper2019 (not tuned): the paper&#x27;s machine; NARROWED: --regime-iops 1000"), "{}", &preset[..200.min(preset.len())]);
    assert!(preset.contains("<li>change: narrowed to --regime-iops 1000. Why: given with the preset"), "{}", &preset[..400.min(preset.len())]);
    let md = bench_markdown(&record, &BenchCharts::default(), "d");
    assert!(md.contains("Preset: setup paper2019 (not tuned): the paper's machine; NARROWED"), "{md}");
}

//! What a file per hour costs polars' queries, split in two (issue 52), over
//! polars tables holding the same events in different numbers of hour files
//! (`ghbench gen --split`; `just bench-polars-hours` makes them):
//! - ghbench's part: what a backend does before polars is asked anything
//!   (the ledger read entry by entry, the folder listed, a `stat` per file),
//!   in every timed run before issue 52, once per run since;
//! - polars' part: a timed run as ghbench times it today: the scan of those
//!   files set up (polars checks each path, reads the first footer), the
//!   query planned and collected (each file opened, its footer read, the scan).
//!
//! Hot: the median of `GHBENCH_HOURS_REPEAT` runs (5) after one untimed.
//! Cold (root only): each part once after the OS page cache is dropped.
//! In this process (as `GHBENCH_POLARS_IN_PROCESS` runs them), so both parts
//! are timed around the very calls ghbench makes; `ghbench query` gives the
//! same queries end to end, in the worker.
//!
//! Usage: GHBENCH_HOURS_TABLES=DIR/TABLE,DIR/TABLE cargo bench --bench polars_hours

use std::path::Path;
use std::time::Instant;

use ghbench_core::TableName;
use ghbench_olap::catalog::Catalog;
use ghbench_polars::backend::PolarsBackend;

const QUERIES: [&str; 4] = ["A", "B", "C", "D"];

fn main() {
    let Ok(tables) = std::env::var("GHBENCH_HOURS_TABLES") else {
        eprintln!("GHBENCH_HOURS_TABLES=DIR/TABLE,... is not set: `just bench-polars-hours` makes the tables and sets it");
        return;
    };
    let repeat: usize = std::env::var("GHBENCH_HOURS_REPEAT").ok().and_then(|n| n.parse().ok()).unwrap_or(5).max(1);
    let cold = can_drop_caches();
    let catalog = Catalog::embedded().expect("the embedded query catalog");
    println!("{:>11} {:>6} | {:>24} | {}", "hours/files", "query", "ghbench's part s hot/cold", "polars' part s hot/cold");
    for path in tables.split(',').map(Path::new) {
        let (dir, table) = (path.parent().expect("DIR/TABLE"), path.file_name().and_then(|n| n.to_str()).expect("DIR/TABLE"));
        let table: TableName = table.parse().expect("a table name");
        // The files a query reads: the hours' own, or the segments they were merged into.
        let store = ghbench_polars::store::TableDir::new(dir, &table);
        let files = format!("{}h/{}f", store.ledger().expect("the table's ledger").len(), store.live_files().expect("the table's files").len());
        let bookkeeping_hot = median((0..=repeat).map(|_| bookkeeping(dir, &table)).skip(1).collect());
        let bookkeeping_cold = cold.then(|| {
            drop_caches();
            bookkeeping(dir, &table)
        });
        for query in QUERIES {
            let file = catalog.query("polars", "corrected", query).expect("the query");
            let backend = PolarsBackend::open_here(dir, &table).expect("the table");
            backend.table_files().expect("the table's files");
            let run = || {
                let started = Instant::now();
                let rows = backend.run_here(&file).expect("the query runs");
                std::hint::black_box(rows);
                started.elapsed().as_secs_f64()
            };
            let polars_cold = cold.then(|| {
                drop_caches();
                run()
            });
            let polars_hot = median((0..=repeat).map(|_| run()).skip(1).collect());
            println!(
                "{files:>11} {:>6} | {:>11.4} / {:<10} | {:>8.4} / {}",
                format!("{query} corr"),
                bookkeeping_hot,
                said(bookkeeping_cold),
                polars_hot,
                said(polars_cold)
            );
        }
    }
    if !cold {
        println!("(cold runs need root, to drop the page cache: not measured)");
    }
}

/// Seconds a new backend takes to read the table's ledger and check its files.
fn bookkeeping(dir: &Path, table: &TableName) -> f64 {
    let started = Instant::now();
    let backend = PolarsBackend::open_here(dir, table).expect("the table");
    let files = backend.table_files().expect("the table's files");
    std::hint::black_box(files.len());
    started.elapsed().as_secs_f64()
}

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[seconds.len() / 2]
}

fn said(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "–".into(), |s| format!("{s:.4}"))
}

fn can_drop_caches() -> bool {
    std::fs::OpenOptions::new().write(true).open("/proc/sys/vm/drop_caches").is_ok()
}

/// Written back and dropped: the next read comes from the disk.
fn drop_caches() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3").expect("dropping the page cache (root)");
}

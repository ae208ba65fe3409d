//! `ghbench ingest`: argument handling and the run's summary for people.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use chrono::Datelike;
use clap::Args;
use ghbench_ingest::{ingest, HourStatus, IngestOptions, IngestSummary, Source, DEFAULT_SOURCE};

use crate::options::{ConnOptions, HourArgs};
use crate::progress::IngestProgress;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench ingest --year 2015                                   # all of 2015 from data.gharchive.org
  ghbench ingest --from 2015-01-01T00 --to 2015-01-01T23       # one day
  ghbench ingest --source ./mirror --from 2015-01-01T00 --hours 6

Rerunning skips hours each engine's ledger lists as loaded; an interrupted hour
is loaded again from scratch. Lines no engine can take go to the quarantine
folder with their line number and reason; `\\u0000` escapes are removed.")]
pub struct IngestArgs {
    #[command(flatten)]
    pub conn: ConnOptions,

    #[command(flatten)]
    pub hours: HourArgs,

    /// Where hours come from: an http(s) base URL, or a folder of YYYY-MM-DD-H.json.gz files.
    #[arg(long, default_value = DEFAULT_SOURCE)]
    pub source: String,

    /// Hours loaded at the same time [default: 2 per CPU core, at most 8].
    #[arg(long)]
    pub concurrency: Option<usize>,

    /// Further attempts at an hour after a network failure or HTTP 5xx (with backoff).
    #[arg(long, default_value_t = 4)]
    pub retries: u32,

    /// Folder for quarantined lines, one JSON-lines file per table and hour.
    #[arg(long, default_value = ".ghbench/quarantine")]
    pub quarantine_dir: PathBuf,

    /// Drop the table (and its ledger entries) on every engine before loading.
    #[arg(long)]
    pub drop: bool,

    /// Read, check and encode every hour for both engines but store nothing and
    /// contact no server: measures the client pipeline alone.
    #[arg(long)]
    pub dry_run: bool,

    /// After loading, create the five indexes on every engine (as `ghbench index`).
    #[arg(long, conflicts_with = "dry_run")]
    pub index: bool,

    /// Also write the run's summary, hour by hour, as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

pub async fn run(args: IngestArgs) -> Result<ExitCode> {
    let range = args.hours.range()?;
    let source = Source::parse(&args.source)?;
    let engines = args.conn.engines();
    let concurrency = args.concurrency.unwrap_or_else(default_concurrency);
    if concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let table = args.conn.table_or(range.first.date().year());
    let options = IngestOptions {
        hours: range,
        source,
        engines: engines.clone(),
        table: table.clone(),
        servers: args.conn.servers(),
        concurrency,
        retries: args.retries,
        quarantine_dir: args.quarantine_dir.clone(),
        drop: args.drop,
        dry_run: args.dry_run,
    };
    let target = if args.dry_run { "nowhere (dry run)".to_string() } else { join(&engines) };
    eprintln!("loading {range} from {} into '{}' on {target}", options.source.describe(), options.table);
    let progress = Arc::new(IngestProgress::new(if args.dry_run { &[] } else { &engines }));
    let summary = ingest(options, progress.clone()).await?;
    progress.finish();

    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&summary)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    print_summary(&summary);
    let t = &summary.totals;
    if t.hours_loaded + t.hours_partial == 0 && t.hours_skipped == 0 {
        eprintln!("error: no hour could be loaded ({} missing, {} failed); see above", t.hours_missing, t.hours_failed);
        return Ok(ExitCode::FAILURE);
    }
    if args.index {
        let conn = ConnOptions { table: Some(table), ..args.conn };
        let index = super::index::IndexArgs { conn, catalog: Default::default(), output: "results".into() };
        return super::index::run(index).await;
    }
    Ok(ExitCode::SUCCESS)
}

fn default_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get() * 2).min(8)
}

fn join(items: &[impl std::fmt::Display]) -> String {
    items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

fn print_summary(s: &IngestSummary) {
    let t = &s.totals;
    println!("ghbench {} ingest into '{}': {} .. {} from {}", s.ghbench_version, s.table, s.first_hour, s.last_hour, s.source);
    for server in &s.servers {
        println!("  {:<9} {} at {}", server.engine.name(), server.label(), server.url);
    }
    println!(
        "hours:  {} requested, {} loaded, {} skipped (already loaded), {} missing, {} failed, {} partial",
        t.hours_requested, t.hours_loaded, t.hours_skipped, t.hours_missing, t.hours_failed, t.hours_partial
    );
    println!(
        "lines:  {} read, {} events, {} quarantined, {} sanitized (\\u0000 removed), {} damaged files",
        t.lines, t.events, t.quarantined_total, t.sanitized, t.file_defects
    );
    for (defect, n) in &t.quarantined {
        println!("        quarantined {}: {n}", defect.name());
    }
    println!("{:<10} {:>12} {:>12} {:>8} {:>14}", "engine", "stored", "events/s", "failed", "table events");
    for (engine, e) in &t.engines {
        println!(
            "{:<10} {:>12} {:>12.0} {:>8} {:>14}",
            engine.name(),
            e.stored,
            e.events_per_second,
            e.hours_failed,
            e.table_events
        );
    }
    let per_second = |v: f64| v / s.elapsed_seconds.max(1e-9);
    println!(
        "elapsed {:.2} s, concurrency {}: {:.1} MB compressed, {:.1} MB JSON read; {:.0} events/s, {:.1} MB/s JSON through the client",
        s.elapsed_seconds,
        s.concurrency,
        t.compressed_bytes as f64 / 1e6,
        t.json_bytes as f64 / 1e6,
        per_second(t.events as f64),
        per_second(t.json_bytes as f64 / 1e6),
    );
    let missing: Vec<String> = s.missing().map(|h| h.to_string()).collect();
    if !missing.is_empty() {
        println!("missing hours ({}): {}", missing.len(), missing.join(" "));
    }
    for h in s.hours.iter().filter(|h| h.decode.as_ref().is_some_and(|d| d.file_defect.is_some())) {
        let d = h.decode.as_ref().expect("filtered");
        println!("damaged file {}: {} ({} lines kept)", h.hour, d.file_defect.as_deref().unwrap_or(""), d.events);
    }
    for h in s.failed() {
        let label = if h.status == HourStatus::Partial { "PARTIAL" } else { "FAILED" };
        let mut reasons: Vec<String> = h.error.iter().cloned().collect();
        reasons.extend(h.engines.iter().filter_map(|(e, o)| o.error.as_ref().map(|err| format!("{e}: {err}"))));
        println!("{label} {}: {} (rerun to retry)", h.hour, reasons.join("; "));
    }
    if t.quarantined_total > 0 {
        println!("quarantined lines are in {}/{}/", s.quarantine_dir, s.table);
    }
}

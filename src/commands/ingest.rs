//! `ghbench ingest`: argument handling and the run's summary for people.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use chrono::Datelike;
use clap::Args;
use ghbench_core::{summarise_hours, Engine, Hour, HourRange};
use ghbench_ingest::{ingest, HourStatus, IngestOptions, IngestSummary, Source, DEFAULT_SOURCE};

use crate::options::{ConnOptions, Engines, HourArgs};
use crate::outcome::Finished;
use crate::output::{screen_beside, write_summary, ResultsArgs, Target};
use crate::progress::IngestProgress;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench ingest --year 2015                                   # all of 2015 from data.gharchive.org
  ghbench ingest --from 2015-01-01T00 --to 2015-01-01T23       # one day
  ghbench ingest --source ./mirror --from 2015-01-01T00 --hours 6
  ghbench ingest --source ./mirror --reload 2015-01-01T03 --engines polars   # load one hour again

Rerunning skips hours each engine's ledger lists as loaded; an interrupted hour
is loaded again from scratch. A listed hour is loaded again (replaced) when asked
with --reload, and when its engine finds its stored copy no longer whole: a
polars file of another size or checksum than its ledger entry, a table that
holds fewer of the hour's rows than its ledger lists (counted once per run).
An hour stored from another copy of its file than a local --source holds now
(another size or BLAKE3 digest; an http source is not compared: GH Archive's
files do not change) is kept and reported with the --reload that replaces it,
exit status 1. Lines no engine can take go to the quarantine folder with their
line number and reason; `\\u0000` escapes are removed.

Faults are retried (--retries, with backoff): network errors and HTTP 5xx, a
download that arrives damaged (not gzip, cut short), and per engine a lost
connection or a server that stops answering for --timeout seconds. Only one
ingest at a time may load a table; a second one is refused at start.

Exit status: 0 when every hour is loaded, skipped or missing at the source and
at least one is loaded or skipped; 1 when any hour failed (rerun to retry it), an
hour is stored from another copy of its file, or no hour could be loaded at all; 2
when an error stopped it before loading (bad options, a server that cannot be reached,
too little free space); 130 on Ctrl-C.")]
pub struct IngestArgs {
    #[command(flatten)]
    pub conn: ConnOptions,

    #[command(flatten)]
    pub hours: HourArgs,

    /// Where hours come from: an http(s) base URL, or a folder of YYYY-MM-DD-H.json.gz files.
    #[arg(long, default_value = DEFAULT_SOURCE)]
    pub source: String,

    #[command(flatten)]
    pub streams: LoadStreams,

    /// Further attempts at an hour after a fault a retry can mend: a network
    /// failure or HTTP 5xx, a damaged download, a lost or silent server (backoff 1, 2, 4 ... s).
    #[arg(long, default_value_t = 4)]
    pub retries: u32,

    /// Seconds to wait for a server to answer any one step (a batch, a commit,
    /// a ledger query) before giving up on that connection and retrying.
    #[arg(long, value_name = "SECONDS", default_value_t = 120, value_parser = crate::options::at_least_one::<u64>)]
    pub timeout: u64,

    /// Load even when the estimate made before loading finds too little free
    /// space (each engine's need, from what it stores per gzip byte, against
    /// the free space of its folders).
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub managed: super::servers::ServersArg,

    /// Before loading, count (or read) everything each engine stores against
    /// its ledger, and reload what is not whole: a pass over the whole table,
    /// shown as progress. Without it a run checks only the hours it is about
    /// (PostgreSQL's ledger commits with its rows; MongoDB's hours are counted
    /// by their ids; polars' files by size and checksum) and compares the rest
    /// with the engine's own statistics, noting a difference.
    #[arg(long)]
    pub check_stored: bool,

    /// A limit on each step over the whole table, e.g. 2h: checking the stored
    /// hours against the ledger before loading (--check-stored), removing the
    /// hours to load again, and what dead loads left (MongoDB), a PostgreSQL hour
    /// replaced as it loads, and the upkeep after loading
    /// (PostgreSQL's VACUUM (ANALYZE)). --timeout does not cut them. Without it they take as long as they
    /// take (on a year of data, minutes to hours), saying every 15 s how far
    /// they are.
    #[arg(long, value_name = "DURATION", value_parser = ghbench_core::limit::parse_limit)]
    pub whole_table_timeout: Option<Duration>,

    /// Load a download that is still damaged after every retry as far as it
    /// goes (recorded as a damaged hour) instead of failing the hour.
    #[arg(long)]
    pub accept_damaged: bool,

    /// Folder for quarantined lines, one JSON-lines file per table and hour.
    #[arg(long, default_value = ".ghbench/quarantine")]
    pub quarantine_dir: PathBuf,

    /// Drop the table (and its ledger entries) on every engine before loading.
    #[arg(long)]
    pub drop: bool,

    /// Load these hours again on the --engines, each replacing its stored copy
    /// exactly once (the old hour and its ledger entry are removed first, in a
    /// step that commits before the new ones are stored on PostgreSQL; each
    /// engine's way is in the guide; an hour not stored yet is simply loaded;
    /// a removed hour whose load then fails is reported failed and loaded by
    /// the rerun). Hours as
    /// --from takes them, comma-separated, a range as FIRST..LAST:
    /// `2015-01-01T03`, `2015-01-01T00..2015-01-01T05,2015-01-02T12`. Without
    /// --year/--from, the run is about these hours alone.
    #[arg(long, value_name = "HOURS", value_parser = parse_hours, conflicts_with_all = ["drop", "dry_run"])]
    pub reload: Option<BTreeSet<Hour>>,

    /// Read every hour and check each line as every engine would store it, but
    /// store nothing and contact no server: measures the client pipeline alone.
    #[arg(long)]
    pub dry_run: bool,

    /// After loading, create the five indexes on every engine (as `ghbench index`).
    #[arg(long, conflicts_with = "dry_run")]
    pub index: bool,

    /// Folder for --index's record of the builds (`index-<UTC time>.json`).
    #[arg(long, value_name = "DIR", default_value = "results", requires = "index")]
    pub output: PathBuf,

    /// Also write the run's summary, hour by hour, as JSON (schema
    /// `ghbench-ingest/1`) to FILE (`-`: standard output, the summary table
    /// then on standard error).
    #[arg(long, value_name = "FILE", alias = "report")]
    pub json: Option<Target>,
}

/// The schema and version of `--json`'s summary (docs/results-schema.md).
pub const INGEST_SCHEMA: &str = "ghbench-ingest/1";

pub async fn run(args: IngestArgs, registry: &Engines) -> Result<Finished> {
    let reload = args.reload.clone().unwrap_or_default();
    if !reload.is_empty() && args.hours.from.is_none() && args.hours.year.is_none() && (args.hours.to.is_some() || args.hours.hours.is_some()) {
        bail!("--to and --hours count from --from: add --from (or leave them out to load only the --reload hours)");
    }
    let range = match reload.first() {
        // The reloaded hours alone: a range of the first, which they include.
        Some(first) if args.hours.year.is_none() && args.hours.from.is_none() => HourRange::new(*first, *first)?,
        _ => args.hours.range()?,
    };
    let source = Source::parse(&args.source)?;
    let concurrency = args.streams.hours_at_once();
    let table = args.conn.table_or(range.first.date().year());
    // A table its indexes cannot be named after is refused before it is loaded.
    if registry.select(&args.conn)?.iter().any(|s| s.plugin.spec().capabilities.indexes) {
        let catalog = ghbench_olap::catalog::compiled_in().map_err(anyhow::Error::msg)?;
        super::olap::check_index_room(&table, catalog)?;
    }
    // --drop never falls back: servers slow to answer must not turn a reload
    // of the databases into dropping the embedded engine's table.
    let selected = if args.dry_run || args.drop { registry.select(&args.conn)? } else { registry.select_reachable(&args.conn, &table).await? };
    let engines: Vec<_> = selected.iter().map(|s| s.engine().clone()).collect();
    // Found out now, not after hours of loading.
    if let Some(target) = &args.json {
        target.check("--json")?;
    }
    crate::options::check_folder("--quarantine-dir", &args.quarantine_dir, "for quarantined lines")?;
    if args.index {
        crate::options::check_folder("--output", &args.output, "for the index record")?;
    }
    let options = IngestOptions {
        hours: range,
        source,
        engines: selected.iter().map(|s| s.loader()).collect(),
        policy: registry.policy(),
        table: table.clone(),
        concurrency,
        retries: args.retries,
        timeout: Duration::from_secs(args.timeout),
        force: args.force,
        server_folders: args.managed.data_folders()?,
        check_stored: args.check_stored,
        whole_table_timeout: args.whole_table_timeout,
        accept_damaged: args.accept_damaged,
        quarantine_dir: args.quarantine_dir.clone(),
        drop: args.drop,
        dry_run: args.dry_run,
        reload,
        reload_changed: false,
    };
    let target = if args.dry_run { "nowhere (dry run)".to_string() } else { join(&engines) };
    let what = if options.reload.is_empty() || args.hours.year.is_some() || args.hours.from.is_some() {
        range.to_string()
    } else {
        String::new()
    };
    let reloading = summarise_hours(options.reload.iter().copied(), 10);
    let doing = match (what.is_empty(), options.reload.is_empty()) {
        (false, true) => format!("loading {what}"),
        (false, false) => format!("loading {what}, reloading {reloading}"),
        (true, _) => format!("reloading {reloading}"),
    };
    eprintln!("{doing} from {} into '{}' on {target}", options.source.describe(), options.table);
    let progress = Arc::new(IngestProgress::new(if args.dry_run { &[] } else { &engines }));
    let summary = ingest(options, progress.clone()).await?;
    progress.finish();

    let screen = screen_beside(args.json.as_ref());
    screen.lines(summary_lines(&summary));
    let finished = write_summary(args.json.as_ref(), INGEST_SCHEMA, &summary)?;
    let t = &summary.totals;
    if t.hours_changed > 0 {
        eprintln!(
            "error: {} hour(s) are stored from another copy of their file than the source holds (see above); reload them with --reload {}",
            t.hours_changed,
            reload_argument(&summary)
        );
        return Ok(finished.trusted_if(false));
    }
    if t.hours_loaded + t.hours_partial == 0 && t.hours_skipped == 0 {
        eprintln!("error: no hour could be loaded ({} missing, {} failed); see above", t.hours_missing, t.hours_failed);
        return Ok(finished.trusted_if(false));
    }
    if t.hours_failed + t.hours_partial > 0 {
        eprintln!(
            "error: {} hour(s) failed and {} partly failed (see above); rerun the same command to load them",
            t.hours_failed, t.hours_partial
        );
        return Ok(finished.trusted_if(false));
    }
    if args.index {
        let names = engines.iter().map(|e| e.to_string()).collect();
        let conn = ConnOptions { table: Some(table), engines: names };
        let results = ResultsArgs { output: args.output.clone(), json: None };
        let index = super::index::IndexArgs { conn, catalog: Default::default(), results };
        let built = super::index::run_on(index, registry, screen).await?;
        return Ok(finished.and(built));
    }
    Ok(finished)
}

/// Hours for `--reload`, as its help says: `H`, `H1..H2`, comma-separated.
fn parse_hours(value: &str) -> std::result::Result<BTreeSet<Hour>, String> {
    let mut hours = BTreeSet::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let parse = |h: &str| h.trim().parse::<Hour>().map_err(|e| format!("'{h}': {e}"));
        match item.split_once("..") {
            Some((first, last)) => {
                let (first, last) = (parse(first)?, parse(last)?);
                if last < first {
                    return Err(format!("'{item}': the last hour is before the first (write FIRST..LAST)"));
                }
                hours.extend(HourRange::new(first, last).map_err(|e| format!("'{item}': {e}"))?.iter());
            }
            None => {
                hours.insert(parse(item)?);
            }
        }
    }
    if hours.is_empty() {
        return Err("name at least one hour, e.g. 2015-01-01T03 or 2015-01-01T00..2015-01-01T05".into());
    }
    Ok(hours)
}

/// The `--reload` value that replaces the changed hours.
fn reload_argument(s: &IngestSummary) -> String {
    let hours: BTreeSet<Hour> = s.changed.iter().map(|c| c.hour).collect();
    hours.iter().map(Hour::to_string).collect::<Vec<_>>().join(",")
}

/// How many hours load side by side: `ingest` and `bench` take the same option.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LoadStreams {
    /// Hours loaded at the same time, each on its own connection to every
    /// engine [default: 2 per CPU core, at most 32]. Recorded with the load.
    #[arg(long, value_parser = crate::options::at_least_one::<usize>)]
    pub concurrency: Option<usize>,
}

impl LoadStreams {
    /// Two hours per core keep every core busy while others wait on the
    /// network or a commit; at most 32, since each engine on PostgreSQL takes
    /// a connection per hour plus two (control, lock): two such engines on one
    /// server then stay inside its default 100 connections.
    pub fn hours_at_once(&self) -> usize {
        self.concurrency.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() * 2).min(32))
    }
}

fn join(items: &[impl std::fmt::Display]) -> String {
    items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// The run's summary for people, line by line.
fn summary_lines(s: &IngestSummary) -> Vec<String> {
    let mut lines = Vec::new();
    let t = &s.totals;
    lines.push(format!("ghbench {} ingest into '{}': {} .. {} from {}", s.ghbench_version, s.table, s.first_hour, s.last_hour, s.source));
    for server in &s.servers {
        lines.push(format!("  {:<15} {} at {}", server.engine, server.label, server.url));
        if let Some(caveat) = &server.caveat {
            lines.push(format!("  {:<15} note: {caveat}", ""));
        }
    }
    lines.push(format!(
        "hours:  {} requested, {} loaded, {} skipped (already loaded), {} missing, {} failed, {} partial{}",
        t.hours_requested,
        t.hours_loaded,
        t.hours_skipped,
        t.hours_missing,
        t.hours_failed,
        t.hours_partial,
        if t.hours_changed > 0 { format!(", {} stored from another copy of their file", t.hours_changed) } else { String::new() }
    ));
    lines.push(format!(
        "lines:  {} read, {} events, {} quarantined, {} sanitized (\\u0000 removed), {} damaged files",
        t.lines, t.events, t.quarantined_total, t.sanitized, t.file_defects
    ));
    for (defect, n) in &t.quarantined {
        lines.push(format!("        quarantined {}: {n}", defect.name()));
    }
    // One line per engine and reason: a damaged segment is every one of its hours' damage.
    let mut reloads: Vec<(&Engine, &str, Vec<Hour>)> = Vec::new();
    for r in &s.reloaded {
        match reloads.iter_mut().find(|(engine, detail, _)| *engine == &r.engine && *detail == r.detail) {
            Some((_, _, hours)) => hours.push(r.hour),
            None => reloads.push((&r.engine, &r.detail, vec![r.hour])),
        }
    }
    for (engine, detail, hours) in reloads {
        lines.push(format!("reloading {} on {engine}: {detail}", summarise_hours(hours, 10)));
    }
    for c in &s.changed {
        lines.push(format!(
            "hour {} on {} was loaded from another copy of its file ({}); reload it with --reload {}",
            c.hour, c.engine, c.detail, c.hour
        ));
    }
    for d in &s.damaged_copies {
        lines.push(format!(
            "hour {} on {} is stored from a damaged copy of its file ({}); once the file is whole, reload it with --reload {}",
            d.hour, d.engine, d.detail, d.hour
        ));
    }
    if t.retries > 0 {
        lines.push(format!("retries: {} attempt(s) made again over {} hour(s) after faults (see the hours' reports)", t.retries, t.hours_retried));
    }
    lines.push(format!("{:<15} {:>12} {:>12} {:>8} {:>14}", "engine", "stored", "events/s", "failed", "table events"));
    // In the order the engines were given (their servers are listed so).
    let ordered = s.servers.iter().filter_map(|server| Some((&server.engine, t.engines.get(&server.engine)?)));
    for (engine, e) in ordered {
        lines.push(format!(
            "{:<15} {:>12} {:>12.0} {:>8} {:>14}",
            engine.to_string(),
            e.stored,
            e.events_per_second,
            e.hours_failed,
            e.table_events.map_or_else(|| "unknown".to_string(), |n| n.to_string())
        ));
    }
    let ordered = s.servers.iter().filter_map(|server| Some((&server.engine, t.engines.get(&server.engine)?.upkeep.as_ref()?)));
    for (engine, upkeep) in ordered {
        lines.push(format!("{engine}: {} in {:.2} s (after loading; shown apart from the load time)", upkeep.step, upkeep.seconds));
    }
    let per_second = |v: f64| v / s.loading_seconds.max(1e-9);
    lines.push(format!(
        "elapsed {:.2} s, loading {:.2} s (the checks before and the upkeep after apart), concurrency {}: {:.1} MB compressed, {:.1} MB JSON read; {:.0} events/s, {:.1} MB/s JSON through the client",
        s.elapsed_seconds,
        s.loading_seconds,
        s.concurrency,
        t.compressed_bytes as f64 / 1e6,
        t.json_bytes as f64 / 1e6,
        per_second(t.events as f64),
        per_second(t.json_bytes as f64 / 1e6),
    ));
    if t.hours_missing > 0 {
        lines.push(format!("missing hours ({}): {}", t.hours_missing, summarise_hours(s.missing(), 10)));
    }
    for h in s.hours.iter().filter(|h| h.decode.as_ref().is_some_and(|d| d.file_defect.is_some())) {
        let d = h.decode.as_ref().expect("filtered");
        lines.push(format!("damaged file {}: {} ({} lines kept)", h.hour, d.file_defect.as_deref().unwrap_or(""), d.events));
    }
    // Hours a stopped run did not try are one line, not one each (a year has 8,760).
    let (untried, tried): (Vec<_>, Vec<_>) = s.failed().partition(|h| h.attempts == 0);
    for h in tried {
        let label = if h.status == HourStatus::Partial { "PARTIAL" } else { "FAILED" };
        lines.push(format!("{label} {} after {} attempt(s): {} (rerun to retry)", h.hour, h.attempts, h.reasons().join("; ")));
    }
    let mut by_reason: std::collections::BTreeMap<String, Vec<Hour>> = Default::default();
    for h in untried {
        by_reason.entry(h.reasons().join("; ")).or_default().push(h.hour);
    }
    for (reason, hours) in by_reason {
        lines.push(format!("NOT TRIED {} hour(s) ({}): {reason}", hours.len(), summarise_hours(hours, 10)));
    }
    if let Some(why) = &s.stopped {
        lines.push(format!("STOPPED: {why}"));
    }
    for line in &s.space {
        lines.push(format!("space: {line}"));
    }
    for warning in &s.warnings {
        lines.push(format!("warning: {warning}"));
    }
    if t.quarantined_total > 0 {
        lines.push(format!("quarantined lines are in {}/{}/", s.quarantine_dir, s.table));
    }
    lines
}

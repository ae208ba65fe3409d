//! `ghbench index`: the paper's five indexes on every engine, each build timed
//! and sized; idempotent (an existing index is reported, not rebuilt).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ghbench_olap::record::{IndexEngineRecord, IndexRunRecord, INDEX_SCHEMA};
use ghbench_report::seconds;
use ghbench_report::server_lines;
use ghbench_olap::runner::create_indexes;
use ghbench_olap::backend::OnIndexBuilt;
use ghbench_olap::{Backend, Catalog};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::progress::Log;

use super::olap::{check_index_room, context, engine_records, write, CatalogOptions, DEFAULT_YEAR};
use crate::options::{connect_backends, ConnOptions, Engines};
use crate::outcome::{Finished, Screen};
use crate::output::ResultsArgs;

#[derive(Args, Debug)]
#[command(after_help = "\
The index definitions are queries/<engine>/indexes.* (the paper's five indexes in
each engine's terms). Creating them again is a no-op. Engines that take no indexes
are listed as such.

Writes index-<time>.json in --output (results/); the last line on standard error names
it. Exit status: 0 every index built or present; 1 an engine's builds failed (the
record says which); 2 an error stopped it (a server that cannot be reached); 130 on
Ctrl-C.")]
pub struct IndexArgs {
    #[command(flatten)]
    pub conn: ConnOptions,

    #[command(flatten)]
    pub catalog: CatalogOptions,

    /// `index-<time>.json` (the builds) in --output.
    #[command(flatten)]
    pub results: ResultsArgs,
}

pub async fn run(args: IndexArgs, registry: &Engines) -> Result<Finished> {
    let screen = args.results.screen(None);
    run_on(args, registry, screen).await
}

/// As [`run`], its tables on `screen` (`ingest --index --json -` keeps
/// standard output for ingest's summary).
pub async fn run_on(args: IndexArgs, registry: &Engines, screen: Screen) -> Result<Finished> {
    let catalog = args.catalog.load()?;
    args.results.check(None)?;
    let table = args.conn.table_or(DEFAULT_YEAR);
    check_index_room(&table, &catalog)?;
    let backends = connect_backends(&registry.select_reachable(&args.conn, &table).await?, &table).await?;
    let mut engines = Vec::new();
    let mut ok = true;
    for backend in &backends {
        let engine = backend.engine().clone();
        if !backend.spec().capabilities.indexes {
            screen.line(format!("{engine:<10} takes no indexes"));
            engines.push(IndexEngineRecord { engine, indexes: Vec::new(), error: None, statistics: None });
            continue;
        }
        let multi = MultiProgress::new();
        let bar = multi.add(ProgressBar::new_spinner().with_prefix(engine.to_string()));
        bar.set_style(ProgressStyle::with_template("{prefix} {spinner} {elapsed_precise}  {msg}").expect("template"));
        bar.set_message(format!("creating indexes on {table}"));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        // Each index said as it is built, in a log too (indicatif drops what
        // is printed through a hidden bar).
        let (log, name) = (Log::new(multi), engine.clone());
        let on_built = move |b: &ghbench_olap::record::IndexBuild| {
            log.line(format!("{name:<10} {} {} in {} s", b.name, b.state(), seconds(b.seconds)));
        };
        let record = with_progress(backend.as_ref(), &bar, &format!("creating indexes on {table}"), build_indexes(backend.as_ref(), &catalog, &on_built, false)).await;
        bar.finish_and_clear();
        if let Some(e) = &record.error {
            ok = false;
            eprintln!("error: {engine}: {e}");
        }
        if let Some(statistics) = &record.statistics {
            screen.line(format!("{engine:<10} {} in {} s, so the planner knows what the indexes filter on", statistics.step, seconds(statistics.seconds)));
        }
        engines.push(record);
    }
    // Described after the builds, so the recorded sizes include the new indexes.
    let context = context(table.to_string(), &catalog, 0, engine_records(&backends).await);
    for backend in &backends {
        backend.close().await;
    }
    screen.lines(table_lines(&engines));
    screen.lines(server_lines(&context));
    let record = IndexRunRecord { schema: INDEX_SCHEMA.into(), context, engines };
    let path = args.results.record_path("index");
    let json = serde_json::to_string_pretty(&record)?;
    write(&path, &json)?;
    Ok(Finished::ok().wrote(path).wrote_all(args.results.also_json(&json)?).trusted_if(ok))
}

/// The catalog's indexes on `backend`'s engine (`built` hears of each), then
/// what the engine does so its planner knows them (see
/// [`Backend::after_indexes`]): when one was built anew, or their statistics
/// are missing (a run killed between the two); a failure of either is the
/// record's error.
/// `analyze_anyway`: statistics gathered again even when no index was built
/// (`--preset paper2019`'s statistics target on tables loaded before it).
pub async fn build_indexes(backend: &dyn Backend, catalog: &Catalog, built: &OnIndexBuilt, analyze_anyway: bool) -> IndexEngineRecord {
    let engine = backend.engine().clone();
    let indexes = match create_indexes(backend, catalog, built).await {
        Ok(indexes) => indexes,
        Err(e) => return IndexEngineRecord { engine, indexes: Vec::new(), error: Some(format!("{e:#}")), statistics: None },
    };
    match backend.after_indexes(analyze_anyway || indexes.iter().any(|i| i.created)).await {
        Ok(statistics) => IndexEngineRecord { engine, indexes, error: None, statistics },
        Err(e) => IndexEngineRecord { engine, indexes, error: Some(format!("after the index builds: {e:#}")), statistics: None },
    }
}

/// How often a long build says how far it is.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// How long opening the session that asks may take.
const PROGRESS_CONNECT: Duration = Duration::from_secs(10);

/// `work` (the engine's index builds, minutes to hours on a year of data),
/// saying every [`PROGRESS_EVERY`] how long it has run and what the server
/// says of it (asked on a session of its own): on the spinner, and as a line
/// when there is no terminal to draw it on.
async fn with_progress<T>(backend: &dyn Backend, bar: &ProgressBar, what: &str, work: impl std::future::Future<Output = T>) -> T {
    let asker: Option<Arc<dyn Backend>> = match backend.spec().capabilities.server {
        true => tokio::time::timeout(PROGRESS_CONNECT, backend.open_client()).await.ok().and_then(Result::ok).map(Arc::from),
        false => None,
    };
    let done = ghbench_core::ticking::ticking(work, PROGRESS_EVERY, |elapsed| {
        let asker = asker.clone();
        async move {
            let progress = match &asker {
                Some(asker) => tokio::time::timeout(PROGRESS_CONNECT, asker.progress()).await.ok().flatten(),
                None => None,
            };
            let line = ghbench_core::ticking::so_far(what, elapsed, progress.as_deref());
            if bar.is_hidden() {
                eprintln!("{} {} {line}", crate::progress::stamp(elapsed), bar.prefix());
            }
            bar.set_message(line);
        }
    })
    .await;
    if let Some(asker) = asker {
        asker.close().await;
    }
    done
}

fn table_lines(engines: &[IndexEngineRecord]) -> Vec<String> {
    let mut lines = vec![format!("{:<15} {:<32} {:<14} {:>10} {:>14}", "engine", "index", "state", "seconds", "bytes")];
    for e in engines {
        for b in &e.indexes {
            let bytes = b.bytes.map_or("unavailable".into(), |n| n.to_string());
            lines.push(format!("{:<15} {:<32} {:<14} {:>10} {:>14}", e.engine, b.name, b.state(), seconds(b.seconds), bytes));
        }
    }
    lines
}

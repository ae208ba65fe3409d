//! The ingest run: plan which hours each engine still needs, then load them with
//! a fixed number of workers, each hour read once and fanned out to every engine.
//!
//! Memory stays flat however many hours are asked for: each worker holds one
//! hour, and at most `CHANNEL_BATCHES` batches per engine are in flight.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use ghbench_core::{ConnectError, Engine, Hour, HourRange, Servers, TableName};
use tokio::sync::mpsc;

use crate::decode::{decode_hour, Batch, DecodeError, DecodeReport};
use crate::quarantine::Quarantine;
use crate::report::{EngineOutcome, HourReport, HourStatus, IngestSummary, Totals};
use crate::sink::{HourRecord, Sink, SinkError};
use crate::source::{Source, SourceError};

const CHANNEL_BATCHES: usize = 4;

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub hours: HourRange,
    pub source: Source,
    pub engines: Vec<Engine>,
    pub table: TableName,
    pub servers: Servers,
    /// Hours loaded at once.
    pub concurrency: usize,
    /// Further attempts at an hour after a network failure.
    pub retries: u32,
    pub quarantine_dir: PathBuf,
    /// Start from an empty table (and ledger) on every engine.
    pub drop: bool,
    /// Read, check and encode every hour for all engines, but store nothing and
    /// touch no server: the speed of the client alone.
    pub dry_run: bool,
}

/// What the run tells its observer (the CLI draws progress bars from these).
#[derive(Debug)]
pub enum Event<'a> {
    Planned { to_load: usize, skipped: usize },
    Stored { engine: Engine, events: u64, json_bytes: u64 },
    Retrying { hour: Hour, attempt: u32, reason: &'a str },
    HourDone(&'a HourReport),
}

pub trait Observer: Send + Sync {
    fn event(&self, event: Event<'_>);
}

/// An observer that ignores everything (library use, tests).
pub struct Quiet;
impl Observer for Quiet {
    fn event(&self, _: Event<'_>) {}
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("preparing {engine} failed: {detail}")]
    Prepare { engine: Engine, detail: String },
    #[error("no engines selected")]
    NoEngines,
}

struct Ctx {
    options: IngestOptions,
    observer: Arc<dyn Observer>,
}

/// Loads every hour of `options.hours` that an engine's ledger does not list yet.
pub async fn ingest(options: IngestOptions, observer: Arc<dyn Observer>) -> Result<IngestSummary, IngestError> {
    if options.engines.is_empty() && !options.dry_run {
        return Err(IngestError::NoEngines);
    }
    let engines: &[Engine] = if options.dry_run { &[] } else { &options.engines };
    let started = Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let prepare_err = |engine: Engine| move |e: SinkError| IngestError::Prepare { engine, detail: e.detail() };

    // One control sink per engine: prepares tables, reads ledgers, describes the server.
    let mut control = Vec::new();
    let mut servers = Vec::new();
    let mut done: BTreeMap<Engine, HashSet<String>> = BTreeMap::new();
    // Reach every server before changing any, so an unreachable one drops nothing.
    for &engine in engines {
        control.push(Sink::connect(engine, &options.servers, &options.table).await?);
    }
    for sink in &mut control {
        let engine = sink.engine();
        sink.prepare(options.drop).await.map_err(prepare_err(engine))?;
        servers.push(sink.describe(&options.servers).await.map_err(prepare_err(engine))?);
        done.insert(engine, sink.completed_hours().await.map_err(prepare_err(engine))?);
    }

    let mut queue = VecDeque::new();
    let mut skipped = Vec::new();
    for hour in options.hours.iter() {
        let stem = hour.stem();
        let needed: Vec<Engine> = engines.iter().copied().filter(|e| !done[e].contains(&stem)).collect();
        if needed.is_empty() && !options.dry_run {
            skipped.push(hour);
        } else {
            queue.push_back((hour, needed));
        }
    }
    observer.event(Event::Planned { to_load: queue.len(), skipped: skipped.len() });

    let workers = options.concurrency.clamp(1, queue.len().max(1));
    let queue = Arc::new(Mutex::new(queue));
    let ctx = Arc::new(Ctx { options: options.clone(), observer });
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let mut sinks = Vec::new();
        for sink in &control {
            sinks.push(sink.fork(&options.servers).await?);
        }
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.push(tokio::spawn(async move { worker(&ctx, sinks, &queue).await }));
    }
    let mut hours = Vec::new();
    for task in tasks {
        hours.extend(task.await.expect("ingest worker panicked"));
    }
    hours.sort_by_key(|h| h.hour);

    let mut summary = IngestSummary {
        ghbench_version: env!("CARGO_PKG_VERSION"),
        started_at,
        elapsed_seconds: started.elapsed().as_secs_f64(),
        table: options.table.to_string(),
        source: options.source.describe(),
        first_hour: options.hours.first,
        last_hour: options.hours.last,
        concurrency: workers,
        servers,
        totals: Totals::default(),
        skipped,
        hours,
        quarantine_dir: options.quarantine_dir.display().to_string(),
    };
    summary.tally(options.hours.len());
    for sink in &control {
        let table_events = sink.ledger_events().await.map_err(prepare_err(sink.engine()))?;
        summary.totals.engines.entry(sink.engine()).or_default().table_events = table_events;
    }
    Ok(summary)
}

async fn worker(ctx: &Ctx, mut sinks: Vec<Sink>, queue: &Mutex<VecDeque<(Hour, Vec<Engine>)>>) -> Vec<HourReport> {
    let mut reports = Vec::new();
    loop {
        let Some((hour, needed)) = queue.lock().expect("queue lock").pop_front() else { break };
        // A connection lost on an earlier hour is replaced, not reused.
        for sink in sinks.iter_mut().filter(|s| s.is_broken()) {
            if let Ok(fresh) = sink.fork(&ctx.options.servers).await {
                *sink = fresh;
            }
        }
        let mut selected: Vec<&mut Sink> = sinks.iter_mut().filter(|s| needed.contains(&s.engine())).collect();
        let report = load_hour(ctx, hour, &mut selected).await;
        ctx.observer.event(Event::HourDone(&report));
        reports.push(report);
    }
    reports
}

/// How one attempt at an hour ended, short of success.
enum Attempt {
    Missing,
    /// Network trouble: worth another attempt.
    Transient(String),
    Failed(String),
}

async fn load_hour(ctx: &Ctx, hour: Hour, sinks: &mut [&mut Sink]) -> HourReport {
    let started = Instant::now();
    let report = |status, attempts, decode, engines, error| HourReport {
        hour,
        status,
        attempts,
        seconds: started.elapsed().as_secs_f64(),
        decode,
        engines,
        error,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_hour(ctx, hour, sinks).await {
            Ok((decode, engines)) => {
                let failures = engines.values().filter(|o| o.error.is_some()).count();
                let status = match failures {
                    0 => HourStatus::Loaded,
                    n if n == engines.len() => HourStatus::Failed,
                    _ => HourStatus::Partial,
                };
                return report(status, attempt, Some(decode), engines, None);
            }
            Err(Attempt::Missing) => return report(HourStatus::Missing, attempt, None, BTreeMap::new(), None),
            Err(Attempt::Transient(reason)) if attempt <= ctx.options.retries => {
                ctx.observer.event(Event::Retrying { hour, attempt, reason: &reason });
                tokio::time::sleep(backoff(attempt)).await;
            }
            Err(Attempt::Transient(reason) | Attempt::Failed(reason)) => {
                return report(HourStatus::Failed, attempt, None, BTreeMap::new(), Some(reason));
            }
        }
    }
}

/// Wait before attempt `attempt + 1`: 1 s, 2 s, 4 s, ... capped at 30 s.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(5)).min(Duration::from_secs(30))
}

/// One attempt: read the hour once, feed every engine, then commit each engine
/// that took all of it, or abort all of them when the read itself failed.
async fn try_hour(
    ctx: &Ctx,
    hour: Hour,
    sinks: &mut [&mut Sink],
) -> Result<(DecodeReport, BTreeMap<Engine, EngineOutcome>), Attempt> {
    let options = &ctx.options;
    let bytes = match options.source.open(hour).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(Attempt::Missing),
        Err(SourceError::Transient(e)) => return Err(Attempt::Transient(e)),
        Err(SourceError::Permanent(e)) => return Err(Attempt::Failed(e)),
    };
    let mut quarantine = Quarantine::for_hour(&options.quarantine_dir, &options.table, hour)
        .map_err(|e| Attempt::Failed(format!("quarantine file: {e}")))?;

    let (senders, receivers): (Vec<_>, Vec<_>) = sinks.iter().map(|_| mpsc::channel::<Arc<Batch>>(CHANNEL_BATCHES)).unzip();
    let compressed = Arc::new(AtomicU64::new(0));
    let decoder = tokio::task::spawn_blocking(move || {
        let result = decode_hour(hour, bytes, &senders, &mut quarantine, compressed);
        let file = quarantine.finish();
        (result, file)
    });
    let stem = hour.stem();
    let fed = join_all(sinks.iter_mut().zip(receivers).map(|(sink, rx)| feed(ctx, sink, &stem, rx))).await;

    let decoded = match decoder.await {
        Ok((Ok(mut report), Ok(file))) => {
            report.quarantine_file = file.map(|f| f.display().to_string());
            Ok(report)
        }
        Ok((Ok(_), Err(e))) => Err(Attempt::Failed(format!("quarantine file: {e}"))),
        Ok((Err(DecodeError::Source(e)), _)) => Err(Attempt::Transient(e)),
        Ok((Err(DecodeError::EnginesGone), _)) => Err(Attempt::Failed(engine_errors(sinks, &fed))),
        Ok((Err(e), _)) => Err(Attempt::Failed(e.to_string())),
        Err(e) => Err(Attempt::Failed(format!("decoder crashed: {e}"))),
    };
    let decoded = match decoded {
        Ok(report) => report,
        Err(attempt) => {
            for sink in sinks.iter_mut() {
                sink.abort_hour().await;
            }
            return Err(attempt);
        }
    };

    let record = HourRecord {
        hour: stem,
        events: decoded.events,
        lines: decoded.lines,
        quarantined: decoded.quarantined_total(),
        sanitized: decoded.sanitized,
        compressed_bytes: decoded.compressed_bytes,
        file_defect: decoded.file_defect.clone(),
    };
    let mut outcomes = BTreeMap::new();
    for (sink, fed) in sinks.iter_mut().zip(fed) {
        let result = match fed {
            Ok(()) => sink.commit_hour(&record).await,
            Err(e) => Err(e),
        };
        let outcome = match result {
            Ok(stored) => EngineOutcome { stored, error: None },
            Err(e) => {
                sink.abort_hour().await;
                EngineOutcome { stored: 0, error: Some(e.detail()) }
            }
        };
        outcomes.insert(sink.engine(), outcome);
    }
    Ok((decoded, outcomes))
}

/// Streams the hour's batches into one engine. Returning early drops `rx`, which
/// tells the decoder to stop feeding this engine while the others go on.
async fn feed(ctx: &Ctx, sink: &mut Sink, stem: &str, mut rx: mpsc::Receiver<Arc<Batch>>) -> Result<(), SinkError> {
    sink.begin_hour(stem).await?;
    while let Some(batch) = rx.recv().await {
        sink.write(&batch).await?;
        ctx.observer.event(Event::Stored {
            engine: sink.engine(),
            events: batch.docs.len() as u64,
            json_bytes: batch.json_bytes,
        });
    }
    Ok(())
}

fn engine_errors(sinks: &[&mut Sink], fed: &[Result<(), SinkError>]) -> String {
    let errors: Vec<String> = sinks
        .iter()
        .zip(fed)
        .filter_map(|(s, r)| r.as_ref().err().map(|e| format!("{}: {}", s.engine(), e.detail())))
        .collect();
    errors.join("; ")
}

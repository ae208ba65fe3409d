//! The ingest run: plan which hours each engine still needs, then load them with
//! a fixed number of workers, each hour read once and fanned out to every engine.
//!
//! Memory stays flat however many hours are asked for: each worker holds one
//! hour, and at most `CHANNEL_BATCHES` batches per engine are in flight.
//!
//! Faults are retried where a retry can help, per engine: a connection lost or
//! a server that stopped answering (the engine's part of the hour is loaded
//! again on a new connection), a network failure, and a download that arrived
//! damaged. Once loading has begun, the run always ends with a summary.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use ghbench_core::place::same_address;
use ghbench_core::{ConnectError, Engine, Hour, HourRange, TableName};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::clean::Policy;
use crate::decode::{decode_hour, DecodeError, DecodeReport, EngineBatch, Lane};
use crate::plan::{self, PlannedHour};
use crate::quarantine::Quarantine;
use crate::report::{EngineOutcome, HourReport, HourStatus, IngestSummary, Totals};
use crate::sink::{HourRecord, LoadClock, Loader, LockWatch, Sink, SinkError, StoredCheck, StoredHour, TableLock};
use crate::source::{Source, SourceError};
use crate::space::{self, EngineLoad, Free, Verdict};

const CHANNEL_BATCHES: usize = 4;

#[derive(Clone)]
pub struct IngestOptions {
    pub hours: HourRange,
    pub source: Source,
    /// The engines to load, configured (see `ghbench-engine`'s registry).
    pub engines: Vec<Arc<dyn Loader>>,
    /// The cleaning policy: the strictest limits of every registered engine,
    /// so the data never depends on the engines a run loads.
    pub policy: Policy,
    pub table: TableName,
    /// Hours loaded at once.
    pub concurrency: usize,
    /// Further attempts at an hour (or at one engine's part of it) after a
    /// network failure, a lost connection or a damaged download.
    pub retries: u32,
    /// Longest wait for a server to answer any one step (connect aside),
    /// but those over the whole table.
    pub timeout: Duration,
    /// Load even when the check before loading finds too little free space
    /// (see [`crate::space`]).
    pub force: bool,
    /// Data folders of servers on this machine, by `host:port` (the
    /// checkout's `servers.json`): where free space is read for an engine
    /// that cannot say where its files live.
    pub server_folders: Vec<(String, PathBuf)>,
    /// Check everything each engine stores against its ledger before
    /// planning (a pass over the whole table), not only the hours the run
    /// touches (see [`StoredCheck`]).
    pub check_stored: bool,
    /// The limit on a step over the whole table (checking the stored hours
    /// against the ledger, upkeep after loading); None: none.
    pub whole_table_timeout: Option<Duration>,
    /// Record a download still damaged after every retry as a damaged hour
    /// (its readable lines loaded) instead of failing it.
    pub accept_damaged: bool,
    pub quarantine_dir: PathBuf,
    /// Start from an empty table (and ledger) on every engine.
    pub drop: bool,
    /// Read every hour and check each line as every engine would store it,
    /// but store nothing and touch no server: the speed of the client alone.
    pub dry_run: bool,
    /// Hours to load again on every engine, replacing what is stored of them
    /// (exactly once; an hour not stored yet is simply loaded), whether or not
    /// they lie in `hours`.
    pub reload: BTreeSet<Hour>,
    /// Reload an hour whose source file is another copy than the one its
    /// stored hour was loaded from (see [`crate::plan`]), rather than keep it
    /// and report it (`ghbench bench` sets this).
    pub reload_changed: bool,
}

/// What the run tells its observer (the CLI draws progress bars from these).
#[derive(Debug)]
pub enum Event<'a> {
    Planned { to_load: usize, skipped: usize },
    Stored { engine: Engine, events: u64, json_bytes: u64 },
    Retrying { hour: Hour, attempt: u32, reason: &'a str },
    /// A step over the whole table still running: how long so far, and
    /// what the server says of its progress.
    WholeTable { engine: &'a Engine, step: &'a str, elapsed: Duration, progress: Option<&'a str> },
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
    /// Another run is loading the table.
    #[error("{0}")]
    Locked(String),
    #[error("no engines selected")]
    NoEngines,
    /// The check before loading found too little free space.
    #[error("not enough free space for this load, by an estimate made before writing anything:\n  {}\nfree some space, or pass --force to load anyway (a full disk then stops the load)", .0.join("\n  "))]
    NoRoom(Vec<String>),
    /// Stored hours the run would replace (`--reload`, a repair) on a table
    /// that cannot delete rows: refused before anything is loaded.
    #[error("{engine} cannot load {} stored hour(s) again ({}): {why}. Nothing was loaded: load {engine}'s table again with --drop, or run without {engine}", .hours.len(), .hours.join(", "))]
    CannotReplace { engine: Engine, hours: Vec<String>, why: String },
}

struct Ctx {
    options: IngestOptions,
    observer: Arc<dyn Observer>,
    locks: Vec<LockWatch>,
    /// Why the run stopped taking hours, for every worker: an engine's storage is full.
    stopped: Mutex<Option<String>>,
}

impl Ctx {
    /// Why this run must stop loading: a lock lost to another run, or an
    /// engine with no space left.
    fn must_stop(&self) -> Option<String> {
        self.locks.iter().find_map(LockWatch::lost).or_else(|| self.stopped.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// Stops the run: no worker takes another hour (the first reason stays).
    fn stop(&self, why: String) {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
    }

    async fn connect(&self, loader: &dyn Loader) -> Result<Sink, ConnectError> {
        self.options.connect(loader).await
    }
}

impl IngestOptions {
    /// A new connection to the engine for the table, its steps bounded by the timeout.
    async fn connect(&self, loader: &dyn Loader) -> Result<Sink, ConnectError> {
        Sink::connect(loader, &self.table, self.timeout, self.whole_table_timeout).await
    }
}

/// Loads every hour of `options.hours` that an engine's ledger does not list yet.
/// Fails only before loading begins (a server unreachable, the table locked by
/// another run, preparing it failed); after that, every fault is in the summary.
pub async fn ingest(options: IngestOptions, observer: Arc<dyn Observer>) -> Result<IngestSummary, IngestError> {
    if options.engines.is_empty() && !options.dry_run {
        return Err(IngestError::NoEngines);
    }
    let engines: Vec<Arc<dyn Loader>> = if options.dry_run { Vec::new() } else { options.engines.clone() };
    // Reach every server, then lock every engine's table, before changing any.
    let mut control = Vec::new();
    for loader in &engines {
        let mut sink = options.connect(loader.as_ref()).await?;
        let engine = loader.spec().engine.clone();
        sink.check_name().await.map_err(|e| IngestError::Prepare { engine, detail: e.detail() })?;
        control.push((loader.clone(), sink));
    }
    let mut locks = Vec::new();
    let mut refused = None;
    for (_, sink) in &control {
        match sink.lock().await {
            Ok(lock) => locks.push(lock),
            Err(e) => {
                refused = Some((sink.engine().clone(), e));
                break;
            }
        }
    }
    if let Some((engine, e)) = refused {
        for lock in locks {
            lock.release().await;
        }
        // Closed, not dropped: the MongoDB driver ends a dropped client's
        // sessions in a task of its own, which can panic as ghbench exits.
        for (_, sink) in control {
            sink.close().await;
        }
        return Err(match e {
            SinkError::Locked(why) => IngestError::Locked(why),
            other => IngestError::Prepare { engine, detail: other.detail() },
        });
    }
    let ctx = Arc::new(Ctx { options, observer, locks: locks.iter().map(TableLock::watch).collect(), stopped: Mutex::new(None) });
    let mut finished = Vec::new();
    let result = load(&ctx, control, &mut finished).await;
    for lock in locks {
        lock.release().await;
    }
    // Last: a lock is released through its engine's connection.
    for slot in finished {
        slot.close().await;
    }
    result
}

/// Each engine's room against the hours it is to load (see [`crate::space`]).
async fn check_space(
    options: &IngestOptions,
    control: &mut [(Arc<dyn Loader>, Sink)],
    queue: &VecDeque<PlannedHour>,
    stored: &[(Engine, BTreeMap<String, StoredHour>)],
) -> Verdict {
    let mut loads = Vec::new();
    let mut unread = Vec::new();
    for ((loader, sink), (engine, hours)) in control.iter_mut().zip(stored) {
        let mut room = match sink.room().await {
            Ok(room) => room.unwrap_or_default(),
            Err(e) => {
                unread.push(format!("{engine}: free space not checked ({})", e.detail()));
                continue;
            }
        };
        if room.free.is_none() {
            let served_by = loader.address();
            let folder = options.server_folders.iter().find(|(address, _)| served_by.as_deref().is_some_and(|a| same_address(a, address)));
            room.free = folder.map(|(_, dir)| Free::Folder(dir.clone()));
        }
        loads.push(EngineLoad {
            engine: engine.clone(),
            room,
            stored_source_bytes: hours.values().filter_map(|h| h.compressed_bytes).sum(),
            hours: queue.iter().filter(|p| p.needed.contains(engine)).map(|p| p.hour).collect(),
        });
    }
    let mut hours: Vec<Hour> = loads.iter().flat_map(|l| l.hours.iter().copied()).collect();
    hours.sort_unstable();
    hours.dedup();
    let json_ratio = loads.iter().any(|l| l.stored_source_bytes == 0 && !l.hours.is_empty());
    let sizes = space::source_sizes(&options.source, &hours, json_ratio).await;
    let mut verdict = space::check(&sizes, &loads);
    verdict.lines.extend(unread);
    verdict
}

/// Loads the run's hours; the control connections, once done with, go to `finished`.
async fn load(ctx: &Arc<Ctx>, mut control: Vec<(Arc<dyn Loader>, Sink)>, finished: &mut Vec<Slot>) -> Result<IngestSummary, IngestError> {
    let options = &ctx.options;
    let started = Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let prepare_err = |engine: Engine| move |e: SinkError| IngestError::Prepare { engine, detail: e.detail() };

    let mut servers = Vec::new();
    let mut stored = Vec::new();
    let mut unfinished_notes = Vec::new();
    let check = match options.check_stored {
        true => StoredCheck::Whole,
        false => StoredCheck::Touched(plan::run_hours(options).iter().map(Hour::stem).collect()),
    };
    for (loader, sink) in &mut control {
        let engine = sink.engine().clone();
        sink.prepare(options.drop).await.map_err(prepare_err(engine.clone()))?;
        servers.push(sink.describe().await.map_err(prepare_err(engine.clone()))?);
        // Before the stored hours are checked: what a dead load left is no stored hour.
        // Only while this run holds the table: a lease lost by now may be a live loader's.
        if let Some(why) = ctx.must_stop() {
            return Err(IngestError::Prepare { engine, detail: format!("not removing what dead loads left: {why}") });
        }
        let removed = watched(ctx, loader.as_ref(), crate::sink::REMOVE_UNFINISHED, sink.remove_unfinished()).await;
        unfinished_notes.extend(removed.map_err(prepare_err(engine.clone()))?.into_iter().map(|said| format!("{engine}: {said}")));
        let checked = watched(ctx, loader.as_ref(), crate::sink::STORED_HOURS, sink.stored_hours(&check)).await;
        stored.push((engine.clone(), checked.map_err(prepare_err(engine))?));
    }
    let loaders: Vec<Arc<dyn Loader>> = control.iter().map(|(loader, _)| loader.clone()).collect();

    let plan = plan::plan(options, &stored);
    let mut queue = plan.queue;
    for (_, sink) in &control {
        let Some(why) = sink.refuses_replacing() else { continue };
        let hours: Vec<String> = queue.iter().filter(|p| p.replacing.contains(sink.engine())).map(|p| p.hour.stem()).collect();
        if !hours.is_empty() {
            return Err(IngestError::CannotReplace { engine: sink.engine().clone(), hours, why });
        }
    }
    let space = match options.dry_run {
        true => Verdict::default(),
        false => check_space(options, &mut control, &queue, &stored).await,
    };
    if !space.short.is_empty() && !options.force {
        return Err(IngestError::NoRoom(space.short));
    }
    let removal_notes = remove_hours_to_replace(ctx, &mut control, &mut queue).await;
    ctx.observer.event(Event::Planned { to_load: queue.len(), skipped: plan.skipped.len() });
    let planned: Vec<Hour> = queue.iter().map(|p| p.hour).collect();

    let workers = options.concurrency.clamp(1, queue.len().max(1));
    let queue = Arc::new(Mutex::new(queue));
    let loading = Instant::now();
    // Each worker connects on its own: a server that is away when a worker
    // starts is an attempt to retry, not the end of the run.
    let mut tasks = JoinSet::new();
    for _ in 0..workers {
        tasks.spawn(worker(ctx.clone(), loaders.clone(), queue.clone()));
    }
    let mut hours: Vec<HourReport> = Vec::new();
    let mut crashed = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(reports) => hours.extend(reports),
            Err(e) => crashed = Some(e.to_string()),
        }
    }
    // Hours a crashed worker held are failed, not forgotten: the exit status must say so.
    if let Some(why) = crashed {
        let reported: HashSet<Hour> = hours.iter().map(|h| h.hour).collect();
        let lost = planned.into_iter().filter(|h| !reported.contains(h));
        hours.extend(lost.map(|hour| HourReport::failed(hour, format!("not loaded: a loading worker crashed ({why})"))));
    }
    let loading_seconds = loading.elapsed().as_secs_f64();
    hours.sort_by_key(|h| h.hour);

    let run_hours = plan::run_hours(options);
    let mut summary = IngestSummary {
        ghbench_version: env!("CARGO_PKG_VERSION"),
        started_at,
        elapsed_seconds: started.elapsed().as_secs_f64(),
        loading_seconds,
        table: options.table.to_string(),
        source: options.source.describe(),
        first_hour: run_hours.first().copied().unwrap_or(options.hours.first),
        last_hour: run_hours.last().copied().unwrap_or(options.hours.last),
        concurrency: workers,
        servers,
        totals: Totals::default(),
        skipped: plan.skipped,
        changed: plan.changed,
        reloaded: plan.reloaded,
        damaged_copies: plan.damaged_copies,
        kept_quarantined: plan.kept_quarantined,
        hours,
        quarantine_dir: options.quarantine_dir.display().to_string(),
        warnings: unfinished_notes.into_iter().chain(plan.notes).chain(removal_notes).collect(),
        stopped: ctx.must_stop(),
        space: space.lines,
    };
    summary.tally(run_hours.len());
    for (loader, sink) in control {
        // On a new connection when the first one died meanwhile (a server restarted).
        let mut slot = Slot::new(loader, Some(sink));
        // Only after a load that went through: when hours failed (a server away
        // or frozen), the rerun that loads them does it, rather than this run
        // waiting on a server already known not to answer.
        let totals = summary.totals.engines.get(&slot.engine);
        let loaded_all = totals.is_some_and(|e| e.hours_stored > 0 && e.hours_failed == 0);
        // A run that stores nothing still finishes what a killed one left
        // undone where the engine says so (polars' merge; not PostgreSQL's
        // statistics, which autovacuum keeps and a year's VACUUM would redo).
        let left_undone = !loaded_all
            && totals.is_none_or(|e| e.hours_failed == 0)
            && ctx.must_stop().is_none()
            && match slot.ready(ctx).await {
                Ok(sink) => sink.upkeep_due().await.unwrap_or(false),
                Err(_) => false,
            };
        if loaded_all || left_undone {
            let loader = slot.loader.clone();
            let upkeep = match slot.ready(ctx).await {
                Ok(sink) => watched(ctx, loader.as_ref(), crate::sink::UPKEEP, sink.after_load()).await,
                Err(e) => Err(e),
            };
            match upkeep {
                Ok(done) => summary.totals.engines.entry(slot.engine.clone()).or_default().upkeep = done,
                Err(e) => summary.warnings.push(format!(
                    "{}: the work after loading (statistics for the planner; polars: merging hour files) failed: {}; the next ingest that loads an hour does it again",
                    slot.engine,
                    e.detail()
                )),
            }
        }
        let counted = match slot.ready(ctx).await {
            Ok(sink) => sink.ledger_events().await,
            Err(e) => Err(e),
        };
        match counted {
            Ok(events) => summary.totals.engines.entry(slot.engine.clone()).or_default().table_events = Some(events),
            Err(e) => summary.warnings.push(format!("{}: could not count the table's events at the end: {}", slot.engine, e.detail())),
        }
        finished.push(slot);
    }
    Ok(summary)
}

/// The hours to replace leave each engine that can in one pass over its
/// table, with no limit of ghbench's own but --whole-table-timeout: at a
/// year's scale, a pass per hour under the per-hour timeout never ends. Only
/// hours the source still has go: one it lacks keeps its stored copy (and is
/// reported missing), one it cannot answer for is replaced as it loads. An
/// engine whose removal fails (an hour an older ghbench wrote) removes
/// nothing and replaces hour by hour, each such hour failing alone; said in
/// the returned notes.
async fn remove_hours_to_replace(ctx: &Ctx, control: &mut [(Arc<dyn Loader>, Sink)], queue: &mut VecDeque<PlannedHour>) -> Vec<String> {
    let mut at_source = HashSet::new();
    for planned in queue.iter().filter(|p| !p.replacing.is_empty()) {
        // Opened to know it is there (a download begun is dropped).
        if matches!(ctx.options.source.open(planned.hour).await, Ok(Some(_))) {
            at_source.insert(planned.hour);
        }
    }
    let mut notes = Vec::new();
    for (loader, sink) in control.iter_mut() {
        let engine = sink.engine().clone();
        let hours: HashSet<Hour> = queue.iter().filter(|p| p.replacing.contains(&engine) && at_source.contains(&p.hour)).map(|p| p.hour).collect();
        if hours.is_empty() {
            continue;
        }
        let stems: Vec<String> = hours.iter().map(Hour::stem).collect();
        match watched(ctx, loader.as_ref(), crate::sink::REMOVE_HOURS, sink.remove_hours(&stems)).await {
            Ok(Some(_)) => {
                for planned in queue.iter_mut().filter(|p| hours.contains(&p.hour)) {
                    planned.replacing.retain(|e| e != &engine);
                }
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("{engine}: the hours to load again could not be removed at once ({}); each is replaced as it loads", e.detail())),
        }
    }
    notes
}

/// How often a step over the whole table says it still runs.
pub const WHOLE_TABLE_TICK: Duration = Duration::from_secs(15);
/// How long asking the server for that step's progress may take.
const PROGRESS_LIMIT: Duration = Duration::from_secs(5);

/// `work`, a step over the whole table (on a year of data, minutes to
/// hours), telling the observer every [`WHOLE_TABLE_TICK`] how long it has
/// run and what the server says of its progress.
async fn watched<T>(ctx: &Ctx, loader: &dyn Loader, step: &str, work: impl std::future::Future<Output = T>) -> T {
    let engine = &loader.spec().engine;
    ghbench_core::ticking::ticking(work, WHOLE_TABLE_TICK, |elapsed| async move {
        let progress = tokio::time::timeout(PROGRESS_LIMIT, loader.whole_table_progress(&ctx.options.table)).await.ok().flatten();
        ctx.observer.event(Event::WholeTable { engine, step, elapsed, progress: progress.as_deref() });
    })
    .await
}

/// One engine's connection in a worker: made when first needed, and made
/// again after it broke.
struct Slot {
    loader: Arc<dyn Loader>,
    engine: Engine,
    sink: Option<Sink>,
}

impl Slot {
    fn new(loader: Arc<dyn Loader>, sink: Option<Sink>) -> Slot {
        Slot { engine: loader.spec().engine.clone(), loader, sink }
    }

    /// Ends the slot's connection, if it has one (see [`Sink::close`]).
    async fn close(self) {
        if let Some(sink) = self.sink {
            sink.close().await;
        }
    }

    async fn ready(&mut self, ctx: &Ctx) -> Result<&mut Sink, SinkError> {
        // A broken connection is dropped before its replacement is made.
        let sink = match self.sink.take() {
            Some(sink) if !sink.is_broken() => sink,
            _ => ctx.connect(self.loader.as_ref()).await?,
        };
        Ok(self.sink.insert(sink))
    }
}

type Queue = Mutex<VecDeque<PlannedHour>>;

async fn worker(ctx: Arc<Ctx>, loaders: Vec<Arc<dyn Loader>>, queue: Arc<Queue>) -> Vec<HourReport> {
    let mut slots: Vec<Slot> = loaders.into_iter().map(|loader| Slot::new(loader, None)).collect();
    let mut reports = Vec::new();
    loop {
        let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or_else(|poisoned| poisoned.into_inner().pop_front());
        let Some(planned) = next else { break };
        let hour = planned.hour;
        // Why, said once in the summary's `stopped`, not with each of thousands of hours.
        let report = match ctx.must_stop() {
            Some(_) => HourReport::failed(hour, "not loaded: the run stopped before it (see why it stopped)".into()),
            None => {
                let mut selected: Vec<&mut Slot> = slots.iter_mut().filter(|s| planned.needed.contains(&s.engine)).collect();
                load_hour(&ctx, hour, &mut selected, &planned.replacing).await
            }
        };
        ctx.observer.event(Event::HourDone(&report));
        reports.push(report);
    }
    for slot in slots {
        slot.close().await;
    }
    reports
}

/// How one attempt at an hour ended, short of reading it.
enum Attempt {
    Missing,
    /// Worth another attempt: network trouble, a damaged download.
    Retry(String),
    Failed(String),
}

/// Each engine's result for one attempt.
type EngineResults = Vec<(Engine, Result<u64, SinkError>)>;

/// What an attempt needs to know of the ones before it.
struct AttemptState<'a> {
    /// Attempts made at the hour before this one.
    before: u32,
    /// The engines that replace a stored copy of the hour.
    replacing: &'a [Engine],
    /// No retry follows this one.
    last: bool,
    /// What the hour held when other engines committed it.
    loaded: Option<DecodeReport>,
}

/// Loads one hour into every selected engine, retrying (with backoff) what a
/// retry can mend, for only the engines that still need it.
async fn load_hour(ctx: &Ctx, hour: Hour, slots: &mut [&mut Slot], replacing: &[Engine]) -> HourReport {
    let started = Instant::now();
    let mut outcomes: BTreeMap<Engine, EngineOutcome> = BTreeMap::new();
    let mut pending: Vec<Engine> = slots.iter().map(|s| s.engine.clone()).collect();
    let (mut decode, mut error, mut missing) = (None, None, false);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt > ctx.options.retries;
        let mut todo: Vec<&mut Slot> = slots.iter_mut().filter(|s| pending.contains(&s.engine)).map(|s| &mut **s).collect();
        // Once an engine committed the hour, the others must store the very same.
        let loaded = outcomes.values().any(|o| o.error.is_none());
        let state = AttemptState { before: attempt - 1, replacing, last, loaded: decode.clone().filter(|_| loaded) };
        let retry_because = match try_hour(ctx, hour, &mut todo, state).await {
            Ok((report, results)) => {
                decode = report.or(decode);
                pending.clear();
                let mut reasons = Vec::new();
                for (engine, result) in results {
                    match result {
                        Ok(stored) => {
                            outcomes.insert(engine, EngineOutcome { stored, error: None });
                        }
                        Err(e) if e.is_transient() && !last => {
                            reasons.push(format!("{engine}: {}", e.detail()));
                            pending.push(engine);
                        }
                        Err(e) => {
                            if matches!(e, SinkError::NoSpace(_)) {
                                ctx.stop(format!("{engine}'s storage is full ({}): free space where it keeps its data, then rerun (the hours loaded are kept)", e.detail()));
                            }
                            outcomes.insert(engine, EngineOutcome { stored: 0, error: Some(e.detail()) });
                        }
                    }
                }
                if pending.is_empty() {
                    break;
                }
                reasons.join("; ")
            }
            Err(Attempt::Missing) if outcomes.is_empty() => {
                missing = true;
                break;
            }
            Err(Attempt::Retry(reason)) if !last => reason,
            Err(Attempt::Retry(reason) | Attempt::Failed(reason)) => {
                error = Some(reason);
                break;
            }
            Err(Attempt::Missing) => {
                error = Some("the source no longer has the hour".into());
                break;
            }
        };
        // A stopped run tries nothing more, not even the hours in flight.
        if let Some(why) = ctx.must_stop() {
            error = Some(format!("not retried: the run stopped ({why}); after: {retry_because}"));
            break;
        }
        ctx.observer.event(Event::Retrying { hour, attempt, reason: &retry_because });
        tokio::time::sleep(backoff(attempt)).await;
    }
    if let Some(reason) = &error {
        for engine in pending {
            outcomes.insert(engine, EngineOutcome { stored: 0, error: Some(reason.clone()) });
        }
    }
    let stored = outcomes.values().filter(|o| o.error.is_none()).count();
    let status = match stored {
        _ if missing => HourStatus::Missing,
        n if n == slots.len() && (n > 0 || error.is_none()) => HourStatus::Loaded,
        0 => HourStatus::Failed,
        _ => HourStatus::Partial,
    };
    HourReport { hour, status, attempts: attempt, seconds: started.elapsed().as_secs_f64(), decode, engines: outcomes, error }
}

/// Wait before attempt `attempt + 1`: 1 s, 2 s, 4 s, ... capped at 30 s.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(5)).min(Duration::from_secs(30))
}

/// One attempt: read the hour once, feed every engine, then commit each engine
/// that took all of it, or abort all of them when the read itself failed.
/// An engine that cannot be reached fails this attempt alone.
async fn try_hour(ctx: &Ctx, hour: Hour, slots: &mut [&mut Slot], state: AttemptState<'_>) -> Result<(Option<DecodeReport>, EngineResults), Attempt> {
    let options = &ctx.options;
    let stem = hour.stem();
    let mut results: EngineResults = Vec::new();
    let mut sinks: Vec<&mut Sink> = Vec::new();
    for slot in slots.iter_mut() {
        let engine = slot.engine.clone();
        let sink = match slot.ready(ctx).await {
            Ok(sink) => sink,
            Err(e) => {
                results.push((engine, Err(e)));
                continue;
            }
        };
        // The server may have committed before the connection broke: then the
        // hour is done there (we hold the table's lock, nobody else did it).
        // After an earlier attempt, an engine may have committed although its
        // answer was lost. One that replaces the hour replaces it again: the
        // replacement is whole either way, and its ledger cannot tell the new
        // copy from the old.
        let replacing = state.replacing.contains(&engine);
        match if state.before > 0 && !replacing { sink.hour_done(&stem).await } else { Ok(None) } {
            Ok(Some(events)) => results.push((engine, Ok(events))),
            Ok(None) => sinks.push(sink),
            Err(e) => results.push((engine, Err(e))),
        }
    }
    if sinks.is_empty() && !results.is_empty() {
        return Ok((None, results));
    }
    let bytes = match options.source.open(hour).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(Attempt::Missing),
        Err(SourceError::Transient(e)) => return Err(Attempt::Retry(e)),
        Err(SourceError::Permanent(e)) => return Err(Attempt::Failed(e)),
    };
    let mut quarantine = Quarantine::for_hour(&options.quarantine_dir, &options.table, hour)
        .map_err(|e| Attempt::Failed(format!("quarantine file: {e}")))?;

    let (senders, receivers): (Vec<_>, Vec<_>) = sinks.iter().map(|_| mpsc::channel::<EngineBatch>(CHANNEL_BATCHES)).unzip();
    // A dry run has no sinks and no lanes: every engine's encoding is made and dropped.
    let lanes: Vec<Lane> = sinks.iter().zip(senders).map(|(sink, output)| Lane { engine: sink.engine().clone(), output }).collect();
    let policy = options.policy.clone();
    let compressed = Arc::new(AtomicU64::new(0));
    let decoder = tokio::task::spawn_blocking(move || {
        let result = decode_hour(hour, bytes, &policy, &lanes, &mut quarantine, compressed);
        let file = quarantine.finish();
        (result, file)
    });
    let fed = join_all(sinks.iter_mut().zip(receivers).map(|(sink, rx)| {
        let replacing = state.replacing.contains(sink.engine());
        timed(feed(ctx, sink, &stem, replacing, rx))
    }))
    .await;

    let decoded = match decoder.await {
        Ok((Ok(mut report), Ok(file))) => {
            report.quarantine_file = file.map(|f| f.display().to_string());
            match damaged_download(options, &report, state.last).or_else(|| read_differently(state.loaded.as_ref(), &report)) {
                Some(attempt) => Err(attempt),
                None => Ok(report),
            }
        }
        Ok((Ok(_), Err(e))) => Err(Attempt::Failed(format!("quarantine file: {e}"))),
        Ok((Err(DecodeError::Source(e)), _)) => Err(Attempt::Retry(e)),
        Ok((Err(DecodeError::EnginesGone), _)) => {
            // Every engine failed while being fed: each says why.
            for sink in sinks.iter_mut() {
                sink.abort_hour().await;
            }
            let engines = sinks.iter().map(|s| s.engine().clone());
            results.extend(engines.zip(fed).map(|(engine, (r, _))| (engine, r.map(|()| 0))));
            return Ok((None, results));
        }
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
        source_digest: decoded.source_digest.clone(),
        retries: state.before,
        clock: LoadClock::default(),
    };
    for (sink, (fed, feeding)) in sinks.iter_mut().zip(fed) {
        let result = match fed {
            // The engine's time: its feeding, then its own commit (not the other
            // engines' commits, made one after another).
            Ok(()) => sink.commit_hour(&HourRecord { clock: LoadClock::committing_after(feeding), ..record.clone() }).await,
            Err(e) => Err(e),
        };
        if result.is_err() {
            sink.abort_hour().await;
        }
        results.push((sink.engine().clone(), result));
    }
    Ok((Some(decoded), results))
}

/// A file that arrived damaged over the network is retried: the next download
/// may be whole. Damage that outlasts every retry fails the hour, unless the
/// user accepts it. A local file's damage is the file's: it loads as far as it goes.
fn damaged_download(options: &IngestOptions, report: &DecodeReport, last: bool) -> Option<Attempt> {
    let defect = report.file_defect.as_ref().filter(|_| options.source.is_remote())?;
    if !last {
        return Some(Attempt::Retry(format!("damaged download: {defect}")));
    }
    if options.accept_damaged {
        return None;
    }
    // The hour's summary says a rerun tries again; the reason says the other way on.
    Some(Attempt::Failed(format!("damaged download: {defect}; --accept-damaged loads what it holds")))
}

/// An engine must not store other content than the engines that committed the
/// hour before it (a download damaged this time, a file changed meanwhile).
fn read_differently(loaded: Option<&DecodeReport>, now: &DecodeReport) -> Option<Attempt> {
    let before = loaded?;
    let content = |d: &DecodeReport| {
        (d.lines, d.events, d.sanitized, d.quarantined.clone(), d.compressed_bytes, d.file_defect.clone(), d.source_digest.clone())
    };
    (content(before) != content(now)).then(|| {
        Attempt::Retry(format!(
            "the hour read differently than when other engines loaded it ({} events of {} lines then, {} of {} now)",
            before.events, before.lines, now.events, now.lines
        ))
    })
}

/// `work`'s result and how long it took.
async fn timed<T>(work: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let result = work.await;
    (result, started.elapsed())
}

/// Streams the hour's batches into one engine. Returning early drops `rx`, which
/// tells the decoder to stop feeding this engine while the others go on.
async fn feed(ctx: &Ctx, sink: &mut Sink, stem: &str, replacing: bool, mut rx: mpsc::Receiver<EngineBatch>) -> Result<(), SinkError> {
    if replacing {
        sink.begin_replacing(stem).await?;
    } else {
        sink.begin_hour(stem).await?;
    }
    while let Some(batch) = rx.recv().await {
        sink.write(&batch).await?;
        ctx.observer.event(Event::Stored {
            engine: sink.engine().clone(),
            events: batch.docs().len() as u64,
            json_bytes: batch.batch.json_bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_that_reads_differently_is_not_stored_beside_the_first_version() {
        let whole = DecodeReport { lines: 10, events: 10, compressed_bytes: 900, ..DecodeReport::default() };
        let cut = DecodeReport { lines: 4, events: 3, compressed_bytes: 400, file_defect: Some("truncated".into()), ..DecodeReport::default() };
        assert!(read_differently(None, &cut).is_none(), "nothing committed yet: nothing to differ from");
        assert!(read_differently(Some(&whole), &whole.clone()).is_none());
        match read_differently(Some(&whole), &cut) {
            Some(Attempt::Retry(why)) => assert!(why.contains("10 events of 10 lines then, 3 of 4 now"), "{why}"),
            _ => panic!("a different read must be retried"),
        }
    }
}

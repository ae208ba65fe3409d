//! What loading needs from an engine, the same verbs for every engine. Each
//! engine (its own folder, see docs/engines.md) loads an hour atomically from
//! its point of view and records it in a ledger kept inside the same engine,
//! so "done" and the data cannot disagree after a crash: begin the hour, write
//! batches, commit the hour with its ledger record (or abort it).
//!
//! Every call to a server is bounded by the sink's timeout: a server that stops
//! answering fails the step with a message naming the server and the step, and
//! the sink is then broken, to be replaced by a new connection.

pub mod lock;

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use ghbench_core::{ConnectError, Engine, EngineError, EngineSpec, ServerInfo, TableName};

pub use lock::{LockWatch, TableLock};

use crate::clean::{CleanDoc, Rejected};
use crate::decode::EngineBatch;
use crate::space::Room;

/// What the ledger records for a loaded hour.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HourRecord {
    pub hour: String,
    pub events: u64,
    pub lines: u64,
    pub quarantined: u64,
    pub sanitized: u64,
    pub compressed_bytes: u64,
    pub file_defect: Option<String>,
    /// The digest of the source file the hour was loaded from (see
    /// [`crate::digest`]); None in entries written before ghbench kept it.
    #[serde(default)]
    pub source_digest: Option<String>,
    /// Attempts at the hour on this engine after the first (a lost connection,
    /// a server that stopped answering, a damaged download): its `seconds`
    /// include them. 0 in entries written before ghbench kept it.
    #[serde(default)]
    pub retries: u32,
    /// This engine's time for the hour; read with [`HourRecord::seconds`].
    #[serde(skip)]
    pub clock: LoadClock,
}

impl HourRecord {
    /// This engine's time for the hour so far: from starting the hour to now,
    /// leaving out the time other engines spent committing it. A sink reads it
    /// just before it records the hour, so its commit's own work counts.
    pub fn seconds(&self) -> f64 {
        self.clock.fed.as_secs_f64() + self.clock.committing.elapsed().as_secs_f64()
    }

    /// Now, in seconds since the Unix epoch: when the hour commits, read
    /// beside [`HourRecord::seconds`]. The ledger keeps both, so a load's wall
    /// time is the span its hours cover, however many loaded side by side.
    pub fn finished_at(&self) -> f64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
    }
}

/// What an engine's ledger says of a stored hour, for deciding on a rerun
/// whether it stays: which copy of the file it came from, and whether the
/// engine still finds it whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredHour {
    pub events: u64,
    /// The size of the source file it was loaded from (None: not recorded).
    pub compressed_bytes: Option<u64>,
    /// See [`HourRecord::source_digest`].
    pub source_digest: Option<String>,
    /// It was loaded from a damaged copy (empty, truncated, corrupt gzip).
    pub file_defect: Option<String>,
    /// Lines of its file quarantined when it was loaded.
    pub quarantined: u64,
    /// The engine's own check found the stored hour no longer whole (a file
    /// of another size or checksum, a count that differs): why.
    pub damage: Option<String>,
    /// Said once per run about the engine's check (e.g. entries too old to
    /// hold a checksum, checked by size only).
    pub note: Option<String>,
}

/// How much of what an engine stores a run checks against its ledger before
/// it decides what to load (see [`EngineSink::stored_hours`]).
#[derive(Debug, Clone, PartialEq)]
pub enum StoredCheck {
    /// The hours the run is about (their stems), each checked as far as its
    /// engine can without reading the rest of what is stored; the rest is
    /// trusted to the ledger and compared with the engine's own cheap
    /// totals (statistics, metadata). A rerun of one hour of a year reads
    /// one hour, not the year.
    Touched(BTreeSet<String>),
    /// Everything stored, counted or read in full (`ingest --check-stored`):
    /// a pass over the whole table, shown as progress.
    Whole,
}

impl StoredCheck {
    /// Whether the stored hour `stem` is checked in full.
    pub fn covers(&self, stem: &str) -> bool {
        match self {
            StoredCheck::Touched(stems) => stems.contains(stem),
            StoredCheck::Whole => true,
        }
    }
}

impl StoredHour {
    /// Marks the hour damaged when `held` rows of it were found in `what`
    /// (e.g. "postgres table t") where its ledger entry lists otherwise.
    pub fn check_held(&mut self, what: &str, held: u64) {
        if held != self.events {
            self.damage = Some(format!("{what} holds {held} of its rows where its ledger entry lists {}", self.events));
        }
    }
}

/// See [`HourRecord::seconds`].
#[derive(Debug, Clone, Copy)]
pub struct LoadClock {
    /// From starting the hour to its last batch written.
    fed: Duration,
    /// When this engine's commit began.
    committing: Instant,
}

impl LoadClock {
    /// The commit begins now, after `fed` of feeding.
    pub fn committing_after(fed: Duration) -> LoadClock {
        LoadClock { fed, committing: Instant::now() }
    }
}

impl Default for LoadClock {
    fn default() -> Self {
        LoadClock::committing_after(Duration::ZERO)
    }
}

/// Work an engine did on the whole table after a run loaded it (e.g. PostgreSQL's
/// `VACUUM (ANALYZE)`), timed: part of the load's cost, recorded by the engine.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Upkeep {
    /// What was done, e.g. `VACUUM (ANALYZE) github2015`.
    pub step: String,
    pub seconds: f64,
}


#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The engine refused or failed, in its own words (the whole cause
    /// chain), and what that means: whether the connection or the server
    /// failed rather than the data, so the same work may succeed on a new
    /// connection a moment later (see [`ghbench_core::FailureKind`]).
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Connect(#[from] ConnectError),
    /// The server did not answer one step in time.
    #[error("{engine} at {server} did not answer within {} s while {step}", .limit.as_secs_f64())]
    Timeout { engine: Engine, server: String, step: &'static str, limit: Duration },
    /// Another run holds the table.
    #[error("{0}")]
    Locked(String),
    /// The engine's storage is full (PostgreSQL 53100, MongoDB
    /// OutOfDiskSpace, a file system with no space left): no hour after
    /// this one can go in either, so the run stops.
    #[error("{0}")]
    NoSpace(String),
    #[error("{0}")]
    Other(String),
}

impl SinkError {
    /// An I/O error as a sink's error: a full file system is
    /// [`SinkError::NoSpace`], anything else said in its words.
    pub fn from_io(error: &std::io::Error) -> SinkError {
        match error.kind() == std::io::ErrorKind::StorageFull || error.raw_os_error() == Some(28 /* ENOSPC */) {
            true => SinkError::NoSpace(error.to_string()),
            false => SinkError::Other(error.to_string()),
        }
    }

    /// The error in one line, causes included.
    pub fn detail(&self) -> String {
        ghbench_core::error_chain(self)
    }

    /// The connection or the server failed rather than the data: the same work
    /// may succeed on a new connection a moment later (a restart, a network
    /// blip, a server that stalled).
    pub fn is_transient(&self) -> bool {
        match self {
            SinkError::Engine(e) => e.is_transient(),
            SinkError::Connect(_) | SinkError::Timeout { .. } => true,
            SinkError::Locked(_) | SinkError::NoSpace(_) | SinkError::Other(_) => false,
        }
    }
}

/// A document in an engine's own form (BSON, a row, ...), made on the decode
/// thread; its sink downcasts it back.
pub type Encoded = Box<dyn Any + Send + Sync>;

/// How an engine encodes clean documents, run on the decode thread so the
/// work is spread like decoding is, and before any engine is sent the line.
pub trait Encoder: Send + Sync {
    /// Line `doc` of the hour `stem` in the engine's form; a refusal
    /// quarantines the line for every engine.
    fn encode(&self, stem: &str, doc: &CleanDoc) -> Result<Encoded, Rejected>;

    /// Whether [`Encoder::encode`] would refuse `doc`, and why, for a run that
    /// does not load this engine: the same verdict, without building what
    /// nobody sends. An encoder with a cheaper way to tell overrides it.
    fn check(&self, stem: &str, doc: &CleanDoc) -> Result<(), Rejected> {
        self.encode(stem, doc).map(drop)
    }
}

/// An engine configured for a run (its options read): connects sinks for a
/// table, as many as the workers need and again after a fault.
#[async_trait]
pub trait Loader: Send + Sync {
    fn spec(&self) -> &EngineSpec;

    /// Where the engine is, password hidden, for messages.
    fn location(&self) -> String;

    /// The `host:port` its server listens on (the engine's own default port
    /// when its URL names none), as `servers.json` lists the servers `just
    /// setup` started: how ghbench finds the engine's server there, to
    /// restart it for a cold run or under a memory limit, and its data folder
    /// for the free-space check of a load. None: no single TCP server (an
    /// engine without one, a Unix socket, several hosts).
    fn address(&self) -> Option<String> {
        None
    }

    /// A new connection for loading `table`.
    async fn connect(&self, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError>;

    /// What the server says of a whole-table step running on `table` (e.g.
    /// PostgreSQL's `pg_stat_progress_vacuum`), asked on a connection of its
    /// own while the step runs; None when it says nothing.
    async fn whole_table_progress(&self, table: &TableName) -> Option<String> {
        let _ = table;
        None
    }
}

/// What loading needs from one connection to an engine: the table and its
/// ledger, one hour at a time, and an exclusive hold on the table.
#[async_trait]
pub trait EngineSink: Send + Sync {
    /// True when the connection is gone and the sink must be replaced.
    fn is_broken(&self) -> bool {
        false
    }

    /// Refuses a table name the engine cannot take (every name [`TableName`]
    /// accepts is fine unless the engine says otherwise).
    async fn check_name(&self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Product, version and settings, for every report.
    async fn describe(&self) -> Result<ServerInfo, SinkError>;

    /// This run's exclusive hold on the table, or [`SinkError::Locked`] naming
    /// the holder; a keeper waits at most `limit` for each check.
    async fn lock(&self, limit: Duration) -> Result<TableLock, SinkError>;

    /// Creates the table and ledger if needed; with `drop`, starts from empty.
    /// Forgets ledger entries whose table is gone, so a dropped table is reloaded.
    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError>;

    /// Hour stems this engine's ledger lists as loaded for the table.
    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError>;

    /// The ledger's entries, by hour stem, with what the engine finds of each
    /// stored hour it checks (`check`). The default knows only that the hours
    /// are listed.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        let _ = check;
        Ok(self.completed_hours().await?.into_iter().map(|stem| (stem, StoredHour::default())).collect())
    }

    /// What the table holds on disk and where it grows, for the check that
    /// a load fits (see [`crate::space`]); None: the engine cannot say.
    async fn room(&self) -> Result<Option<Room>, SinkError> {
        Ok(None)
    }

    /// Events the ledger says the table holds.
    async fn ledger_events(&self) -> Result<u64, SinkError>;

    /// The events the ledger records for the hour, if it is done.
    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError>;

    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError>;

    /// Begins the hour as [`EngineSink::begin_hour`] does, to replace what is
    /// stored of it: its commit leaves the new hour and its new ledger entry,
    /// or (interrupted) the old ones or a state the next run repairs, never
    /// both. An hour not stored is simply begun.
    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        let _ = stem;
        Err(SinkError::Other("this engine cannot reload one hour: load the table again with --drop".into()))
    }

    /// Whether [`EngineSink::begin_replacing`] reads the whole table to find
    /// the hour's rows (PostgreSQL finds them by the transaction that wrote
    /// them): then it is a step over the whole table, not bounded by the
    /// per-step timeout, which would cut it on a year of data every time.
    fn replacing_reads_whole_table(&self) -> bool {
        false
    }

    /// Why no stored hour can be replaced (`--reload`, a repair), where the
    /// table cannot delete rows (a columnar table on Citus); None: it can.
    /// Known after `prepare`: a run that would replace one is refused
    /// before it loads anything.
    fn refuses_replacing(&self) -> Option<String> {
        None
    }

    /// Removes the stored hours `stems` and their ledger entries at once,
    /// before loading them again (`--reload`, a repair): one pass over the
    /// table instead of one per hour. Some(rows removed); None: the engine
    /// does not, and replaces each hour as it loads it
    /// ([`EngineSink::begin_replacing`]). All or nothing: an error removes nothing.
    async fn remove_hours(&mut self, stems: &[String]) -> Result<Option<u64>, SinkError> {
        let _ = stems;
        Ok(None)
    }

    /// Removes what loads that died left of the hours they began and did not
    /// finish, and says what it removed, hour by hour. Only an engine whose
    /// hours are not written in one transaction (MongoDB) can hold such rows;
    /// the default has none. Called with the table's lock held, so no load
    /// that still runs is at any hour of it; whichever hours the run loads.
    async fn remove_unfinished(&mut self) -> Result<Vec<String>, SinkError> {
        Ok(Vec::new())
    }

    /// Stores a batch: its clean documents, with this engine's encodings of them.
    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError>;

    /// Makes the hour durable together with its ledger record; returns the
    /// number of documents the engine stored for it.
    async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError>;

    /// Leaves nothing of the hour behind that a later attempt would not replace.
    async fn abort_hour(&mut self);

    /// Work on the whole table once a run has loaded hours into it, before
    /// anything is timed on it; recorded by the engine with the ledger.
    async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        Ok(None)
    }

    /// Whether [`EngineSink::after_load`] has work left by an earlier run
    /// (killed before or during it), for a run that stores no hour: a cheap
    /// look, not the work. PostgreSQL's statistics are not asked again of a
    /// table nothing changed; polars' hours not yet merged are.
    async fn upkeep_due(&mut self) -> Result<bool, SinkError> {
        Ok(false)
    }

    /// Ends the connection while the runtime still runs its tasks (the
    /// MongoDB driver's pool must not be dropped with the runtime).
    async fn close(&mut self) {}
}

/// One engine's connection for loading one table, every step bounded by a
/// timeout: a step that times out names the engine, its server and the step,
/// and leaves the sink broken (its connection's state is unknown).
pub struct Sink {
    inner: Box<dyn EngineSink>,
    engine: Engine,
    /// The server's URL, password hidden, for messages.
    server: String,
    timeout: Duration,
    /// The limit on a step over the whole table (checking the stored hours,
    /// upkeep after loading): none unless asked, since on a year of data
    /// such a step reads hundreds of gigabytes.
    whole_table: Option<Duration>,
    broken: bool,
}

impl Sink {
    /// Connects to the engine; every later step waits at most `timeout` for
    /// the server, but a step over the whole table `whole_table` (None: as
    /// long as it takes).
    pub async fn connect(loader: &dyn Loader, table: &TableName, timeout: Duration, whole_table: Option<Duration>) -> Result<Sink, ConnectError> {
        let inner = loader.connect(table).await?;
        let engine = loader.spec().engine.clone();
        Ok(Sink { inner, engine, server: loader.location(), timeout, whole_table, broken: false })
    }
    /// True when the connection is gone or in an unknown state and the sink
    /// must be replaced.
    pub fn is_broken(&self) -> bool {
        self.broken || self.inner.is_broken()
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// See [`EngineSink::refuses_replacing`].
    pub fn refuses_replacing(&self) -> Option<String> {
        self.inner.refuses_replacing()
    }

    /// `work` (a step of `inner`) within the timeout; a timeout breaks the sink.
    async fn step<'a, T>(
        &'a mut self,
        step: &'static str,
        work: impl FnOnce(&'a mut dyn EngineSink) -> BoxFuture<'a, Result<T, SinkError>>,
    ) -> Result<T, SinkError> {
        let limit = Some(self.timeout);
        self.step_within(step, limit, work).await
    }

    /// `work`, a step over the whole table, within the whole-table limit if
    /// there is one (none unless asked: on a year of data such a step reads
    /// hundreds of gigabytes); a timeout breaks the sink.
    async fn whole_table_step<'a, T>(
        &'a mut self,
        step: &'static str,
        work: impl FnOnce(&'a mut dyn EngineSink) -> BoxFuture<'a, Result<T, SinkError>>,
    ) -> Result<T, SinkError> {
        let limit = self.whole_table;
        self.step_within(step, limit, work).await
    }

    async fn step_within<'a, T>(
        &'a mut self,
        step: &'static str,
        limit: Option<Duration>,
        work: impl FnOnce(&'a mut dyn EngineSink) -> BoxFuture<'a, Result<T, SinkError>>,
    ) -> Result<T, SinkError> {
        let result = bounded_if(&self.engine, &self.server, step, limit, work(self.inner.as_mut())).await;
        if matches!(result, Err(SinkError::Timeout { .. })) {
            self.broken = true;
        }
        result
    }

    pub async fn describe(&mut self) -> Result<ServerInfo, SinkError> {
        self.step("describing the server", |s| s.describe()).await
    }

    /// Refuses a table name the engine cannot take, before any engine changes anything.
    pub async fn check_name(&mut self) -> Result<(), SinkError> {
        self.step("checking the table name", |s| s.check_name()).await
    }

    /// This run's exclusive hold on the table (see [`EngineSink::lock`]).
    pub async fn lock(&self) -> Result<TableLock, SinkError> {
        // A lock still held by an ending session is waited for a moment.
        let limit = self.timeout + lock::LOCK_WAIT;
        bounded(&self.engine, &self.server, "taking the table's lock", limit, self.inner.lock(self.timeout)).await
    }

    pub async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        self.step("preparing the table and ledger", |s| s.prepare(drop)).await
    }

    pub async fn completed_hours(&mut self) -> Result<HashSet<String>, SinkError> {
        self.step("reading the ledger", |s| s.completed_hours()).await
    }

    /// A step over the whole table when `check` is [`StoredCheck::Whole`]
    /// (the whole-table limit applies to both: an engine may still count).
    pub async fn stored_hours(&mut self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        self.whole_table_step(STORED_HOURS, |s| s.stored_hours(check)).await
    }

    pub async fn room(&mut self) -> Result<Option<Room>, SinkError> {
        self.step("reading the table's size and free space", |s| s.room()).await
    }

    pub async fn ledger_events(&mut self) -> Result<u64, SinkError> {
        self.step("counting the ledger's events", |s| s.ledger_events()).await
    }

    /// An attempt whose answer was lost may have committed after all.
    pub async fn hour_done(&mut self, stem: &str) -> Result<Option<u64>, SinkError> {
        self.step("reading the hour's ledger entry", |s| s.hour_done(stem)).await
    }

    pub async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.step("starting the hour", |s| s.begin_hour(stem)).await
    }

    /// A step over the whole table where the engine finds an hour's rows by
    /// reading it (see [`EngineSink::replacing_reads_whole_table`]).
    pub async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        match self.inner.replacing_reads_whole_table() {
            true => self.whole_table_step(REPLACE_HOUR, |s| s.begin_replacing(stem)).await,
            false => self.step(REPLACE_HOUR, |s| s.begin_replacing(stem)).await,
        }
    }

    pub async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        self.step("writing a batch of documents", |s| s.write(batch)).await
    }

    pub async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        self.step("committing the hour", |s| s.commit_hour(record)).await
    }

    /// See [`EngineSink::remove_hours`]: a step over the whole table.
    pub async fn remove_hours(&mut self, stems: &[String]) -> Result<Option<u64>, SinkError> {
        self.whole_table_step(REMOVE_HOURS, |s| s.remove_hours(stems)).await
    }

    /// See [`EngineSink::remove_unfinished`]: at most an hour's rows each, but
    /// on a slow server or a year of dead attempts more than a step's time.
    pub async fn remove_unfinished(&mut self) -> Result<Vec<String>, SinkError> {
        self.whole_table_step(REMOVE_UNFINISHED, |s| s.remove_unfinished()).await
    }

    /// See [`EngineSink::after_load`]: a step over the whole table.
    pub async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        self.whole_table_step(UPKEEP, |s| s.after_load()).await
    }

    /// See [`EngineSink::upkeep_due`].
    pub async fn upkeep_due(&mut self) -> Result<bool, SinkError> {
        self.step("looking for work left after an earlier load", |s| s.upkeep_due()).await
    }

    /// See [`EngineSink::close`]; a server that does not answer cannot hold it.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(self.timeout, self.inner.close()).await;
    }

    /// A server that does not answer leaves the sink broken: the next attempt
    /// cleans up on a new connection.
    pub async fn abort_hour(&mut self) {
        let _ = self
            .step("aborting the hour", |s| {
                Box::pin(async move {
                    s.abort_hour().await;
                    Ok(())
                })
            })
            .await;
    }
}

/// The whole-table steps, as progress and errors name them.
pub const STORED_HOURS: &str = "checking the stored hours against the ledger";
pub const UPKEEP: &str = "the work after loading (PostgreSQL's statistics, polars' merge of hour files)";
pub const REMOVE_HOURS: &str = "removing the hours to load again";
pub const REPLACE_HOUR: &str = "starting to replace the hour";
pub const REMOVE_UNFINISHED: &str = "removing what dead loads left of hours they did not finish";

/// `work` within `limit` if there is one (see [`bounded`]).
async fn bounded_if<T>(
    engine: &Engine,
    server: &str,
    step: &'static str,
    limit: Option<Duration>,
    work: impl Future<Output = Result<T, SinkError>>,
) -> Result<T, SinkError> {
    match limit {
        Some(limit) => bounded(engine, server, step, limit, work).await,
        None => work.await,
    }
}

/// `work` within `limit`, or a timeout error naming the engine, its server and the step.
async fn bounded<T>(
    engine: &Engine,
    server: &str,
    step: &'static str,
    limit: Duration,
    work: impl Future<Output = Result<T, SinkError>>,
) -> Result<T, SinkError> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => Err(SinkError::Timeout { engine: engine.clone(), server: server.to_string(), step, limit }),
    }
}

/// The table's row count against its ledger, checked once per run (one
/// count of the table; hour by hour only when the totals differ): `rows` is
/// the table's count, `per_hour` counts its rows by the hour they belong to
/// (called only when needed). Hours whose count differs from their entry are
/// marked damaged (the run reloads them); rows that belong to no listed hour
/// stop the run, saying what to do.
pub async fn check_counts<F, Fut>(
    stored: &mut BTreeMap<String, StoredHour>,
    what: &str,
    rows: u64,
    per_hour: F,
) -> Result<(), SinkError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<BTreeMap<String, u64>, SinkError>>,
{
    let listed: u64 = stored.values().map(|h| h.events).sum();
    if rows == listed {
        return Ok(());
    }
    let mut counted = per_hour().await?;
    for (stem, hour) in stored.iter_mut() {
        let held = counted.remove(stem).unwrap_or(0);
        hour.check_held(what, held);
    }
    let strays: u64 = counted.values().sum();
    if strays > 0 {
        return Err(SinkError::Other(format!(
            "{what} holds {rows} rows where its ledger lists {listed} events, {strays} of them of no hour the ledger lists \
             (written by hand, or by another tool): load the table again with --drop"
        )));
    }
    Ok(())
}

/// What an engine knows of its row count without counting (its statistics,
/// its metadata), for [`check_estimate`].
pub struct RowEstimate {
    pub rows: u64,
    /// Where the figure comes from, as the note names it.
    pub from: &'static str,
    /// Whether the table holds any row at all (one row read).
    pub any: bool,
}

/// The check of a run that does not read the whole table: the ledger's events
/// against the engine's `estimate`. Rows in a table whose ledger lists none
/// stop the run as [`check_counts`] would, an empty table makes every hour
/// damaged; an estimate more than a tenth off
/// the ledger (statistics lag, and are reset by a crash) is noted on the
/// entries, with the way to count exactly. The hours the run touches are
/// checked apart, by the engine.
pub fn check_estimate(stored: &mut BTreeMap<String, StoredHour>, what: &str, estimate: RowEstimate) -> Result<(), SinkError> {
    let listed: u64 = stored.values().map(|h| h.events).sum();
    if listed == 0 && estimate.any {
        return Err(SinkError::Other(format!(
            "{what} holds rows where its ledger lists none (written by hand, or by another tool): load the table again with --drop"
        )));
    }
    // An empty table is known for certain (one block read): every hour is gone.
    if !estimate.any {
        for hour in stored.values_mut() {
            hour.check_held(what, 0);
        }
        return Ok(());
    }
    if estimate.rows.abs_diff(listed) > listed / 10 {
        let note = format!(
            "{what}: {} estimates {} rows where its ledger lists {listed} events (`ghbench ingest --check-stored` with the same --table counts them and reloads what is not whole)",
            estimate.from, estimate.rows
        );
        note_every(stored, &note);
    }
    Ok(())
}

/// Says `note` once per run (see [`StoredHour::note`]), on every entry that
/// says nothing yet: the plan keeps each note once.
pub fn note_every(stored: &mut BTreeMap<String, StoredHour>, note: &str) {
    for hour in stored.values_mut() {
        hour.note.get_or_insert_with(|| note.to_string());
    }
}

/// Refuses to record an hour whose stored count differs from what was sent.
pub fn check_stored(stored: u64, record: &HourRecord) -> Result<(), SinkError> {
    if stored == record.events {
        Ok(())
    } else {
        Err(SinkError::Other(format!("stored {stored} of {} documents of hour {}", record.events, record.hour)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_system_stops_the_run_and_other_io_errors_do_not() {
        // A write to /dev/full fails as a full disk does (ENOSPC).
        let full = std::io::Write::write_all(&mut std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap(), b"x").unwrap_err();
        assert!(matches!(SinkError::from_io(&full), SinkError::NoSpace(_)), "{full:?}");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(matches!(SinkError::from_io(&denied), SinkError::Other(_)));
        assert!(!SinkError::from_io(&full).is_transient(), "not retried");
    }

    #[test]
    fn an_engine_failure_is_retried_when_its_kind_says_a_retry_may_mend_it() {
        use ghbench_core::FailureKind;
        let failed = |kind| SinkError::from(EngineError::new(kind, "PostgreSQL: the server said so"));
        assert!(failed(FailureKind::LostConnection).is_transient());
        assert!(failed(FailureKind::Transient).is_transient());
        assert!(!failed(FailureKind::Permanent).is_transient());
        // Said in the engine's words, nothing added.
        assert_eq!(failed(FailureKind::Permanent).to_string(), "PostgreSQL: the server said so");
        assert_eq!(failed(FailureKind::Permanent).detail(), "PostgreSQL: the server said so");
    }
}

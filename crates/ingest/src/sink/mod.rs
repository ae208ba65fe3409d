//! One sink per engine. Each loads an hour atomically from the engine's point of
//! view and records it in a ledger kept inside the same engine, so "done" and
//! the data cannot disagree after a crash: begin the hour, write batches,
//! commit the hour with its ledger record (or abort it).
//!
//! Every call to a server is bounded by the sink's timeout: a server that stops
//! answering fails the step with a message naming the server and the step, and
//! the sink is then broken, to be replaced by a new connection.
//!
//! Adding an engine: a module here and a variant of [`Kind`].

mod lock;
mod mongo;
mod postgres;

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use ghbench_core::{ConnectError, Engine, ServerInfo, Servers, TableName};

pub use lock::{LockWatch, TableLock, LOCKS};
pub use mongo::MongoSink;
pub use postgres::{JsonbText, PostgresSink};

use crate::decode::Batch;

/// Name of the ledger table (PostgreSQL) and collection (MongoDB).
pub const LEDGER: &str = "ghbench_ledger";

/// What the ledger records for a loaded hour.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HourRecord {
    pub hour: String,
    pub events: u64,
    pub lines: u64,
    pub quarantined: u64,
    pub sanitized: u64,
    pub compressed_bytes: u64,
    pub file_defect: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("MongoDB-wire server: {}", ghbench_core::short_mongo_error(.0))]
    Mongo(#[from] mongodb::error::Error),
    #[error("{0}")]
    Connect(#[from] ConnectError),
    /// The server did not answer one step in time.
    #[error("{engine} at {server} did not answer within {} s while {step}", .limit.as_secs_f64())]
    Timeout { engine: Engine, server: String, step: &'static str, limit: Duration },
    /// Another run holds the table.
    #[error("{0}")]
    Locked(String),
    #[error("{0}")]
    Other(String),
}

impl SinkError {
    /// The full error chain in one line: tokio-postgres hides the server's
    /// message (e.g. the reason for a refused document) in its source.
    pub fn detail(&self) -> String {
        match self {
            // The driver's own text repeats the topology; the short form is kept.
            SinkError::Mongo(_) => self.to_string(),
            _ => ghbench_core::error_chain(self),
        }
    }

    /// The connection or the server failed rather than the data: the same work
    /// may succeed on a new connection a moment later (a restart, a network
    /// blip, a server that stalled).
    pub fn is_transient(&self) -> bool {
        match self {
            SinkError::Postgres(e) => e.is_closed() || e.as_db_error().is_some_and(|db| is_server_going_away(db.code())) || is_io(e),
            SinkError::Mongo(e) => is_mongo_server_away(e),
            SinkError::Connect(_) | SinkError::Timeout { .. } => true,
            SinkError::Locked(_) | SinkError::Other(_) => false,
        }
    }
}

/// Shutdown, crash and "cannot connect now" classes: the server is going away
/// or not yet back (SQLSTATE classes 57P and 08).
fn is_server_going_away(code: &tokio_postgres::error::SqlState) -> bool {
    let code = code.code();
    code.starts_with("57P") || code.starts_with("08")
}

/// The network, or a server shutting down, restarting or stepping down
/// (ShutdownInProgress, InterruptedAtShutdown, NotWritablePrimary, ...).
fn is_mongo_server_away(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    const SERVER_AWAY: [i32; 12] = [6, 7, 89, 91, 189, 9001, 10058, 10107, 11600, 11602, 13435, 13436];
    let code = match &*e.kind {
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } | ErrorKind::ServerSelection { .. } => return true,
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m.write_concern_error.as_ref().map(|w| w.code),
        _ => None,
    };
    e.contains_label(mongodb::error::RETRYABLE_WRITE_ERROR) || code.is_some_and(|c| SERVER_AWAY.contains(&c))
}

fn is_io(e: &tokio_postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// Runs `$call` on whichever engine's sink `$self` holds, bounded by its
/// timeout (a timeout names `$step` and leaves the sink broken).
macro_rules! on_server {
    ($self:ident, $step:expr, |$s:ident| $call:expr) => {{
        let engine = $self.engine();
        let (kind, server, limit) = (&mut $self.kind, &$self.server, $self.timeout);
        let work = async move {
            match kind {
                Kind::Postgres($s) => $call,
                Kind::Mongo($s) => $call,
            }
        };
        let result = bounded(engine, server, $step, limit, work).await;
        $self.note(result)
    }};
}

enum Kind {
    Postgres(PostgresSink),
    Mongo(MongoSink),
}

/// One engine's connection for loading one table.
pub struct Sink {
    kind: Kind,
    /// The server's URL, password hidden, for messages.
    server: String,
    timeout: Duration,
    /// Set when a step timed out: the connection's state is unknown.
    broken: bool,
}

impl Sink {
    /// Connects to `engine`; every later step waits at most `timeout` for the server.
    pub async fn connect(engine: Engine, servers: &Servers, table: &TableName, timeout: Duration) -> Result<Sink, ConnectError> {
        let (kind, url) = match engine {
            Engine::Postgres => (Kind::Postgres(PostgresSink::new(servers.postgres().await?, table.clone())), &servers.pg_url),
            Engine::Mongo => (Kind::Mongo(MongoSink::new(servers.mongo().await?, table.clone())), &servers.mongo_url),
        };
        Ok(Sink { kind, server: ghbench_core::redact_url(url), timeout, broken: false })
    }

    /// True when the connection is gone or in an unknown state and the sink
    /// must be replaced.
    pub fn is_broken(&self) -> bool {
        self.broken
            || match &self.kind {
                Kind::Postgres(s) => s.is_broken(),
                Kind::Mongo(_) => false,
            }
    }

    pub fn engine(&self) -> Engine {
        match self.kind {
            Kind::Postgres(_) => Engine::Postgres,
            Kind::Mongo(_) => Engine::Mongo,
        }
    }

    /// Server product, version and settings, for every report.
    pub async fn describe(&mut self, servers: &Servers) -> Result<ServerInfo, SinkError> {
        on_server!(self, "describing the server", |s| s.describe(servers).await)
    }

    /// Refuses a table name the engine cannot take, before any engine changes anything.
    pub async fn check_name(&mut self) -> Result<(), SinkError> {
        on_server!(self, "checking the table name", |s| s.check_name().await)
    }

    /// The events the engine's ledger records for the hour, if it is done:
    /// an attempt whose answer was lost may have committed after all.
    pub async fn hour_done(&mut self, stem: &str) -> Result<Option<u64>, SinkError> {
        on_server!(self, "reading the hour's ledger entry", |s| s.hour_done(stem).await)
    }

    /// Creates the table and ledger if needed; with `drop`, starts from empty.
    /// Forgets ledger entries whose table is gone, so a dropped table is reloaded.
    pub async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        on_server!(self, "preparing the table and ledger", |s| s.prepare(drop).await)
    }

    /// Hour stems this engine's ledger lists as loaded for the table.
    pub async fn completed_hours(&mut self) -> Result<HashSet<String>, SinkError> {
        on_server!(self, "reading the ledger", |s| s.completed_hours().await)
    }

    /// Events the ledger says the table holds.
    pub async fn ledger_events(&mut self) -> Result<u64, SinkError> {
        on_server!(self, "counting the ledger's events", |s| s.ledger_events().await)
    }

    pub async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        on_server!(self, "starting the hour", |s| s.begin_hour(stem).await)
    }

    pub async fn write(&mut self, batch: &Batch) -> Result<(), SinkError> {
        on_server!(self, "writing a batch of documents", |s| s.write(batch).await)
    }

    /// Makes the hour durable together with its ledger record; returns the
    /// number of documents the engine stored for it.
    pub async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        on_server!(self, "committing the hour", |s| s.commit_hour(record).await)
    }

    /// Leaves nothing of the hour behind that a later attempt would not replace.
    /// A server that does not answer leaves the sink broken: the next attempt
    /// cleans up on a new connection.
    pub async fn abort_hour(&mut self) {
        let _ = on_server!(self, "aborting the hour", |s| {
            s.abort_hour().await;
            Ok(())
        });
    }

    /// A step that timed out leaves the connection in an unknown state.
    fn note<T>(&mut self, result: Result<T, SinkError>) -> Result<T, SinkError> {
        if matches!(result, Err(SinkError::Timeout { .. })) {
            self.broken = true;
        }
        result
    }
}

/// `work` within `limit`, or a timeout error naming the engine, its server and the step.
async fn bounded<T>(
    engine: Engine,
    server: &str,
    step: &'static str,
    limit: Duration,
    work: impl Future<Output = Result<T, SinkError>>,
) -> Result<T, SinkError> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => Err(SinkError::Timeout { engine, server: server.to_string(), step, limit }),
    }
}

/// Refuses to record an hour whose stored count differs from what was sent.
fn check_stored(stored: u64, record: &HourRecord) -> Result<(), SinkError> {
    if stored == record.events {
        Ok(())
    } else {
        Err(SinkError::Other(format!("stored {stored} of {} documents of hour {}", record.events, record.hour)))
    }
}

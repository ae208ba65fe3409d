//! One sink per engine. Each loads an hour atomically from the engine's point of
//! view and records it in a ledger kept inside the same engine, so "done" and
//! the data cannot disagree after a crash: begin the hour, write batches,
//! commit the hour with its ledger record (or abort it).
//!
//! Adding an engine: a module here and a variant of [`Sink`].

mod mongo;
mod postgres;

use std::collections::HashSet;

use ghbench_core::{Engine, ServerInfo, Servers, TableName};

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
    #[error("MongoDB-wire server: {0}")]
    Mongo(#[from] mongodb::error::Error),
    #[error("{0}")]
    Other(String),
}

impl SinkError {
    /// The full error chain in one line: tokio-postgres hides the server's
    /// message (e.g. the reason for a refused document) in its source.
    pub fn detail(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            let s_text = s.to_string();
            if !text.contains(&s_text) {
                text.push_str(": ");
                text.push_str(&s_text);
            }
            source = s.source();
        }
        text
    }
}

pub enum Sink {
    Postgres(PostgresSink),
    Mongo(MongoSink),
}

impl Sink {
    pub async fn connect(engine: Engine, servers: &Servers, table: &TableName) -> Result<Sink, ghbench_core::ConnectError> {
        Ok(match engine {
            Engine::Postgres => Sink::Postgres(PostgresSink::new(servers.postgres().await?, table.clone())),
            Engine::Mongo => Sink::Mongo(MongoSink::new(servers.mongo().await?, table.clone())),
        })
    }

    /// Another sink on the same table for a concurrent worker: PostgreSQL needs
    /// a connection per open transaction; the MongoDB client pools by itself.
    pub async fn fork(&self, servers: &Servers) -> Result<Sink, ghbench_core::ConnectError> {
        Ok(match self {
            Sink::Postgres(s) => Sink::Postgres(PostgresSink::new(servers.postgres().await?, s.table().clone())),
            Sink::Mongo(s) => Sink::Mongo(s.clone_handle()),
        })
    }

    /// True when the connection is gone and the sink must be replaced.
    pub fn is_broken(&self) -> bool {
        match self {
            Sink::Postgres(s) => s.is_broken(),
            Sink::Mongo(_) => false,
        }
    }

    /// Server product, version and settings, for every report.
    pub async fn describe(&self, servers: &Servers) -> Result<ServerInfo, SinkError> {
        match self {
            Sink::Postgres(s) => Ok(ghbench_core::describe_postgres(s.client(), &servers.pg_url).await?),
            Sink::Mongo(s) => Ok(ghbench_core::describe_mongo(s.db(), &servers.mongo_url).await?),
        }
    }

    pub fn engine(&self) -> Engine {
        match self {
            Sink::Postgres(_) => Engine::Postgres,
            Sink::Mongo(_) => Engine::Mongo,
        }
    }

    /// Creates the table and ledger if needed; with `drop`, starts from empty.
    /// Forgets ledger entries whose table is gone, so a dropped table is reloaded.
    pub async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        match self {
            Sink::Postgres(s) => s.prepare(drop).await,
            Sink::Mongo(s) => s.prepare(drop).await,
        }
    }

    /// Hour stems this engine's ledger lists as loaded for the table.
    pub async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        match self {
            Sink::Postgres(s) => s.completed_hours().await,
            Sink::Mongo(s) => s.completed_hours().await,
        }
    }

    /// Events the ledger says the table holds.
    pub async fn ledger_events(&self) -> Result<u64, SinkError> {
        match self {
            Sink::Postgres(s) => s.ledger_events().await,
            Sink::Mongo(s) => s.ledger_events().await,
        }
    }

    pub async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        match self {
            Sink::Postgres(s) => s.begin_hour().await,
            Sink::Mongo(s) => s.begin_hour(stem).await,
        }
    }

    pub async fn write(&mut self, batch: &Batch) -> Result<(), SinkError> {
        match self {
            Sink::Postgres(s) => s.write(batch).await,
            Sink::Mongo(s) => s.write(batch).await,
        }
    }

    /// Makes the hour durable together with its ledger record; returns the
    /// number of documents the engine stored for it.
    pub async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        match self {
            Sink::Postgres(s) => s.commit_hour(record).await,
            Sink::Mongo(s) => s.commit_hour(record).await,
        }
    }

    /// Leaves nothing of the hour behind that a later attempt would not replace.
    pub async fn abort_hour(&mut self) {
        match self {
            Sink::Postgres(s) => s.abort_hour().await,
            Sink::Mongo(s) => s.abort_hour().await,
        }
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

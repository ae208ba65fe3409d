//! What a benchmark needs from a database, the same verbs for every engine (as
//! ClickBench asks of every system). Each engine is one module here plus one
//! folder of query files under `queries/`.
//!
//! Adding an engine: a module implementing [`Backend`], one line in [`connect`].

mod mongo;
mod postgres;

use async_trait::async_trait;
use ghbench_core::{Engine, ServerInfo, Servers, TableName};

use crate::catalog::QueryFile;
use crate::ledger::Ledger;
use crate::record::{IndexBuild, Plan, Storage};
use crate::rows::Row;

pub use mongo::MongoBackend;
pub use postgres::PostgresBackend;

/// Name of the ingest ledger table (PostgreSQL) and collection (MongoDB).
pub const LEDGER: &str = "ghbench_ledger";

/// Errors carry the engine's own message; they are recorded, not hidden.
pub type BackendResult<T> = anyhow::Result<T>;

/// Hears of each index as it is built (the CLI's progress display).
pub type OnIndexBuilt = dyn Fn(&IndexBuild) + Send + Sync;

/// A query's result, timed from sending it to receiving its last row.
pub struct Timed {
    pub seconds: f64,
    pub rows: Vec<Row>,
}

#[async_trait]
pub trait Backend: Send + Sync {
    fn engine(&self) -> Engine;

    /// The folder of `queries/` this engine reads.
    fn dialect(&self) -> &'static str {
        self.engine().name()
    }

    /// Product, version and settings of the server.
    async fn describe(&self) -> BackendResult<ServerInfo>;

    /// Events per hour the ingest ledger lists for the table (finished hours only).
    async fn ledger(&self) -> BackendResult<Ledger>;

    /// Data and index sizes, row count.
    async fn sizes(&self) -> BackendResult<Storage>;

    /// Creates the catalog's indexes one at a time (idempotently), timing each;
    /// `built` hears of each as it finishes.
    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt)
        -> BackendResult<Vec<IndexBuild>>;

    /// Runs a query and fetches every row of its result.
    async fn run(&self, query: &QueryFile) -> BackendResult<Timed>;

    /// The plan the engine uses for the query, and whether it uses an index.
    async fn explain(&self, query: &QueryFile) -> Plan;

    /// Clears what this engine can clear of its caches without a restart;
    /// says what it did.
    async fn clear_caches(&self) -> Vec<String>;
}

/// Connects to an engine for the table (the one place that lists the engines).
pub async fn connect(engine: Engine, servers: &Servers, table: &TableName) -> BackendResult<Box<dyn Backend>> {
    Ok(match engine {
        Engine::Postgres => Box::new(PostgresBackend::connect(servers, table).await?),
        Engine::Mongo => Box::new(MongoBackend::connect(servers, table).await?),
    })
}

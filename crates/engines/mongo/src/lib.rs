//! The `mongo` engine: a MongoDB-wire server (MongoDB itself, or SecantusDB),
//! the documents as they are in one collection, as the paper loaded them.
//! Everything this engine is lives in this folder:
//!
//! - [`connect`]: reaching the server (selection and ping bounded) and saying
//!   what answers, with a caveat when it is not MongoDB;
//! - [`encode`]: documents as BSON with ghbench's `_id`, on the decode thread;
//! - [`sink`] and [`lease`]: loading (unordered bulk inserts, a `loading` mark
//!   per hour) and the one-run-per-table lease;
//! - [`ledger`]: the ingest ledger, written by the sink and read by the backend;
//! - [`backend`]: indexes, aggregation pipelines (`queries/mongo/`), plans, sizes;
//! - [`setup`]: the paper's setup and the others written down under
//!   `queries/` (`mongo-tuned`), each an engine of its own.

pub mod abandoned;
pub mod backend;
pub mod connect;
pub mod encode;
pub mod error;
pub mod explain;
pub mod lease;
pub mod ledger;
pub mod setup;
pub mod sink;
pub mod stats;

use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineOption, EngineSpec, TableName};
use ghbench_engine::{AtUrl, Backend, EnginePlugin, Encoder, EngineSink, UrlEngine};
use setup::MongoSetup;

pub use lease::LOCKS;

/// `maxTimeMS: 0`, stated on every read over the whole collection (the timed
/// aggregations without `--query-timeout`, the exact counts): no limit, and
/// an explicit value, so MongoDB 8's `defaultMaxTimeMS` cannot cut one.
pub const NO_TIME_LIMIT: std::time::Duration = std::time::Duration::ZERO;

/// What `just setup` starts (see scripts/setup.sh).
pub const DEFAULT_URL: &str = "mongodb://127.0.0.1:27017/ghbench?directConnection=true";

/// `--mongo-url` / `MONGODB_URI`.
pub const URL: EngineOption = EngineOption {
    long: "mongo-url",
    env: Some("MONGODB_URI"),
    default: Some(DEFAULT_URL),
    value_name: "URI",
    help: "MongoDB connection URI; the database is the one it names, else `ghbench` (serverSelectionTimeoutMS= bounds reaching it).",
    secret: true,
};

/// Where a MongoDB-wire server listens when a URI names no port.
pub const DEFAULT_PORT: u16 = 27017;

/// The `host:port` of the server at `url` ([`DEFAULT_PORT`] when it names
/// none): what `servers.json` is matched against (see `Loader::address`).
/// None for a DNS seed list (`mongodb+srv://`), a replica set's several
/// hosts or a Unix socket.
pub fn address(url: &str) -> Option<String> {
    ghbench_core::place::address_of(url, &["mongodb"], DEFAULT_PORT)
}

pub static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("mongo"),
    aliases: &["mongodb"],
    about: "a MongoDB-wire server (mongod, or SecantusDB), one collection",
    capabilities: Capabilities { server: true, indexes: true, restartable: true, durable: true, optional: false },
    // BSON's limits (16 MiB, 100 levels, 64-bit integers, `_id`) are checked
    // by its encoder, on the BSON.
    limits: DocumentLimits { max_bytes: None, refuses_nul: false, max_object_keys: None, max_depth: None },
    options: &[URL],
    default: true,
    connect_hint: "--mongo-url or MONGODB_URI",
};

/// The collection layout in one of its setups.
#[derive(Clone)]
pub struct Mongo {
    setup: &'static MongoSetup,
}

/// The engine for the registry: the paper's setup.
pub fn plugin() -> Arc<dyn EnginePlugin> {
    Arc::new(AtUrl(Mongo { setup: &setup::PAPER }))
}

/// The setup written down under `queries/<engine>/` (see [`setup`]), as an
/// engine of its own. The files are compiled in: a setup that does not read is
/// a build that must not ship (the catalog's tests read every one).
pub fn setup_plugin(engine: &str) -> Arc<dyn EnginePlugin> {
    let catalog = ghbench_engine::query::compiled_in().unwrap_or_else(|e| panic!("the query catalog compiled in: {e}"));
    let setup = MongoSetup::from_catalog(catalog, engine).unwrap_or_else(|e| panic!("setup {engine}: {e:#}"));
    Arc::new(AtUrl(Mongo { setup: Box::leak(Box::new(setup)) }))
}

#[async_trait]
impl UrlEngine for Mongo {
    fn spec(&self) -> &'static EngineSpec {
        &self.setup.spec
    }

    fn url_option(&self) -> &'static EngineOption {
        &URL
    }

    fn address(&self, url: &str) -> Option<String> {
        address(url)
    }

    async fn sink(&self, url: &str, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        let db = connect::connect(&self.setup.spec, url).await?;
        Ok(Box::new(sink::MongoSink::new(self.setup, db, url.to_string(), table.clone())))
    }

    async fn backend(&self, url: &str, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(backend::MongoBackend::connect(self.setup, url, table).await?))
    }

    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        Some(encode::BsonEncoder::shared())
    }

    async fn undo_change(&self, url: &str, entry: &ghbench_core::changes::Entry) -> Option<Result<String, String>> {
        entry.parameter.as_ref()?;
        let db = match connect::connect(&self.setup.spec, url).await {
            Ok(db) => db,
            Err(e) => return Some(Err(e.to_string())),
        };
        Some(setup::undo_parameter(&db, entry).await)
    }
}

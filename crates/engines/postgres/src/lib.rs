//! The `postgres` engine: PostgreSQL, the documents in one `jsonb` column, as
//! the paper loaded them. Everything this engine is lives in this folder:
//!
//! - [`connect`]: reaching the server (handshake bounded) and describing it,
//!   with [`ssl_params`] and [`tls`]: libpq's `sslmode` and `sslrootcert` on rustls;
//! - [`sink`] and [`lock`]: loading (binary COPY, one transaction per hour) and
//!   the one-run-per-table advisory lock;
//! - [`ledger`]: the ingest ledger, written by the sink and read by the backend;
//! - [`backend`]: indexes, queries (`queries/postgres/`), plans, sizes;
//! - [`setup`]: the paper's setup and the others written down under
//!   `queries/` (`postgres-tuned`), each an engine of its own;
//! - [`citus`]: the paper's table distributed on a Citus cluster (`citus`),
//!   a setup of this layout on a server of its own, summed over its shards.
//!
//! Other engines on PostgreSQL (the normalized engine,
//! `crates/engines/normalized`) reuse [`connect`], [`session`], [`ledger`],
//! [`lock`] and [`sql`].

pub mod abandoned;
pub mod backend;
pub mod citus;
pub mod connect;
pub mod error;
pub mod ledger;
pub mod loaded;
pub mod lock;
pub mod progress;
pub mod session;
pub mod setup;
pub mod sink;
pub mod sql;
pub mod ssl_params;
pub mod tls;

use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineOption, EngineSpec, TableName};
use ghbench_engine::{AtUrl, Backend, EnginePlugin, EngineSink, UrlEngine};
use setup::JsonbSetup;

/// What `just setup` starts (see scripts/setup.sh).
pub const DEFAULT_URL: &str = "postgres://ghbench@127.0.0.1:54320/ghbench";

/// `--pg-url` / `DATABASE_URL`.
pub const URL: EngineOption = EngineOption {
    long: "pg-url",
    env: Some("DATABASE_URL"),
    default: Some(DEFAULT_URL),
    value_name: "URL",
    help: "PostgreSQL connection URL (libpq style; connect_timeout= bounds the handshake; sslmode= and sslrootcert= as in libpq).",
    secret: true,
};

/// Where PostgreSQL listens when a URL names no port.
pub const DEFAULT_PORT: u16 = 5432;

/// The `host:port` of the PostgreSQL server at `url` ([`DEFAULT_PORT`] when
/// it names none): for every engine on PostgreSQL, what `servers.json` is
/// matched against (see `Loader::address`). None for libpq's `key=value`
/// form, several hosts or a Unix socket.
pub fn address(url: &str) -> Option<String> {
    ghbench_core::place::address_of(url, &["postgres", "postgresql"], DEFAULT_PORT)
}

/// jsonb's largest value (`JENTRY_OFFLENMASK`, 2^28 - 1 bytes).
const JSONB_MAX_BYTES: usize = (1 << 28) - 1;

pub static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("postgres"),
    aliases: &["pg", "postgresql"],
    about: "PostgreSQL, the documents in one jsonb column",
    capabilities: Capabilities { server: true, indexes: true, restartable: true, durable: true, optional: false },
    // jsonb keeps numbers exactly and nests deeply, but refuses `\u0000` in
    // strings and values over 255 MB.
    limits: DocumentLimits { max_bytes: Some(JSONB_MAX_BYTES), refuses_nul: true, max_object_keys: None, max_depth: None },
    options: &[URL],
    default: true,
    connect_hint: "--pg-url or DATABASE_URL",
};

/// The `jsonb` layout in one of its setups.
#[derive(Clone)]
pub struct Postgres {
    setup: &'static JsonbSetup,
}

/// The engine for the registry: the paper's setup.
pub fn plugin() -> Arc<dyn EnginePlugin> {
    Arc::new(AtUrl(Postgres { setup: &setup::PAPER }))
}

/// The setup written down under `queries/<engine>/` (see [`setup`]), as an
/// engine of its own. The files are compiled in: a setup that does not read is
/// a build that must not ship (the catalog's tests read every one).
pub fn setup_plugin(engine: &str) -> Arc<dyn EnginePlugin> {
    let catalog = ghbench_engine::query::compiled_in().unwrap_or_else(|e| panic!("the query catalog compiled in: {e}"));
    let setup = JsonbSetup::from_catalog(catalog, engine).unwrap_or_else(|e| panic!("setup {engine}: {e:#}"));
    Arc::new(AtUrl(Postgres { setup: Box::leak(Box::new(setup)) }))
}

/// A setup on Citus written down under `queries/<engine>/` (`citus`), reached
/// at its coordinator ([`citus::URL`]), as an engine of its own.
pub fn citus_plugin(engine: &str) -> Arc<dyn EnginePlugin> {
    let catalog = ghbench_engine::query::compiled_in().unwrap_or_else(|e| panic!("the query catalog compiled in: {e}"));
    let setup = JsonbSetup::citus_from_catalog(catalog, engine, &citus::URL, citus::CONNECT_HINT).unwrap_or_else(|e| panic!("setup {engine}: {e:#}"));
    Arc::new(AtUrl(Postgres { setup: Box::leak(Box::new(setup)) }))
}

#[async_trait]
impl UrlEngine for Postgres {
    fn spec(&self) -> &'static EngineSpec {
        &self.setup.spec
    }

    fn url_option(&self) -> &'static EngineOption {
        self.setup.url_option()
    }

    fn address(&self, url: &str) -> Option<String> {
        address(url)
    }

    async fn sink(&self, url: &str, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        let client = session::Session::open(self.setup, url).await?;
        Ok(Box::new(sink::PostgresSink::new(self.setup, client, url.to_string(), table.clone())))
    }

    async fn backend(&self, url: &str, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(backend::PostgresBackend::connect(self.setup, url, table).await?))
    }

    async fn whole_table_progress(&self, url: &str, table: &TableName) -> Option<String> {
        let client = connect::connect(&self.setup.spec, url).await.ok()?;
        progress::whole_table(&client, &self.setup.table(table)).await
    }
}

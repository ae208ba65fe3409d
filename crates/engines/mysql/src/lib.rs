//! The `mysql` engine: the MySQL protocol family (MariaDB, MySQL 8, TiDB), the
//! documents in one `JSON` column with a BIGINT key made of (hour, line), as
//! the MongoDB engine's `_id` is, and a generated column per indexed path.
//! Everything this engine is lives in this folder:
//!
//! - [`product`]: which server answers (MariaDB, MySQL, TiDB) and how its
//!   dialect differs (query limits, plans, `IF NOT EXISTS`, how it loads);
//! - [`connect`] and [`error`]: reaching the server (bounded) and what its
//!   errors mean;
//! - [`sink`] and [`lock`]: loading (`LOAD DATA LOCAL INFILE` streamed from
//!   the decoder, or multi-row inserts where the server refuses it; one
//!   transaction per hour with its ledger entry) and the one-run-per-table
//!   named lock;
//! - [`ledger`]: the ingest ledger in the server, written with each hour;
//! - [`backend`] and [`explain`]: indexes, queries (`queries/mysql/`), plans,
//!   sizes;
//! - [`setup`]: the paper's setup (`mysql`) and the tuned one
//!   (`mysql-tuned`), each written down under `queries/`.

pub mod abandoned;
pub mod backend;
pub mod cancel;
pub mod connect;
pub mod error;
pub mod explain;
pub mod ledger;
pub mod lock;
pub mod product;
pub mod setup;
pub mod sink;

use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineOption, EngineSpec, TableName};
use ghbench_engine::{AtUrl, Backend, EnginePlugin, EngineSink, UrlEngine};
use setup::MysqlSetup;

/// What `just setup` starts (see scripts/setup.sh).
pub const DEFAULT_URL: &str = "mysql://ghbench@127.0.0.1:33306/ghbench";

/// `--mysql-url` / `MYSQL_URL`.
pub const URL: EngineOption = EngineOption {
    long: "mysql-url",
    env: Some("MYSQL_URL"),
    default: Some(DEFAULT_URL),
    value_name: "URL",
    help: "MySQL-protocol server URL (MariaDB, MySQL 8 or TiDB): mysql://user:password@host:port/database (the database must exist).",
    secret: true,
};

/// Where the MySQL family listens when a URL names no port.
pub const DEFAULT_PORT: u16 = 3306;

/// The `host:port` of the server at `url` ([`DEFAULT_PORT`] when it names none).
pub fn address(url: &str) -> Option<String> {
    ghbench_core::place::address_of(url, &["mysql", "mariadb"], DEFAULT_PORT)
}

/// The deepest nesting MariaDB before 12.2 takes, the document itself being
/// level 1: its JSON parser's `JSON_DEPTH_LIMIT` of 32 counts one level more,
/// so `JSON_VALID` (the JSON column's check) refuses 32 levels of objects or
/// arrays ("Limit of 32 on JSON nested structures depth is reached", measured
/// on 10.11.19) and takes 31.
pub const MARIADB_MAX_DEPTH: usize = 31;

pub static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("mysql"),
    aliases: &["mariadb"],
    about: "the MySQL family (MariaDB, MySQL 8, TiDB), the documents in one JSON column, a generated column per indexed path",
    capabilities: Capabilities { server: true, indexes: true, restartable: true, durable: true, optional: false },
    // A JSON column holds any size up to the packet and LONGTEXT limits; the
    // nesting limit is MariaDB's (MySQL's is 100, BSON's too).
    limits: DocumentLimits { max_bytes: None, refuses_nul: false, max_object_keys: None, max_depth: Some(MARIADB_MAX_DEPTH) },
    options: &[URL],
    // The paper compared PostgreSQL and MongoDB: the default replays it.
    default: false,
    connect_hint: "--mysql-url or MYSQL_URL",
};

/// The JSON-column layout in one of its setups.
#[derive(Clone)]
pub struct Mysql {
    setup: &'static MysqlSetup,
}

/// The engine for the registry: the paper's setup (the family's documented
/// way to index JSON).
pub fn plugin() -> Arc<dyn EnginePlugin> {
    setup_plugin(SPEC.engine.name())
}

/// The setup written down under `queries/<engine>/` (see [`setup`]), as an
/// engine of its own. The files are compiled in: a setup that does not read is
/// a build that must not ship (the catalog's tests read every one).
pub fn setup_plugin(engine: &str) -> Arc<dyn EnginePlugin> {
    let catalog = ghbench_engine::query::compiled_in().unwrap_or_else(|e| panic!("the query catalog compiled in: {e}"));
    let setup = MysqlSetup::from_catalog(catalog, engine).unwrap_or_else(|e| panic!("setup {engine}: {e:#}"));
    Arc::new(AtUrl(Mysql { setup: Box::leak(Box::new(setup)) }))
}

#[async_trait]
impl UrlEngine for Mysql {
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
        let mut server = connect::Server::connect(&self.setup.spec, url).await?;
        connect::for_loading(&mut server.conn).await.map_err(|e| ConnectError::new(&self.setup.spec, url, ghbench_core::error_chain(&e)))?;
        Ok(Box::new(sink::MysqlSink::new(self.setup, server, url.to_string(), table.clone())))
    }

    async fn backend(&self, url: &str, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(backend::MysqlBackend::connect(self.setup, url, table).await?))
    }
}

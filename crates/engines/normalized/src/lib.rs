//! The `normalized` engine: the documents as ToroDB-style relational tables
//! (the mapping is `ghbench-normalize`'s), on the same PostgreSQL as the
//! `jsonb` engine, in schema `normalized`, queried with plain SQL.
//!
//! - [`meta`]: the derived tables and the metadata recording every path,
//!   table, key, type and column; new paths extend them safely while hours
//!   load side by side;
//! - [`sink`]: loading an hour (derived rows by COPY, one transaction with the
//!   ledger row), and `VACUUM (ANALYZE)` after a load;
//! - [`backend`]: indexes and queries (`queries/normalized/`, names through
//!   [`template`]), plans, sizes;
//! - [`from_jsonb`]: `ghbench normalize`, deriving the tables from a loaded
//!   `jsonb` table; [`verify`]: `ghbench normalize --verify`, the round trip.
//!
//! It shares the PostgreSQL engine's connection option, ledger and lock code.

pub mod backend;
pub mod deriver;
pub mod did;
pub mod from_jsonb;
pub mod meta;
pub mod rows;
pub mod sink;
pub mod template;
pub mod verify;

use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineOption, EngineSpec, TableName};
use ghbench_engine::{AtUrl, Backend, EnginePlugin, EngineSink, UrlEngine};

/// Most keys one object of a document may have: each key is a column of its
/// object's table, beside at most four linking columns (`did`, `rid`, `pid`,
/// `seq`), and a PostgreSQL table has at most 1,600 columns. A document over
/// it could never be stored, so every engine quarantines it (`too_many_keys`)
/// rather than leave its hour partial here.
pub const MAX_OBJECT_KEYS: usize = 1600 - 4;

pub static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("normalized"),
    aliases: &["torodb", "relational"],
    about: "the same PostgreSQL, the documents as ToroDB-style relational tables in schema normalized",
    capabilities: Capabilities { server: true, indexes: true, restartable: true, durable: true, optional: false },
    // Text columns refuse `\u0000`; a document has no size limit of its own,
    // but an object's keys are its table's columns (see MAX_OBJECT_KEYS).
    limits: DocumentLimits { max_bytes: None, refuses_nul: true, max_object_keys: Some(MAX_OBJECT_KEYS), max_depth: None },
    options: &[ghbench_postgres::URL],
    default: false,
    connect_hint: "--pg-url or DATABASE_URL",
};

#[derive(Clone)]
pub struct Normalized;

/// The engine for the registry.
pub fn plugin() -> Arc<dyn EnginePlugin> {
    Arc::new(AtUrl(Normalized))
}

#[async_trait]
impl UrlEngine for Normalized {
    fn spec(&self) -> &'static EngineSpec {
        &SPEC
    }

    fn url_option(&self) -> &'static EngineOption {
        &ghbench_postgres::URL
    }

    fn address(&self, url: &str) -> Option<String> {
        ghbench_postgres::address(url)
    }

    async fn sink(&self, url: &str, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        let client = ghbench_postgres::session::Session::connect(&SPEC, url).await?;
        Ok(Box::new(sink::NormalizedSink::new(client, url.to_string(), table.clone())))
    }

    async fn backend(&self, url: &str, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(backend::NormalizedBackend::connect(url, table).await?))
    }
}

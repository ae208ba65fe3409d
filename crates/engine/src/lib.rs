//! What an engine is to ghbench: the traits it implements, everything of
//! ghbench it uses, and the list of engines. An engine crate depends on this
//! crate and `ghbench-core` and on no other ghbench crate (an engine built on
//! another engine, as `normalized` on `postgres`, also on that engine's crate).
//!
//! A new engine is its folder (`crates/engines/<name>`), its query folder
//! (`queries/<name>/`), one line in `src/registry.rs` and, if the project's
//! setup starts a server for it, its lines in the setup scripts. The folder
//! implements [`EnginePlugin`] (or, on a server at one URL, [`UrlEngine`],
//! registered as [`AtUrl`]): its [`EngineSpec`] (name, capabilities,
//! options), a [`Loader`] for `ingest` and a [`Backend`] for `index` and
//! `query`. The [`Registry`] lists the engines; commands, `--help`, `doctor`,
//! error texts, cold runs and reports take every engine from it and name none
//! (docs/engines.md lists the three commands that belong to one engine).
//!
//! The API, each item re-exported by name so it reads in this one file:
//!
//! - the crate root: the traits, [`EngineError`] and [`FailureKind`] (what a
//!   failure means: a lost connection, transient, permanent; loading retries
//!   and querying reconnects by it), the [`Registry`];
//! - [`load`]: what a sink is sent and uses (batches, the hour's record, the
//!   checks of what is stored, the table's lock, free space, digests);
//! - [`query`]: what a backend is given and uses (the query catalog compiled
//!   in, prepared queries, the query timeout, memory);
//! - [`ledger`], [`rows`], [`record`]: what a backend answers;
//! - [`cgroup`]: memory limits for processes an engine starts;
//! - [`sql`]: SQL files split into statements, for engines that speak SQL.
//!
//! Where an engine's server is comes from the engine ([`Loader::address`]):
//! `servers.json`, which the setup scripts write, is matched against it.
//! docs/engines.md is the checklist for adding an engine; docs/guide.md walks
//! through adding a toy one.

use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{ConnectError, Engine, EngineConfig, EngineOption, EngineSpec, TableName};

pub use ghbench_core::{Capabilities, EngineError, FailureKind, ServerInfo};
pub use load::{Encoder, EngineSink, Loader};
pub use query::Backend;

use load::Policy;

/// Loading (`ingest`): what an engine implements ([`crate::Loader`],
/// [`crate::EngineSink`], [`crate::Encoder`]) and what its sink uses: the
/// batches it is sent, the record of an hour, the checks of what is stored,
/// the table's lock, the space it has left.
pub mod load {
    pub use ghbench_ingest::clean::{out_of_range, CleanDoc, Defect, Policy, Rejected};
    pub use ghbench_ingest::decode::{gz_lines, EngineBatch};
    pub use ghbench_ingest::sink::{
        check_counts, check_estimate, check_stored, note_every, Encoded, Encoder, EngineSink, HourRecord, Loader, RowEstimate, SinkError, StoredCheck, StoredHour,
        TableLock, Upkeep,
    };
    pub use ghbench_ingest::source::{HourBytes, Source};
    pub use ghbench_ingest::space::{Besides, Free, Rewrite, Room};

    /// The one-run-per-table lock [`crate::EngineSink::lock`] returns: kept
    /// by a task of the engine's ([`crate::load::lock::TableLock::kept`])
    /// that checks it every [`crate::load::lock::KEEP_EVERY`] and notes why it
    /// was lost ([`crate::load::lock::set`] on its [`crate::load::lock::Lost`]).
    pub mod lock {
        pub use ghbench_ingest::sink::lock::{set, Lost, TableLock, KEEP_EVERY, LOCK_WAIT};
    }

    /// The digest of a file as the ledgers record it (`source_digest`), for
    /// an engine that keeps files of its own.
    pub mod digest {
        pub use ghbench_ingest::digest::{of_file, short, HashingWriter, WrittenDigest};
    }
}

/// Querying (`index`, `query`, `bench`): the [`crate::Backend`] an engine
/// implements, what it is given to run (the query files of the catalog
/// compiled in) and how it says the memory its data competes for.
pub mod query {
    pub use ghbench_olap::backend::{limited_memory, nodes_disk_limit, nodes_memory, prepared, this_machine_disk_limit, this_machine_memory, Backend, BackendResult, OnIndexBuilt, Prepared, QueryTimedOut, EXACT_COUNT_MAX_BYTES};
    pub use ghbench_olap::catalog::{compiled_in, embedded_setup, parse_json, Catalog, QueryFile, TABLE_PLACEHOLDER};
    pub use ghbench_olap::environment::memory_bytes;
}

/// SQL files as statements, split by a real tokenizer in the engine's
/// dialect; the name a `CREATE INDEX IF NOT EXISTS` makes.
pub mod sql;

/// What an engine's ledger says it holds, hour by hour ([`crate::Backend::ledger`]).
pub mod ledger {
    pub use ghbench_olap::ledger::{Entry, Ledger};
}

/// A query's result rows, as every engine's are compared ([`crate::Backend::execute`]).
pub mod rows {
    pub use ghbench_record::rows::{Cell, Row};
}

/// What a [`crate::Backend`] reports for the run's record: sizes, index builds,
/// plans, the memory its data competes for.
pub mod record {
    pub use ghbench_record::run::{AfterIndexes, DiskLimit, IndexBuild, IndexSize, MemoryShare, Plan, Storage};
}

/// Memory cgroups, for an engine that starts processes of its own under a
/// limit (polars' workers).
pub mod cgroup {
    pub use ghbench_olap::cgroup::{remove_abandoned, CgroupError, MemoryCgroup};
}

/// Disk throttles, for an engine that starts processes of its own under a
/// limit (polars' workers).
pub mod throttle {
    pub use ghbench_olap::throttle::{remove_abandoned, BlockDevice, DiskRules, IoCgroup};
}

/// One engine, as registered.
#[async_trait]
pub trait EnginePlugin: Send + Sync {
    fn spec(&self) -> &EngineSpec;

    /// The engine configured for a run, for loading (connects on demand).
    fn loader(&self, config: &EngineConfig) -> Arc<dyn Loader>;

    /// A connection for indexing, describing and querying `table`.
    async fn backend(&self, config: &EngineConfig, table: &TableName) -> anyhow::Result<Box<dyn Backend>>;

    /// How the engine encodes clean documents, if it does not take the JSON
    /// text as it is. Run on every line of every run (see `Policy::encode`).
    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        None
    }

    /// `bench --memory`: from now on, the processes the engine starts of its
    /// own (an embedded engine's workers) start inside a memory limit of
    /// `bytes`; None: without one again. A server goes under its limit by
    /// the restart `servers.json` lists instead (`GHBENCH_MEMORY`). Err says
    /// what could not be limited. The default starts no process: nothing to do.
    fn limit_memory(&self, bytes: Option<u64>) -> Result<(), String> {
        let _ = bytes;
        Ok(())
    }

    /// `--disk`: from now on, the processes the engine starts of its own
    /// read under a throttle of `rules` on the disk under their data (as
    /// `config` places it); None: without one again. A server goes under
    /// its throttle by the restart `servers.json` lists (`GHBENCH_DISK`).
    fn limit_disk(&self, config: &EngineConfig, rules: Option<&throttle::DiskRules>) -> Result<(), String> {
        let _ = (config, rules);
        Ok(())
    }

    /// Puts back a change of the journal (`ghbench_core::changes`) that
    /// this engine made on its server and only it can undo (a server
    /// parameter), through its configured connection: None when the entry
    /// is not of this engine or its server is not the one configured.
    /// Ok says what was put back.
    async fn undo_change(&self, config: &EngineConfig, entry: &ghbench_core::changes::Entry) -> Option<Result<String, String>> {
        let _ = (config, entry);
        None
    }
}

/// An engine on a server reached at one URL: it says only what differs from
/// other such engines, and [`AtUrl`] makes it a plug-in.
#[async_trait]
pub trait UrlEngine: Clone + Send + Sync + 'static {
    fn spec(&self) -> &'static EngineSpec;

    /// The option that holds the URL (with its default).
    fn url_option(&self) -> &'static EngineOption;

    /// The `host:port` of the server at `url`, the engine's default port when
    /// the URL names none (see [`Loader::address`]); e.g.
    /// `ghbench_core::place::address_of(url, &["postgres", "postgresql"], 5432)`.
    fn address(&self, url: &str) -> Option<String>;

    /// A connection for loading `table`.
    async fn sink(&self, url: &str, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError>;

    /// A connection for indexing, describing and querying `table`.
    async fn backend(&self, url: &str, table: &TableName) -> anyhow::Result<Box<dyn Backend>>;

    /// See [`Loader::whole_table_progress`].
    async fn whole_table_progress(&self, url: &str, table: &TableName) -> Option<String> {
        let _ = (url, table);
        None
    }

    /// See [`EnginePlugin::encoder`].
    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        None
    }

    /// See [`EnginePlugin::undo_change`]: called only with entries of this
    /// engine on the server at `url`.
    async fn undo_change(&self, url: &str, entry: &ghbench_core::changes::Entry) -> Option<Result<String, String>> {
        let _ = (url, entry);
        None
    }
}

/// The plug-in of a [`UrlEngine`].
pub struct AtUrl<E>(pub E);

impl<E: UrlEngine> AtUrl<E> {
    fn url(&self, config: &EngineConfig) -> String {
        config.get(self.0.url_option()).unwrap_or_default().to_string()
    }
}

#[async_trait]
impl<E: UrlEngine> EnginePlugin for AtUrl<E> {
    fn spec(&self) -> &EngineSpec {
        self.0.spec()
    }

    fn loader(&self, config: &EngineConfig) -> Arc<dyn Loader> {
        Arc::new(UrlLoader { engine: self.0.clone(), url: self.url(config) })
    }

    async fn backend(&self, config: &EngineConfig, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        self.0.backend(&self.url(config), table).await
    }

    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        self.0.encoder()
    }

    async fn undo_change(&self, config: &EngineConfig, entry: &ghbench_core::changes::Entry) -> Option<Result<String, String>> {
        let url = self.url(config);
        let ours = entry.engine.as_deref() == Some(self.0.spec().engine.name())
            && self.0.address(&url).is_some_and(|a| ghbench_core::place::same_address(&a, &entry.server.address));
        if !ours {
            return None;
        }
        self.0.undo_change(&url, entry).await
    }
}

/// A [`UrlEngine`] configured for a run.
struct UrlLoader<E> {
    engine: E,
    url: String,
}

#[async_trait]
impl<E: UrlEngine> Loader for UrlLoader<E> {
    fn spec(&self) -> &EngineSpec {
        self.engine.spec()
    }

    fn location(&self) -> String {
        ghbench_core::redact_url(&self.url)
    }

    fn address(&self) -> Option<String> {
        self.engine.address(&self.url)
    }

    async fn connect(&self, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        self.engine.sink(&self.url, table).await
    }

    async fn whole_table_progress(&self, table: &TableName) -> Option<String> {
        self.engine.whole_table_progress(&self.url, table).await
    }
}

/// The engines ghbench knows, in the order `--help` lists them.
#[derive(Clone, Default)]
pub struct Registry {
    plugins: Vec<Arc<dyn EnginePlugin>>,
}

/// A name `--engines` does not know.
#[derive(Debug)]
pub struct UnknownEngine {
    pub name: String,
    pub known: String,
}

impl std::fmt::Display for UnknownEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown engine '{}': expected one of {}", self.name, self.known)
    }
}

impl std::error::Error for UnknownEngine {}

impl Registry {
    /// Adds an engine; a second engine of the same name replaces nothing and is refused.
    pub fn with(mut self, plugin: Arc<dyn EnginePlugin>) -> Self {
        let name = plugin.spec().engine.clone();
        assert!(self.find(name.name()).is_none(), "engine {name} registered twice");
        self.plugins.push(plugin);
        self
    }

    pub fn plugins(&self) -> impl Iterator<Item = &Arc<dyn EnginePlugin>> {
        self.plugins.iter()
    }

    /// The engine called `name` (or one of its aliases), in any case.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn EnginePlugin>> {
        self.plugins.iter().find(|p| p.spec().answers_to(name))
    }

    /// Each name resolved, each engine once, in the order given.
    pub fn resolve<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<Arc<dyn EnginePlugin>>, UnknownEngine> {
        let mut chosen: Vec<Arc<dyn EnginePlugin>> = Vec::new();
        for name in names {
            let plugin = self.find(name.as_ref()).ok_or_else(|| UnknownEngine { name: name.as_ref().to_string(), known: self.names() })?;
            if !chosen.iter().any(|c| c.spec().engine == plugin.spec().engine) {
                chosen.push(plugin.clone());
            }
        }
        Ok(chosen)
    }

    /// `postgres, mongo`: every engine's name, for messages.
    pub fn names(&self) -> String {
        self.plugins.iter().map(|p| p.spec().engine.to_string()).collect::<Vec<_>>().join(", ")
    }

    /// Every engine, comma-separated: `ghbench bench`'s default, the whole benchmark.
    pub fn all_engines(&self) -> String {
        self.plugins.iter().map(|p| p.spec().engine.to_string()).collect::<Vec<_>>().join(",")
    }

    /// The engines used when `--engines` is not given, comma-separated.
    pub fn default_engines(&self) -> String {
        self.plugins.iter().filter(|p| p.spec().default).map(|p| p.spec().engine.to_string()).collect::<Vec<_>>().join(",")
    }

    /// The engines that need no server: what stands in when no server answers.
    pub fn embedded(&self) -> impl Iterator<Item = &Arc<dyn EnginePlugin>> {
        self.plugins.iter().filter(|p| !p.spec().capabilities.server)
    }

    /// The cleaning policy: what every registered engine can store, whichever
    /// engines a run loads, so the data never depends on that choice.
    pub fn policy(&self) -> Policy {
        let mut policy = Policy::strictest(self.plugins.iter().map(|p| &p.spec().limits));
        for plugin in &self.plugins {
            if let Some(encoder) = plugin.encoder() {
                policy = policy.with_encoder(plugin.spec().engine.clone(), encoder);
            }
        }
        policy
    }

    /// Every engine's options, each with the engine it belongs to.
    pub fn options(&self) -> impl Iterator<Item = (&Engine, &EngineOption)> {
        self.plugins.iter().flat_map(|p| p.spec().options.iter().map(move |o| (&p.spec().engine, o)))
    }
}

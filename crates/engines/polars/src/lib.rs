//! The `polars` engine: embedded, no server. Each loaded hour is one Parquet
//! file, its columns built from ghbench's own decoded documents with an
//! explicit schema ([`schema`]); Queries A–D are polars SQL files
//! (`queries/polars/`) run by polars' SQL context over the table's files.
//! Everything this engine is lives in this folder:
//!
//! - [`schema`]: the layout (flat typed columns for the JSON paths
//!   `queries/polars/columns.json` declares, the whole event as JSON text) and
//!   the columns built from documents;
//! - [`store`]: a table's folder: hour files written atomically, the ledger
//!   they make, the lock file;
//! - [`segment`] and [`compact`]: hours merged into segments after a load, so
//!   a year of hours is a few files to a query;
//! - [`sink`]: loading, an hour at a time;
//! - [`backend`]: describing, sizes, and running the SQL files.

pub mod backend;
pub mod compact;
pub mod schema;
pub mod segment;
pub mod sink;
pub mod store;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineConfig, EngineOption, EngineSpec, ServerInfo, TableName};
use ghbench_engine::throttle::{BlockDevice, DiskRules};
use ghbench_engine::{Backend, EnginePlugin, EngineSink, Loader};

/// Where the engine keeps its tables unless told otherwise: beside the
/// servers' data that `just setup` keeps in `.ghbench/`.
pub const DEFAULT_DIR: &str = ".ghbench/polars";

/// `--polars-dir` / `GHBENCH_POLARS_DIR`.
pub const DIR: EngineOption = EngineOption {
    long: "polars-dir",
    env: Some("GHBENCH_POLARS_DIR"),
    default: Some(DEFAULT_DIR),
    value_name: "DIR",
    help: "Folder of the embedded polars engine's data: one folder per table, one Parquet file per loaded hour.",
    secret: false,
};

pub static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("polars"),
    aliases: &["parquet", "embedded"],
    about: "embedded polars (no server): one Parquet file per hour, polars SQL",
    // Files are fsynced before they are renamed into place: durable. There is
    // no server to restart and nothing to index.
    capabilities: Capabilities { server: false, indexes: false, restartable: false, durable: true, optional: false },
    limits: DocumentLimits { max_bytes: None, refuses_nul: false, max_object_keys: None, max_depth: None },
    options: &[DIR],
    default: false,
    connect_hint: "--polars-dir or GHBENCH_POLARS_DIR (a folder ghbench can write)",
};

/// polars' switch from memory-mapping local Parquet files to reading their
/// byte ranges asynchronously, as it reads cloud files.
const FORCE_ASYNC: &str = "POLARS_FORCE_ASYNC";

/// Makes polars read local files asynchronously unless the user chose
/// otherwise. Through a memory map every page a cold query touches is a
/// synchronous fault; the async reader asks for each column chunk at once. On
/// 1M events (40 hour files, this machine) cold runs took 0.11–0.14 s mapped
/// and 0.016–0.049 s async; hot runs the same. It is an environment variable
/// polars reads when its configuration is first used: call this first thing
/// in `main`, before any thread exists (setting the environment is not
/// thread-safe).
pub fn prefer_async_reads() {
    if std::env::var_os(FORCE_ASYNC).is_none() {
        std::env::set_var(FORCE_ASYNC, "1");
    }
}

/// What answers: the polars library in this process, on the table's folder.
pub fn info(table: &store::TableDir) -> ServerInfo {
    let build = format!("polars {} (Rust crate, embedded in ghbench {})", polars::VERSION, env!("CARGO_PKG_VERSION"));
    let mut info = ServerInfo::new(SPEC.engine.clone(), "polars", polars::VERSION, build, "");
    // A folder, not a URL: nothing to hide in it.
    info.url = table.path().display().to_string();
    // polars sizes its thread pool from POLARS_MAX_THREADS, else the CPUs.
    let threads = std::env::var("POLARS_MAX_THREADS")
        .ok()
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.to_string()))
        .unwrap_or_else(|| "unknown".into());
    info.settings.insert("threads".into(), threads);
    info.settings.insert("compression".into(), sink::COMPRESSION.into());
    info.settings.insert("engine".into(), format!("{:?}", backend::ENGINE).to_lowercase());
    let reader = match std::env::var(FORCE_ASYNC).as_deref() {
        Ok("1" | "true") => "async (POLARS_FORCE_ASYNC=1)",
        _ => "memory-mapped",
    };
    info.settings.insert("reader".into(), reader.into());
    info.settings.insert("row_group_rows".into(), sink::ROW_GROUP_ROWS.to_string());
    // What was flattened, so a reader knows which paths are columns of their own.
    let layout = schema::Layout::declared().map_or_else(|e| format!("unreadable: {e}"), |l| l.signature());
    info.settings.insert("layout".into(), layout);
    let process = match (worker::program(), std::env::var_os(worker::IN_PROCESS)) {
        (Some(_), None) => "a worker process of ghbench's own (ghbench polars-worker), one per connection",
        (Some(_), Some(_)) => "ghbench's own process (GHBENCH_POLARS_IN_PROCESS set)",
        (None, _) => "the caller's process (ghbench used as a library)",
    };
    info.settings.insert("process".into(), process.into());
    info.caveat = Some(
        "embedded: polars runs in a process of ghbench's on Parquet files (hot runs read them from the OS page cache), \
         with no server, no network round trip and no indexes; a columnar reference point, not a database server"
            .into(),
    );
    info
}

/// The engine for the registry.
pub fn plugin() -> Arc<dyn EnginePlugin> {
    Arc::new(Polars)
}

struct Polars;

/// The data folder a run was given.
fn data_dir(config: &EngineConfig) -> PathBuf {
    PathBuf::from(config.get(&DIR).unwrap_or(DEFAULT_DIR))
}

#[async_trait]
impl EnginePlugin for Polars {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    fn loader(&self, config: &EngineConfig) -> Arc<dyn Loader> {
        Arc::new(PolarsLoader { dir: data_dir(config) })
    }

    async fn backend(&self, config: &EngineConfig, table: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(backend::PolarsBackend::open(&data_dir(config), table)?))
    }

    /// Its query workers (see [`worker::limit_memory`]).
    fn limit_memory(&self, bytes: Option<u64>) -> Result<(), String> {
        worker::limit_memory(bytes).map_err(|e| format!("polars' workers: {e}"))
    }

    /// Its query workers, on the disk under its data folder (see [`worker::limit_disk`]).
    fn limit_disk(&self, config: &EngineConfig, rules: Option<&DiskRules>) -> Result<(), String> {
        let Some(rules) = rules else { return worker::limit_disk(None) };
        // The folder may not be made yet (a bench loads it later): the disk it will be on.
        let dir = data_dir(config);
        let existing = dir.ancestors().find(|a| a.exists()).unwrap_or(Path::new("/"));
        let device = BlockDevice::under(existing).map_err(|e| format!("polars' data folder: {e}"))?;
        worker::limit_disk(Some((&device, rules))).map_err(|e| format!("polars' workers: {e}"))
    }
}

/// The engine configured for a run: its data folder.
struct PolarsLoader {
    dir: PathBuf,
}

#[async_trait]
impl Loader for PolarsLoader {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    async fn connect(&self, table: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        let store = store::TableDir::new(&self.dir, table);
        // The one thing that can fail before loading: a folder ghbench cannot make.
        store.create().map_err(|e| ConnectError::new(&SPEC, &self.location(), e))?;
        Ok(Box::new(sink::PolarsSink::new(store)))
    }
}

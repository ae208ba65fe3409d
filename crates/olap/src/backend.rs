//! What a benchmark needs from a database, the same verbs for every engine (as
//! ClickBench asks of every system): describe, sizes, indexes, run, explain,
//! caches. Each engine implements [`Backend`] in its own folder and reads its
//! own folder of query files under `queries/`.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use ghbench_core::{Engine, EngineSpec, ServerInfo, Setup};

use crate::catalog::QueryFile;
use crate::ledger::Ledger;
use crate::cgroup::MemoryCgroup;
use crate::record::{AfterIndexes, DiskLimit, IndexBuild, MemoryLimit, MemoryShare, NodeDiskLimit, NodeMemory, Plan, Storage};
use crate::throttle::IoCgroup;
use crate::rows::Row;

/// Tables larger than this get the engine's fast row count (the planner's
/// estimate, the collection's metadata) instead of an exact count, which
/// would read the whole table before every command (minutes on a year).
pub const EXACT_COUNT_MAX_BYTES: u64 = 1 << 30;

/// Errors carry the engine's own message; they are recorded, not hidden.
pub type BackendResult<T> = anyhow::Result<T>;

/// Hears of each index as it is built (the CLI's progress display).
pub type OnIndexBuilt = dyn Fn(&IndexBuild) + Send + Sync;

/// A query made ready to send, in the engine's own form (SQL text, a parsed
/// pipeline, a plan): whatever should not be timed.
pub type Prepared = Box<dyn Any + Send + Sync>;

/// The process an engine's data is read by on this machine: its own
/// (polars' worker, ghbench itself) or its server's top process. None for a
/// server elsewhere, or one whose process cannot be found.
async fn local_process<B: Backend + ?Sized>(backend: &B) -> Option<u32> {
    if let Some(pid) = backend.own_process().await {
        return Some(pid);
    }
    let url = backend.server_url().filter(|url| ghbench_core::Place::of(url) == ghbench_core::Place::ThisMachine)?.to_string();
    let address = backend.server_address();
    tokio::task::spawn_blocking(move || crate::kernel_io::server_pid(&url, address.as_deref()).ok()).await.ok().flatten()
}

/// The memory an engine's data competes for, on this machine: the limit of
/// the memory cgroup its processes run in (the server's, or polars' worker's)
/// when one is below the machine's memory, else the machine's (MemTotal).
/// None for a server elsewhere (see [`Backend::memory`]).
pub async fn this_machine_memory<B: Backend + ?Sized>(backend: &B) -> Option<MemoryShare> {
    // An engine with no server runs in ghbench's processes (its own or a worker's).
    let in_process = match backend.server_url() {
        None => true,
        Some(url) if ghbench_core::Place::of(url) == ghbench_core::Place::ThisMachine => false,
        Some(_) => return None,
    };
    let machine = crate::environment::memory_bytes();
    let cgroup = local_process(backend).await.and_then(|pid| MemoryCgroup::of_process(pid).ok());
    if let Some(limited) = cgroup.and_then(|c| limited_memory(&c, machine)) {
        return Some(limited);
    }
    let from = match in_process {
        true => "this machine's memory (MemTotal): the engine runs in ghbench's processes or its workers",
        false => "this machine's memory (MemTotal): the server runs here",
    };
    Some(MemoryShare { bytes: machine?, from: from.into(), limit: None, nodes: Vec::new() })
}

/// The memory of a server of several nodes on this machine (a Citus
/// coordinator and its workers), each `host:port` with the table's bytes it
/// holds: when every node runs under a memory limit of its own, their limits
/// in total, each node's beside; else this machine's memory, which they
/// share (each node listed where some are limited; a node whose process
/// cannot be found counts as unlimited). None when a node is elsewhere.
pub async fn nodes_memory(nodes: Vec<(String, u64)>) -> Option<MemoryShare> {
    let counted = tokio::task::spawn_blocking(move || {
        let machine = crate::environment::memory_bytes();
        let mut each = Vec::new();
        let (names, data): (Vec<String>, Vec<u64>) = nodes.into_iter().unzip();
        for ((node, pid), data_bytes) in local_node_pids(names)?.into_iter().zip(data) {
            let cgroup = pid.and_then(|pid| MemoryCgroup::of_process(pid).ok());
            let node = match cgroup.and_then(|c| limited_memory(&c, machine)) {
                Some(limited) => NodeMemory { node, data_bytes, bytes: limited.bytes, limit: limited.limit },
                None => NodeMemory { node, data_bytes, bytes: machine?, limit: None },
            };
            each.push(node);
        }
        let unlimited: Vec<&str> = each.iter().filter(|n| n.limit.is_none()).map(|n| n.node.as_str()).collect();
        let share = match unlimited.len() {
            0 => MemoryShare { bytes: each.iter().map(|n| n.bytes).sum(), from: format!("the memory limits of the {} nodes' cgroups, in total (each node's beside)", each.len()), limit: None, nodes: Vec::new() },
            n if n == each.len() => {
                let from = format!("this machine's memory (MemTotal), which the {n} nodes share (none runs under a limit of its own)");
                return Some(MemoryShare { bytes: machine?, from, limit: None, nodes: Vec::new() });
            }
            _ => MemoryShare { bytes: machine?, from: format!("this machine's memory (MemTotal): {} run under no limit of their own", unlimited.join(", ")), limit: None, nodes: Vec::new() },
        };
        Some(MemoryShare { nodes: each, ..share })
    });
    counted.await.ok().flatten()
}

/// The disk throttles of a server of several nodes on this machine (Citus:
/// its coordinator and workers, each `host:port`), each node's listed, the
/// first throttled node's rules above: None when no node is throttled, or a
/// node is elsewhere. A node whose process cannot be found counts as free.
pub async fn nodes_disk_limit(nodes: Vec<String>) -> Option<DiskLimit> {
    let read = tokio::task::spawn_blocking(move || {
        let each: Vec<NodeDiskLimit> = local_node_pids(nodes)?
            .into_iter()
            .map(|(node, pid)| NodeDiskLimit { node, limit: pid.and_then(|pid| IoCgroup::of_process(pid).ok()?.limit()) })
            .collect();
        let first = each.iter().find_map(|n| n.limit.clone())?;
        Some(DiskLimit { nodes: each, ..first })
    });
    read.await.ok().flatten()
}

/// Each node of a server of several (`host:port`), with the process id of
/// the server listening there (None: not found, e.g. its descriptors
/// unreadable to a user not root, which counts as under no limit); None when
/// a node is on another machine. Reads /proc: call it off the runtime.
pub fn local_node_pids(nodes: Vec<String>) -> Option<Vec<(String, Option<u32>)>> {
    nodes
        .into_iter()
        .map(|node| {
            let url = format!("postgres://{node}");
            (ghbench_core::Place::of(&url) == ghbench_core::Place::ThisMachine).then(|| {
                let pid = crate::kernel_io::server_pid(&url, Some(&node)).ok();
                (node, pid)
            })
        })
        .collect()
}

/// The disk throttle the cgroup of an engine's processes on this machine
/// holds (`--disk`), with its counters as of now; None: none, or elsewhere.
pub async fn this_machine_disk_limit<B: Backend + ?Sized>(backend: &B) -> Option<DiskLimit> {
    let pid = local_process(backend).await?;
    IoCgroup::of_process(pid).ok()?.limit()
}

/// The memory a cgroup's limit leaves its processes, when it is a limit
/// (below the machine's memory), with the counters as of now.
pub fn limited_memory(cgroup: &MemoryCgroup, machine: Option<u64>) -> Option<MemoryShare> {
    let bytes = cgroup.limit().filter(|&limit| machine.is_none_or(|m| limit < m))?;
    let limit = MemoryLimit { cgroup_version: cgroup.version, cgroup: cgroup.path.clone(), enforced_by: cgroup.enforced_by(), before_runs: cgroup.counters(), over_runs: None };
    Some(MemoryShare { bytes, from: format!("the memory limit of the cgroup its processes run in ({})", cgroup.path), limit: Some(limit), nodes: Vec::new() })
}

#[async_trait]
pub trait Backend: Send + Sync {
    fn spec(&self) -> &EngineSpec;

    fn engine(&self) -> &Engine {
        &self.spec().engine
    }

    /// The folder of `queries/` this engine reads: its name.
    fn dialect(&self) -> &str {
        self.engine().name()
    }

    /// The setup this engine runs, as written down in its folder of the
    /// catalog compiled in (`queries/<engine>/setup.json`): reports label its
    /// numbers with it. None: not written down.
    fn setup(&self) -> Option<Setup> {
        crate::catalog::embedded_setup(self.dialect())
    }

    /// Product, version and settings of the server (or library).
    async fn describe(&self) -> BackendResult<ServerInfo>;

    /// Events per hour the ingest ledger lists for the table (finished hours only).
    async fn ledger(&self) -> BackendResult<Ledger>;

    /// Data and index sizes, row count.
    async fn sizes(&self) -> BackendResult<Storage>;

    /// Creates the catalog's indexes one at a time (idempotently), timing each;
    /// `built` hears of each as it finishes. Only asked of engines whose
    /// capabilities say they take indexes.
    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        let _ = (file, built);
        anyhow::bail!("{} takes no indexes", self.engine())
    }

    /// After the index builds (`built_now`: one was built anew): what the
    /// engine must do so its planner knows what the indexes filter on
    /// (PostgreSQL's `ANALYZE`), timed; None when it needs nothing, e.g. an
    /// engine without such statistics, or indexes whose statistics exist.
    async fn after_indexes(&self, built_now: bool) -> BackendResult<Option<AfterIndexes>> {
        let _ = built_now;
        Ok(None)
    }

    /// Reads the query file into what [`Backend::execute`] sends (not timed).
    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared>;

    /// Sends a prepared query and fetches every row of its result, as rows
    /// ghbench compares. The runner times this call, the same for every engine.
    /// A query stopped by the limit of [`Backend::limit_queries`] fails with
    /// [`QueryTimedOut`] in its chain; one whose connection was lost, with
    /// the engine's typed error saying so (see [`Backend::reconnect`]).
    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>>;

    /// What the server has read so far, as counters that only grow
    /// (PostgreSQL: blocks of the engine's tables and indexes read and found
    /// in its buffers; MongoDB: bytes and pages read into WiredTiger's
    /// cache): taken before and after a query's runs, their difference is
    /// what the runs read, with no run of its own. Err: why nothing is counted.
    async fn read_counters(&self) -> Result<BTreeMap<String, u64>, String> {
        Err(format!("{} counts no reads", self.engine()))
    }

    /// `--query-timeout`: from the next [`Backend::prepare`] on, the engine
    /// stops each query (its plan included) that runs longer than `limit`,
    /// in the engine itself where it can (PostgreSQL `statement_timeout`,
    /// MongoDB `maxTimeMS`); None: no limit at all, not even a server's
    /// default. Carried over to [`Backend::reconnect`] and
    /// [`Backend::open_client`]. The runner also stops waiting a little
    /// after the limit, for an engine that does not keep it.
    fn limit_queries(&mut self, limit: Option<Duration>) {
        let _ = limit;
    }

    /// The plan the engine uses for the query, and whether it uses an index:
    /// estimated, without running the query (at the paper's scale a run is
    /// hours); `measured` (`--analyze-plans`): as the query ran, which runs it
    /// once more (PostgreSQL `EXPLAIN ANALYZE`, MongoDB `executionStats`).
    async fn explain(&self, query: &QueryFile, measured: bool) -> Plan;

    /// After a query's runs and its plan: undoes what [`Backend::prepare`]
    /// changed on the server beyond this engine's data (a server parameter
    /// its setup sets for its own queries), so the next engine on the same
    /// server finds it as it was. An error says the server was left changed.
    async fn after_query(&self) -> BackendResult<()> {
        Ok(())
    }

    /// The engine computes in ghbench's own process (so ghbench's CPU is
    /// mostly the engine's): an engine without a server, unless it runs its
    /// queries in processes of their own (polars' workers).
    fn runs_in_process(&self) -> bool {
        !self.spec().capabilities.server
    }

    /// The process on this machine that does this engine's reads when
    /// ghbench runs it itself (polars' worker, or ghbench's own process):
    /// the kernel's I/O counters of it and the processes under it are read
    /// around each query's runs. None: the server [`Backend::server_url`]
    /// points at is looked up by its port instead.
    async fn own_process(&self) -> Option<u32> {
        None
    }

    /// What keeps the engine from answering as it is set up, though its
    /// server answered (a Citus worker that does not): `doctor` fails on it;
    /// a run goes on, its queries failing or waiting as they do. Ok: nothing.
    async fn health(&self) -> Result<(), String> {
        Ok(())
    }

    /// The nodes whose processes read for this engine's queries when the
    /// one server [`Backend::server_address`] names is not all of them (a
    /// Citus coordinator and its workers), each `host:port`: the kernel's
    /// counters of them all are summed. None: that one server. Err: why the
    /// nodes cannot be listed, which the record says in their place.
    async fn reading_nodes(&self) -> Option<Result<Vec<String>, String>> {
        None
    }

    /// The server's connection string (None for an engine without a server):
    /// tells whether it runs on this machine (see `ghbench_core::Place`).
    fn server_url(&self) -> Option<&str> {
        None
    }

    /// The `host:port` of the server [`Backend::server_url`] points at, as
    /// the engine reads its URL (its own default port when the URL names
    /// none; the same answer as its loader's `address`): the port its
    /// processes are found by on this machine. None: no single TCP server.
    fn server_address(&self) -> Option<String> {
        None
    }

    /// The memory the engine's data competes for: this machine's, for a
    /// server that runs here or an engine in ghbench's own processes. A
    /// server elsewhere may say its own (MongoDB's `hostInfo`); else None.
    async fn memory(&self) -> Option<MemoryShare> {
        this_machine_memory(self).await
    }

    /// The kernel's throttle on the disk reads of the engine's processes
    /// (`--disk`), when they run under one.
    async fn disk_limit(&self) -> Option<DiskLimit> {
        this_machine_disk_limit(self).await
    }

    /// Clears what this engine can clear of its caches without a restart;
    /// says what it did.
    async fn clear_caches(&self) -> Vec<String> {
        Vec::new()
    }

    /// A new connection to the same engine and table, to replace this one
    /// once it was lost: when a step's error carries an
    /// [`ghbench_core::EngineError`] of kind
    /// [`ghbench_core::FailureKind::LostConnection`] (see
    /// [`ghbench_core::EngineError::lost_connection_in`]), which the engine
    /// attaches where its driver fails. An engine with no connection never
    /// loses one.
    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        Err(anyhow::anyhow!("{} cannot reconnect", self.engine()))
    }

    /// Another client of the same engine, table and setup for the concurrency
    /// phase: a connection of its own, so N clients are N sessions on the
    /// server. An engine without a server gives a handle of its own (polars:
    /// with a worker process of its own).
    async fn open_client(&self) -> BackendResult<Box<dyn Backend>> {
        self.reconnect().await
    }

    /// What the server says of a long step another session of this engine
    /// runs on its table (an index build: PostgreSQL's
    /// `pg_stat_progress_create_index`), asked on this session while the
    /// other works; None when it says nothing.
    async fn progress(&self) -> Option<String> {
        None
    }

    /// The server's settings that bound how many clients it serves at once
    /// and how much each gets (e.g. PostgreSQL's `max_connections` and
    /// parallel workers), as it says them: for the concurrency phase's record.
    /// A setting it would not say is recorded with why.
    async fn concurrency_limits(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Ends the connection before ghbench exits: a client with background
    /// tasks (the MongoDB driver's pool) is shut down while the runtime still
    /// runs them.
    async fn close(&self) {}
}

/// A query stopped by `--query-timeout`, by the engine (or, where the engine
/// did not keep the limit, by ghbench no longer waiting for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryTimedOut {
    pub limit: Duration,
    /// The engine stopped the query; false: ghbench stopped waiting for it
    /// (its connection may still be busy with it).
    pub by_engine: bool,
}

impl fmt::Display for QueryTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cut by --query-timeout {}", ghbench_core::limit::said(self.limit))
    }
}

impl std::error::Error for QueryTimedOut {}

impl QueryTimedOut {
    /// The limit, if `error` is a query cut by it.
    /// Found as a context of `error` (the engines add it to the engine's
    /// own error) or as a cause.
    pub fn in_chain(error: &anyhow::Error) -> Option<QueryTimedOut> {
        error.downcast_ref::<QueryTimedOut>().copied().or_else(|| error.chain().find_map(|cause| cause.downcast_ref::<QueryTimedOut>().copied()))
    }

    /// The engine's error for a query it stopped at `limit`, said as cut by it.
    pub fn wrap(limit: Duration, error: impl Into<anyhow::Error>) -> anyhow::Error {
        error.into().context(QueryTimedOut { limit, by_engine: true })
    }

    /// ghbench stopped waiting for a query the engine did not stop at `limit`.
    pub fn waited_out(limit: Duration, error: impl Into<anyhow::Error>) -> anyhow::Error {
        error.into().context(QueryTimedOut { limit, by_engine: false })
    }
}

/// The engine's own prepared form of a query, or an error naming the mix-up.
pub fn prepared<'a, T: 'static>(engine: &Engine, query: &'a Prepared) -> BackendResult<&'a T> {
    query.downcast_ref::<T>().ok_or_else(|| anyhow::anyhow!("{engine} was given a query another engine prepared"))
}

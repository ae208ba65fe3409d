//! The run record: everything one `ghbench query` run measured, serialised as
//! the results JSON (schema documented in docs/results-schema.md). Reports are
//! views of this record only, so a saved file can be re-rendered and compared.

use std::collections::BTreeMap;

use ghbench_core::{Capabilities, Engine, ServerInfo, Setup};
use serde::{Deserialize, Serialize};

use crate::catalog::{Compare, PaperResults};
use crate::concurrency::ConcurrencyRecord;
use crate::rows::Row;

/// Bumped whenever a field changes meaning or goes away (adding fields does not).
/// 2: an engine's `server` may be missing (`server_error` says why); the
/// "faster by" column compares with `context.baseline`.
pub const SCHEMA: &str = "ghbench-olap/2";
/// Older schemas this ghbench still reads (see [`RunRecord::read`]).
pub const READABLE_SCHEMAS: [&str; 2] = [V1, SCHEMA];
const V1: &str = "ghbench-olap/1";

/// Why a results file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a ghbench query result: {0}")]
    NotAResult(String),
    #[error("schema {0}, which this ghbench cannot read (it reads {list}); re-render it with the ghbench that wrote it", list = READABLE_SCHEMAS.join(", "))]
    Schema(String),
}

impl RunRecord {
    /// A results file of this schema or an older readable one, as this schema.
    pub fn read(text: &str) -> Result<RunRecord, ReadError> {
        let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| ReadError::NotAResult(e.to_string()))?;
        let schema = value.get("schema").and_then(|s| s.as_str()).ok_or_else(|| ReadError::NotAResult("no schema field".into()))?;
        match schema {
            SCHEMA => {}
            V1 => upgrade_v1(&mut value),
            other => return Err(ReadError::Schema(other.to_string())),
        }
        value["schema"] = SCHEMA.into();
        serde_json::from_value(value).map_err(|e| ReadError::NotAResult(e.to_string()))
    }

    /// No engine disagreed or failed, and all held the same data (a single-engine
    /// run has nothing to disagree with).
    pub fn no_disagreement(&self) -> bool {
        let same_data = !matches!(&self.context.data_consistency, Some(data) if !data.agree);
        same_data
            && self
                .queries
                .iter()
                .all(|q| matches!(q.verification.status, VerificationStatus::Agree | VerificationStatus::NotCompared))
    }
}

/// What a `ghbench-olap/1` file meant, said as `/2` says it. `/1` knew two
/// engines: its "faster by" column was always PostgreSQL's against MongoDB's,
/// and its reports told a MongoDB-wire server from MongoDB by the version the
/// server reported beside its own.
fn upgrade_v1(record: &mut serde_json::Value) {
    const FIRST_BASELINE: &str = "postgres";
    if let Some(published) = record.get_mut("published").and_then(|p| p.as_object_mut()) {
        if let Some(faster_by) = published.remove("postgres_faster_by") {
            published.insert("faster_by".into(), faster_by);
        }
        published.entry("baseline").or_insert_with(|| FIRST_BASELINE.into());
    }
    let Some(context) = record.get_mut("context").and_then(|c| c.as_object_mut()) else { return };
    let ran_baseline = context["engines"].as_array().is_some_and(|e| e.iter().any(|e| e["engine"] == FIRST_BASELINE));
    if ran_baseline {
        context.entry("baseline").or_insert_with(|| FIRST_BASELINE.into());
    }
    for server in context.get_mut("engines").and_then(|e| e.as_array_mut()).into_iter().flatten().filter_map(|e| e.get_mut("server")) {
        let wire = server["settings"].get("reported_mongodb_version").is_some() && server["product"] != "MongoDB";
        if wire && server.get("caveat").is_none() {
            let label = server["label"].as_str().unwrap_or("this server").to_string();
            server["caveat"] = format!(
                "{label} is a MongoDB-wire server, not MongoDB: its timings say nothing about MongoDB's speed; they only show this setup"
            )
            .into();
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub context: Context,
    /// One entry per query × variant, in run order.
    pub queries: Vec<QueryRecord>,
    /// The paper's published numbers, shown beside ours for context.
    pub published: Option<PaperResults>,
    /// The concurrency phase (`--clients`), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<ConcurrencyRecord>,
    /// False while the run goes on: the record is written after every query,
    /// so a run that stops (killed, a full disk, a dropped terminal) leaves
    /// the queries it finished. Files from before the flag are finished.
    #[serde(default = "finished")]
    pub finished: bool,
}

fn finished() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Context {
    pub ghbench_version: String,
    /// The commit ghbench was built from (compiled in); None: not built from a checkout.
    pub git_commit: Option<String>,
    /// Uncommitted changes to the sources it was built from.
    pub git_dirty: Option<bool>,
    /// A digest of those changes (`blake3:…`): two builds of one commit with
    /// different changes are different ghbenches. None without changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_changes: Option<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// The command line, URLs with their passwords hidden.
    pub arguments: Vec<String>,
    pub table: String,
    /// Where the query texts came from: `embedded` or a folder.
    pub catalog: String,
    /// Timed runs per engine × query × variant (not counting a cold run).
    pub repeat: usize,
    pub cold: ColdRecord,
    pub machine: Machine,
    pub engines: Vec<EngineRecord>,
    /// The engine every other is compared with in "faster by" (`--baseline`);
    /// None in older files: then the first engine.
    #[serde(default)]
    pub baseline: Option<Engine>,
    /// Whether the engines hold the same data, checked before timing; None in
    /// files written before the check existed, and for `ghbench index`.
    #[serde(default)]
    pub data_consistency: Option<DataConsistency>,
    /// `--query-timeout`, in seconds: each query's limit; None: no limit
    /// applied, not even a server's default (ghbench's sessions turn those off).
    #[serde(default)]
    pub query_timeout_seconds: Option<f64>,
    /// A digest of the query texts the run times (every engine's), so a
    /// resumed run can tell the catalog did not change; None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_digest: Option<String>,
    /// `--analyze-plans`: each query ran once more, after its timed runs, for
    /// its measured plan (false in older files).
    #[serde(default)]
    pub analyze_plans: bool,
    /// This run went on from an unfinished record (`--resume`): which queries
    /// it kept from there, timed then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<Resumed>,
}

/// What a resumed run kept from the run it went on from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumed {
    /// When the run it went on from started (RFC 3339, UTC).
    pub from_started_at: String,
    /// The queries (a bench: the sizes) kept from it, e.g. `A corrected`.
    pub kept: Vec<String>,
    /// Which earlier run timed each kept one, oldest first: a record resumed
    /// more than once holds the work of several runs. Empty in older files:
    /// then all of `kept` was timed by the run started `from_started_at`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timed_by: Vec<TimedBy>,
}

/// The kept work one earlier run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedBy {
    /// When that run started (RFC 3339, UTC).
    pub started_at: String,
    pub kept: Vec<String>,
}

impl Resumed {
    /// Going on from the run started `then_started_at`, itself resumed
    /// (`then_resumed`) or not, keeping `kept`: each kept one credited to
    /// the run that timed it.
    pub fn going_on_from(then_started_at: &str, then_resumed: Option<&Resumed>, kept: Vec<String>) -> Resumed {
        let mut timed_by: Vec<TimedBy> = then_resumed.map(Resumed::runs).unwrap_or_default();
        let earlier: Vec<&String> = timed_by.iter().flat_map(|run| &run.kept).collect();
        let its_own: Vec<String> = kept.iter().filter(|k| !earlier.contains(k)).cloned().collect();
        if !its_own.is_empty() {
            timed_by.push(TimedBy { started_at: then_started_at.to_string(), kept: its_own });
        }
        Resumed { from_started_at: then_started_at.to_string(), kept, timed_by }
    }

    /// The earlier runs and what each timed, oldest first.
    pub fn runs(&self) -> Vec<TimedBy> {
        match self.timed_by.is_empty() {
            true => vec![TimedBy { started_at: self.from_started_at.clone(), kept: self.kept.clone() }],
            false => self.timed_by.clone(),
        }
    }

    /// `A corrected timed by the run started T1; B corrected by the run
    /// started T2` (`verb` timed, `what` run), for the views.
    pub fn said(&self, verb: &str, what: &str) -> String {
        let runs: Vec<String> = self
            .runs()
            .iter()
            .enumerate()
            .map(|(i, run)| format!("{} {}by the {what} started {}", run.kept.join(", "), if i == 0 { format!("{verb} ") } else { String::new() }, run.started_at))
            .collect();
        runs.join("; ")
    }
}

/// Do the engines hold the same data? Their ingest ledgers compared hour by
/// hour, and each table's exact row count compared with its own ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataConsistency {
    pub agree: bool,
    /// One sentence per difference, e.g. `mongo lacks 1 hour postgres holds:
    /// 2015-01-01T00 (7702 events)`: hours summarised as ranges, counts exact.
    pub differences: Vec<String>,
}

/// What `--cold` did before each query's first run, said honestly.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ColdRecord {
    pub requested: bool,
    /// How it was asked for: `restart` or `clear` (`--cold=`); absent in
    /// older files and without --cold. A resumed run must ask the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// True only if every engine's server was restarted (an embedded engine
    /// started afresh) and the page cache dropped before each first run:
    /// `--cold` (`--cold=restart`) on servers `just setup` started does this.
    pub true_cold: bool,
    /// The engines whose every first run was truly cold (see `true_cold`).
    #[serde(default)]
    pub true_cold_engines: Vec<Engine>,
    /// e.g. `hot (no cache dropped)`, `page cache dropped, server not restarted`.
    pub label: String,
    pub actions: Vec<String>,
    /// Engines whose server runs on another machine, with its hosts: dropping
    /// this machine's page cache did not reach them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elsewhere: Vec<String>,
    /// `--rounds`: the hot runs went in rounds, every query once per round
    /// (A, B, C, D, A, B, …), so the other queries ran between two runs of
    /// one query; false (and absent in older files): each query's runs back
    /// to back. Kept with the cold runs: both say what a run found cached.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rounds: bool,
    /// `--cold-repeat`: cold runs of every query, each after its own restart
    /// and page-cache drop; 1 (and absent in older files) with --cold, 0 without.
    #[serde(default, skip_serializing_if = "is_at_most_one")]
    pub runs: usize,
}

fn is_at_most_one(n: &usize) -> bool {
    *n <= 1
}

impl ColdRecord {
    /// Cold runs of every query: `runs`, at least one when asked for (older
    /// files say none), none without --cold.
    pub fn runs_per_query(&self) -> usize {
        match self.requested {
            true => self.runs.max(1),
            false => 0,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: Option<String>,
    pub logical_cores: Option<usize>,
    pub memory_bytes: Option<u64>,
    pub os_release: Option<String>,
    /// The disk under the servers' data and its measured sequential read
    /// speed (`bench --memory` and `--regime`, where data outgrows memory
    /// and the disk sets the pace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Disk>,
}

/// One engine: what server answered, what data it holds, how big it is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineRecord {
    pub engine: Engine,
    /// What the engine said it can do; None in older files.
    #[serde(default)]
    pub capabilities: Option<Capabilities>,
    /// The setup the engine ran, change by change with sources (None: not
    /// written down, or an older file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Setup>,
    /// None when the engine could not describe itself (`server_error` says why).
    pub server: Option<ServerRecord>,
    #[serde(default)]
    pub server_error: Option<String>,
    pub data: Option<DataLoaded>,
    pub data_error: Option<String>,
    pub storage: Option<Storage>,
    pub storage_error: Option<String>,
    /// The memory the engine's data competed for (None: not known, e.g. a
    /// server elsewhere that does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryShare>,
    /// The kernel's throttle on the engine's disk reads and writes, when its
    /// processes ran under one (`--disk`); None: the disk ran free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_limit: Option<DiskLimit>,
}

/// `262 MB/s` (262,144,000 bytes), `4.2 MB/s`, `410 kB/s`: to the nearest
/// MB, with a decimal under 10 MB where it is not a whole number of them.
fn megabytes_a_second(bytes: u64) -> String {
    match bytes {
        b if b < 1000 => format!("{b} B/s"),
        b if b < 1_000_000 => format!("{} kB/s", thousands((b + 500) / 1000)),
        b if b >= 10_000_000 || b.is_multiple_of(1_000_000) => format!("{} MB/s", thousands((b + 500_000) / 1_000_000)),
        b => format!("{:.1} MB/s", b as f64 / 1e6),
    }
}

/// A throttle on a disk: read and write operations and bytes a second, as
/// the kernel takes them (`--disk riops=1000,rbps=437MB`). None: not limited.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskRules {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_second: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_second: Option<u64>,
}

impl DiskRules {
    pub fn is_empty(&self) -> bool {
        *self == DiskRules::default()
    }

    /// `1,000 read IOPS, 437 MB/s read`.
    pub fn said(&self) -> String {
        let parts: Vec<String> = [
            self.read_iops.map(|n| format!("{} read IOPS", thousands(n))),
            self.read_bytes_per_second.map(|b| format!("{} read", megabytes_a_second(b))),
            self.write_iops.map(|n| format!("{} write IOPS", thousands(n))),
            self.write_bytes_per_second.map(|b| format!("{} written", megabytes_a_second(b))),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() { "no limit".into() } else { parts.join(", ") }
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A throttle the kernel enforced on an engine's block I/O (a cgroup), and
/// what it counted: the proof it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskLimit {
    pub cgroup_version: CgroupVersion,
    /// The cgroup's path in its hierarchy (`/ghbench/1a2b-postgres`).
    pub cgroup: String,
    /// The block device throttled, as the kernel names it: `254:0 (vda)`.
    pub device: String,
    pub rules: DiskRules,
    /// The kernel files that set it, and what they leave unlimited.
    pub enforced_by: String,
    /// Counted when the engine was described, before the runs.
    pub before_runs: IoCounters,
    /// What grew over the runs; None until they end, or when unreadable.
    /// Of a server of several nodes: the nodes' counts summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_runs: Option<IoCounters>,
    /// A server of several nodes (Citus), each node's throttle: the fields
    /// above are the first throttled node's (its rules, device and cgroup),
    /// but the counts over the runs. Empty: one server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeDiskLimit>,
}

/// One node of a server of several and its disk throttle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDiskLimit {
    /// `host:port`.
    pub node: String,
    /// None: the node's disk ran free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<DiskLimit>,
}

impl DiskLimit {
    /// `1,000 read IOPS on 254:0 (vda) (cgroup v1 …); over the runs: 88.1 MiB in 11,270 reads`;
    /// of several nodes, each node's.
    pub fn said(&self) -> String {
        if self.nodes.is_empty() {
            return self.one_said();
        }
        let each: Vec<String> = self
            .nodes
            .iter()
            .map(|n| match &n.limit {
                Some(limit) => format!("{} {}", n.node, limit.one_said()),
                None => format!("{} not throttled", n.node),
            })
            .collect();
        format!("each of {} nodes: {}", self.nodes.len(), each.join("; "))
    }

    /// What the kernel counted over the runs on every node, summed into
    /// [`DiskLimit::over_runs`] (a count a node lacks leaves the sum None).
    pub fn sum_nodes_over_runs(&mut self) {
        let counted: Vec<Option<&IoCounters>> = self.nodes.iter().filter_map(|n| n.limit.as_ref()).map(|l| l.over_runs.as_ref()).collect();
        let sum = |field: fn(&IoCounters) -> Option<u64>| counted.iter().map(|c| c.and_then(field)).sum::<Option<u64>>();
        if !counted.is_empty() {
            self.over_runs = Some(IoCounters { read_bytes: sum(|c| c.read_bytes), reads: sum(|c| c.reads), written_bytes: sum(|c| c.written_bytes), writes: sum(|c| c.writes) });
        }
    }

    fn one_said(&self) -> String {
        let mut said = format!("{} on {} ({})", self.rules.said(), self.device, self.enforced_by);
        if let Some(over) = &self.over_runs {
            let mut counted = Vec::new();
            if let Some(bytes) = over.read_bytes {
                counted.push(match over.reads {
                    Some(reads) => format!("{} read in {} reads", ghbench_core::size::said(bytes), thousands(reads)),
                    None => format!("{} read", ghbench_core::size::said(bytes)),
                });
            }
            if let Some(bytes) = over.written_bytes {
                counted.push(format!("{} written", ghbench_core::size::said(bytes)));
            }
            if !counted.is_empty() {
                said.push_str(&format!("; over the runs: {}", counted.join(", ")));
            }
        }
        said
    }
}

/// Block I/O a cgroup's processes did, counted by the kernel on the
/// throttled device (v1 `blkio.throttle.io_service*`, v2 `io.stat`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCounters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<u64>,
}

impl IoCounters {
    /// What grew from `before` to `self`; a count that shrank: None.
    pub fn since(&self, before: &IoCounters) -> IoCounters {
        let grew = |after: Option<u64>, before: Option<u64>| after?.checked_sub(before?);
        IoCounters {
            read_bytes: grew(self.read_bytes, before.read_bytes),
            reads: grew(self.reads, before.reads),
            written_bytes: grew(self.written_bytes, before.written_bytes),
            writes: grew(self.writes, before.writes),
        }
    }
}

/// [`MemoryShare::from`] of a memory the user declared (`--server-memory`).
pub const DECLARED: &str = "declared by the user (--server-memory), not measured";

/// The memory an engine had, and where the figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryShare {
    pub bytes: u64,
    /// e.g. "this machine's memory (MemTotal): the server runs here".
    pub from: String,
    /// The kernel's limit the engine ran under, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<MemoryLimit>,
    /// A server of several nodes (Citus), each under a limit of its own:
    /// what each holds and has; `bytes` is then their memory in total.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeMemory>,
}

impl MemoryShare {
    /// What the kernel counted over the runs under the limit; of a server of
    /// several nodes each under its own, the nodes' counts summed, the peak
    /// and usage each the highest of any node's. None where nothing was
    /// counted, or a limited node's counts are missing.
    pub fn over_runs(&self) -> Option<MemoryCounters> {
        if let Some(limit) = &self.limit {
            return limit.over_runs.clone();
        }
        // A limited node whose counts are missing leaves the cluster's unknown.
        let counted: Vec<&MemoryCounters> = self.nodes.iter().filter_map(|n| n.limit.as_ref()).map(|l| l.over_runs.as_ref()).collect::<Option<_>>()?;
        MemoryCounters::of_nodes(&counted)
    }
}

/// One node of a server of several: the table's bytes it holds (its shards,
/// indexes included) and the memory it has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeMemory {
    /// `host:port`.
    pub node: String,
    pub data_bytes: u64,
    pub bytes: u64,
    /// Its cgroup's limit (None: the node is not limited; `bytes` is this machine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<MemoryLimit>,
}

impl NodeMemory {
    /// Its data over its memory.
    pub fn data_to_memory(&self) -> f64 {
        self.data_bytes as f64 / self.bytes.max(1) as f64
    }
}

/// A memory limit the kernel enforced on an engine's processes (a cgroup),
/// and what it counted: the proof that the limit held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryLimit {
    /// `v1` or `v2`, and the cgroup's path in its hierarchy (`/ghbench/1a2b-postgres`).
    pub cgroup_version: CgroupVersion,
    pub cgroup: String,
    /// How: the kernel file that sets it, that the page cache counts, swap.
    pub enforced_by: String,
    /// Counted when the engine was described, before the runs.
    pub before_runs: MemoryCounters,
    /// What grew over the runs (peak and usage as of their end); None until
    /// they end, or when the counters could not be read again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_runs: Option<MemoryCounters>,
}

/// What the kernel counted for a cgroup, as of one moment or over a span
/// (then each count is what it grew by). Whatever the kernel does not offer is None.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryCounters {
    /// Memory charged, page cache included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    /// The most ever charged since the cgroup was made (for a server that
    /// `just setup` or `bench --memory` started under it: since it started,
    /// its load and index builds included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<u64>,
    /// Times a charge hit the limit and had to reclaim (v1 `memory.failcnt`,
    /// v2 `memory.events` max).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_hits: Option<u64>,
    /// Processes the kernel killed for want of memory under the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// Pages read again soon after reclaim pushed them out
    /// (`workingset_refault_*`): the sign that the working set does not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refaults: Option<u64>,
    /// Page faults that had to read from storage (`pgmajfault`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_faults: Option<u64>,
    /// Bytes its processes read from block devices (v1 blkio, v2 `io.stat`;
    /// None where this kernel does not count them per cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
}

impl MemoryCounters {
    /// The counts of a server's nodes, each under a limit of its own, as
    /// one: counts summed, the peak and usage each the highest of any
    /// node's (what came nearest its limit). None for no node.
    pub fn of_nodes(counted: &[&MemoryCounters]) -> Option<MemoryCounters> {
        if counted.is_empty() {
            return None;
        }
        let sum = |field: fn(&MemoryCounters) -> Option<u64>| counted.iter().map(|c| field(c)).sum::<Option<u64>>();
        let most = |field: fn(&MemoryCounters) -> Option<u64>| counted.iter().filter_map(|c| field(c)).max();
        Some(MemoryCounters {
            usage_bytes: most(|c| c.usage_bytes),
            peak_bytes: most(|c| c.peak_bytes),
            limit_hits: sum(|c| c.limit_hits),
            oom_kills: sum(|c| c.oom_kills),
            refaults: sum(|c| c.refaults),
            major_faults: sum(|c| c.major_faults),
            read_bytes: sum(|c| c.read_bytes),
        })
    }

    /// What grew from `before` to `self` (peak and usage as of `self`); a
    /// count that shrank belongs to another cgroup of the same name: None.
    pub fn since(&self, before: &MemoryCounters) -> MemoryCounters {
        let grew = |after: Option<u64>, before: Option<u64>| after?.checked_sub(before?);
        MemoryCounters {
            usage_bytes: self.usage_bytes,
            peak_bytes: self.peak_bytes,
            limit_hits: grew(self.limit_hits, before.limit_hits),
            oom_kills: grew(self.oom_kills, before.oom_kills),
            refaults: grew(self.refaults, before.refaults),
            major_faults: grew(self.major_faults, before.major_faults),
            read_bytes: grew(self.read_bytes, before.read_bytes),
        }
    }
}

impl MemoryLimit {
    /// For people: `limit 512.0 MiB (cgroup v1 …); over the runs: peak 498.2 MiB, the limit hit 1,204 times, 0 OOM kills, 88,120 refaults`.
    pub fn said(&self, bytes: u64) -> String {
        let mut said = format!("limit {} ({})", ghbench_core::size::said(bytes), self.enforced_by);
        if let Some(over) = &self.over_runs {
            let mut counted = Vec::new();
            if let Some(peak) = over.peak_bytes {
                counted.push(format!("peak {}", ghbench_core::size::said(peak)));
            }
            let counts = [(over.limit_hits, "times the limit was hit"), (over.oom_kills, "OOM kills"), (over.refaults, "refaults"), (over.major_faults, "major faults")];
            counted.extend(counts.iter().filter_map(|(n, what)| Some(format!("{} {what}", n.as_ref()?))));
            if let Some(read) = over.read_bytes {
                counted.push(format!("{} read from disk", ghbench_core::size::said(read)));
            }
            said.push_str(&format!("; over the runs: {}", counted.join(", ")));
        }
        said
    }
}

impl EngineRecord {
    /// The engine's stored bytes (table and indexes) over its memory: below 1
    /// its data can stay cached, beyond it hot runs read from disk.
    /// Of several nodes each under a limit: the fullest node's, which decides
    /// whether its hot runs read from disk.
    pub fn data_to_memory(&self) -> Option<f64> {
        let (storage, memory) = (self.storage.as_ref()?, self.memory.as_ref().filter(|m| m.bytes > 0)?);
        if let Some(fullest) = memory.nodes.iter().map(NodeMemory::data_to_memory).max_by(f64::total_cmp) {
            return Some(fullest);
        }
        Some((storage.table_bytes + storage.index_bytes) as f64 / memory.bytes as f64)
    }

    /// `data 0.07× memory` / `data 4.1× memory: read from disk`.
    /// With a limit: `data 4.1× memory (a 512.0 MiB limit): read from disk`.
    pub fn fit_said(&self) -> Option<String> {
        let ratio = self.data_to_memory()?;
        let limit = match self.memory.as_ref() {
            Some(memory) if !memory.nodes.is_empty() => {
                let total = self.storage.as_ref().map_or(0, |s| s.table_bytes + s.index_bytes) as f64 / memory.bytes.max(1) as f64;
                // Where some node runs under no limit, `bytes` is this machine's memory, which they share.
                let whose = match memory.nodes.iter().all(|n| n.limit.is_some()) {
                    true => "their",
                    false => "this machine's",
                };
                format!(" on its fullest node ({} nodes; {} {whose} {} in total)", memory.nodes.len(), ratio_text(total), ghbench_core::size::said(memory.bytes))
            }
            Some(memory) if memory.limit.is_some() => format!(" (a {} limit)", ghbench_core::size::said(memory.bytes)),
            Some(memory) if memory.from == DECLARED => format!(" (as declared: {})", ghbench_core::size::said(memory.bytes)),
            _ => String::new(),
        };
        Some(match ratio <= 1.0 {
            true => format!("data {} memory{limit}", ratio_text(ratio)),
            false => format!("data {} memory{limit}: read from disk", ratio_text(ratio)),
        })
    }
}

/// The label of the runs (`cold.label`) with each engine's data against its
/// memory (`postgres data 0.07× memory, mongo data 4.1× memory: read from
/// disk`). "Every run after the first finds data cached" holds only for data
/// that fits: where some does not, the label says so.
pub fn with_fit(label: &str, engines: &[EngineRecord]) -> String {
    let said: Vec<String> = engines.iter().filter_map(|e| Some(format!("{} {}", e.engine, e.fit_said()?))).collect();
    if said.is_empty() {
        return format!("{label}{}", throttled(engines));
    }
    let outgrown = engines.iter().any(|e| e.data_to_memory().is_some_and(|r| r > 1.0));
    let label = match outgrown {
        true => label.replace("every run after the first finds data cached", "every run after the first finds cached what fits in memory"),
        false => label.to_string(),
    };
    format!("{label}; {}{}", said.join(", "), throttled(engines))
}

/// `; disk throttled: postgres, polars to 1,000 read IOPS, 437 MB/s read`
/// (each set of rules once), or nothing when every disk ran free. A server
/// of several nodes says that each node had the rules to itself (`citus
/// (each of its 3 nodes)`): together they read more than one server could.
fn throttled(engines: &[EngineRecord]) -> String {
    let mut groups: Vec<(&DiskRules, Vec<String>)> = Vec::new();
    for engine in engines {
        let Some(limit) = &engine.disk_limit else { continue };
        let throttled_nodes = limit.nodes.iter().filter(|n| n.limit.is_some()).count();
        let name = match (throttled_nodes, limit.nodes.len()) {
            (_, 0) => engine.engine.to_string(),
            (some, all) if some == all => format!("{} (each of its {all} nodes)", engine.engine),
            (some, all) => format!("{} (each of {some} of its {all} nodes)", engine.engine),
        };
        match groups.iter_mut().find(|(rules, _)| **rules == limit.rules) {
            Some((_, names)) => names.push(name),
            None => groups.push((&limit.rules, vec![name])),
        }
    }
    let said: Vec<String> = groups.iter().map(|(rules, names)| format!("{} to {}", names.join(", "), rules.said())).collect();
    match said.is_empty() {
        true => String::new(),
        false => format!("; disk throttled: {}", said.join("; ")),
    }
}

/// Two significant digits below 1 (`0.00047×`, `0.30×`), then `4.1×`, `12×`.
pub fn ratio_text(ratio: f64) -> String {
    match ratio {
        r if r <= 0.0 => "0×".to_string(),
        r if r < 1.0 => format!("{r:.digits$}×", digits = (-r.log10()).ceil() as usize + 1),
        r if r < 10.0 => format!("{r:.1}×"),
        r => format!("{r:.0}×"),
    }
}

/// A server (or embedded library) as its engine described it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    /// `PostgreSQL`, `MongoDB` or `SecantusDB` (never MongoDB for SecantusDB).
    pub product: String,
    pub version: String,
    /// e.g. `SecantusDB 0.7.0b3 (MongoDB-wire, reports 8.2.11)`.
    pub label: String,
    pub build: String,
    /// Password hidden.
    pub url: String,
    pub settings: BTreeMap<String, String>,
    /// What a reader must know before trusting the numbers, from the engine.
    #[serde(default)]
    pub caveat: Option<String>,
}

impl From<&ServerInfo> for ServerRecord {
    fn from(info: &ServerInfo) -> Self {
        ServerRecord {
            product: info.product.clone(),
            version: info.version.clone(),
            label: info.label.clone(),
            build: info.build.clone(),
            url: info.url.clone(),
            settings: info.settings.clone(),
            caveat: info.caveat.clone(),
        }
    }
}

/// What the engine's ingest ledger (`ghbench_ledger`) says the table holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DataLoaded {
    pub hours: u64,
    pub events: u64,
    pub first_hour: Option<String>,
    pub last_hour: Option<String>,
    /// Seconds the engine spent loading these hours, summed hour by hour (each
    /// from starting the hour to committing it; hours load side by side, so the
    /// wall time was shorter), plus `upkeep_seconds`. None when some hour was
    /// not timed. A sum, never a rate: see `wall_seconds`.
    #[serde(default)]
    pub load_seconds: Option<f64>,
    /// The load's wall time: the span during which at least one hour was
    /// loading (first write to last commit, the pauses between runs left
    /// out), upkeep apart. None in older files and when some hour's ledger
    /// entry does not say when it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// Of `load_seconds`: work on the whole table after loading it (PostgreSQL
    /// engines: `VACUUM (ANALYZE)`, so the planner has statistics and a
    /// visibility map before anything is timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upkeep_seconds: Option<f64>,
    /// Attempts at hours made again after a fault while loading (a server
    /// stopped, a connection lost, a damaged download), summed over the hours:
    /// `load_seconds` includes their time and the waits between them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub load_retries: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DataLoaded {
    /// Events per second of the load's wall time, when it is known (never of
    /// the hours' times summed).
    pub fn events_per_second(&self) -> Option<f64> {
        self.wall_seconds.filter(|s| *s > 0.0).map(|s| self.events as f64 / s)
    }

    /// The hours' own times summed, without the upkeep.
    pub fn hours_summed_seconds(&self) -> Option<f64> {
        self.load_seconds.map(|s| s - self.upkeep_seconds.unwrap_or(0.0))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Storage {
    pub rows: u64,
    /// False when `rows` is the planner's estimate (large PostgreSQL tables).
    pub rows_exact: bool,
    /// Bytes on disk: PostgreSQL's `pg_table_size`, MongoDB's `storageSize`
    /// (compressed), the Parquet files' size.
    pub table_bytes: u64,
    /// The indexes' bytes on disk.
    pub index_bytes: u64,
    pub indexes: Vec<IndexSize>,
    /// The data's uncompressed size, where the engine reports one beside its
    /// size on disk (MongoDB's `size`: the documents' BSON bytes). Never
    /// compared with another engine's `table_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_bytes: Option<u64>,
    /// Where the numbers come from, where an engine has more than one way to
    /// tell (e.g. MongoDB's `$collStats`, or the `collStats` command when the
    /// stage answers no sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes_from: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexSize {
    pub name: String,
    pub bytes: u64,
}

/// What one `ghbench index` run did (written as JSON beside the query results).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexRunRecord {
    pub schema: String,
    pub context: Context,
    pub engines: Vec<IndexEngineRecord>,
}

/// 2: an engine's `server` may be null (see `SCHEMA`).
pub const INDEX_SCHEMA: &str = "ghbench-olap-index/2";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEngineRecord {
    pub engine: Engine,
    pub indexes: Vec<IndexBuild>,
    pub error: Option<String>,
    /// What the engine did once an index was built anew, so the planner
    /// knows what the indexes filter on (PostgreSQL's `ANALYZE`: the load's
    /// ran before the expression indexes existed, and the planner has no
    /// statistics on an indexed expression until one runs after them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<AfterIndexes>,
}

/// A step after the index builds, timed (see [`IndexEngineRecord::statistics`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AfterIndexes {
    /// What ran, e.g. `ANALYZE github2015`.
    pub step: String,
    pub seconds: f64,
}

/// One index built by `ghbench index`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexBuild {
    pub name: String,
    /// The statement or specification, as in the catalog.
    pub definition: String,
    /// False when it already existed (then `seconds` is the no-op's time).
    pub created: bool,
    pub seconds: f64,
    pub bytes: Option<u64>,
    /// Why it was not built: it indexes a path no loaded document has yet
    /// (the normalized layout has no column for it; a later load makes one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The replica set members the build waited for (MongoDB's `commitQuorum`,
    /// as the server's reply gives it); none on a standalone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_quorum: Option<String>,
}

impl IndexBuild {
    /// An index left out, and why (see [`IndexBuild::skipped`]).
    pub fn left_out(name: String, definition: String, why: String) -> IndexBuild {
        IndexBuild { name, definition, created: false, seconds: 0.0, bytes: None, skipped: Some(why), commit_quorum: None }
    }

    /// What the build did, for people (and what it waited for on a replica set).
    pub fn state(&self) -> String {
        let state = match (&self.skipped, self.created) {
            (Some(_), _) => "skipped: path not loaded yet",
            (None, true) => "built",
            (None, false) => "already there",
        };
        match &self.commit_quorum {
            Some(quorum) if self.created => format!("{state} (commit quorum: {quorum})"),
            _ => state.to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryRecord {
    pub query: String,
    pub variant: String,
    pub title: String,
    pub compare: Compare,
    pub verification: Verification,
    pub engines: Vec<EngineResult>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerificationStatus {
    /// At least two engines answered and all agree.
    Agree,
    /// At least one engine's result differs from the reference's.
    Mismatch,
    /// An engine failed to answer; the others were compared.
    Error,
    /// Fewer than two engines answered: nothing to compare.
    NotCompared,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verification {
    pub status: VerificationStatus,
    /// The engine every other engine is compared with: the first of the
    /// majority when there is one, else the first that answered.
    pub reference: Option<Engine>,
    /// When a majority of engines agree and others do not: the engines of the
    /// majority (the reference first). Empty when all agree, or when no
    /// majority says which side is right (then every engine is marked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreeing: Vec<Engine>,
    pub mismatches: Vec<Mismatch>,
    /// Why the engines disagree when it is known before comparing a row, e.g.
    /// `the engines hold different data: …`.
    #[serde(default)]
    pub cause: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Mismatch {
    pub engine: Engine,
    pub reason: String,
    pub first_differences: Vec<String>,
}

/// One engine's runs of one query × variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineResult {
    pub engine: Engine,
    /// The catalog file that was run, e.g. `postgres/corrected/A.sql`.
    pub file: String,
    /// The run after `--cold` dropped caches, if asked for; not in `stats`.
    /// With `--cold-repeat` above 1, the first of `cold_runs`.
    pub cold_run: Option<Iteration>,
    /// Every cold run in order when `--cold-repeat` asked for more than one,
    /// each after its own restart and page-cache drop (`cold_run` is the
    /// first); empty otherwise and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cold_runs: Vec<Iteration>,
    pub iterations: Vec<Iteration>,
    pub stats: Option<Stats>,
    /// Rows of the result (of the first run).
    pub rows: Option<u64>,
    /// Some(true): agrees with every other engine; Some(false): it or its
    /// reference disagreed, or it failed; None: nothing to compare with.
    pub verified: Option<bool>,
    pub error: Option<String>,
    pub plan: Option<Plan>,
    pub index_used: Option<bool>,
    /// The first rows of the result, normalised (key, value).
    pub head: Vec<Row>,
    /// A digest of the whole result of the first run ([`crate::rows::answer_digest`]):
    /// tells whether two runs (on other tables, other days) gave the same
    /// answer where `head` shows only its start. None in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_digest: Option<String>,
    /// Connections lost during these runs and replaced: each lost attempt is
    /// made again on a new connection and only that one is timed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reconnects: Vec<Reconnect>,
    /// The connection was lost and no new one came: the engine's remaining
    /// queries are not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub connection_gone: bool,
    /// A run was cut by `--query-timeout`: the limit, in seconds (the runs
    /// after it are not made; `error` says which run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<f64>,
    /// What the query's runs read (the cold runs included), from the server's
    /// counters before and after them; None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Reads>,
    /// The kernel killed a process of the engine's for memory during the runs
    /// (an OOM kill under its cgroup's limit): how many. The run is failed,
    /// not retried as a lost connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
}

/// What a query's runs read, as the engine counts it and, for processes on
/// this machine, as the kernel does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reads {
    /// Runs the counters span (the cold runs included).
    pub runs: usize,
    /// Each counter's growth over those runs, e.g. `heap_blks_read`.
    pub counters: BTreeMap<String, u64>,
    /// Why nothing (or not everything) was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The kernel's I/O counters of the server's processes (or polars'
    /// worker) over the same runs; None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelReads>,
}

/// The growth of `/proc/<pid>/io` summed over a process and those under it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelReads {
    /// Whose, e.g. `postgres (pid 812) and the 9 processes under it`.
    pub processes: String,
    /// `read_bytes`: from storage (what the page cache did not hold);
    /// `rchar`: asked of read calls, page cache hits included; `syscr`: read calls.
    pub counters: BTreeMap<String, u64>,
    /// Why nothing was counted (another machine, no permission, restarted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Each counter's growth from `before` to `after`; a counter missing from
/// either side is left out; Err: one went down (a restart, a reset).
pub fn growth(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Result<BTreeMap<String, u64>, String> {
    if let Some(k) = after.keys().find(|k| before.get(*k).is_some_and(|b| after[*k] < *b)) {
        return Err(format!("{k} went down (the server restarted or its statistics were reset during the runs)"));
    }
    Ok(after.iter().filter_map(|(k, a)| Some((k.clone(), a - *before.get(k)?))).collect())
}

impl Reads {
    /// The counters' growth from `before` to `after` over `runs` runs; a
    /// counter missing from either side is left out, a reading that failed said.
    pub fn between(before: Result<BTreeMap<String, u64>, String>, after: Result<BTreeMap<String, u64>, String>, runs: usize) -> Reads {
        let grown = before.and_then(|before| growth(&before, &after?));
        let (counters, unavailable) = match grown {
            Ok(counters) => (counters, None),
            Err(why) => (BTreeMap::new(), Some(why)),
        };
        Reads { runs, counters, unavailable, kernel: None }
    }

    /// `heap_blks_hit 240, heap_blks_read 12 over 3 runs`, or why not
    /// counted; then the kernel's, when read.
    pub fn said(&self) -> String {
        let engine = match &self.unavailable {
            Some(why) => format!("not counted: {why}"),
            None => format!("{} over {} run(s)", counters_said(&self.counters), self.runs),
        };
        match &self.kernel {
            None => engine,
            Some(kernel) => format!("{engine}; the kernel: {}", kernel.said()),
        }
    }
}

fn counters_said(counters: &BTreeMap<String, u64>) -> String {
    counters.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

impl KernelReads {
    /// `read_bytes 0, rchar 81920, syscr 10 (postgres (pid 812) and …)`, or why not counted.
    pub fn said(&self) -> String {
        match &self.unavailable {
            Some(why) => format!("not counted: {why}"),
            None => format!("{} ({})", counters_said(&self.counters), self.processes),
        }
    }
}

impl EngineResult {
    /// `stats` with `n` known: files from before it hold the hot runs it
    /// rests on in `iterations`.
    pub fn hot_stats(&self) -> Option<Stats> {
        self.stats.map(|s| Stats { n: if s.n == 0 { self.iterations.len() } else { s.n }, ..s })
    }

    /// The cold runs' median, range and count: over `cold_runs` when there
    /// are several, else the one `cold_run`; None without a cold run.
    pub fn cold_stats(&self) -> Option<Stats> {
        match self.cold_runs.len() {
            0 | 1 => self.cold_run.and_then(|c| Stats::of(&[c.seconds])),
            _ => Stats::of(&self.cold_runs.iter().map(|c| c.seconds).collect::<Vec<_>>()),
        }
    }

    /// The cold runs' median (the one cold run's time when one was made).
    pub fn cold_seconds(&self) -> Option<f64> {
        self.cold_stats().map(|s| s.median)
    }

    /// The first hot run, when far slower than the others (see [`SlowFirstRun::of`]).
    pub fn slow_first_run(&self) -> Option<SlowFirstRun> {
        SlowFirstRun::of(&self.iterations.iter().map(|i| i.seconds).collect::<Vec<_>>())
    }

    /// A result with nothing run, failed with `error`.
    pub fn failed(engine: &Engine, error: String) -> EngineResult {
        EngineResult { error: Some(error), ..EngineResult::empty(engine) }
    }

    /// A result with nothing run yet.
    pub fn empty(engine: &Engine) -> EngineResult {
        EngineResult {
            engine: engine.clone(),
            file: String::new(),
            cold_run: None,
            cold_runs: Vec::new(),
            iterations: Vec::new(),
            stats: None,
            rows: None,
            verified: None,
            error: None,
            plan: None,
            index_used: None,
            head: Vec::new(),
            answer_digest: None,
            reconnects: Vec::new(),
            connection_gone: false,
            timed_out: None,
            read: None,
            oom_kills: None,
        }
    }
}

/// A connection lost during a query's runs, and replaced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reconnect {
    /// Which step lost it: `run 2/3`, `cold run`, `preparing`.
    pub at: String,
    /// What the engine said.
    pub error: String,
    /// How long the new connection took.
    pub seconds: f64,
}

/// One timed run, from sending the query to receiving its last row (as rows
/// ghbench compares); the runner holds the clock, the same for every engine.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Iteration {
    pub seconds: f64,
    pub rows: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Stats {
    /// How many runs the statistics rest on (the hot runs, `iterations`);
    /// 0 in files from before it: [`EngineResult::hot_stats`] counts them.
    #[serde(default)]
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(seconds: &[f64]) -> Option<Stats> {
        if seconds.is_empty() {
            return None;
        }
        let mut s = seconds.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 };
        Some(Stats { n, min: s[0], median, mean: s.iter().sum::<f64>() / n as f64, max: s[n - 1] })
    }
}

/// A first hot run this many times the median of the others, or more, is said.
pub const SLOW_FIRST_RUN_FACTOR: f64 = 2.0;
/// Hot runs needed before a first run is judged against the others.
pub const SLOW_FIRST_RUN_MIN_RUNS: usize = 3;

/// A first hot run far slower than the ones after it (hyperfine's warning):
/// caches still warming, so the median of few runs may not be the hot time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowFirstRun {
    /// The first hot run's seconds.
    pub first: f64,
    /// The median of the other hot runs, and how many they are.
    pub rest_median: f64,
    pub rest: usize,
}

impl SlowFirstRun {
    /// Of the hot runs' seconds in the order they ran: Some when there are at
    /// least [`SLOW_FIRST_RUN_MIN_RUNS`] and the first took more than
    /// [`SLOW_FIRST_RUN_FACTOR`]× the median of the rest.
    pub fn of(hot: &[f64]) -> Option<SlowFirstRun> {
        let (&first, rest) = hot.split_first().filter(|_| hot.len() >= SLOW_FIRST_RUN_MIN_RUNS)?;
        let rest_median = Stats::of(rest)?.median;
        (first > SLOW_FIRST_RUN_FACTOR * rest_median).then_some(SlowFirstRun { first, rest_median, rest: rest.len() })
    }
}

/// An engine's plan for a query, captured once (after the timed runs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Plan {
    /// The command that produced it, e.g. `EXPLAIN (ANALYZE, BUFFERS)`.
    pub command: String,
    /// PostgreSQL's text plan.
    pub text: Option<String>,
    /// MongoDB's explain document (relaxed extended JSON).
    pub json: Option<serde_json::Value>,
    /// Names of the indexes the plan uses.
    pub indexes: Vec<String>,
    /// None when the plan could not be read (or explain is unsupported).
    pub index_used: Option<bool>,
    /// Every table read is answered from an index alone (a covering scan),
    /// where the engine's plan says so (the MySQL family's `using_index`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covering: Option<bool>,
    pub error: Option<String>,
}

/// The paper's `(S-F)/S`: how much faster the baseline is than another
/// engine, as a fraction of the slower time; negative when the baseline is
/// the slower one.
pub fn faster_by(baseline_seconds: f64, other_seconds: f64) -> Option<f64> {
    let slower = baseline_seconds.max(other_seconds);
    // Also refuses NaN.
    if slower.is_nan() || slower <= 0.0 {
        return None;
    }
    let gain = (slower - baseline_seconds.min(other_seconds)) / slower;
    Some(if baseline_seconds <= other_seconds { gain } else { -gain })
}

/// The disk a run's data was read from, and its measured read speed
/// (measured by `ghbench_olap::disk`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disk {
    /// The folder measured: the data folder of the first server `just setup`
    /// started, else the bench's data folder (the generated hours).
    pub folder: String,
    /// The mount's source and filesystem, e.g. `/dev/vda (ext4)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The block device's model, where the kernel names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether the kernel sees spinning media (`queue/rotational`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Bytes per second read in sequence, measured as the module says; None
    /// when it could not be (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_read_bytes_per_second: Option<f64>,
    /// Bytes per second of each sequential read, in the order made; the
    /// median is `sequential_read_bytes_per_second`. Empty in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequential_reads: Vec<f64>,
    /// Reads of one 8 KiB page (PostgreSQL's) a second at random places of
    /// the same file, one at a time, the page cache and read-ahead out of the
    /// way: what an index's scattered heap pages cost (Query A's bitmap
    /// heap scan) where a sequential scan reads in bulk. None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_reads_per_second: Option<f64>,
    pub measured_with: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Disk {
    /// `.ghbench/pg/data on /dev/vda (ext4), virtio_blk, rotational; measured 561 MB/s
    /// sequential read, 9975 random 8 KiB reads/s one at a time`.
    pub fn said(&self) -> String {
        let mut about: Vec<String> = Vec::new();
        about.extend(self.model.clone());
        about.extend(self.rotational.map(|r| if r { "rotational".to_string() } else { "not rotational".to_string() }));
        let device = self.device.clone().unwrap_or_else(|| "an unknown device".into());
        let speed = match (self.sequential_read_bytes_per_second, &self.error) {
            (Some(rate), _) => {
                let sequential = format!("measured {:.0} MB/s sequential read{}", rate / 1e6, self.spread_said());
                match self.random_reads_per_second {
                    Some(iops) => format!("{sequential}, {iops:.0} random 8 KiB reads/s one at a time"),
                    None => sequential,
                }
            }
            (None, Some(e)) => format!("read speed not measured: {e}"),
            (None, None) => "read speed not measured".into(),
        };
        let about = if about.is_empty() { String::new() } else { format!(", {}", about.join(", ")) };
        // `;`, not `:`: "rotational: 561 MB/s" read as the speed of being rotational.
        format!("{} on {device}{about}; {speed}", self.folder)
    }

    /// How far apart a speed's reads were, where more than one was made:
    /// ` (median of 3 reads: 303, 1791, 1770 MB/s; …)`.
    fn spread_said(&self) -> String {
        if self.sequential_reads.len() < 2 {
            return String::new();
        }
        let each: Vec<String> = self.sequential_reads.iter().map(|r| format!("{:.0}", r / 1e6)).collect();
        let (low, high) = self.sequential_reads.iter().fold((f64::MAX, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
        let why = match high > SPREAD_SAID * low {
            true => "; reads this far apart say a cache beneath the device, such as a virtual disk's host's: the disk itself is nearer the slowest",
            false => "",
        };
        format!(" (median of {} reads: {} MB/s{why})", each.len(), each.join(", "))
    }
}

/// Sequential reads of one probe further apart than this (fastest ÷
/// slowest) are said to come partly from a cache.
pub const SPREAD_SAID: f64 = 1.5;

/// Which kernel interface a cgroup is read through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_rates_are_said_to_the_nearest_megabyte_with_a_decimal_when_small() {
        let read = |bytes: u64| DiskRules { read_bytes_per_second: Some(bytes), ..Default::default() }.said();
        assert_eq!(read(262_144_000), "262 MB/s read", "1,000 reads of 256 KiB");
        assert_eq!(read(437_000_000), "437 MB/s read");
        assert_eq!(read(8_000_000), "8 MB/s read");
        assert_eq!(read(4 << 20), "4.2 MB/s read");
        assert_eq!(read(409_600), "410 kB/s read", "100 reads of 4 KiB");
        assert_eq!(read(512), "512 B/s read", "one read of 512 bytes a second: not 1 kB/s");
    }

    #[test]
    fn a_disk_speed_says_its_reads_and_a_cache_where_they_lie_far_apart() {
        let disk = |reads: &[f64]| Disk {
            folder: "data".into(),
            device: Some("/dev/vda (ext4)".into()),
            model: None,
            rotational: Some(true),
            sequential_read_bytes_per_second: Some(reads[reads.len() / 2]),
            sequential_reads: reads.to_vec(),
            random_reads_per_second: Some(9975.0),
            measured_with: String::new(),
            error: None,
        };
        let far = disk(&[303e6, 1770e6, 1791e6]).said();
        assert!(far.contains("measured 1770 MB/s sequential read (median of 3 reads: 303, 1770, 1791 MB/s; reads this far apart say a cache beneath the device"), "{far}");
        assert!(far.ends_with(", 9975 random 8 KiB reads/s one at a time"), "{far}");
        let near = disk(&[500e6, 520e6, 610e6]).said();
        assert!(near.contains("(median of 3 reads: 500, 520, 610 MB/s)") && !near.contains("cache"), "{near}");
        // An older record, one read: no spread to say.
        assert!(disk(&[561e6]).said().contains("measured 561 MB/s sequential read, "), "{}", disk(&[561e6]).said());
    }

    #[test]
    fn stats_take_the_middle_of_sorted_runs() {
        let s = Stats::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 2.0, 2.0, 3.0));
        assert_eq!(Stats::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Stats::of(&[]).is_none());
        assert_eq!(Stats::of(&[3.0, 1.0, 2.0]).unwrap().n, 3);
    }

    #[test]
    fn a_first_run_is_slow_above_twice_the_others_median_and_only_among_three_runs_or_more() {
        assert_eq!(SlowFirstRun::of(&[2.0, 1.0, 1.0]), None, "exactly 2× is not more than 2×");
        assert_eq!(SlowFirstRun::of(&[2.5, 1.0, 1.5, 0.5]), Some(SlowFirstRun { first: 2.5, rest_median: 1.0, rest: 3 }));
        assert_eq!(SlowFirstRun::of(&[2.01, 1.0, 1.0]).map(|s| s.rest), Some(2));
        assert_eq!(SlowFirstRun::of(&[9.0, 1.0]), None, "two runs: no note");
        assert_eq!(SlowFirstRun::of(&[9.0]), None);
        assert_eq!(SlowFirstRun::of(&[]), None);
        assert_eq!(SlowFirstRun::of(&[1.0, 9.0, 9.0]), None, "a fast first run is no note");
        assert_eq!(SlowFirstRun::of(&[1.0, 9.0, 1.0, 1.0]), None, "a slow later run is no note");
    }

    #[test]
    fn an_older_file_s_stats_count_the_runs_kept_beside_them() {
        let old = serde_json::json!({"engine": "postgres", "file": "postgres/corrected/A.sql", "cold_run": null,
            "iterations": [{"seconds": 0.3, "rows": 1}, {"seconds": 0.1, "rows": 1}],
            "stats": {"min": 0.1, "median": 0.2, "mean": 0.2, "max": 0.3},
            "rows": 1, "verified": null, "error": null, "plan": null, "index_used": null, "head": []});
        let result: EngineResult = serde_json::from_value(old).unwrap();
        assert_eq!(result.stats.unwrap().n, 0, "not in the file");
        assert_eq!(result.hot_stats().unwrap().n, 2);
        let written = serde_json::to_value(Stats::of(&[1.0]).unwrap()).unwrap();
        assert_eq!(written["n"], 1);
    }

    #[test]
    fn speedup_reproduces_the_papers_column() {
        // Published: A -22.11 %, B 43.80 % (PostgreSQL 1h28m15s vs MongoDB 1h08m44s; 41m03s vs 1h13m03s).
        let a = faster_by(5295.0, 4124.0).unwrap();
        let b = faster_by(2463.0, 4383.0).unwrap();
        assert!((a - -0.2211).abs() < 1e-4, "{a}"); // the paper shows two decimals of a percent
        assert!((b - 0.4380).abs() < 1e-4, "{b}");
        assert!(faster_by(0.0, 0.0).is_none());
    }

    #[test]
    fn reads_are_each_counters_growth_and_a_counter_that_went_down_is_said() {
        let at = |read: u64, hit: u64| Ok(BTreeMap::from([("heap_blks_read".to_string(), read), ("heap_blks_hit".to_string(), hit)]));
        let reads = Reads::between(at(10, 100), at(15, 400), 3);
        assert_eq!(reads.counters, BTreeMap::from([("heap_blks_read".to_string(), 5), ("heap_blks_hit".to_string(), 300)]));
        assert_eq!(reads.said(), "heap_blks_hit 300, heap_blks_read 5 over 3 run(s)");
        let restarted = Reads::between(at(10, 100), at(2, 40), 3);
        assert!(restarted.counters.is_empty() && restarted.unavailable.as_deref().is_some_and(|w| w.contains("went down")), "{restarted:?}");
        let unread = Reads::between(at(1, 1), Err("no statistics".into()), 1);
        assert_eq!(unread.said(), "not counted: no statistics");
    }

    #[test]
    fn a_record_resumed_twice_credits_each_kept_query_to_the_run_that_timed_it() {
        let kept = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let first = Resumed::going_on_from("T1", None, kept(&["A corrected"]));
        assert_eq!(first.said("timed", "run"), "A corrected timed by the run started T1");
        let second = Resumed::going_on_from("T2", Some(&first), kept(&["A corrected", "B corrected"]));
        assert_eq!(second.said("timed", "run"), "A corrected timed by the run started T1; B corrected by the run started T2");
        assert_eq!(second.from_started_at, "T2");
        // A record of before `timed_by`: all it kept was timed by the run it names.
        let old: Resumed = serde_json::from_value(serde_json::json!({"from_started_at": "T0", "kept": ["A corrected"]})).unwrap();
        let third = Resumed::going_on_from("T3", Some(&old), kept(&["A corrected", "C corrected"]));
        assert_eq!(third.runs().iter().map(|r| r.started_at.as_str()).collect::<Vec<_>>(), ["T0", "T3"]);
    }

    fn engine(name: &str, stored: u64, memory: Option<u64>) -> EngineRecord {
        EngineRecord {
            engine: Engine::from(name),
            capabilities: None,
            setup: None,
            server: None,
            server_error: None,
            data: None,
            data_error: None,
            storage: Some(Storage { table_bytes: stored, index_bytes: stored / 10, ..Storage::default() }),
            storage_error: None,
            memory: memory.map(|bytes| MemoryShare { bytes, from: "test".into(), limit: None, nodes: Vec::new() }),
            disk_limit: None,
        }
    }

    #[test]
    fn counters_over_a_span_are_what_each_count_grew_by() {
        let before = MemoryCounters { limit_hits: Some(3), oom_kills: Some(1), read_bytes: Some(100), refaults: None, ..MemoryCounters::default() };
        let after = MemoryCounters { limit_hits: Some(10), oom_kills: Some(1), read_bytes: Some(50), refaults: Some(9), peak_bytes: Some(7), ..MemoryCounters::default() };
        let grew = after.since(&before);
        assert_eq!((grew.limit_hits, grew.oom_kills, grew.read_bytes, grew.refaults, grew.peak_bytes), (Some(7), Some(0), None, None, Some(7)));
    }

    #[test]
    fn nodes_each_under_a_limit_give_the_fullest_node_s_ratio_and_the_total() {
        let limit = || MemoryLimit { cgroup_version: CgroupVersion::V1, cgroup: "/ghbench/x-citus-worker1".into(), enforced_by: "test".into(), before_runs: MemoryCounters::default(), over_runs: None };
        let node = |name: &str, data_bytes: u64, limited: bool| NodeMemory { node: name.into(), data_bytes, bytes: 1000, limit: limited.then(limit) };
        // 1,100 bytes stored (1,000 and a tenth), 400 and 700 on the workers.
        let mut citus = engine("citus", 1000, Some(3000));
        citus.memory.as_mut().unwrap().nodes = vec![node("c:1", 0, true), node("w:2", 400, true), node("w:3", 700, true)];
        assert_eq!(citus.data_to_memory(), Some(0.7), "the fullest node's");
        assert_eq!(citus.fit_said().unwrap(), "data 0.70× memory on its fullest node (3 nodes; 0.37× their 2.9 KiB in total)");
        // One node under no limit: the total is this machine's, which they share.
        citus.memory.as_mut().unwrap().nodes[0].limit = None;
        assert!(citus.fit_said().unwrap().ends_with("(3 nodes; 0.37× this machine's 2.9 KiB in total)"), "{:?}", citus.fit_said());
        // Past its memory on one node: read from disk.
        citus.memory.as_mut().unwrap().nodes[2].data_bytes = 1500;
        assert!(citus.fit_said().unwrap().starts_with("data 1.5× memory on its fullest node") && citus.fit_said().unwrap().ends_with(": read from disk"));
    }

    #[test]
    fn the_nodes_counts_over_the_runs_are_summed_their_peak_the_highest() {
        let counted = |peak: u64, hits: u64, refaults: Option<u64>| MemoryLimit {
            cgroup_version: CgroupVersion::V1,
            cgroup: "/ghbench/x".into(),
            enforced_by: "test".into(),
            before_runs: MemoryCounters::default(),
            over_runs: Some(MemoryCounters { peak_bytes: Some(peak), limit_hits: Some(hits), oom_kills: Some(0), refaults, ..MemoryCounters::default() }),
        };
        let node = |name: &str, limit| NodeMemory { node: name.into(), data_bytes: 0, bytes: 1000, limit };
        let mut share = MemoryShare { bytes: 3000, from: "test".into(), limit: None, nodes: vec![node("c:1", Some(counted(100, 1, Some(5)))), node("w:2", Some(counted(900, 4, None))), node("w:3", None)] };
        let over = share.over_runs().unwrap();
        assert_eq!((over.peak_bytes, over.limit_hits, over.oom_kills, over.refaults), (Some(900), Some(5), Some(0), None), "a count one node lacks is not known in total");
        share.nodes[1].limit.as_mut().unwrap().over_runs = None;
        assert_eq!(share.over_runs(), None, "a limited node not counted: the cluster's counts unknown");
        share.nodes.clear();
        assert_eq!(share.over_runs(), None);
        share.limit = Some(counted(7, 2, None));
        assert_eq!(share.over_runs().unwrap().peak_bytes, Some(7), "one server: its limit's");
    }

    #[test]
    fn a_limit_is_named_in_the_label() {
        let mut limited = engine("postgres", 4 << 20, Some(1 << 20));
        let memory = limited.memory.as_mut().unwrap();
        memory.limit = Some(MemoryLimit { cgroup_version: CgroupVersion::V2, cgroup: "/ghbench/x-postgres".into(), enforced_by: "test".into(), before_runs: MemoryCounters::default(), over_runs: None });
        assert_eq!(limited.fit_said().unwrap(), "data 4.4× memory (a 1.0 MiB limit): read from disk");
        let mut declared = engine("mongo", 1 << 20, Some(4 << 20));
        declared.memory.as_mut().unwrap().from = DECLARED.into();
        assert_eq!(declared.fit_said().unwrap(), "data 0.27× memory (as declared: 4.0 MiB)");
    }

    #[test]
    fn the_label_says_each_engine_s_data_against_its_memory_and_whether_it_fit() {
        let hot = "hot: no cache dropped; every run after the first finds data cached";
        let fits = [engine("postgres", 1_000, Some(2_200_000)), engine("mongo", 300_000, Some(1_100_000)), engine("far", 10, None)];
        assert_eq!(with_fit(hot, &fits), format!("{hot}; postgres data 0.00050× memory, mongo data 0.30× memory"));
        let outgrown = [engine("postgres", 4_000, Some(1_000)), engine("polars", 100, Some(1_000))];
        assert_eq!(
            with_fit(hot, &outgrown),
            "hot: no cache dropped; every run after the first finds cached what fits in memory; postgres data 4.4× memory: read from disk, polars data 0.11× memory"
        );
        assert_eq!(with_fit(hot, &[engine("far", 10, None)]), hot, "nothing known, nothing said");
        let mut throttled = [engine("postgres", 10, None), engine("polars", 10, None), engine("mongo", 10, None)];
        let rules = DiskRules { read_iops: Some(1000), read_bytes_per_second: Some(437_000_000), ..DiskRules::default() };
        for engine in &mut throttled[..2] {
            engine.disk_limit = Some(DiskLimit {
                cgroup_version: CgroupVersion::V1,
                cgroup: "/ghbench/x".into(),
                device: "254:0 (vda)".into(),
                rules: rules.clone(),
                enforced_by: "test".into(),
                before_runs: IoCounters::default(),
                over_runs: None,
                nodes: Vec::new(),
            });
        }
        assert_eq!(with_fit(hot, &throttled), format!("{hot}; disk throttled: postgres, polars to 1,000 read IOPS, 437 MB/s read"));
    }

    #[test]
    fn a_throttle_on_every_node_is_said_node_by_node_and_counted_in_total() {
        let rules = DiskRules { read_iops: Some(1000), ..DiskRules::default() };
        let node = |cgroup: &str, read: u64| DiskLimit {
            cgroup_version: CgroupVersion::V1,
            cgroup: cgroup.into(),
            device: "254:0 (vda)".into(),
            rules: rules.clone(),
            enforced_by: "blkio".into(),
            before_runs: IoCounters::default(),
            over_runs: Some(IoCounters { read_bytes: Some(read), reads: Some(read / 8192), ..IoCounters::default() }),
            nodes: Vec::new(),
        };
        let (coordinator, worker) = (node("/ghbench/c", 8192), node("/ghbench/w1", 81920));
        let mut cluster = DiskLimit {
            over_runs: None,
            nodes: vec![
                NodeDiskLimit { node: "127.0.0.1:54330".into(), limit: Some(coordinator.clone()) },
                NodeDiskLimit { node: "127.0.0.1:54331".into(), limit: Some(worker) },
                NodeDiskLimit { node: "127.0.0.1:54332".into(), limit: None },
            ],
            ..coordinator
        };
        cluster.sum_nodes_over_runs();
        let over = cluster.over_runs.clone().unwrap();
        assert_eq!((over.read_bytes, over.reads, over.written_bytes), (Some(90112), Some(11), None), "summed; a count no node has stays unknown");
        let said = cluster.said();
        assert!(said.starts_with("each of 3 nodes: 127.0.0.1:54330 1,000 read IOPS on 254:0 (vda)"), "{said}");
        assert!(said.contains("127.0.0.1:54331 1,000 read IOPS") && said.ends_with("127.0.0.1:54332 not throttled"), "{said}");
        // The label: each node had the rules to itself, not the cluster as one server.
        let mut citus = engine("citus", 10, None);
        citus.disk_limit = Some(cluster);
        let label = with_fit("hot", &[citus]);
        assert!(label.ends_with("disk throttled: citus (each of 2 of its 3 nodes) to 1,000 read IOPS"), "{label}");
    }
}

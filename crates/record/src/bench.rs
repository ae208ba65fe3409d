//! The record of `ghbench bench`: the whole benchmark at one or more sizes of
//! data in one file, each size with its load, its index builds and its query
//! run (cold and hot, verified, with sizes and the environment), and across
//! sizes how each engine's query time grows with the data.

use ghbench_core::Engine;
use serde::{Deserialize, Serialize};

use crate::run::{IndexEngineRecord, RunRecord, VerificationStatus};

/// Bumped whenever a field changes meaning or goes away (adding fields does not).
pub const BENCH_SCHEMA: &str = "ghbench-bench/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchRecord {
    pub schema: String,
    /// Where the events came from.
    pub data: DataSource,
    /// One per size, smallest first.
    pub sizes: Vec<SizeRecord>,
    /// Per query, variant and engine, the hot median against events loaded and
    /// the fitted growth (the cold run's and the answer's rows beside it);
    /// empty with a single size.
    pub growth: Vec<Growth>,
    /// ghbench's own peak memory while it drew the charts and the HTML page (see
    /// [`PhasePeaks`]); None in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_peak_bytes: Option<u64>,
    /// Per engine, its load, index builds and stored bytes against events
    /// loaded; empty with a single size, and in older records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_growth: Vec<EngineGrowth>,
    /// The size being measured when the record was last written: its loads
    /// and index builds, and its run with the queries it finished (unfinished).
    /// A bench that stops there keeps them; `--resume` goes on at its next query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measuring: Option<SizeRecord>,
    /// False while the bench goes on: written after every query, so a bench
    /// that stops keeps the sizes and queries it finished. Files from before are finished.
    #[serde(default = "finished")]
    pub finished: bool,
    /// This bench went on from an unfinished record (`--resume`): the sizes it
    /// kept from there (`1 h`), measured then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<crate::run::Resumed>,
    /// `--regime`: the largest size queried again under memory limits chosen
    /// from its data (see [`Regime`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<Regime>,
    /// `--preset`: the machine the bench's options stand for, written down
    /// value by value with why and its source (which are inferred, said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<ghbench_core::Setup>,
}

fn finished() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DataSource {
    /// `generated` (`--gen`) or `source` (`--source`).
    pub kind: String,
    /// The folder or URL the hours were read from.
    pub location: String,
    pub first_hour: String,
    /// The generator's seed and events per hour (generated data only).
    pub seed: Option<u64>,
    pub events_per_hour: Option<u64>,
    /// The digest of the data's whole identity: for `source` its location
    /// (canonical form) and first hour, which names the tables
    /// (`…_src1a2b3c4d`); for `generated` the events per hour, seed and first
    /// hour. A table name too long for the data's tag carries it (`…_d1a2b…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// A `source` folder made by `ghbench gen --split`: the files whose
    /// events it holds, spread over its hours (from its `split-manifest.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitOf>,
    /// Generated data: which actors and repositories its hours drew on,
    /// `growing pools (Heaps' law …)` or `fixed pools`. Absent in records
    /// before growth, whose generated hours all drew on fixed pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools: Option<String>,
}

impl DataSource {
    /// The pools the generated hours drew on, as said; None for real hours.
    pub fn pools_said(&self) -> Option<String> {
        (self.kind == "generated").then(|| self.pools.clone().unwrap_or_else(|| "fixed pools (recorded before ghbench generated growing ones)".into()))
    }
}

/// The events of `sources` spread over `hours` hour files, byte for byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitOf {
    /// Each source file's name, lines and digest, in the order read.
    pub sources: Vec<SplitSource>,
    /// Hour files written, and the events (lines) they hold in all.
    pub hours: u64,
    pub events: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitSource {
    pub file: String,
    pub lines: u64,
    pub digest: String,
}

impl SplitOf {
    /// `the 175,203 events of 7 hour files (2015-01-01-0.json.gz … 2015-01-01-6.json.gz) split into 8,760 hours by ghbench gen --split`.
    pub fn said(&self) -> String {
        let files = match &self.sources[..] {
            [] => String::new(),
            [one] => format!(" ({})", one.file),
            [first, .., last] => format!(" ({} … {})", first.file, last.file),
        };
        format!(
            "the {} events of {} hour file{}{files} split into {} hours by ghbench gen --split",
            crate::run::thousands(self.events),
            self.sources.len(),
            if self.sources.len() == 1 { "" } else { "s" },
            crate::run::thousands(self.hours)
        )
    }
}

/// The benchmark at one size: its own table on every engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeRecord {
    pub hours: u32,
    pub table: String,
    pub loads: Vec<LoadRecord>,
    pub indexes: Vec<IndexEngineRecord>,
    /// The queries: cold and hot runs, verification, the engines' servers, data and sizes.
    pub run: RunRecord,
    /// Under `--memory`: per engine whether the limit held during its load
    /// and index builds too (see [`LoadMemory`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_during_load: Vec<LoadMemory>,
    /// `--drop-measured`: per engine, its table of this size dropped once
    /// measured (`postgres: dropped`), or why not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// `--scale`: the size's whole need on disk, estimated before any of it
    /// loaded (None for older records and a single size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_plan: Option<DiskPlan>,
    /// ghbench's own peak memory in this size's phases (None in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ghbench_memory: Option<PhasePeaks>,
}

/// A size's need on disk, estimated before any of it loaded: every engine's
/// table and indexes, each server's WAL once, polars' merge, against the
/// free space of each file system (the lines say each), and per engine the
/// estimate the reports set against what it stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskPlan {
    /// The size's hours, gzip bytes.
    pub gzip_bytes: u64,
    pub lines: Vec<String>,
    pub estimated: Vec<EngineEstimate>,
    /// The engines whose need was measured on the size before and found to
    /// fit: their loads skip ingest's own check, which knows only the JSON
    /// size (polars stores a fifth of it) and refused the 10M size's polars
    /// load for 48 GB where it stored 4.8 GB. Empty in older records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Engine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineEstimate {
    pub engine: Engine,
    /// Table and index bytes it was expected to store.
    pub bytes: u64,
    /// What the estimate rests on: the size before, or the JSON size.
    pub basis: String,
}

impl SizeRecord {
    /// Per engine with an estimate, `postgres: estimated 1.2 GiB (…), stored 1.1 GiB`.
    pub fn estimate_lines(&self) -> Vec<String> {
        let Some(plan) = &self.disk_plan else { return Vec::new() };
        plan.estimated
            .iter()
            .map(|e| {
                let stored = self.run.context.engines.iter().find(|x| x.engine == e.engine).and_then(|x| x.storage.as_ref()).map(|s| s.table_bytes + s.index_bytes);
                let stored = stored.map_or_else(|| "stored bytes not measured".into(), |b| format!("stored {}", ghbench_core::size::said(b)));
                format!("{}: estimated {} before loading ({}), {stored}", e.engine, ghbench_core::size::said(e.bytes), e.basis)
            })
            .collect()
    }
}

impl PhasePeaks {
    /// `ghbench itself: peak 45.0 MiB loading and building indexes, 80.2 MiB querying and verifying`.
    pub fn said(&self) -> String {
        let peak = |bytes: Option<u64>| bytes.map_or_else(|| "not measured".into(), ghbench_core::size::said);
        let since = if self.reset { "" } else { " (each since ghbench started: the peak could not be reset)" };
        format!("ghbench itself: peak {} loading and building indexes, {} querying and verifying{since}", peak(self.load_bytes), peak(self.queries_bytes))
    }
}

/// ghbench's own peak resident memory (Linux's `VmHWM`, reset at each phase's
/// start) in each phase of a size: what the tool needs as the data grows
/// (polars' load included: it runs inside ghbench). The servers and polars'
/// query workers are processes of their own, not counted here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhasePeaks {
    /// The loads (every engine's) and index builds.
    pub load_bytes: Option<u64>,
    /// The queries, cold and hot, and the verification of their answers.
    pub queries_bytes: Option<u64>,
    /// False where the peak could not be reset: each is then the peak since
    /// ghbench started.
    pub reset: bool,
}

/// What an engine's memory cgroup counted from before its load to the end
/// of the index builds (the peak: since the cgroup was made, at the restart
/// into the limit, so with `--scale` it covers the sizes before too). An OOM
/// kill there is why a load retried.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadMemory {
    pub engine: Engine,
    pub limit_bytes: u64,
    /// The cgroup counted; None when the engine's load ran outside the
    /// limit (`outside` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::run::MemoryCounters>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
    /// A server of several nodes (Citus), each `host:port` with its cgroup's
    /// limit (all of `limit_bytes` each, or shares of it): `counters` are
    /// then theirs as one (counts summed, the peak the highest node's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<(String, u64)>,
}

impl LoadMemory {
    /// `postgres: during its load and index builds, peak 95.8 MiB of the 96.0 MiB limit, 0 OOM kills`
    /// (the peak since the restart into the limit). Of a server of several nodes: `citus: during its load and index builds,
    /// on its 3 nodes (each under 325.0 MiB), peak 324.1 MiB on its fullest node, 0 OOM kills`.
    pub fn said(&self) -> String {
        let said = ghbench_core::size::said;
        let limit = said(self.limit_bytes);
        match (&self.counters, &self.outside) {
            (Some(c), _) => {
                let peak = c.peak_bytes.map_or_else(|| "peak not counted".into(), |p| format!("peak {}", said(p)));
                let held = match self.nodes.as_slice() {
                    [] => format!("{peak} of the {limit} limit"),
                    nodes if nodes.iter().all(|(_, l)| *l == self.limit_bytes) => format!("on its {} nodes (each under {limit}), {peak} on its fullest node", nodes.len()),
                    nodes => {
                        let each: Vec<String> = nodes.iter().map(|(node, l)| format!("{node} {}", said(*l))).collect();
                        format!("on its {} nodes (sharing {limit}: {}), {peak} on its fullest node", nodes.len(), each.join(", "))
                    }
                };
                let ooms = match c.oom_kills {
                    Some(0) => "0 OOM kills".to_string(),
                    Some(n) => format!("{n} OOM kill(s): its processes were killed for memory (a load retries the hours they lost; an index build or check they killed failed, and says so)"),
                    None => "OOM kills not counted".into(),
                };
                format!("{}: during its load and index builds, {held}, {ooms}", self.engine)
            }
            (None, Some(why)) => format!("{}: its load ran outside the {limit} limit ({why})", self.engine),
            (None, None) => format!("{}: its load under the {limit} limit was not counted", self.engine),
        }
    }
}

impl SizeRecord {
    /// Events the engines hold (the first engine's ledger; the run checked they agree).
    pub fn events(&self) -> Option<u64> {
        self.run.context.engines.first()?.data.as_ref().map(|d| d.events)
    }

    /// Every query answered and every comparison agreed, on the same data.
    pub fn verified(&self) -> bool {
        self.run.no_disagreement() && self.run.queries.iter().all(|q| q.verification.status == VerificationStatus::Agree)
    }

    /// Per engine whose data held damage, a line saying what (see [`DataDamage`]).
    pub fn damage_lines(&self) -> Vec<String> {
        self.loads.iter().filter_map(|l| Some(format!("{}: {}", l.engine, l.damage.describe()?))).collect()
    }

    /// Per engine whose indexes could not all be built, a line saying why:
    /// its times are not those of the indexed table the bench measures.
    pub fn index_failures(&self) -> Vec<String> {
        self.indexes.iter().filter_map(|i| Some(format!("{}: indexes failed: {}", i.engine, i.error.as_deref()?))).collect()
    }

    /// For people: whether the engines agree (one engine alone has nothing to
    /// agree with, which is not a failure), and whether that is good news.
    pub fn verdict(&self) -> (&'static str, bool) {
        match (self.run.context.engines.len() < 2, self.verified()) {
            (true, _) => ("one engine: nothing to compare", true),
            (false, true) => ("every query verified: the engines agree", true),
            (false, false) => ("NOT every query verified (see below)", false),
        }
    }
}

/// One engine's load of one size: what this run loaded, timed by the wall
/// clock around the engine's own ingest run (engines load one after another,
/// so none waits on another).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadRecord {
    pub engine: Engine,
    /// Hours this run loaded, and hours already loaded (listed in the ledger) and reused.
    pub hours_loaded: u64,
    pub hours_reused: u64,
    /// Events this run stored.
    pub events_loaded: u64,
    /// Wall seconds of this run's load, including the table's upkeep (PostgreSQL:
    /// `VACUUM (ANALYZE)`); None when every hour was reused.
    pub seconds: Option<f64>,
    /// `events_loaded` over `seconds` less the upkeep.
    pub events_per_second: Option<f64>,
    /// Hours loaded side by side at most, as asked (`--concurrency`; a load
    /// of fewer hours runs fewer); 0 in older files.
    #[serde(default)]
    pub concurrency: usize,
    /// Of `seconds`: the upkeep after loading, and what it was.
    pub upkeep: Option<String>,
    pub upkeep_seconds: Option<f64>,
    /// Attempts at hours this run made again after a fault (a server lost and
    /// back, a damaged download), and the hours that needed them: `seconds`
    /// includes their time and the waits between them.
    #[serde(default)]
    pub retries: u64,
    #[serde(default)]
    pub hours_retried: u64,
    /// What the hours held besides events: damaged files and quarantined lines.
    #[serde(default)]
    pub damage: DataDamage,
    /// What the load warned of, as `ghbench ingest` says it (e.g. its upkeep
    /// failed, the table could not be counted at the end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What a load's hours held that is not events, as `ghbench ingest` reports
/// it: files that were empty, truncated or corrupt (their readable lines
/// load), and lines quarantined. Hours reused from an earlier run count from
/// the engine's ledger, which keeps the counts but not the defects.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DataDamage {
    /// `hour: what was wrong with its file`, e.g. `2015-01-01T03: truncated gzip …`.
    pub damaged_hours: Vec<String>,
    /// Lines quarantined by this run's reading, by defect (`invalid_json`, …).
    pub quarantined: std::collections::BTreeMap<String, u64>,
    /// Lines quarantined when the reused hours were loaded (ledger counts).
    pub quarantined_reused: u64,
    /// Documents kept with `\u0000` escapes removed.
    pub sanitized: u64,
    /// The folder of the quarantined lines.
    pub quarantine_dir: String,
}

impl DataDamage {
    pub fn quarantined_total(&self) -> u64 {
        self.quarantined.values().sum::<u64>() + self.quarantined_reused
    }

    /// Nothing damaged, nothing quarantined.
    pub fn is_clean(&self) -> bool {
        self.damaged_hours.is_empty() && self.quarantined_total() == 0
    }

    /// For people: `2 damaged hours (…); 12 lines quarantined (invalid_json 10, …) in DIR`.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.damaged_hours.is_empty() {
            parts.push(format!("{} ({})", ghbench_core::count_of(self.damaged_hours.len(), "damaged hour"), self.damaged_hours.join("; ")));
        }
        if self.quarantined_total() > 0 {
            let mut kinds: Vec<String> = self.quarantined.iter().map(|(defect, n)| format!("{defect} {n}")).collect();
            if self.quarantined_reused > 0 {
                kinds.push(format!("{} in reused hours", self.quarantined_reused));
            }
            parts.push(format!("{} quarantined ({}) in {}", ghbench_core::count_of(self.quarantined_total() as usize, "line"), kinds.join(", "), self.quarantine_dir));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `bench --regime`: one load, then the same engines queried under memory
/// limits chosen so the reference engine's data (table and indexes) is the
/// asked multiple of its memory: the paper's verdict as a function of
/// data ÷ memory. The size's own run (memory free) is the first point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Regime {
    /// The engine the ratios are of (the run's first: postgres by default, the
    /// paper's jsonb), and its stored bytes the limits were chosen from.
    pub reference: Engine,
    pub reference_bytes: u64,
    /// The ratios asked (data ÷ memory), in the order measured (smallest first).
    pub ratios: Vec<f64>,
    /// Whether the limits held during the load and the index builds: the
    /// sweep loads without one, since its limits come from what was stored.
    pub load_memory: String,
    /// `--iops-size`: the most one read carried at the throttled disk points
    /// (their bandwidth at most their IOPS times it); None: not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops_size: Option<u64>,
    /// One per ratio measured, in that order.
    pub points: Vec<RegimePoint>,
}

/// The queries under one limit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegimePoint {
    /// The data ÷ memory asked for the reference engine.
    pub ratio: f64,
    /// The limit: the reference's bytes over the ratio, in whole pages.
    pub memory_bytes: u64,
    /// The disk throttle the point's servers and workers read through
    /// (`--disk`, its read IOPS set by `--regime-iops`); None: the disk free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<crate::run::DiskRules>,
    /// The run under it: each engine's memory (its limit and the kernel's
    /// counters), data ÷ memory, cold and hot runs, verification.
    pub run: RunRecord,
}

impl RegimePoint {
    /// On the disk the memory-free run read: no read IOPS of `--regime-iops`'
    /// own (`free`, or no disk axis; `--disk`'s other rules may hold).
    pub fn on_free_disk(&self) -> bool {
        self.disk.as_ref().and_then(|d| d.read_iops).is_none()
    }
}

impl Regime {
    /// The limit for `ratio`: the reference's bytes over it, in whole 4 KiB
    /// pages; None below [`MIN_REGIME_MEMORY`].
    pub fn limit_for(reference_bytes: u64, ratio: f64) -> Option<u64> {
        let bytes = (reference_bytes as f64 / ratio) as u64 / 4096 * 4096;
        (bytes >= MIN_REGIME_MEMORY).then_some(bytes)
    }
}

/// The least memory a sweep gives a server: PostgreSQL's processes alone
/// take tens of MiB before a page of data is cached.
pub const MIN_REGIME_MEMORY: u64 = 64 << 20;

/// How one engine's hot median of one query grows with the data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Growth {
    pub query: String,
    pub variant: String,
    pub engine: Engine,
    /// (events loaded, hot median seconds), smallest size first; sizes where
    /// the engine failed are left out.
    pub points: Vec<(u64, f64)>,
    /// The slope of the least-squares line through the points: seconds added
    /// per million events (None with fewer than two sizes).
    pub seconds_per_million_events: Option<f64>,
    /// The slope on log–log axes: 1 is linear growth, below 1 sublinear (an
    /// index, a fixed cost), above 1 superlinear.
    pub exponent: Option<f64>,
    /// The same fit of the cold run (the first after `--cold` cleared the
    /// caches); None without cold runs, and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<Fit>,
    /// The same fit of the answer's rows: an answer that grows with the data
    /// (groups that keep arriving) costs more than its scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Fit>,
}

/// A quantity against events loaded, over the sizes, and its fitted growth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// (events loaded, value), smallest size first.
    pub points: Vec<(u64, f64)>,
    /// The least-squares slope per million events.
    pub per_million_events: Option<f64>,
    /// The slope on log–log axes (1: linear).
    pub exponent: Option<f64>,
}

impl Fit {
    pub fn of(points: Vec<(u64, f64)>) -> Fit {
        let millions: Vec<(f64, f64)> = points.iter().map(|&(n, v)| (n as f64 / 1e6, v)).collect();
        let logs: Vec<(f64, f64)> = points.iter().filter(|&&(n, v)| n > 0 && v > 0.0).map(|&(n, v)| ((n as f64).ln(), v.ln())).collect();
        Fit { per_million_events: slope(&millions), exponent: slope(&logs), points }
    }

    /// Why the fit means nothing, if it does not (as [`Growth::not_meaningful`]);
    /// `floor`: the least largest value that is more than fixed costs and noise
    /// (seconds for times; None for sizes and rows).
    pub fn not_meaningful(&self, floor: Option<f64>) -> Option<String> {
        // The slope on log–log axes rests on the points above 0 alone.
        let fitted: Vec<&(u64, f64)> = self.points.iter().filter(|p| p.0 > 0 && p.1 > 0.0).collect();
        let (Some(first), Some(last)) = (fitted.first(), fitted.last()) else { return Some("no size answered".into()) };
        if fitted.len() < MIN_FIT_SIZES {
            return Some(format!("{} sizes: a fit needs {MIN_FIT_SIZES} or more", fitted.len()));
        }
        let span = last.0 as f64 / first.0.max(1) as f64;
        if span < MIN_FIT_SPAN {
            return Some(format!("sizes only {span:.1}× apart: a fit needs {MIN_FIT_SPAN}× or more"));
        }
        let largest = self.points.iter().map(|p| p.1).fold(0.0, f64::max);
        if let Some(floor) = floor.filter(|floor| largest < *floor) {
            return Some(format!("times under {} ms: fixed costs and noise, not growth", floor * 1000.0));
        }
        if self.per_million_events.is_some_and(|s| s < 0.0) || self.exponent.is_some_and(|e| e < 0.0) {
            let what = if floor.is_some() { "time" } else { "it" };
            return Some(format!("{what} fell as the data grew: noise, not a growth rate"));
        }
        None
    }

    /// The sizes (events) whose value is under `floor`: in a fit that holds,
    /// their times are mostly fixed costs, said beside it.
    pub fn under_floor(&self, floor: f64) -> Vec<u64> {
        self.points.iter().filter(|p| p.1 < floor).map(|p| p.0).collect()
    }

    /// `1.32` when meaningful (above `floor` for times), else `–`.
    pub fn exponent_said(&self, floor: Option<f64>) -> String {
        match (self.not_meaningful(floor), self.exponent) {
            (None, Some(e)) => format!("{e:.2}"),
            _ => "–".into(),
        }
    }
}

/// One engine's load, index builds and stored bytes against the events, over
/// the sizes (`bench --scale`): what a load costs as the data grows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineGrowth {
    pub engine: Engine,
    /// Seconds of the size's own load run (sizes reused from an earlier run left out).
    pub load_seconds: Fit,
    /// Seconds of the index builds (and the statistics after them).
    pub index_seconds: Fit,
    /// Table and index bytes stored.
    pub stored_bytes: Fit,
    /// Of them, per event at each size: (events, bytes per event).
    pub bytes_per_event: Vec<(u64, f64)>,
}

/// Growth above this log–log slope is what the reports look into (the plan,
/// the bytes spilled): more than linear, beyond noise.
pub const SUPERLINEAR: f64 = 1.1;

impl Growth {
    pub fn of(query: &str, variant: &str, engine: &Engine, points: Vec<(u64, f64)>) -> Growth {
        let hot = Fit::of(points);
        Growth {
            query: query.to_string(),
            variant: variant.to_string(),
            engine: engine.clone(),
            seconds_per_million_events: hot.per_million_events,
            exponent: hot.exponent,
            points: hot.points,
            cold: None,
            rows: None,
        }
    }

    /// Why the fitted numbers mean nothing, if they do not: too few sizes,
    /// sizes too close together, times too small, or time falling as the
    /// data grows. Judged when shown, so older records are judged too.
    pub fn not_meaningful(&self) -> Option<String> {
        self.hot().not_meaningful(Some(MIN_FIT_SECONDS))
    }

    /// The hot medians' fit, as the other fits are kept.
    pub fn hot(&self) -> Fit {
        Fit { points: self.points.clone(), per_million_events: self.seconds_per_million_events, exponent: self.exponent }
    }
}

/// Fewest sizes a growth fit needs: a line through two points fits anything.
pub const MIN_FIT_SIZES: usize = 3;
/// The largest size must hold this many times the smallest's events.
pub const MIN_FIT_SPAN: f64 = 4.0;
/// Below this hot median at the largest size, fixed costs and noise outweigh growth.
pub const MIN_FIT_SECONDS: f64 = 0.01;

/// The least-squares slope of y on x; None with fewer than two distinct x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The growth of every query, variant and engine across the sizes (empty
/// with a single size).
pub fn growth(sizes: &[SizeRecord]) -> Vec<Growth> {
    if sizes.len() < 2 {
        return Vec::new();
    }
    let mut growth = Vec::new();
    let Some(first) = sizes.first() else { return growth };
    for q in &first.run.queries {
        for e in &q.engines {
            let results: Vec<(u64, &crate::run::EngineResult)> = sizes
                .iter()
                .filter_map(|size| {
                    let events = size.events()?;
                    let query = size.run.queries.iter().find(|o| o.query == q.query && o.variant == q.variant)?;
                    Some((events, query.engines.iter().find(|r| r.engine == e.engine)?))
                })
                .collect();
            let of = |value: &dyn Fn(&crate::run::EngineResult) -> Option<f64>| results.iter().filter_map(|(n, r)| Some((*n, value(r)?))).collect::<Vec<_>>();
            let mut fitted = Growth::of(&q.query, &q.variant, &e.engine, of(&|r| Some(r.stats?.median)));
            let cold = of(&|r| r.cold_seconds());
            fitted.cold = (!cold.is_empty()).then(|| Fit::of(cold));
            let rows = of(&|r| Some(r.rows? as f64));
            fitted.rows = (!rows.is_empty()).then(|| Fit::of(rows));
            growth.push(fitted);
        }
    }
    growth
}

/// Per engine of the largest size, how its load, index builds and stored
/// bytes grow across the sizes (empty with a single size).
pub fn engine_growth(sizes: &[SizeRecord]) -> Vec<EngineGrowth> {
    let Some(largest) = sizes.last().filter(|_| sizes.len() > 1) else { return Vec::new() };
    largest
        .run
        .context
        .engines
        .iter()
        .map(|e| {
            let engine = &e.engine;
            // Against the engine's own events at each size.
            let events = |s: &SizeRecord| s.run.context.engines.iter().find(|x| &x.engine == engine)?.data.as_ref().map(|d| d.events);
            let at = |value: &dyn Fn(&SizeRecord) -> Option<f64>| sizes.iter().filter_map(|s| Some((events(s)?, value(s)?))).collect::<Vec<_>>();
            let stored = |s: &SizeRecord| {
                let storage = s.run.context.engines.iter().find(|x| &x.engine == engine)?.storage.as_ref()?;
                Some((storage.table_bytes + storage.index_bytes) as f64)
            };
            // Indexes built by this run (an index found there already took a no-op's time).
            let indexes = |s: &SizeRecord| {
                let built = s.indexes.iter().find(|i| &i.engine == engine && i.error.is_none())?;
                let made: Vec<f64> = built.indexes.iter().filter(|i| i.created).map(|i| i.seconds).collect();
                (!made.is_empty()).then(|| made.iter().sum::<f64>() + built.statistics.as_ref().map_or(0.0, |a| a.seconds))
            };
            // Loads that loaded the whole size (hours reused from an earlier run took none of its time).
            let load = |s: &SizeRecord| s.loads.iter().find(|l| &l.engine == engine && l.hours_reused == 0)?.seconds;
            EngineGrowth {
                engine: engine.clone(),
                load_seconds: Fit::of(at(&load)),
                index_seconds: Fit::of(at(&indexes)),
                bytes_per_event: at(&|s| Some(stored(s)? / events(s)?.max(1) as f64)),
                stored_bytes: Fit::of(at(&stored)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_fits_a_line_and_refuses_a_point() {
        let line = [(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)];
        assert!((slope(&line).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[(1.0, 1.0)]), None);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), None, "no spread in x: no slope");
    }

    #[test]
    fn growth_says_linear_and_fixed_cost_apart() {
        let engine = Engine::from("postgres");
        // Time proportional to events: 0.5 s per million, exponent 1.
        let linear = Growth::of("A", "corrected", &engine, vec![(1_000_000, 0.5), (4_000_000, 2.0), (16_000_000, 8.0)]);
        assert!((linear.seconds_per_million_events.unwrap() - 0.5).abs() < 1e-9);
        assert!((linear.exponent.unwrap() - 1.0).abs() < 1e-9);
        // The same time at every size: no growth.
        let flat = Growth::of("A", "corrected", &engine, vec![(1_000_000, 0.2), (4_000_000, 0.2)]);
        assert!(flat.seconds_per_million_events.unwrap().abs() < 1e-12);
        assert!(flat.exponent.unwrap().abs() < 1e-12);
    }

    #[test]
    fn a_fit_over_too_little_is_not_a_result() {
        let engine = Engine::from("postgres");
        let fit = |points: Vec<(u64, f64)>| Growth::of("A", "corrected", &engine, points).not_meaningful();
        assert_eq!(fit(vec![(1_000_000, 0.5), (4_000_000, 2.0), (16_000_000, 8.0)]), None, "three sizes, 16× apart, growing");
        let two = fit(vec![(1_000_000, 0.5), (16_000_000, 8.0)]).unwrap();
        assert!(two.starts_with("2 sizes"), "{two}");
        let close = fit(vec![(1_000_000, 0.5), (1_500_000, 0.7), (2_000_000, 1.0)]).unwrap();
        assert!(close.contains("2.0× apart"), "{close}");
        let tiny = fit(vec![(7_702, 0.002), (30_000, 0.003), (120_000, 0.004)]).unwrap();
        assert!(tiny.contains("under 10 ms"), "{tiny}");
        let falling = fit(vec![(1_000_000, 0.9), (4_000_000, 0.5), (16_000_000, 0.4)]).unwrap();
        assert!(falling.contains("time fell"), "{falling}");
    }
}

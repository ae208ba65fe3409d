//! What `index`, `query` and `report` share: the query catalog option, the
//! run's context, and writing result files (the Markdown report with its charts).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use ghbench_core::{Engine, TableName};
use ghbench_olap::consistency::explain_mismatches;
use ghbench_olap::record::{ColdRecord, Context, DataConsistency, EngineRecord, MemoryShare, QueryRecord, DECLARED, Resumed, RunRecord, SCHEMA};
use ghbench_report::{data_warning, Chart};
use ghbench_olap::concurrency::{resolve_mix, run_concurrency, Answers, ConcurrencyOptions};
use ghbench_olap::runner::{check_data, cold_label, describe_engine, run_queries_keeping_answers, select, Cooler, DescribedEngine, Progress, QueryOptions, RunEvent, RECONNECT_LIMIT};
use ghbench_olap::{environment, Backend, Catalog};

use super::cold::{BenchCooler, ColdHow};
use super::servers::{ManagedServers, ServersArg};
use super::bench::limits::Limits;
use crate::options::Selected;

/// The default table when --table is not given: the paper's year.
pub const DEFAULT_YEAR: i32 = 2015;

#[derive(Args, Debug, Clone, Default)]
pub struct CatalogOptions {
    /// Read query and index files from this folder (laid out like the repository's
    /// queries/) instead of the copy compiled into ghbench.
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
}

impl CatalogOptions {
    pub fn load(&self) -> Result<Catalog> {
        Ok(match &self.catalog {
            Some(dir) => Catalog::from_dir(dir)?,
            None => Catalog::embedded()?,
        })
    }
}

/// `--variant` value meaning every variant of the catalog.
pub const EVERY_VARIANT: &str = "both";

/// How each query is timed: what `query` and `bench` both take.
#[derive(Args, Debug, Clone)]
pub struct TimingArgs {
    /// Timed (hot) runs per engine and query, after the cold run(s) when --cold.
    #[arg(long, default_value_t = 3, value_parser = crate::options::at_least_one::<u64>)]
    pub repeat: u64,

    /// Which query texts: `published` (the paper's), `corrected` (deterministic,
    /// equivalent across engines), or `both` (every variant in the catalog).
    #[arg(long, default_value = EVERY_VARIANT)]
    pub variant: String,

    /// Stop each run of a query (and its plan) past this long, e.g. 90s, 2h,
    /// 1h30m, 500ms (from 1ms to 24 days): PostgreSQL's statement_timeout,
    /// MongoDB's maxTimeMS, polars' worker process killed. A query cut by it is
    /// recorded and said as such. Without
    /// it no limit applies, not even a server's or a role's default (ghbench's
    /// sessions turn those off): the paper's queries ran for hours.
    #[arg(long, value_name = "DURATION", value_parser = ghbench_core::limit::parse_limit)]
    pub query_timeout: Option<Duration>,

    /// Record each query's plan as it ran (PostgreSQL EXPLAIN (ANALYZE,
    /// BUFFERS), MongoDB executionStats), which runs every query once more
    /// (said in the progress). Without it the estimated plan (EXPLAIN (FORMAT
    /// JSON), queryPlanner) says which indexes each engine chose, and every
    /// query runs exactly --repeat times (+--cold-repeat with --cold).
    #[arg(long)]
    pub analyze_plans: bool,

    /// The memory of a server whose memory ghbench cannot learn (one on
    /// another machine that does not report it), e.g. 64GiB: each record's
    /// data ÷ memory then uses it, labelled as declared by you. A server on
    /// this machine is measured instead (its cgroup's limit, else the machine's).
    #[arg(long, value_name = "SIZE", value_parser = ghbench_core::size::parse_declared_memory)]
    pub server_memory: Option<u64>,

    /// A cold first run of every query, before its hot runs: `restart` (what a
    /// bare --cold means) restarts each server listed in --servers and drops
    /// the OS page cache, a true cold run (an engine without a server starts
    /// afresh; any other server gets `clear`, labelled not truly cold);
    /// `clear` drops the OS page cache and what each server clears without a
    /// restart.
    #[arg(long, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "restart")]
    pub cold: Option<ColdHow>,

    /// With --cold, this many cold runs of every query, each made cold on its
    /// own (server restarted, page cache dropped) just before it, one after
    /// the other before the hot runs: the record keeps each, the views show
    /// their median and range.
    // Checked in `options`, not by clap: bench's --preset sets --cold after parsing.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::options::at_least_one::<u64>)]
    pub cold_repeat: u64,

    /// Make the hot runs in rounds: every query once per round, in turn (A, B,
    /// C, D, A, B, …, --repeat rounds), instead of each query's runs back to
    /// back, so a query's runs find what the others left cached, not its own
    /// (as the paper's Query A most likely did, alternating with B–D). With
    /// --cold, a round of cold runs comes first, each query made cold just
    /// before its own. Each query's record is complete, and kept, only after
    /// its run in the last round: a run stopped before then keeps none of that
    /// query's runs (--resume runs it again). Recorded, and said in the label.
    #[arg(long)]
    pub rounds: bool,

    /// Throttle the disk the servers `just setup` started and polars' workers
    /// read from, as the kernel enforces it (cgroup v1 blkio or v2 io.max, on
    /// the disk under their data; needs root): riops=N (reads a second),
    /// rbps=SIZE (bytes read a second), wiops, wbps, e.g. riops=1000,rbps=262MB
    /// (an EBS volume of 1,000 provisioned IOPS, which counts a read of up to
    /// 256 KiB as one: 262 MB/s at most; a kernel reading 128 KiB at a time
    /// gets half that, as `bench --iops-size` models). The servers are
    /// restarted inside it, and as setup left them afterwards.
    #[arg(long, value_name = "LIMITS")]
    pub disk: Option<super::bench::disk::DiskArg>,

    #[command(flatten)]
    pub managed: ServersArg,
}

impl TimingArgs {
    /// The run's options for `queries` (empty: all) of the chosen variants,
    /// checked against the catalog.
    pub fn options(&self, catalog: &Catalog, queries: Vec<String>) -> Result<QueryOptions> {
        if self.cold_repeat > 1 && self.cold.is_none() {
            anyhow::bail!("--cold-repeat {} asks for that many true cold runs of every query: add --cold (`--help` says what it does)", self.cold_repeat);
        }
        let variants = match self.variant.as_str() {
            EVERY_VARIANT => catalog.variant_names(),
            one => vec![catalog.variant(one).map(|_| one.to_string())?],
        };
        Ok(QueryOptions {
            variants,
            queries,
            repeat: self.repeat as usize,
            cold: self.cold.is_some(),
            cold_repeat: self.cold_repeat as usize,
            rounds: self.rounds,
            reconnect_limit: RECONNECT_LIMIT,
            query_timeout: self.query_timeout,
            analyze_plans: self.analyze_plans,
            server_memory: self.server_memory,
            skip: Vec::new(),
        })
    }

    /// The servers file, read when a cold run restarts servers or a memory
    /// limit needs them (`needed`); None when not needed or absent.
    pub fn managed_servers(&self, needed: bool) -> Result<Option<ManagedServers>> {
        // Read whatever the run: a --servers the user named must exist even
        // when this run restarts nothing, or a typo goes unnoticed.
        let servers = self.managed.load()?;
        Ok(servers.filter(|_| needed || self.cold == Some(ColdHow::Restart)))
    }

    /// `--cold`'s method as records name it.
    pub fn cold_method(&self) -> Option<&'static str> {
        self.cold.map(|how| match how {
            ColdHow::Restart => "restart",
            ColdHow::Clear => "clear",
        })
    }

    /// What makes each engine's first run cold on `table`: the servers of
    /// `managed` restarted (under `limits`, when given), or only cleared.
    pub fn cooler(&self, engines: &[Selected], managed: Option<&ManagedServers>, table: &TableName, limits: Option<Limits>) -> BenchCooler {
        BenchCooler::new(engines, managed, self.cold.unwrap_or(ColdHow::Restart), table, limits)
    }
}

/// Index names are made from the table's (`{table}_idx_issue_comments`): a
/// table that leaves them no room is refused before anything is loaded or
/// built, naming the longest, not when its first index is made after the load.
pub fn check_index_room(table: &TableName, catalog: &Catalog) -> Result<()> {
    let derived = format!("{table}{}", catalog.longest_derived_tail());
    if derived.len() > TableName::MAX_LEN {
        anyhow::bail!(
            "--table {table} is too long for the index names made from it: '{derived}' would be {} bytes, more than the {} PostgreSQL keeps of a name; choose a --table of at most {} characters",
            derived.len(),
            TableName::MAX_LEN,
            TableName::MAX_LEN - (derived.len() - table.as_str().len())
        );
    }
    Ok(())
}

/// Describes every engine (server, data per the ledger, sizes).
pub async fn describe_engines(backends: &[Box<dyn Backend>]) -> Vec<DescribedEngine> {
    let mut engines = Vec::new();
    for backend in backends {
        engines.push(describe_engine(backend.as_ref()).await);
    }
    engines
}

/// The engines' records alone, for commands that do not check their data.
pub async fn engine_records(backends: &[Box<dyn Backend>]) -> Vec<EngineRecord> {
    describe_engines(backends).await.into_iter().map(|e| e.record).collect()
}

/// What one run measures: the timed queries, the engine the others are
/// compared with, and the concurrency phase after them (if asked for).
pub struct RunPlan {
    pub queries: QueryOptions,
    pub baseline: Option<Engine>,
    pub concurrency: Option<ConcurrencyOptions>,
    /// How the record is kept as the run goes, after every query and marked
    /// unfinished (the caller writes the finished one); None: only at the
    /// end, by the caller.
    pub record_to: Option<KeptAsItGoes>,
    /// An unfinished record to go on from (`--resume`), and the folder its
    /// answers are in: its queries are kept, with their answers.
    pub resume: Option<(RunRecord, PathBuf)>,
    /// `--cold`'s method (`restart`, `clear`), recorded with the cold runs.
    pub cold_method: Option<&'static str>,
    /// What was done to every engine's caches before the runs (`bench
    /// --memory` drops the page cache): recorded with the cold actions, and
    /// said in the label of hot-only runs.
    pub before_runs: Vec<String>,
}

/// How a run's record is kept as it goes: each finished query's answers
/// into a folder, then the record so far written where its command keeps it
/// (`query`: the record itself; `bench`: inside the bench's record).
pub struct KeptAsItGoes {
    /// The answers' folder (see [`answers_file`]).
    pub answers: PathBuf,
    /// Writes the record so far, unfinished; says where in its error.
    pub save: Box<dyn Fn(&RunRecord) -> Result<()> + Send + Sync>,
}

impl KeptAsItGoes {
    /// The record written whole at `path`, its answers in [`answers_dir`] beside it.
    pub fn at(path: &Path) -> KeptAsItGoes {
        let (answers, path) = (answers_dir(path), path.to_path_buf());
        let save = move |record: &RunRecord| write(&path, &serde_json::to_string_pretty(record)?);
        KeptAsItGoes { answers, save: Box::new(save) }
    }
}

/// Passes every event on, and keeps the record so far after each query.
struct Checkpoints<'a> {
    inner: &'a dyn Progress,
    record: std::sync::Mutex<RunRecord>,
    to: &'a KeptAsItGoes,
    /// What the engines hold: the cause of a mismatch, said as the final record says it.
    data: &'a DataConsistency,
}

impl Progress for Checkpoints<'_> {
    fn event(&self, event: RunEvent<'_>) {
        if let RunEvent::QueryDone { record: query, rows } = &event {
            // The answers first: a record never lists a query whose answers are not kept.
            let kept = serde_json::to_string(rows).map_err(anyhow::Error::from).and_then(|json| write(&answers_file(&self.to.answers, query), &json));
            let mut record = self.record.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut query = (*query).clone();
            explain_mismatches(std::slice::from_mut(&mut query), self.data);
            record.queries.push(query);
            if let Err(e) = kept.and_then(|()| (self.to.save)(&record)) {
                eprintln!("warning: the record of the queries so far was not written ({e:#}); the run goes on");
            }
        }
        self.inner.event(event);
    }
}

/// Where a record written as the run goes keeps one query's answers, every
/// engine's rows, for a resumed run to check its answers under load against:
/// `<answers>/<query>-<variant>.json`.
fn answers_file(answers: &Path, query: &QueryRecord) -> PathBuf {
    answers.join(format!("{}-{}.json", query.query, query.variant))
}

/// `olap-<time>.answers/` beside the record: every engine's rows of every
/// query, kept for `--resume` (answers under load are checked against them).
pub fn answers_dir(record: &Path) -> PathBuf {
    record.with_extension("answers")
}

/// The kept answers of a resumed run's queries; a query whose file is gone
/// gets none (its answers under load are then not checked, said there).
fn kept_answers(answers: &Path, queries: &[QueryRecord]) -> Vec<Vec<Option<Vec<ghbench_olap::rows::Row>>>> {
    queries
        .iter()
        .map(|q| {
            let read = std::fs::read_to_string(answers_file(answers, q)).ok().and_then(|json| serde_json::from_str(&json).ok());
            read.unwrap_or_else(|| vec![None; q.engines.len()])
        })
        .collect()
}

/// The concurrency phase's options with its mix resolved against the queries
/// the run times (see [`resolve_mix`]); None when not asked for. `bench` calls
/// it before making any data, `measure` before timing anything.
pub fn plan_concurrency(catalog: &Catalog, options: &QueryOptions, asked: Option<ConcurrencyOptions>) -> Result<Option<ConcurrencyOptions>> {
    let Some(asked) = asked else { return Ok(None) };
    let run: Vec<(String, String)> = select(catalog, options)?.into_iter().map(|(variant, query, _)| (variant, query)).collect();
    Ok(Some(ConcurrencyOptions { mix: resolve_mix(&asked.mix, &run)?, ..asked }))
}

/// The queries on every engine, timed and verified, as a run record; first
/// the engines are described and their data compared, and a run is refused
/// when an engine holds nothing. Also returns the data warning (said on
/// standard error before any timing: it explains every mismatch that follows).
pub async fn measure(
    backends: &mut [Box<dyn Backend>],
    catalog: &Catalog,
    plan: RunPlan,
    table: &TableName,
    progress: &dyn Progress,
    cooler: &dyn Cooler,
) -> Result<(RunRecord, Vec<String>)> {
    let RunPlan { queries: mut options, baseline, concurrency, record_to, resume, cold_method, before_runs } = plan;
    let kept: Vec<QueryRecord> = resume.as_ref().map(|(r, _)| r.queries.clone()).unwrap_or_default();
    let mut answers_kept = resume.as_ref().map(|(_, path)| kept_answers(path, &kept)).unwrap_or_default();
    options.skip = kept.iter().map(|q| (q.variant.clone(), q.query.clone())).collect();
    let options = &options;
    // The mix is checked before anything is timed: a typo must not cost a run.
    let concurrency = plan_concurrency(catalog, options, concurrency)?;
    let described = describe_engines(backends).await;
    let data_consistency = check_data(&described);
    let mut engines: Vec<EngineRecord> = described.into_iter().map(|e| e.record).collect();
    if let Some(bytes) = options.server_memory {
        for engine in engines.iter_mut().filter(|e| e.memory.is_none()) {
            engine.memory = Some(MemoryShare { bytes, from: DECLARED.into(), limit: None, nodes: Vec::new() });
        }
    }
    let mut context = context(table.to_string(), catalog, options.repeat, engines);
    context.baseline = baseline;
    context.query_timeout_seconds = options.query_timeout.map(|l| l.as_secs_f64());
    // Known before the runs: an unfinished record says them, a resume compares them.
    context.cold.requested = options.cold;
    context.cold.runs = options.cold_runs();
    context.cold.rounds = options.rounds;
    context.cold.method = cold_method.map(str::to_string);
    context.analyze_plans = options.analyze_plans;
    context.catalog_digest = Some(catalog_digest(catalog, options, backends)?);
    for engine in &context.engines {
        if let Some(error) = &engine.data_error {
            anyhow::bail!("{} cannot read its ingest ledger for '{table}': {error}", engine.engine);
        }
        let events = engine.data.as_ref().map(|d| d.events).unwrap_or(0);
        if events == 0 {
            anyhow::bail!("{} holds no data for '{table}' per its ingest ledger: run `ghbench ingest` first", engine.engine);
        }
    }
    context.data_consistency = Some(data_consistency.clone());
    if let Some((then, _)) = &resume {
        let changed = super::resume::changes(&then.context, &context);
        if !changed.is_empty() {
            anyhow::bail!("cannot resume the run of {}: {}; its numbers would not be about this run (start it anew)", then.context.started_at, changed.join("; "));
        }
        // In rounds the queries left would run among themselves, not between
        // the kept ones' runs as the label says: such a run goes on only whole.
        if options.rounds && !kept.is_empty() {
            anyhow::bail!(
                "cannot resume the run of {} part way: its runs went in rounds (--rounds), and the queries left would run in rounds of their own, not between the kept ones' runs; start it anew",
                then.context.started_at
            );
        }
        let kept = kept.iter().map(|q| format!("{} {}", q.query, q.variant)).collect();
        context.resumed = Some(Resumed::going_on_from(&then.context.started_at, then.context.resumed.as_ref(), kept));
    }
    let warning = data_warning(&context);
    for line in &warning {
        eprintln!("{line}");
    }
    let unfinished = RunRecord { schema: SCHEMA.into(), context: context.clone(), queries: kept.clone(), published: catalog.paper(), concurrency: None, finished: false };
    let checkpoints = record_to.as_ref().map(|to| Checkpoints { inner: progress, record: std::sync::Mutex::new(unfinished), to, data: &data_consistency });
    let progress: &dyn Progress = match &checkpoints {
        Some(checkpoints) => checkpoints,
        None => progress,
    };
    let (queries, cold, answers) = run_queries_keeping_answers(backends, catalog, options, progress, cooler).await?;
    context.cold = match (&resume, queries.is_empty()) {
        // Every query kept: their first runs are the kept run's, said as it said them.
        (Some((then, _)), true) => then.context.cold.clone(),
        _ => ColdRecord { method: context.cold.method.take(), ..cold },
    };
    if !before_runs.is_empty() {
        context.cold.actions.splice(0..0, before_runs);
        if !context.cold.requested {
            context.cold.label = cold_label(&context.cold, &[]);
        }
    }
    context.cold.label = ghbench_olap::record::with_fit(&context.cold.label, &context.engines);
    // The kept queries first, as in the record, with their answers from beside it;
    // every mismatch's cause said as this run's data check says it.
    let mut queries: Vec<QueryRecord> = kept.into_iter().chain(queries).collect();
    explain_mismatches(&mut queries, &data_consistency);
    answers_kept.extend(answers.rows);
    let answers = Answers { rows: answers_kept };
    let concurrency = match concurrency {
        Some(load) => Some(run_concurrency(backends, catalog, &queries, &answers, &load, progress).await),
        None => None,
    };
    // What the kernel counted under each engine's memory limit, the runs and clients included.
    // (Of a server of several nodes, each node's.)
    for memory in context.engines.iter_mut().filter_map(|e| e.memory.as_mut()) {
        for limit in memory.limit.iter_mut().chain(memory.nodes.iter_mut().filter_map(|n| n.limit.as_mut())) {
            ghbench_olap::cgroup::count_over_runs(limit);
        }
    }
    // And under each engine's disk throttle: the proof the reads went through it.
    // (Of a server of several nodes, each node's, summed.)
    for limit in context.engines.iter_mut().filter_map(|e| e.disk_limit.as_mut()) {
        ghbench_olap::throttle::count_over_runs(limit);
    }
    Ok((RunRecord { schema: SCHEMA.into(), context, queries, published: catalog.paper(), concurrency, finished: true }, warning))
}

/// A digest of every query text the run times, on every engine: a resumed
/// run is refused when it changed.
fn catalog_digest(catalog: &Catalog, options: &QueryOptions, backends: &[Box<dyn Backend>]) -> Result<String> {
    let mut texts = Vec::new();
    for (variant, query, _) in select(catalog, options)? {
        for backend in backends {
            // A missing file fails that engine's query when it runs, not the run.
            match catalog.query(backend.dialect(), &variant, &query) {
                Ok(file) => {
                    texts.extend_from_slice(file.path.as_bytes());
                    texts.push(0);
                    texts.extend_from_slice(file.text.as_bytes());
                }
                Err(e) => texts.extend_from_slice(format!("missing: {e}").as_bytes()),
            }
            texts.push(0);
        }
    }
    Ok(ghbench_core::digest::of_bytes(&texts))
}

/// Everything but the queries' results: who, what, where, when.
/// `cold` starts as not requested and the data check as not done; the query run fills them in.
pub fn context(table: String, catalog: &Catalog, repeat: usize, engines: Vec<EngineRecord>) -> Context {
    Context {
        ghbench_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: crate::built::COMMIT.map(String::from),
        git_dirty: crate::built::DIRTY.map(|dirty| dirty == "true"),
        git_changes: crate::built::CHANGES.map(String::from),
        started_at: now(),
        arguments: environment::redacted_arguments(std::env::args()),
        table,
        catalog: catalog.origin.clone(),
        repeat,
        cold: ColdRecord::default(),
        machine: environment::machine(),
        engines,
        baseline: None,
        data_consistency: None,
        query_timeout_seconds: None,
        catalog_digest: None,
        analyze_plans: false,
        resumed: None,
    }
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `<dir>/<kind>-<UTC time>.<ext>`, e.g. `results/olap-20150101T000000Z.json`.
pub fn output_path(dir: &Path, kind: &str, ext: &str) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let _ = std::fs::create_dir_all(dir);
    // Two runs started in the same second (two terminals, a script) must not
    // write one file: each name is claimed (`NAME.claim`, made only if no
    // other run made it) until its first write; a later one gets `_2`, `_3`.
    for n in 1u32.. {
        // `_2` sorts after `.json`, as the later run should.
        let name = if n == 1 { format!("{kind}-{stamp}.{ext}") } else { format!("{kind}-{stamp}_{n}.{ext}") };
        let path = dir.join(name);
        if path.exists() {
            continue;
        }
        match std::fs::OpenOptions::new().write(true).create_new(true).open(claim_of(&path)) {
            Ok(_) => return path,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            // A folder that cannot be written: said by the first write.
            Err(_) => return path,
        }
    }
    unreachable!("a name is free before u32::MAX runs in one second")
}

/// The file that claims `path`'s name until it is first written.
pub fn claim_of(path: &Path) -> PathBuf {
    let mut claim = path.as_os_str().to_owned();
    claim.push(".claim");
    PathBuf::from(claim)
}

/// Where [`write`] writes `path` first: `PATH.writing`, beside it.
pub fn beside(path: &Path) -> PathBuf {
    let mut beside = path.as_os_str().to_owned();
    beside.push(".writing");
    PathBuf::from(beside)
}

/// Makes the results folder before any work, so a run is never lost at its
/// end to an `--output` that names a file or a place that cannot be written.
pub fn ensure_output_dir(dir: &Path) -> Result<()> {
    crate::options::check_folder("--output", dir, "for the results")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating the results folder {} (--output)", dir.display()))
}

/// Writes `contents` to `path` whole or not at all: into a file beside it,
/// then renamed over it, so a run killed while writing (or a full disk)
/// never leaves a cut record in place of the last good one.
pub fn write(path: &Path, contents: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let beside = beside(path);
    std::fs::write(&beside, contents).with_context(|| format!("writing {}", beside.display()))?;
    std::fs::rename(&beside, path).with_context(|| format!("renaming {} to {}", beside.display(), path.display()))?;
    // Its name no longer needs claiming: the file holds it (see [`output_path`]).
    let _ = std::fs::remove_file(claim_of(path));
    Ok(())
}

/// Writes `charts` as SVG files into `<stem>-charts/` beside the Markdown at
/// `md_path`; returns that folder and its name (for relative links).
pub fn write_charts<'a>(md_path: &Path, charts: impl IntoIterator<Item = &'a Chart>) -> Result<(PathBuf, String)> {
    let stem = md_path.file_stem().unwrap_or_default().to_string_lossy();
    let dir_name = format!("{stem}-charts");
    let dir = md_path.with_file_name(&dir_name);
    for chart in charts {
        write(&dir.join(chart.file_name()), &chart.svg)?;
    }
    Ok((dir, dir_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs started in the same second get names of their own, and a name's
    /// claim goes once its file is written.
    #[test]
    fn record_names_started_in_one_second_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..3).map(|_| output_path(dir.path(), "olap", "json")).collect();
        let mut sorted = paths.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, paths, "three names, each sorting after the one before: {paths:?}");
        write(&paths[0], "{}").unwrap();
        assert!(paths[0].is_file() && !claim_of(&paths[0]).exists());
        assert!(claim_of(&paths[1]).exists(), "a name not yet written stays claimed");
    }
}

//! Running the benchmark: every selected query × variant on every engine,
//! `repeat` timed runs each (after an optional cold run), each query's back
//! to back or all in rounds, the plan captured once, then the engines'
//! results compared.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;
use async_trait::async_trait;
use ghbench_core::{Engine, EngineError, Place};

use crate::backend::{Backend, OnIndexBuilt, QueryTimedOut};
use crate::catalog::{Catalog, QueryFile, QuerySpec};
use crate::concurrency::Answers;
use crate::consistency::{check, Holding};
use crate::environment::drop_os_page_cache;
use crate::cgroup::MemoryCgroup;
use crate::kernel_io;
use crate::ledger::Ledger;
use crate::record::{ColdRecord, DataConsistency, EngineRecord, EngineResult, IndexBuild, Iteration, KernelReads, Plan, QueryRecord, Reads, Reconnect, ServerRecord, Stats};
use crate::rows::Row;
use crate::verify::verify;

pub use crate::progress::{Progress, RunEvent, Silent};

/// The progress label of `--analyze-plans`' extra run.
pub const MEASURED_PLAN: &str = "measured plan (one more run, --analyze-plans)";

/// Rows of each result kept in the record for people to look at.
const HEAD_ROWS: usize = 10;

/// How long a lost connection has to come back (reconnecting with backoff)
/// before the engine's remaining queries fail: long enough for a restart.
/// A server that answers that it is starting up or recovering is making
/// progress: each such answer gives it this long again (a crash recovery at
/// scale replays minutes of WAL).
pub const RECONNECT_LIMIT: Duration = Duration::from_secs(30);

/// How often a reconnect that goes on because the server recovers says so.
const RECOVERY_SAID_EVERY: Duration = Duration::from_secs(15);

/// Lost connections one query may survive: a server that keeps dropping
/// them is not measured, it fails.
const RECONNECTS_PER_QUERY: usize = 3;

#[derive(Debug, Clone)]
pub struct QueryOptions {
    pub variants: Vec<String>,
    /// Query names (`A`, `C`); empty means every query of each variant.
    pub queries: Vec<String>,
    pub repeat: usize,
    pub cold: bool,
    /// `--cold-repeat`: cold runs of each query with --cold, each made cold
    /// on its own (at least 1).
    pub cold_repeat: usize,
    /// `--rounds`: the hot runs in rounds, every query once per round,
    /// instead of each query's runs back to back (see [`passes`]).
    pub rounds: bool,
    /// How long a lost connection may take to come back (see [`RECONNECT_LIMIT`]).
    pub reconnect_limit: Duration,
    /// `--query-timeout`: each run (and plan) of a query is stopped past
    /// it; None: no limit, not even a server's default.
    pub query_timeout: Option<Duration>,
    /// `--analyze-plans`: each query's plan as it ran, by one more run of it
    /// (said in the progress); else the estimated plan, with no extra run.
    pub analyze_plans: bool,
    /// `--server-memory`: the memory a server has that ghbench cannot learn.
    pub server_memory: Option<u64>,
    /// Queries (variant, query) not run: a resumed run has them already.
    pub skip: Vec<(String, String)>,
}

impl QueryOptions {
    /// Cold runs of each query asked for: `cold_repeat` (at least 1) with
    /// --cold, none without.
    pub fn cold_runs(&self) -> usize {
        match self.cold {
            true => self.cold_repeat.max(1),
            false => 0,
        }
    }
}

/// How long past `--query-timeout` ghbench still waits for an engine to stop
/// the query itself, before it stops waiting (and says so): the engine's own
/// stop is the one that frees the server, and it takes a moment to come.
pub const LIMIT_BACKSTOP: Duration = Duration::from_secs(10);

/// An engine as described before the runs. The record keeps only a summary
/// of the ledger; the data check compares the ledgers hour by hour.
pub struct DescribedEngine {
    pub record: EngineRecord,
    /// None when the ledger could not be read (the record says why).
    pub ledger: Option<Ledger>,
}

impl DescribedEngine {
    /// What the data check needs of the engine.
    pub fn holding(&self) -> Holding<'_> {
        let exact_rows = self.record.storage.as_ref().filter(|s| s.rows_exact).map(|s| s.rows);
        Holding { engine: self.record.engine.name(), ledger: self.ledger.as_ref(), exact_rows }
    }
}

/// What the engine is and holds. Whatever it cannot tell (its server build,
/// its ledger, its sizes) is recorded as an error, not guessed.
pub async fn describe_engine(backend: &dyn Backend) -> DescribedEngine {
    let (info, server_error) = split(backend.describe().await);
    let (ledger, data_error) = split(backend.ledger().await);
    let (storage, storage_error) = split(backend.sizes().await);
    let data = ledger.as_ref().map(Ledger::summary);
    let record = EngineRecord {
        engine: backend.engine().clone(),
        capabilities: Some(backend.spec().capabilities),
        setup: backend.setup(),
        server: info.as_ref().map(ServerRecord::from),
        server_error,
        data,
        data_error,
        storage,
        storage_error,
        memory: backend.memory().await,
        disk_limit: backend.disk_limit().await,
    };
    DescribedEngine { record, ledger }
}

/// Whether the described engines hold the same data.
pub fn check_data(engines: &[DescribedEngine]) -> DataConsistency {
    check(&engines.iter().map(DescribedEngine::holding).collect::<Vec<_>>())
}

fn split<T>(result: anyhow::Result<T>) -> (Option<T>, Option<String>) {
    match result {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(format!("unavailable: {e:#}"))),
    }
}

/// Builds the catalog's indexes on one engine; nothing for an engine that
/// takes none.
pub async fn create_indexes(
    backend: &dyn Backend,
    catalog: &Catalog,
    built: &OnIndexBuilt,
) -> anyhow::Result<Vec<IndexBuild>> {
    if !backend.spec().capabilities.indexes {
        return Ok(Vec::new());
    }
    let file = catalog.indexes(backend.dialect())?;
    backend.create_indexes(&file, built).await
}

/// The selected queries of each variant, checked against the catalog.
pub fn select<'c>(catalog: &'c Catalog, options: &QueryOptions) -> anyhow::Result<Vec<(String, String, &'c QuerySpec)>> {
    let mut selected = Vec::new();
    for variant in &options.variants {
        let queries = catalog.variant(variant)?;
        for name in &options.queries {
            if !queries.contains_key(name) {
                bail!("variant {variant} has no query {name} (it has {})", queries.keys().cloned().collect::<Vec<_>>().join(" "));
            }
        }
        for (name, spec) in queries {
            if options.queries.is_empty() || options.queries.contains(name) {
                selected.push((variant.clone(), name.clone(), spec));
            }
        }
    }
    Ok(selected)
}

/// Makes an engine cold before a query's first run (`--cold`).
#[async_trait]
pub trait Cooler: Send + Sync {
    /// Makes the `index`th engine cold; may replace its backend (a restarted
    /// server's connections are gone). Says what it did.
    async fn make_cold(&self, index: usize, backend: &mut Box<dyn Backend>) -> ColdStep;

    /// What [`Cooler::make_cold`] will do to the `index`th engine, for the progress line.
    fn how(&self, _index: usize) -> &'static str {
        CLEAR_ONLY
    }
}

/// What [`ClearCaches`] does: no server is restarted.
pub const CLEAR_ONLY: &str = "this machine's page cache and the server's own caches, no restart";

/// What one [`Cooler::make_cold`] did.
#[derive(Debug, Clone, Default)]
pub struct ColdStep {
    /// For people, e.g. `OS page cache dropped (…)`, `postgres restarted in 2.1 s`.
    pub actions: Vec<String>,
    /// The server was restarted (an embedded engine started afresh) and the
    /// OS page cache dropped: nothing the query reads is cached anywhere.
    pub true_cold: bool,
    /// Made cold by starting afresh, having no server: the label must not
    /// say a server was restarted.
    pub started_afresh: bool,
    /// The engine's server runs elsewhere (`engine at host`): this machine's
    /// page cache is not its.
    pub elsewhere: Option<String>,
}

/// What can be done to any server without owning it: drop the OS page cache
/// and what the server clears without a restart. Never a true cold run.
pub struct ClearCaches;

#[async_trait]
impl Cooler for ClearCaches {
    async fn make_cold(&self, _index: usize, backend: &mut Box<dyn Backend>) -> ColdStep {
        let dropped = drop_os_page_cache();
        let elsewhere = match backend.server_url().map(Place::of) {
            Some(Place::Elsewhere(hosts)) => Some(format!("{} at {}", backend.engine(), hosts.join(", "))),
            _ => None,
        };
        let mut actions = match &elsewhere {
            Some(server) => vec![format!(
                "{server}: that machine's page cache NOT dropped (ghbench drops only the page cache of the machine it runs on; here: {})",
                dropped.action
            )],
            None => vec![dropped.action],
        };
        actions.extend(backend.clear_caches().await);
        ColdStep { actions, true_cold: false, started_afresh: false, elsewhere }
    }
}

pub async fn run_queries(
    backends: &mut [Box<dyn Backend>],
    catalog: &Catalog,
    options: &QueryOptions,
    progress: &dyn Progress,
    cooler: &dyn Cooler,
) -> anyhow::Result<(Vec<QueryRecord>, ColdRecord)> {
    let (records, cold, _) = run_queries_keeping_answers(backends, catalog, options, progress, cooler).await?;
    Ok((records, cold))
}

/// As [`run_queries`], also giving every engine's rows of every query (the
/// concurrency phase checks its answers against them).
pub async fn run_queries_keeping_answers(
    backends: &mut [Box<dyn Backend>],
    catalog: &Catalog,
    options: &QueryOptions,
    progress: &dyn Progress,
    cooler: &dyn Cooler,
) -> anyhow::Result<(Vec<QueryRecord>, ColdRecord, Answers)> {
    let mut answers = Answers::default();
    let mut selected = select(catalog, options)?;
    selected.retain(|(variant, query, _)| !options.skip.iter().any(|(v, q)| v == variant && q == query));
    for backend in backends.iter_mut() {
        backend.limit_queries(options.query_timeout);
    }
    let per_query = (options.repeat + options.cold_runs()) as u64 + u64::from(options.analyze_plans);
    progress.event(RunEvent::Planned { runs: per_query * (selected.len() * backends.len()) as u64 });
    let mut cold = ColdRecord { requested: options.cold, runs: options.cold_runs(), rounds: options.rounds, ..ColdRecord::default() };
    let mut records = Vec::new();
    // An engine is truly cold only if every one of its cold runs was.
    let mut true_cold = vec![options.cold; backends.len()];
    let mut started_afresh = vec![false; backends.len()];
    // An engine whose connection was lost for good: why, said once in full.
    let mut gone: Vec<Option<String>> = vec![None; backends.len()];
    // Every engine's runs of every query, kept from pass to pass.
    let mut runs: Vec<Vec<QueryRuns>> =
        selected.iter().map(|(variant, query, _)| backends.iter().map(|b| QueryRuns::new(b.as_ref(), catalog, variant, query)).collect()).collect();
    for pass in passes(options) {
        for ((variant, query, spec), engines) in selected.iter().zip(runs.iter_mut()) {
            for (index, (backend, runs)) in backends.iter_mut().zip(engines.iter_mut()).enumerate() {
                if let Some(first) = &gone[index] {
                    let engine = backend.engine().clone();
                    runs.give_up(&engine, format!("{engine} lost its connection at {first} and did not come back"));
                    continue;
                }
                for (n, visit) in pass.visits.iter().enumerate() {
                    // A query that stopped (failed, or has no file) makes no more
                    // runs: nothing to make cold for.
                    if visit.cools && runs.stopped.is_none() {
                        progress.event(RunEvent::Cooling { engine: backend.engine(), variant, query, how: cooler.how(index) });
                        let step = cooler.make_cold(index, backend).await;
                        // A backend made anew (a restarted server, polars afresh) keeps the run's limit.
                        backend.limit_queries(options.query_timeout);
                        true_cold[index] &= step.true_cold;
                        started_afresh[index] |= step.started_afresh;
                        if let Some(server) = step.elsewhere.filter(|s| !cold.elsewhere.contains(s)) {
                            cold.elsewhere.push(server);
                        }
                        for action in step.actions {
                            if !cold.actions.contains(&action) {
                                cold.actions.push(action);
                            }
                        }
                    }
                    let plans = pass.plans && n + 1 == pass.visits.len();
                    runs.visit(backend, &visit.runs, plans, options, progress).await;
                    if runs.result.connection_gone {
                        gone[index] = Some(format!("{query} {variant}"));
                        break;
                    }
                }
            }
            if pass.plans {
                // The query's last pass: its record is complete, and kept as the run goes.
                let (mut results, rows): (Vec<EngineResult>, Vec<Option<Vec<Row>>>) = std::mem::take(engines).into_iter().map(QueryRuns::finish).unzip();
                let verification = verify(spec, &mut results, &rows);
                records.push(QueryRecord { query: query.clone(), variant: variant.clone(), title: spec.title.clone(), compare: spec.compare, verification, engines: results });
                progress.event(RunEvent::QueryDone { record: records.last().expect("just pushed"), rows: &rows });
                answers.rows.push(rows);
            }
        }
    }
    // No query run (a resumed run with every query kept): nothing was made cold.
    let ran = !records.is_empty();
    cold.true_cold_engines = backends.iter().zip(&true_cold).filter(|(_, t)| ran && **t).map(|(b, _)| b.engine().clone()).collect();
    cold.true_cold = options.cold && ran && true_cold.iter().all(|t| *t);
    let afresh: Vec<Engine> = backends.iter().zip(&started_afresh).filter(|(_, a)| **a).map(|(b, _)| b.engine().clone()).collect();
    cold.label = cold_label(&cold, &afresh);
    Ok((records, cold, answers))
}


/// One timed run of a query on an engine: its `n`th cold or hot run (from 1).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Run {
    Cold(usize),
    Hot(usize),
}

impl Run {
    /// As the progress says it: `cold run`, `cold run 2/3`, `run 2/3`.
    fn label(self, options: &QueryOptions) -> String {
        match self {
            Run::Cold(_) if options.cold_runs() == 1 => "cold run".into(),
            Run::Cold(n) => format!("cold run {n}/{}", options.cold_runs()),
            Run::Hot(n) => format!("run {n}/{}", options.repeat),
        }
    }
}

/// One pass over the selected queries, each engine in turn on each query:
/// its visits in order, then (`plans`: the query's last pass) its plan,
/// after which its record is complete.
#[derive(Debug, Clone, PartialEq)]
struct Pass {
    visits: Vec<Visit>,
    plans: bool,
}

/// Runs of one query on one engine made together, made cold first (`cools`).
#[derive(Debug, Clone, PartialEq)]
struct Visit {
    cools: bool,
    runs: Vec<Run>,
}

/// The passes a run makes. Back to back, one: each query's every run, then
/// the next query's. In rounds (`--rounds`), a pass of cold runs (with
/// --cold: each query still made cold just before its own), then a pass per
/// round with one hot run of every query, A, B, C, D, A, B, …: the runs
/// between two of one query's are the other queries', as most likely in the
/// paper, whose Query A found little of its own cached, alternating with B–D.
/// The plans come in the last round, after each query's last run.
fn passes(options: &QueryOptions) -> Vec<Pass> {
    // Each cold run made cold on its own, one after the other.
    let cold: Vec<Visit> = (1..=options.cold_runs()).map(|n| Visit { cools: true, runs: vec![Run::Cold(n)] }).collect();
    let hot = (1..=options.repeat).map(Run::Hot);
    let mut passes: Vec<Pass> = match options.rounds {
        false => {
            let hot = (options.repeat > 0).then(|| Visit { cools: false, runs: hot.collect() });
            vec![Pass { visits: cold.into_iter().chain(hot).collect(), plans: false }]
        }
        true => {
            let cold = (!cold.is_empty()).then_some(Pass { visits: cold, plans: false });
            cold.into_iter().chain(hot.map(|run| Pass { visits: vec![Visit { cools: false, runs: vec![run] }], plans: false })).collect()
        }
    };
    match passes.last_mut() {
        Some(last) => last.plans = true,
        None => passes.push(Pass { visits: Vec::new(), plans: true }),
    }
    passes
}

/// What the hot runs' order leaves cached, said in the label of `--rounds`.
const IN_ROUNDS: &str = "runs in rounds (every query once per round, in turn), so the other queries run \
    between two runs of one query and each run finds what they left cached";

/// The cache state of the runs, said honestly: of the first runs (only a
/// restarted server, or an embedded engine started afresh: those in
/// `afresh`, with the page cache dropped is a true cold run), and of the hot
/// runs when they went in rounds.
pub fn cold_label(cold: &ColdRecord, afresh: &[Engine]) -> String {
    if !cold.requested {
        let after_first = match cold.rounds {
            false => "every run after the first finds data cached",
            true => IN_ROUNDS,
        };
        return match cold.actions.is_empty() {
            true => format!("hot: no cache dropped; {after_first}"),
            false => format!("hot: before the first query {}; {after_first}", cold.actions.join("; ")),
        };
    }
    let mut first_runs = cold_first_runs(cold, afresh);
    if cold.runs > 1 {
        first_runs.push_str(&format!(" ({} cold runs of every query, each made so just before it)", cold.runs));
    }
    match cold.rounds {
        false => first_runs,
        true => format!("{first_runs}; then the hot {IN_ROUNDS}"),
    }
}

/// What `--cold` made of each query's first run.
fn cold_first_runs(cold: &ColdRecord, afresh: &[Engine]) -> String {
    if cold.true_cold {
        return format!("true cold first runs: before each query's first run {} and the OS page cache dropped", made_cold(cold, afresh));
    }
    let dropped = cold.actions.iter().any(|a| a.starts_with("OS page cache dropped"));
    let mut os = match (dropped, cold.elsewhere.is_empty()) {
        (true, true) => "page cache dropped".to_string(),
        (true, false) => "this machine's page cache dropped".to_string(),
        (false, _) => "page cache NOT dropped (no permission)".to_string(),
    };
    if !cold.elsewhere.is_empty() {
        os.push_str(&format!(" but NOT on the other machines the servers of {} run on", cold.elsewhere.join("; ")));
    }
    let partly = match cold.true_cold_engines.is_empty() {
        true => String::new(),
        false => format!("true cold where {} and the page cache dropped; on the others ", made_cold(cold, afresh)),
    };
    format!("{partly}{os}, server not restarted (server caches stay warm): not a true cold run")
}

/// How the truly cold engines were made cold, each as it was: e.g. `the
/// servers of postgres, mongo restarted, polars started afresh (no server)`.
fn made_cold(cold: &ColdRecord, afresh: &[Engine]) -> String {
    let (fresh, restarted): (Vec<&Engine>, Vec<&Engine>) = cold.true_cold_engines.iter().partition(|e| afresh.contains(e));
    let list = |engines: &[&Engine]| engines.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
    let mut how = Vec::new();
    if !restarted.is_empty() {
        let servers = if restarted.len() == 1 { "server" } else { "servers" };
        how.push(format!("the {servers} of {} restarted", list(&restarted)));
    }
    if !fresh.is_empty() {
        how.push(format!("{} started afresh (no server)", list(&fresh)));
    }
    how.join(", ")
}

/// The first pause between attempts at a new connection; doubled after each.
const FIRST_RECONNECT_WAIT: Duration = Duration::from_millis(250);

/// Replaces a backend whose connection was lost with a new one, retrying
/// with backoff for at most `limit`; the seconds it took.
async fn reconnect(backend: &mut Box<dyn Backend>, limit: Duration) -> Result<f64, String> {
    let started = Instant::now();
    // Moved on by every answer that says the server is recovering.
    let mut progress = started;
    let mut said = started;
    let mut wait = FIRST_RECONNECT_WAIT;
    loop {
        let left = limit.saturating_sub(progress.elapsed()).max(Duration::from_millis(100));
        let failure = match tokio::time::timeout(left, backend.reconnect()).await {
            Ok(Ok(fresh)) => {
                std::mem::replace(backend, fresh).close().await;
                return Ok(started.elapsed().as_secs_f64());
            }
            Ok(Err(e)) => format!("{e:#}"),
            Err(_) => "no answer".to_string(),
        };
        if wait == FIRST_RECONNECT_WAIT {
            // Said once, when a new connection does not come at once (a server or a Citus worker down).
            eprintln!("  {}: no new connection yet ({failure}): trying again for up to {} s", backend.engine(), limit.as_secs_f64());
        }
        if recovering(&failure) {
            progress = Instant::now();
            if said.elapsed() >= RECOVERY_SAID_EVERY {
                said = Instant::now();
                eprintln!("  {}: still waiting for the server to recover ({:.0} s): {failure}", backend.engine(), started.elapsed().as_secs_f64());
            }
        }
        if progress.elapsed() + wait >= limit {
            return Err(format!("no new connection within {} s of the server's last sign of progress: {failure}", limit.as_secs_f64()));
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(4));
    }
}

/// Whether a failed connection's error says the server is starting up or
/// replaying its log: progress, not a server gone (PostgreSQL's 57P03
/// messages, MongoDB's recovering states).
fn recovering(failure: &str) -> bool {
    let failure = failure.to_ascii_lowercase();
    ["the database system is starting up", "the database system is in recovery mode", "not yet accepting connections", "node is recovering", "notprimaryorsecondary"]
        .iter()
        .any(|sign| failure.contains(sign))
}

/// The memory cgroup limits an engine's processes run under (of a server of
/// several nodes, each node's), watched for the kernel's OOM kills during a
/// query's runs: a server killed for memory loses its connections too, and
/// must not be taken for a network fault.
struct OomWatch {
    watched: Vec<Watched>,
}

/// One cgroup under a limit, and its OOM kills when the watch began.
struct Watched {
    cgroup: MemoryCgroup,
    limit: u64,
    kills_before: u64,
}

impl Watched {
    fn kills(&self) -> u64 {
        self.cgroup.counters().oom_kills.map_or(0, |now| now.saturating_sub(self.kills_before))
    }
}

impl OomWatch {
    /// Watches the cgroup of each process tree `counted` read (None: no limit, or not here).
    fn of(counted: &Counted) -> Option<OomWatch> {
        let tops = &counted.kernel.as_ref().ok()?.tops;
        let watched: Vec<Watched> = tops
            .iter()
            .filter_map(|(pid, _)| {
                let cgroup = MemoryCgroup::of_process(u32::try_from(*pid).ok()?).ok()?;
                let (limit, kills_before) = (cgroup.limit()?, cgroup.counters().oom_kills?);
                Some(Watched { cgroup, limit, kills_before })
            })
            .collect();
        (!watched.is_empty()).then_some(OomWatch { watched })
    }

    /// The kernel's OOM kills in the cgroups since the watch began.
    fn kills(&self) -> u64 {
        self.watched.iter().map(Watched::kills).sum()
    }

    /// Where the kernel killed: `the 512.0 MiB limit of cgroup /ghbench/…-citus-worker2`.
    fn where_killed(&self) -> String {
        let killed = self.watched.iter().filter(|w| w.kills() > 0);
        killed.map(|w| format!("the {} limit of cgroup {}", ghbench_core::size::said(w.limit), w.cgroup.path)).collect::<Vec<_>>().join(", ")
    }
}

/// What to do after a step failed with `error`: go on with a new connection
/// (the loss recorded), or stop (the error recorded; `connection_gone` when
/// no new connection came). A failure with OOM kills in the engine's cgroup
/// is the kernel's doing: said as such and not run again (it would be killed
/// again), with a new connection for the next queries.
async fn after_failure(backend: &mut Box<dyn Backend>, result: &mut EngineResult, at: &str, error: anyhow::Error, limit: Duration, oom: Option<&OomWatch>) -> bool {
    let said = format!("{error:#}");
    if let Some((kills, watch)) = oom.map(|w| (w.kills(), w)).filter(|(kills, _)| *kills > 0) {
        result.oom_kills = Some(kills);
        let what = format!(
            "{at}: the kernel killed {kills} of {}'s processes for want of memory (OOM kill under {}); the engine said: {said}",
            backend.engine(),
            watch.where_killed()
        );
        result.error = Some(what.clone());
        if let Err(why) = reconnect(backend, limit).await {
            result.error = Some(format!("{what}; {why}"));
            result.connection_gone = true;
        }
        return false;
    }
    if let Some(cut) = QueryTimedOut::in_chain(&error) {
        // The next runs would be cut too: the query is said to take longer than the limit.
        result.timed_out = Some(cut.limit.as_secs_f64());
        result.error = Some(format!("{at} {said}"));
        if !cut.by_engine {
            // Its session may still run it (the cancel is on its way): the
            // next query gets a session of its own, not a wait behind it.
            if let Err(why) = reconnect(backend, limit).await {
                result.error = Some(format!("{at} {said}; {why}"));
                result.connection_gone = true;
            }
        }
        return false;
    }
    if !EngineError::lost_connection_in(&error) || result.reconnects.len() >= RECONNECTS_PER_QUERY {
        result.error = Some(said);
        return false;
    }
    match reconnect(backend, limit).await {
        Ok(seconds) => {
            result.reconnects.push(Reconnect { at: at.to_string(), error: said, seconds });
            true
        }
        Err(why) => {
            result.error = Some(format!("{said}; {why}"));
            result.connection_gone = true;
            false
        }
    }
}

/// `work` (a query's run), given up [`LIMIT_BACKSTOP`] past `limit` if the
/// engine has not stopped it by then. Giving up drops the run, which cancels
/// what it left on the server where the engine can.
pub async fn within_limit<T>(work: impl std::future::Future<Output = anyhow::Result<T>>, limit: Option<Duration>) -> anyhow::Result<T> {
    let Some(limit) = limit else { return work.await };
    match tokio::time::timeout(limit + LIMIT_BACKSTOP, work).await {
        Ok(done) => done,
        Err(_) => Err(QueryTimedOut::waited_out(
            limit,
            anyhow::anyhow!("the engine did not stop the query at the limit; ghbench stopped waiting {} s later", LIMIT_BACKSTOP.as_secs()),
        )),
    }
}

/// How long reading an engine's counters may take: a session still busy
/// with a query it was not stopped in would hold the read behind it.
const COUNTERS_LIMIT: Duration = Duration::from_secs(10);

/// What the engine and the kernel had counted at one moment.
struct Counted {
    engine: Result<std::collections::BTreeMap<String, u64>, String>,
    kernel: Result<kernel_io::Snapshot, String>,
}

/// [`Backend::read_counters`], bounded by [`COUNTERS_LIMIT`], and the
/// kernel's counters of the engine's processes on this machine. The
/// engine's are read by a query of their own, kept out of the kernel's
/// span: read first `before` the runs, last after them.
async fn read_counters(backend: &dyn Backend, before: bool) -> Counted {
    let engine = || async {
        match tokio::time::timeout(COUNTERS_LIMIT, backend.read_counters()).await {
            Ok(read) => read,
            Err(_) => Err(format!("the counters were not read within {} s", COUNTERS_LIMIT.as_secs())),
        }
    };
    match before {
        true => {
            let engine = engine().await;
            Counted { engine, kernel: kernel_counters(backend).await }
        }
        false => {
            let kernel = kernel_counters(backend).await;
            Counted { engine: engine().await, kernel }
        }
    }
}

/// The kernel's counters of the engine's processes (read off the runtime's
/// threads: it lists every process of the machine).
async fn kernel_counters(backend: &dyn Backend) -> Result<kernel_io::Snapshot, String> {
    if let Some(nodes) = backend.reading_nodes().await {
        let nodes = nodes?;
        let read = tokio::task::spawn_blocking(move || kernel_io::snapshot(kernel_io::Whose::Nodes(&nodes)));
        return read.await.unwrap_or_else(|e| Err(format!("reading the kernel's counters failed: {e}")));
    }
    let whose = match (backend.own_process().await, backend.server_url()) {
        (Some(pid), _) => Ok(pid),
        (None, Some(url)) => Err((url.to_string(), backend.server_address())),
        (None, None) => return Err(format!("{} has no process of its own running to count (none started, or it was stopped)", backend.engine())),
    };
    let read = tokio::task::spawn_blocking(move || match &whose {
        Ok(pid) => kernel_io::snapshot(kernel_io::Whose::Process(*pid)),
        Err((url, address)) => kernel_io::snapshot(kernel_io::Whose::Server { url, address: address.as_deref() }),
    });
    read.await.unwrap_or_else(|e| Err(format!("reading the kernel's counters failed: {e}")))
}

/// What the runs between `before` and `after` read; `after` is Err when
/// the counters cannot be compared (a lost connection).
fn reads(before: Counted, after: Result<Counted, String>, runs: usize) -> Reads {
    let (engine, kernel) = match after {
        Ok(after) => (after.engine, after.kernel),
        Err(why) => (Err(why.clone()), Err(why)),
    };
    Reads { kernel: Some(kernel_io::reads_between(before.kernel, kernel)), ..Reads::between(before.engine, engine, runs) }
}

/// What the counters of one visit's runs read, added to those of the visits
/// before (in rounds the other queries run between a query's visits, and
/// what they read is not its). A counter missing from either is left out; a
/// visit not counted leaves the whole uncounted, saying why.
fn add_reads(so_far: Option<Reads>, visit: Reads) -> Reads {
    let Some(so_far) = so_far else { return visit };
    let summed = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        a.iter().filter_map(|(k, x)| Some((k.clone(), x.saturating_add(*b.get(k)?)))).collect()
    };
    let kernel = match (so_far.kernel, visit.kernel) {
        (Some(a), Some(b)) => Some(KernelReads {
            counters: summed(&a.counters, &b.counters),
            processes: if b.processes.is_empty() { a.processes } else { b.processes },
            unavailable: a.unavailable.or(b.unavailable),
        }),
        (a, b) => a.or(b),
    };
    Reads { runs: so_far.runs + visit.runs, counters: summed(&so_far.counters, &visit.counters), unavailable: so_far.unavailable.or(visit.unavailable), kernel }
}

/// Why an engine makes no more runs of a query.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stopped {
    /// A run failed, was cut by the limit, or its connection did not come
    /// back: the runs made stand, and its plan is still taken.
    RunFailed,
    /// The query could not be read or prepared: it failed on this engine.
    Unprepared,
    /// The engine lost its connection for good on another query.
    EngineGone,
}

/// One engine's runs of one query as they are made, in visits: back to back
/// one visit makes them all, in rounds a visit per round makes one. A run
/// whose connection is lost is made again on a new one (the lost attempt is
/// recorded, not timed).
struct QueryRuns {
    variant: String,
    query: String,
    result: EngineResult,
    /// None: the catalog has no such query for the engine (`result` says so).
    file: Option<QueryFile>,
    /// The rows of its first run (None if none ran), which are compared.
    first_rows: Option<Vec<Row>>,
    /// What the visits so far read.
    read: Option<Reads>,
    stopped: Option<Stopped>,
}

impl QueryRuns {
    fn new(backend: &dyn Backend, catalog: &Catalog, variant: &str, query: &str) -> QueryRuns {
        let mut result = EngineResult::empty(backend.engine());
        let file = match catalog.query(backend.dialect(), variant, query) {
            Ok(file) => {
                result.file = file.path.clone();
                Some(file)
            }
            Err(e) => {
                result.error = Some(e.to_string());
                None
            }
        };
        let stopped = file.is_none().then_some(Stopped::Unprepared);
        QueryRuns { variant: variant.to_string(), query: query.to_string(), result, file, first_rows: None, read: None, stopped }
    }

    /// No more runs: the engine lost its connection for good (`why`).
    fn give_up(&mut self, engine: &Engine, why: String) {
        if self.stopped.is_some() {
            return;
        }
        self.stopped = Some(Stopped::EngineGone);
        match self.runs_made() {
            0 => self.result = EngineResult::failed(engine, format!("not run: {why}")),
            made => self.result.error = Some(format!("the runs after the first {made} not made: {why}")),
        }
    }

    /// Runs made so far, the cold ones included.
    fn runs_made(&self) -> usize {
        self.result.iterations.len() + self.result.cold_runs.len().max(usize::from(self.result.cold_run.is_some()))
    }

    /// Makes `runs` (none once stopped), then the plan when `plans` (the
    /// query's last visit); then undoes what preparing changed on the server.
    async fn visit(&mut self, backend: &mut Box<dyn Backend>, runs: &[Run], plans: bool, options: &QueryOptions, progress: &dyn Progress) {
        let Some(file) = self.file.clone() else { return };
        match self.stopped {
            None => {
                self.make_runs(backend, &file, runs, options, progress).await;
                if plans && self.stopped != Some(Stopped::Unprepared) {
                    self.take_plan(backend, &file, options, progress).await;
                }
            }
            // Stopped in an earlier round: prepared again, since what the
            // engine sets for its queries (undone after each visit) shapes the plan.
            Some(Stopped::RunFailed) if plans && self.first_rows.is_some() => match backend.prepare(&file).await {
                Ok(_) => self.take_plan(backend, &file, options, progress).await,
                Err(e) => self.result.plan = Some(Plan { error: Some(format!("not taken: preparing the query for it failed: {e:#}")), ..Plan::default() }),
            },
            Some(_) => return,
        }
        if let Err(e) = backend.after_query().await {
            let left = format!("the server was left changed after the runs: {e:#} (engines run after this one on the same server may be affected)");
            self.result.error = match self.result.error.take() {
                Some(first) if first.contains(&left) => Some(first),
                Some(first) => Some(format!("{first}; {left}")),
                None => Some(left),
            };
        }
    }

    /// `runs`, one after the other, and what they read.
    async fn make_runs(&mut self, backend: &mut Box<dyn Backend>, file: &QueryFile, runs: &[Run], options: &QueryOptions, progress: &dyn Progress) {
        let (engine, variant, query) = (backend.engine().clone(), self.variant.clone(), self.query.clone());
        let mut prepared = None;
        // Read before the runs (once the query is prepared: polars' worker starts
        // then) and after them: their reads, with no run of their own.
        let mut reads_before = None;
        let mut oom = None;
        let reconnects_before = self.result.reconnects.len();
        let mut made = 0;
        while let Some(run) = runs.get(made) {
            let label = run.label(options);
            // Prepared again on a new connection (its server-side state went with the old one).
            let ready = match &prepared {
                Some(ready) => ready,
                None => match backend.prepare(file).await {
                    Ok(ready) => prepared.insert(ready),
                    Err(e) => match after_failure(backend, &mut self.result, "preparing", e, options.reconnect_limit, oom.as_ref()).await {
                        true => continue,
                        false => {
                            // Runs made in earlier rounds stand (with their stats and plan); only
                            // a query never run is one that failed on this engine.
                            self.stopped = Some(if self.runs_made() > 0 { Stopped::RunFailed } else { Stopped::Unprepared });
                            return;
                        }
                    },
                },
            };
            if reads_before.is_none() {
                let counted = read_counters(backend.as_ref(), true).await;
                oom = OomWatch::of(&counted);
                reads_before = Some(counted);
            }
            progress.event(RunEvent::Running { engine: &engine, variant: &variant, query: &query, label: &label });
            // The clock: the same for every engine, around the engine's execute alone.
            let started = Instant::now();
            let executed = within_limit(backend.execute(ready), options.query_timeout).await;
            let seconds = started.elapsed().as_secs_f64();
            match executed {
                Ok(rows) => {
                    progress.event(RunEvent::Ran { engine: &engine, seconds });
                    let iteration = Iteration { seconds, rows: rows.len() as u64 };
                    match run {
                        Run::Cold(n) => {
                            if *n == 1 {
                                self.result.cold_run = Some(iteration);
                            }
                            if options.cold_runs() > 1 {
                                self.result.cold_runs.push(iteration);
                            }
                        }
                        Run::Hot(_) => self.result.iterations.push(iteration),
                    }
                    self.first_rows.get_or_insert(rows);
                    made += 1;
                }
                Err(e) => {
                    if !after_failure(backend, &mut self.result, &label, e, options.reconnect_limit, oom.as_ref()).await {
                        self.stopped = Some(Stopped::RunFailed);
                        break;
                    }
                    // The same run again, on the new connection.
                    prepared = None;
                }
            }
        }
        if let Some(before) = reads_before {
            let after = match self.result.connection_gone || self.result.reconnects.len() > reconnects_before {
                true => Err("the connection was lost during the runs: a restarted server's counters start anew".to_string()),
                false => Ok(read_counters(backend.as_ref(), false).await),
            };
            self.read = Some(add_reads(self.read.take(), reads(before, after, made)));
        }
    }

    /// The plan, when a run answered. After the timed runs, so a measured
    /// plan's own run warms nothing they measure (in rounds, it warms the
    /// next query's last run, as that query's run before it does).
    async fn take_plan(&mut self, backend: &mut Box<dyn Backend>, file: &QueryFile, options: &QueryOptions, progress: &dyn Progress) {
        if self.first_rows.is_none() {
            return;
        }
        let engine = backend.engine().clone();
        if options.analyze_plans {
            progress.event(RunEvent::Running { engine: &engine, variant: &self.variant, query: &self.query, label: MEASURED_PLAN });
        }
        let started = Instant::now();
        let plan = backend.explain(file, options.analyze_plans).await;
        if options.analyze_plans {
            progress.event(RunEvent::Ran { engine: &engine, seconds: started.elapsed().as_secs_f64() });
        }
        self.result.index_used = plan.index_used;
        self.result.plan = Some(plan);
    }

    /// The engine's result of the query, and the rows of its first run
    /// (None if it failed).
    fn finish(self) -> (EngineResult, Option<Vec<Row>>) {
        let QueryRuns { mut result, first_rows, read, stopped, .. } = self;
        if stopped == Some(Stopped::Unprepared) {
            return (result, None);
        }
        result.stats = Stats::of(&result.iterations.iter().map(|r| r.seconds).collect::<Vec<_>>());
        result.read = read;
        if let Some(rows) = &first_rows {
            result.rows = Some(rows.len() as u64);
            result.head = rows.iter().take(HEAD_ROWS).cloned().collect();
            result.answer_digest = Some(crate::rows::answer_digest(rows));
        }
        (result, first_rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's 57P03 messages as its sources word them, and a refusal.
    #[test]
    fn a_server_that_says_it_recovers_is_making_progress_and_a_refusal_is_not() {
        for said in [
            "db error: FATAL: the database system is starting up",
            "db error: FATAL: the database system is in recovery mode",
            "FATAL: the database system is not yet accepting connections: Consistent recovery state has not been yet reached.",
            "Command failed with error 13436 (NotPrimaryOrSecondary): node is recovering",
        ] {
            assert!(recovering(said), "{said}");
        }
        assert!(!recovering("error connecting to server: Connection refused (os error 111)"));
        assert!(!recovering("db error: FATAL: the database system is shutting down"));
    }

    fn options(cold: bool, rounds: bool) -> QueryOptions {
        QueryOptions {
            variants: vec!["corrected".into()],
            queries: Vec::new(),
            repeat: 2,
            cold,
            cold_repeat: 1,
            rounds,
            reconnect_limit: RECONNECT_LIMIT,
            query_timeout: None,
            analyze_plans: false,
            server_memory: None,
            skip: Vec::new(),
        }
    }

    #[test]
    fn in_rounds_each_pass_runs_every_query_once_and_back_to_back_one_pass_runs_them_all() {
        let visit = |cools, runs: &[Run]| Visit { cools, runs: runs.to_vec() };
        let pass = |visits: Vec<Visit>, plans| Pass { visits, plans };
        assert_eq!(passes(&options(false, false)), [pass(vec![visit(false, &[Run::Hot(1), Run::Hot(2)])], true)]);
        assert_eq!(passes(&options(true, false)), [pass(vec![visit(true, &[Run::Cold(1)]), visit(false, &[Run::Hot(1), Run::Hot(2)])], true)]);
        assert_eq!(passes(&options(false, true)), [pass(vec![visit(false, &[Run::Hot(1)])], false), pass(vec![visit(false, &[Run::Hot(2)])], true)]);
        // The cold runs first, each query made cold before its own; the plans with the last round.
        assert_eq!(
            passes(&options(true, true)),
            [pass(vec![visit(true, &[Run::Cold(1)])], false), pass(vec![visit(false, &[Run::Hot(1)])], false), pass(vec![visit(false, &[Run::Hot(2)])], true)]
        );
        let none = QueryOptions { repeat: 0, ..options(false, true) };
        assert_eq!(passes(&none), [pass(Vec::new(), true)], "a query with no runs still gets its record");
    }

    #[test]
    fn each_of_several_cold_runs_is_made_cold_on_its_own_before_the_hot_runs() {
        let three = QueryOptions { cold_repeat: 3, ..options(true, false) };
        let visits = &passes(&three)[0].visits;
        assert_eq!(visits.iter().filter(|v| v.cools).count(), 3, "{visits:?}");
        assert!(visits[..3].iter().enumerate().all(|(n, v)| v.runs == [Run::Cold(n + 1)]), "one cold run per cooling: {visits:?}");
        assert_eq!(visits[3], Visit { cools: false, runs: vec![Run::Hot(1), Run::Hot(2)] });
        assert_eq!((Run::Cold(2).label(&three), Run::Cold(1).label(&options(true, false))), ("cold run 2/3".to_string(), "cold run".to_string()));
        // --cold-repeat says nothing without --cold.
        assert!(passes(&QueryOptions { cold_repeat: 3, ..options(false, false) })[0].visits.iter().all(|v| !v.cools));
    }

    #[test]
    fn a_label_says_when_the_hot_runs_went_in_rounds() {
        let hot = ColdRecord { rounds: true, ..ColdRecord::default() };
        assert_eq!(cold_label(&hot, &[]), format!("hot: no cache dropped; {IN_ROUNDS}"));
        let cold = ColdRecord { requested: true, true_cold: true, true_cold_engines: vec![Engine::named("postgres")], rounds: true, ..ColdRecord::default() };
        let label = cold_label(&cold, &[]);
        assert!(label.starts_with("true cold first runs: before each query's first run the server of postgres restarted"), "{label}");
        assert!(label.ends_with(&format!("; then the hot {IN_ROUNDS}")), "{label}");
    }

    #[test]
    fn the_reads_of_a_querys_visits_add_up_and_a_visit_not_counted_says_so() {
        let counted = |n: u64| Reads {
            runs: 1,
            counters: [("heap_blks_read".to_string(), n), ("heap_blks_hit".to_string(), 1)].into(),
            unavailable: None,
            kernel: Some(KernelReads { processes: "postgres (pid 9)".into(), counters: [("read_bytes".to_string(), n * 8192)].into(), unavailable: None }),
        };
        let two = add_reads(Some(counted(3)), counted(4));
        assert_eq!((two.runs, two.counters["heap_blks_read"], two.counters["heap_blks_hit"]), (2, 7, 2));
        assert_eq!(two.kernel.as_ref().unwrap().counters["read_bytes"], 7 * 8192);
        let lost = Reads::between(Err("the connection was lost".into()), Ok(BTreeMap::new()), 1);
        let three = add_reads(Some(two), lost);
        assert_eq!((three.runs, three.counters.len(), three.unavailable.as_deref()), (3, 0, Some("the connection was lost")));
    }

    #[test]
    fn a_hot_label_says_what_was_done_before_the_runs() {
        assert_eq!(cold_label(&ColdRecord::default(), &[]), "hot: no cache dropped; every run after the first finds data cached");
        let dropped = ColdRecord { actions: vec!["OS page cache dropped (…) under the 96.0 MiB limit".into()], ..ColdRecord::default() };
        assert_eq!(cold_label(&dropped, &[]), "hot: before the first query OS page cache dropped (…) under the 96.0 MiB limit; every run after the first finds data cached");
    }

    #[test]
    fn a_cold_label_says_which_servers_the_page_cache_drop_did_not_reach() {
        let here = ColdRecord {
            requested: true,
            actions: vec!["OS page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)".into()],
            ..ColdRecord::default()
        };
        let label = cold_label(&here, &[]);
        assert!(label.starts_with("page cache dropped, server not restarted"), "{label}");
        let away = ColdRecord { elsewhere: vec!["mongo at cluster0.example.net".into()], ..here.clone() };
        let label = cold_label(&away, &[]);
        assert!(label.contains("this machine's page cache dropped but NOT on the other machines the servers of mongo at cluster0.example.net run on"), "{label}");
        assert!(label.ends_with("not a true cold run"), "{label}");
    }

    #[test]
    fn a_cold_label_says_a_server_restarted_only_where_one_was() {
        let (postgres, polars) = (Engine::named("postgres"), Engine::named("polars"));
        let all = ColdRecord { requested: true, true_cold: true, true_cold_engines: vec![polars.clone()], ..ColdRecord::default() };
        let label = cold_label(&all, std::slice::from_ref(&polars));
        assert_eq!(label, "true cold first runs: before each query's first run polars started afresh (no server) and the OS page cache dropped");
        let both = ColdRecord { true_cold_engines: vec![postgres, polars.clone()], ..all.clone() };
        let label = cold_label(&both, std::slice::from_ref(&polars));
        assert!(label.contains("the server of postgres restarted, polars started afresh (no server)"), "{label}");
        let servers = ColdRecord { true_cold_engines: vec![Engine::named("postgres"), Engine::named("mongo")], ..all.clone() };
        assert!(cold_label(&servers, &[]).contains("the servers of postgres, mongo restarted and the OS page cache dropped"));
        let partly = ColdRecord { true_cold: false, ..all };
        let label = cold_label(&partly, &[polars]);
        assert!(label.starts_with("true cold where polars started afresh (no server) and the page cache dropped; on the others"), "{label}");
        assert!(!label.contains("restarted or"), "{label}");
    }
}

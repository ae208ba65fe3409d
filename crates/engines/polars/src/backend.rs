//! Querying: the table's loaded hour files, scanned lazily and registered in
//! a polars SQL context under the table's name, run the query files of
//! `queries/polars/` (SQL, so they read side by side with PostgreSQL's).
//! Planning is done in `prepare`; `execute` collects, reading the files.

use std::collections::BTreeMap;
use std::fs::File;
use std::time::Duration;

use async_trait::async_trait;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_engine::ledger::{Entry, Ledger};
use ghbench_engine::query::{limited_memory, prepared, this_machine_memory, Backend, BackendResult, Prepared, QueryFile, QueryTimedOut};
use ghbench_engine::record::{DiskLimit, MemoryShare, Plan, Storage};
use ghbench_engine::rows::{Cell, Row};
use polars::prelude::*;
use polars::sql::SQLContext;

use crate::schema::Layout;
use crate::store::{Check, Damage, HourEntry, TableDir};
use crate::worker::Worker;
use ghbench_core::stop::Running;

/// How a plan is shown: polars' own optimised plan.
const EXPLAIN: &str = "LazyFrame::explain(optimized = true)";

/// The engine queries are collected with: polars' streaming engine groups
/// each morsel as the scan decodes it; the default in-memory engine decodes
/// whole columns first (1M events: B 0.026 s in memory, 0.013 s streaming).
pub const ENGINE: Engine = Engine::Streaming;

pub struct PolarsBackend {
    table: TableDir,
    /// The table's files as its ledger listed them, read once per backend
    /// (see [`PolarsBackend::table_files`]); shared with its clients.
    files: Arc<std::sync::Mutex<Option<Arc<TableFiles>>>>,
    /// `--query-timeout`: the query is stopped past it (in this process,
    /// only waited for no longer).
    limit: Option<Duration>,
    /// Where queries run: a worker process of this program (started when
    /// the first query is prepared), or this process.
    runs_in: RunsIn,
}

enum RunsIn {
    Worker { program: &'static std::path::Path, worker: tokio::sync::Mutex<Option<Worker>> },
    ThisProcess,
}

/// The table's hour files, in hour order, and the layout they hold.
pub struct TableFiles {
    paths: Vec<PlRefPath>,
    schema: Schema,
    /// The hours those files hold, as the run's record says them.
    ledger: BTreeMap<String, HourEntry>,
    /// The readers' lock, shared, for as long as these paths are read.
    _readers: std::fs::File,
}

impl TableFiles {
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// A query planned against the table's files, ready to collect (here) or
/// to send (to the worker, which plans it again there).
struct Planned {
    frame: LazyFrame,
    file: QueryFile,
}

impl PolarsBackend {
    /// The table's backend, its queries in a worker process when this
    /// program serves them (see [`crate::worker::serve_queries_with`]).
    pub fn open(dir: &std::path::Path, table: &TableName) -> anyhow::Result<PolarsBackend> {
        let program = crate::worker::program().filter(|_| std::env::var_os(crate::worker::IN_PROCESS).is_none());
        let runs_in = match program {
            Some(program) => RunsIn::Worker { program, worker: tokio::sync::Mutex::new(None) },
            None => RunsIn::ThisProcess,
        };
        Ok(PolarsBackend { table: TableDir::new(dir, table), files: Arc::default(), limit: None, runs_in })
    }

    /// The table's backend with its queries in this process: the worker's own.
    pub fn open_here(dir: &std::path::Path, table: &TableName) -> anyhow::Result<PolarsBackend> {
        Ok(PolarsBackend { table: TableDir::new(dir, table), files: Arc::default(), limit: None, runs_in: RunsIn::ThisProcess })
    }

    /// A query's rows, computed in this process (the worker's side).
    pub fn run_here(&self, query: &QueryFile) -> anyhow::Result<Vec<Row>> {
        let frame = self.plan(query).map_err(|e| self.explain_failure(e))?;
        let result = frame.collect_with_engine(ENGINE).map(|result| result.unwrap_single());
        rows(&result.map_err(|e| self.explain_failure(e.into()))?)
    }

    /// `query` run on `events` (JSON lines) in the table's layout, from a
    /// Parquet file in memory (the worker's side of [`Worker::warm`]):
    /// scanned, planned and collected as a timed run is, through the same
    /// reader, reading nothing from the disk. An empty frame skipped the
    /// reader and most operators, and one row of nulls most of what real
    /// rows take (a cold C still paged in 12-15 MB of code with either).
    pub fn warm_here(&self, query: &QueryFile, events: &[String]) -> anyhow::Result<()> {
        let files = self.table_files()?;
        let path = warm_file(events)?;
        let args = ScanArgsParquet { schema: Some(Arc::new(files.schema.clone())), ..ScanArgsParquet::default() };
        let scan = LazyFrame::scan_parquet_files(vec![PlRefPath::from(path.as_str())].into(), args)?;
        let mut context = SQLContext::new();
        let name = self.table.name();
        context.register(name.as_str(), scan);
        let frame = anyhow::Context::with_context(context.execute(&query.for_table(name)), || format!("polars SQL in {}", query.path))?;
        frame.collect_with_engine(ENGINE)?;
        Ok(())
    }

    /// A worker's backend, reading `files` (its parent's listing) rather
    /// than listing the folder again.
    pub fn open_here_reading(dir: &std::path::Path, table: &TableName, files: Vec<String>) -> anyhow::Result<PolarsBackend> {
        let backend = PolarsBackend::open_here(dir, table)?;
        let listed = TableFiles {
            paths: files.iter().map(|p| PlRefPath::from(p.as_str())).collect(),
            schema: Layout::declared().map_err(anyhow::Error::msg)?.schema(),
            ledger: BTreeMap::new(),
            _readers: backend.table.read_shared()?,
        };
        *backend.files.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(listed));
        Ok(backend)
    }

    /// The files this backend's runs read, as text for a worker.
    fn file_list(&self) -> anyhow::Result<Vec<String>> {
        Ok(self.table_files()?.paths.iter().map(|p| p.to_string()).collect())
    }

    /// Another backend of the same table and limit (a client of its own).
    fn another(&self) -> PolarsBackend {
        let runs_in = match &self.runs_in {
            RunsIn::Worker { program, .. } => RunsIn::Worker { program, worker: tokio::sync::Mutex::new(None) },
            RunsIn::ThisProcess => RunsIn::ThisProcess,
        };
        PolarsBackend { table: self.table.clone(), files: self.files.clone(), limit: self.limit, runs_in }
    }

    /// The worker, started if it is not running, and warmed for `query`
    /// (not timed: from `prepare`).
    async fn ensure_worker(&self, query: &QueryFile) -> anyhow::Result<()> {
        if let RunsIn::Worker { program, worker } = &self.runs_in {
            let mut slot = worker.lock().await;
            if slot.is_none() {
                *slot = Some(Worker::start(program, self.table.dir(), self.table.name(), self.file_list()?).await?);
            }
            if let Some(worker) = slot.as_mut() {
                worker.warm(query).await?;
            }
        }
        Ok(())
    }

    /// `query` in the worker, stopped (its process killed) past the limit.
    /// A worker that failed or was killed is not kept: the next query's
    /// `prepare` starts another.
    async fn run_in_worker(&self, program: &std::path::Path, slot: &tokio::sync::Mutex<Option<Worker>>, file: &QueryFile) -> BackendResult<Vec<Row>> {
        let mut slot = slot.lock().await;
        let mut worker = match slot.take() {
            Some(worker) => worker,
            None => Worker::start(program, self.table.dir(), self.table.name(), self.file_list()?).await?,
        };
        let what = format!("polars on {}: {}", self.table.name(), file.path);
        let running = Running::start(what, worker.stopper());
        let ran = match self.limit {
            None => worker.run(file).await,
            Some(limit) => match tokio::time::timeout(limit, worker.run(file)).await {
                Ok(ran) => ran,
                Err(_) => {
                    // Stopped here, and said so: nothing left for the registry to stop.
                    worker.stop().await;
                    running.finished();
                    return Err(QueryTimedOut::wrap(limit, anyhow::anyhow!("polars' worker process was killed: the query stopped")));
                }
            },
        };
        running.finished();
        let answered = ran?;
        *slot = Some(worker);
        answered.map_err(anyhow::Error::msg)
    }

    /// The table's files and layout, from its ledger: read once per backend
    /// (a worker does it before it says it is ready), so no timed run pays
    /// ghbench's bookkeeping (over the year's 8,760 hours, parsing every
    /// entry, listing the folder and a `stat` per file took longer than a
    /// query), and every run of a backend reads the files its ledger listed.
    /// A file of another size than its ledger entry recorded, or of another
    /// layout, is refused (a damaged file is not read as if it were data);
    /// one damaged later fails the query that reads it, named by
    /// [`PolarsBackend::explain_failure`]. Nothing is kept from a failure:
    /// the next query tries again. A backend kept across a load (ghbench as a
    /// library) reads what was there when it first planned: open another.
    pub fn table_files(&self) -> anyhow::Result<Arc<TableFiles>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = files.as_ref() {
            return Ok(known.clone());
        }
        // Held while the files are: no compaction replaces them meanwhile.
        let readers = self.table.read_shared()?;
        let (ledger, live) = self.table.snapshot()?;
        let layout = self.layout(&ledger)?;
        if let Some(damage) = self.find_damage(&ledger, Check::Size)? {
            return Err(damaged(&damage));
        }
        let paths = live.iter().map(|p| PlRefPath::from(p.to_string_lossy().as_ref())).collect();
        let known = Arc::new(TableFiles { paths, schema: layout.schema(), ledger, _readers: readers });
        *files = Some(known.clone());
        Ok(known)
    }

    /// Every loaded hour's file, as one lazy frame of the declared layout:
    /// made anew for every plan, so polars' own work on the files (listing
    /// them, the first footer) is in every timed run, as before.
    fn scan(&self) -> anyhow::Result<LazyFrame> {
        let files = self.table_files()?;
        if files.paths.is_empty() {
            return Ok(DataFrame::empty_with_schema(&files.schema).lazy());
        }
        let args = ScanArgsParquet { schema: Some(Arc::new(files.schema.clone())), ..ScanArgsParquet::default() };
        Ok(LazyFrame::scan_parquet_files(files.paths.clone().into(), args)?)
    }

    fn plan(&self, query: &QueryFile) -> anyhow::Result<LazyFrame> {
        let mut context = SQLContext::new();
        let name = self.table.name();
        context.register(name.as_str(), self.scan()?);
        anyhow::Context::with_context(context.execute(&query.for_table(name)), || format!("polars SQL in {}", query.path))
    }
}

impl PolarsBackend {
    /// The declared layout, once every hour of the table's `ledger` is known to be in it.
    fn layout(&self, ledger: &BTreeMap<String, HourEntry>) -> anyhow::Result<&'static Layout> {
        let layout = Layout::declared().map_err(anyhow::Error::msg)?;
        match self.table.other_layout(ledger, &layout.signature()) {
            Some(other) => Err(anyhow::anyhow!("{other}")),
            None => Ok(layout),
        }
    }

    /// The first hour of the table's `ledger` whose file is not the one its entry recorded.
    fn find_damage(&self, ledger: &BTreeMap<String, HourEntry>, check: Check) -> anyhow::Result<Option<Damage>> {
        Ok(self.table.damages(ledger, |_| check)?.into_values().flatten().next())
    }

    /// A query's failure, with the damaged file behind it named when there is
    /// one (checked by checksum: only after a failure, so no query pays for it).
    fn explain_failure(&self, error: anyhow::Error) -> anyhow::Error {
        if error.downcast_ref::<DamagedFile>().is_some() {
            return error;
        }
        match self.table.ledger().map_err(anyhow::Error::from).and_then(|ledger| self.find_damage(&ledger, Check::Checksum)) {
            Ok(Some(damage)) => damaged(&damage).context(format!("{error:#}")),
            _ => error,
        }
    }
}

/// A damaged hour file: which file and hour, and how to repair it.
#[derive(Debug)]
struct DamagedFile(Damage);

impl std::fmt::Display for DamagedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hour = |stem: &str| stem.parse::<ghbench_core::Hour>().map_or_else(|_| stem.to_string(), |h| h.to_string());
        match &self.0.reload {
            None => write!(
                f,
                "{}: the hour is not whole; run `ghbench ingest --reload {} --engines polars` (with the same --table) to load it again",
                self.0,
                hour(&self.0.stem)
            ),
            Some((first, last)) => write!(
                f,
                "{}: its hours are not whole; run `ghbench ingest --reload {}..{} --engines polars` (with the same --table) to load them all again",
                self.0,
                hour(first),
                hour(last)
            ),
        }
    }
}

impl std::error::Error for DamagedFile {}

fn damaged(damage: &Damage) -> anyhow::Error {
    DamagedFile(damage.clone()).into()
}

#[async_trait]
impl Backend for PolarsBackend {
    fn spec(&self) -> &EngineSpec {
        &crate::SPEC
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        Ok(crate::info(&self.table))
    }

    /// Refuses a table of another layout, before any query is planned.
    async fn ledger(&self) -> BackendResult<Ledger> {
        // The hours the run reads (one listing with its files); a table the
        // queries cannot read (damaged) is still described, read directly.
        let entries = match self.table_files() {
            Ok(files) => files.ledger.clone(),
            Err(_) => self.table.ledger()?,
        };
        self.layout(&entries)?;
        let retries = entries.values().map(|e| u64::from(e.record.retries)).sum();
        let entries = entries.into_iter().map(|(stem, e)| Entry::new(stem, e.events() as i64).timed(Some(e.seconds), e.finished_at));
        Ok(Ledger::from_entries(entries).with_retries(retries))
    }

    /// Rows counted from the files' own footers, not the ledger.
    async fn sizes(&self) -> BackendResult<Storage> {
        if let Some(damage) = self.find_damage(&self.table.ledger()?, Check::Size)? {
            return Err(damaged(&damage));
        }
        let mut rows = 0;
        for path in &self.table.live_files()? {
            let file = anyhow::Context::with_context(File::open(path), || format!("opening {}", path.display()))?;
            let count = ParquetReader::new(file).num_rows();
            rows += anyhow::Context::with_context(count, || format!("reading {}", path.display()))? as u64;
        }
        Ok(Storage { rows, rows_exact: true, table_bytes: self.table.data_bytes()?, ..Storage::default() })
    }

    /// Planned here (a mistake is said before any run), and the worker
    /// started if the queries run in one.
    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        let frame = self.plan(query).map_err(|e| self.explain_failure(e))?;
        self.ensure_worker(query).await?;
        Ok(Box::new(Planned { frame, file: query.clone() }))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let Planned { frame, file } = prepared(self.engine(), query)?;
        if let RunsIn::Worker { program, worker } = &self.runs_in {
            return self.run_in_worker(program, worker, file).await;
        }
        let frame = frame.clone();
        let collecting = tokio::task::spawn_blocking(move || frame.collect_with_engine(ENGINE).map(|result| result.unwrap_single()));
        let result = match self.limit {
            None => collecting.await?,
            Some(limit) => match tokio::time::timeout(limit, collecting).await {
                Ok(collected) => collected?,
                Err(_) => return Err(QueryTimedOut::wrap(limit, anyhow::anyhow!(
                    "polars cannot stop a query it runs in the caller's process (ghbench as a library, no worker): this one runs on to its end on polars' threads"
                ))),
            },
        };
        rows(&result.map_err(|e| self.explain_failure(e.into()))?)
    }

    fn limit_queries(&mut self, limit: Option<Duration>) {
        self.limit = limit;
    }

    fn runs_in_process(&self) -> bool {
        matches!(self.runs_in, RunsIn::ThisProcess)
    }

    /// The limit its workers start under (`bench --memory`), else as every
    /// engine on this machine: its processes' cgroup, or the machine's memory.
    async fn memory(&self) -> Option<MemoryShare> {
        let limited = match &self.runs_in {
            RunsIn::Worker { .. } => crate::worker::memory_limit().and_then(|c| limited_memory(&c, ghbench_engine::query::memory_bytes())),
            RunsIn::ThisProcess => None,
        };
        match limited {
            Some(limited) => Some(limited),
            None => this_machine_memory(self).await,
        }
    }

    /// The throttle its workers start under (`--disk`), with its counters.
    async fn disk_limit(&self) -> Option<DiskLimit> {
        match &self.runs_in {
            RunsIn::Worker { .. } => crate::worker::disk_limit()?.limit(),
            RunsIn::ThisProcess => None,
        }
    }

    /// The worker that reads the table's files (ghbench's own process when
    /// it runs the queries itself).
    async fn own_process(&self) -> Option<u32> {
        match &self.runs_in {
            RunsIn::Worker { worker, .. } => worker.lock().await.as_ref().and_then(Worker::pid),
            RunsIn::ThisProcess => Some(std::process::id()),
        }
    }

    /// polars' optimised plan; it never runs the query (`measured` asks
    /// nothing more of an engine whose plan says no index either way).
    async fn explain(&self, query: &QueryFile, _measured: bool) -> Plan {
        let mut plan = Plan { command: EXPLAIN.into(), index_used: Some(false), ..Plan::default() };
        match self.plan(query).and_then(|frame| Ok(frame.explain(true)?)) {
            Ok(text) => plan.text = Some(text),
            Err(e) => plan.error = Some(format!("{e:#}")),
        }
        plan
    }

    /// A handle of its own on the same files: its queries run in a worker
    /// process of its own (as a server's client has a session of its own),
    /// or, with no worker, as blocking tasks in this process.
    async fn open_client(&self) -> BackendResult<Box<dyn Backend>> {
        Ok(Box::new(self.another()))
    }

    async fn concurrency_limits(&self) -> BTreeMap<String, String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = match std::env::var("POLARS_MAX_THREADS") {
            Ok(set) => format!("POLARS_MAX_THREADS={set}"),
            Err(_) => format!("{cores} threads, one per logical core (POLARS_MAX_THREADS unset)"),
        };
        let (pool, runs) = match self.runs_in {
            RunsIn::Worker { .. } => (format!("{threads} in each client's worker process"), "each client's queries collected in a worker process of its own (ghbench polars-worker)"),
            RunsIn::ThisProcess => (format!("{threads}, shared by every client's queries"), "each query collected on a blocking task of the caller's runtime"),
        };
        BTreeMap::from([("polars thread pool".to_string(), pool), ("query engine".to_string(), format!("{ENGINE:?}, {runs}"))])
    }

    async fn clear_caches(&self) -> Vec<String> {
        vec!["polars: nothing to clear: each query reads the Parquet files anew; the OS page cache stays warm".into()]
    }
}

/// The path of a Parquet file of `events` in the declared layout (as a load
/// writes them), written once per process into memory (a `memfd`, read
/// through `/proc/self/fd`): what warming reads must not come through the
/// disk or its throttle.
fn warm_file(events: &[String]) -> anyhow::Result<String> {
    static WARM: std::sync::OnceLock<Result<(std::fs::File, String), String>> = std::sync::OnceLock::new();
    let made = WARM.get_or_init(|| {
        use std::os::fd::{AsRawFd as _, FromRawFd as _};
        // SAFETY: memfd_create(2) with a NUL-terminated name; the descriptor is owned by the File.
        let fd = unsafe { libc::memfd_create(c"ghbench-polars-warm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a descriptor just made, owned by nothing else.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut columns = crate::schema::Columns::new(Layout::declared()?);
        for (line, event) in (1..).zip(events) {
            columns.push(line, event)?;
        }
        let mut frame = columns.take_frame().map_err(|e| e.to_string())?;
        ParquetWriter::new(&file).finish(&mut frame).map_err(|e| e.to_string())?;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        Ok((file, path))
    });
    made.as_ref().map(|(_, path)| path.clone()).map_err(|e| anyhow::anyhow!("a Parquet file in memory to warm the worker with: {e}"))
}

/// A result frame as rows ghbench compares: the key as text, the value as
/// an integer (counts) or f64 (averages).
fn rows(frame: &DataFrame) -> anyhow::Result<Vec<Row>> {
    let columns = frame.columns();
    let mut rows = vec![Vec::with_capacity(columns.len()); frame.height()];
    for (index, column) in columns.iter().enumerate() {
        let series = column.as_materialized_series();
        let cells: Vec<Cell> = match series.dtype() {
            DataType::String => series.str()?.iter().map(|v| v.map_or(Cell::Null, |s| Cell::Text(s.to_string()))).collect(),
            DataType::Float32 | DataType::Float64 => series.cast(&DataType::Float64)?.f64()?.iter().map(|v| v.map_or(Cell::Null, Cell::Float)).collect(),
            dtype if dtype.is_integer() => series.cast(&DataType::Int64)?.i64()?.iter().map(|v| v.map_or(Cell::Null, Cell::Int)).collect(),
            dtype => anyhow::bail!("column {index} ({}) is {dtype}: the queries return text and numbers", series.name()),
        };
        for (row, cell) in rows.iter_mut().zip(cells) {
            row.push(cell);
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_file_says_the_reload_that_repairs_it_an_hour_or_a_whole_segment() {
        let damage = |reload: Option<(String, String)>| Damage { stem: "2015-01-01-5".into(), path: "t/x.parquet".into(), what: "is 1 bytes".into(), reload };
        let hour = damaged(&damage(None)).to_string();
        assert!(hour.contains("`ghbench ingest --reload 2015-01-01T05 --engines polars`"), "{hour}");
        let segment = damaged(&damage(Some(("2015-01-01-0".into(), "2015-01-02-23".into())))).to_string();
        assert!(segment.contains("`ghbench ingest --reload 2015-01-01T00..2015-01-02T23 --engines polars`") && segment.contains("load them all again"), "{segment}");
    }
}

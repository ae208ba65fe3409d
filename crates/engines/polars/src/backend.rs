//! Querying: the table's loaded hour files, scanned lazily and registered in
//! a polars SQL context under the table's name, run the query files of
//! `queries/polars/` (SQL, so they read side by side with PostgreSQL's).
//! Planning is done in `prepare`; `execute` collects, reading the files.

use std::collections::BTreeMap;
use std::fs::File;

use async_trait::async_trait;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_olap::backend::{prepared, Backend, BackendResult, Prepared};
use ghbench_olap::catalog::QueryFile;
use ghbench_olap::ledger::Ledger;
use ghbench_olap::record::{Plan, Storage};
use ghbench_olap::rows::{Cell, Row};
use polars::prelude::*;
use polars::sql::SQLContext;

use crate::schema::Layout;
use crate::store::{Check, Damage, HourEntry, TableDir};

/// How a plan is shown: polars' own optimised plan.
const EXPLAIN: &str = "LazyFrame::explain(optimized = true)";

/// The engine queries are collected with: polars' streaming engine groups
/// each morsel as the scan decodes it; the default in-memory engine decodes
/// whole columns first (1M events: B 0.026 s in memory, 0.013 s streaming).
pub const ENGINE: Engine = Engine::Streaming;

pub struct PolarsBackend {
    table: TableDir,
}

/// A query planned against the table's files, ready to collect.
struct Planned(LazyFrame);

impl PolarsBackend {
    pub fn open(dir: &std::path::Path, table: &TableName) -> anyhow::Result<PolarsBackend> {
        Ok(PolarsBackend { table: TableDir::new(dir, table) })
    }

    /// Every loaded hour's file, as one lazy frame of the declared layout.
    /// A file of another size than its ledger entry recorded, or of another
    /// layout, stops the query (a `stat` per file: a damaged file is not read
    /// as if it were data).
    fn scan(&self) -> anyhow::Result<LazyFrame> {
        let ledger = self.table.ledger()?;
        let layout = self.layout(&ledger)?;
        let files = self.table.hour_files()?;
        if let Some(damage) = self.find_damage(&ledger, Check::Size)? {
            return Err(damaged(&damage));
        }
        let schema = layout.schema();
        if files.is_empty() {
            return Ok(DataFrame::empty_with_schema(&schema).lazy());
        }
        let paths: Vec<PlRefPath> = files.values().map(|p| PlRefPath::from(p.to_string_lossy().as_ref())).collect();
        let args = ScanArgsParquet { schema: Some(Arc::new(schema)), ..ScanArgsParquet::default() };
        Ok(LazyFrame::scan_parquet_files(paths.into(), args)?)
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
        for (stem, entry) in ledger {
            if let Some(damage) = self.table.check(stem, entry, check)? {
                return Ok(Some(damage));
            }
        }
        Ok(None)
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
        let hour = self.0.stem.parse::<ghbench_core::Hour>().map_or_else(|_| self.0.stem.clone(), |h| h.to_string());
        write!(
            f,
            "{}: the hour is not whole; run `ghbench ingest --reload {hour} --engines polars` (with the same --table) to load it again",
            self.0
        )
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
        let entries = self.table.ledger()?;
        self.layout(&entries)?;
        let retries = entries.values().map(|e| u64::from(e.record.retries)).sum();
        Ok(Ledger::from_entries(entries.into_iter().map(|(stem, e)| (stem, e.events() as i64, Some(e.seconds)))).with_retries(retries))
    }

    /// Rows counted from the files' own footers, not the ledger.
    async fn sizes(&self) -> BackendResult<Storage> {
        if let Some(damage) = self.find_damage(&self.table.ledger()?, Check::Size)? {
            return Err(damaged(&damage));
        }
        let mut rows = 0;
        for path in self.table.hour_files()?.values() {
            let file = anyhow::Context::with_context(File::open(path), || format!("opening {}", path.display()))?;
            let count = ParquetReader::new(file).num_rows();
            rows += anyhow::Context::with_context(count, || format!("reading {}", path.display()))? as u64;
        }
        Ok(Storage { rows, rows_exact: true, table_bytes: self.table.data_bytes()?, ..Storage::default() })
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        Ok(Box::new(Planned(self.plan(query).map_err(|e| self.explain_failure(e))?)))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let Planned(frame) = prepared(self.engine(), query)?;
        let frame = frame.clone();
        let result = tokio::task::spawn_blocking(move || frame.collect_with_engine(ENGINE).map(|result| result.unwrap_single())).await?;
        rows(&result.map_err(|e| self.explain_failure(e.into()))?)
    }

    async fn explain(&self, query: &QueryFile) -> Plan {
        let mut plan = Plan { command: EXPLAIN.into(), index_used: Some(false), ..Plan::default() };
        match self.plan(query).and_then(|frame| Ok(frame.explain(true)?)) {
            Ok(text) => plan.text = Some(text),
            Err(e) => plan.error = Some(format!("{e:#}")),
        }
        plan
    }

    /// A handle of its own on the same files: its queries run as blocking
    /// tasks in ghbench's process, sharing polars' one thread pool.
    async fn open_client(&self) -> BackendResult<Box<dyn Backend>> {
        Ok(Box::new(PolarsBackend { table: self.table.clone() }))
    }

    async fn concurrency_limits(&self) -> BTreeMap<String, String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = match std::env::var("POLARS_MAX_THREADS") {
            Ok(set) => format!("POLARS_MAX_THREADS={set}"),
            Err(_) => format!("{cores} threads, one per logical core (POLARS_MAX_THREADS unset)"),
        };
        BTreeMap::from([
            ("polars thread pool".to_string(), format!("{threads}, shared by every client's queries")),
            ("query engine".to_string(), format!("{ENGINE:?}, each query collected on a blocking task of ghbench's runtime")),
        ])
    }

    async fn clear_caches(&self) -> Vec<String> {
        vec!["polars: nothing to clear: each query reads the Parquet files anew; the OS page cache stays warm".into()]
    }
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

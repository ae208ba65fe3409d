//! Engines are plug-ins: an engine registered here, in the test, with no server
//! and no indexes, goes through the real `ghbench ingest`, `index` and `query`
//! commands beside PostgreSQL, and its answer to Query A is verified against
//! PostgreSQL's. Nothing outside the registry names it.

use std::collections::{BTreeMap, HashSet};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ghbench_core::{Capabilities, ConnectError, DocumentLimits, Engine, EngineConfig, EngineSpec, ServerInfo, TableName};
use ghbench_engine::{EnginePlugin, EngineSink, Loader};
// Everything through the engine API, as an engine crate has it.
use ghbench_engine::ledger::{Entry, Ledger};
use ghbench_engine::load::lock::{Lost, TableLock};
use ghbench_engine::load::{check_stored, EngineBatch, HourRecord, SinkError};
use ghbench_engine::query::{prepared, Backend, BackendResult, Prepared, QueryFile};
use ghbench_engine::record::{Plan, Storage};
use ghbench_engine::rows::{Cell, Row};
use ghbench_testkit::*;
use serde_json::Value;

static SPEC: EngineSpec = EngineSpec {
    engine: Engine::named("memory"),
    aliases: &[],
    about: "documents in this process's memory (a test's engine)",
    capabilities: Capabilities { server: false, indexes: false, restartable: false, durable: false, optional: false },
    limits: DocumentLimits { max_bytes: None, refuses_nul: false, max_object_keys: None, max_depth: None },
    options: &[],
    default: false,
    connect_hint: "nothing: it lives in the test",
};

/// One table's documents and its ledger (hour stem → events).
#[derive(Default)]
struct Store {
    docs: BTreeMap<String, Vec<Value>>,
    ledger: BTreeMap<String, u64>,
    /// A setting of the whole engine, as a server parameter is of a server:
    /// `prepare` turns it on for the engine's own query, `after_query` back off.
    setting_on: bool,
    /// Queries that ran with the setting on.
    ran_with_setting: u32,
}

/// The whole engine: shared by every connection, as a server's data would be.
#[derive(Clone, Default)]
struct Memory {
    store: Arc<Mutex<Store>>,
}

#[async_trait]
impl EnginePlugin for Memory {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    fn loader(&self, _: &EngineConfig) -> Arc<dyn Loader> {
        Arc::new(self.clone())
    }

    async fn backend(&self, _: &EngineConfig, _: &TableName) -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(self.clone()))
    }
}

#[async_trait]
impl Loader for Memory {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    fn location(&self) -> String {
        "memory".into()
    }

    async fn connect(&self, _: &TableName) -> Result<Box<dyn EngineSink>, ConnectError> {
        Ok(Box::new(MemorySink { memory: self.clone(), pending: Vec::new() }))
    }
}

fn info() -> ServerInfo {
    ServerInfo::new(SPEC.engine.clone(), "in-test memory engine", "1", "a Vec per hour".into(), "memory")
}

struct MemorySink {
    memory: Memory,
    pending: Vec<Value>,
}

#[async_trait]
impl EngineSink for MemorySink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        Ok(info())
    }

    async fn lock(&self, _: Duration) -> Result<TableLock, SinkError> {
        Ok(TableLock::kept(tokio::spawn(async {}), Lost::default(), None))
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        if drop {
            *self.memory.store.lock().unwrap() = Store::default();
        }
        Ok(())
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        Ok(self.memory.store.lock().unwrap().ledger.keys().cloned().collect())
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        Ok(self.memory.store.lock().unwrap().ledger.values().sum())
    }

    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        Ok(self.memory.store.lock().unwrap().ledger.get(stem).copied())
    }

    async fn begin_hour(&mut self, _: &str) -> Result<(), SinkError> {
        self.pending.clear();
        Ok(())
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        for doc in batch.docs() {
            self.pending.push(serde_json::from_str(&doc.json).map_err(|e| SinkError::Other(e.to_string()))?);
        }
        Ok(())
    }

    async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        let docs = std::mem::take(&mut self.pending);
        let stored = docs.len() as u64;
        check_stored(stored, record)?;
        let mut store = self.memory.store.lock().unwrap();
        store.docs.insert(record.hour.clone(), docs);
        store.ledger.insert(record.hour.clone(), stored);
        Ok(stored)
    }

    async fn abort_hour(&mut self) {
        self.pending.clear();
    }
}

/// The engine's query language: keep documents whose JSON pointers equal the
/// given strings, count them per the `group` pointer's value, most first, ties
/// by key (bytes, null first) as the corrected queries order them.
#[derive(serde::Deserialize)]
struct GroupCount {
    filter: BTreeMap<String, String>,
    group: String,
}

#[async_trait]
impl Backend for Memory {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        Ok(info())
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        let store = self.store.lock().unwrap();
        Ok(Ledger::from_entries(store.ledger.iter().map(|(hour, n)| Entry::new(hour.clone(), *n as i64))))
    }

    async fn sizes(&self) -> BackendResult<Storage> {
        let rows = self.store.lock().unwrap().docs.values().map(Vec::len).sum::<usize>() as u64;
        Ok(Storage { rows, rows_exact: true, ..Storage::default() })
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        let query = serde_json::from_str::<GroupCount>(&query.text)?;
        self.store.lock().unwrap().setting_on = true;
        Ok(Box::new(query))
    }

    async fn after_query(&self) -> BackendResult<()> {
        self.store.lock().unwrap().setting_on = false;
        Ok(())
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let query: &GroupCount = prepared(self.engine(), query)?;
        let mut store = self.store.lock().unwrap();
        store.ran_with_setting += u32::from(store.setting_on);
        let mut counts: BTreeMap<Option<String>, i64> = BTreeMap::new();
        for doc in store.docs.values().flatten() {
            if query.filter.iter().all(|(pointer, want)| doc.pointer(pointer).and_then(Value::as_str) == Some(want)) {
                let key = doc.pointer(&query.group).and_then(Value::as_str).map(str::to_string);
                *counts.entry(key).or_default() += 1;
            }
        }
        let mut rows: Vec<(Option<String>, i64)> = counts.into_iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(rows.into_iter().map(|(key, n)| vec![key.map_or(Cell::Null, Cell::Text), Cell::Int(n)]).collect())
    }

    async fn explain(&self, _: &QueryFile, _: bool) -> Plan {
        Plan { command: "none".into(), error: Some("the memory engine has no planner".into()), ..Plan::default() }
    }
}

/// The repository's catalog plus the memory engine's Query A.
fn catalog_with_memory_engine(dir: &std::path::Path) {
    let queries = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
    for name in ["variants/corrected.json", "paper.json", "postgres/corrected/A.sql"] {
        let to = dir.join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(queries.join(name), to).unwrap();
    }
    std::fs::create_dir_all(dir.join("memory/corrected")).unwrap();
    let a = r#"{"filter": {"/type": "IssuesEvent", "/payload/action": "opened"}, "group": "/repo/name"}"#;
    std::fs::write(dir.join("memory/corrected/A.json"), a).unwrap();
}

fn ghbench(registry: &ghbench_engine::Registry, args: &[&str]) -> ExitCode {
    let mut all = vec!["ghbench"];
    all.extend(args);
    let status = ghbench::cli::run(registry.clone(), all);
    give_back_signals();
    status
}

/// ghbench's command line catches Ctrl-C and SIGTERM (to cancel its server
/// work) for the whole process and for good: tokio never gives a signal
/// back. Run here, in the one test binary every test shares, it would leave
/// the binary deaf to them once this test ran (Ctrl-C on `cargo test` would
/// leave it running): they go back to ending the process. (A later run here
/// finds tokio's handler registered and does not install it again.)
fn give_back_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: signal(2) with SIG_DFL installs no handler and touches no
        // memory of this process; nothing here relies on catching them.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

#[test]
fn an_engine_without_server_or_indexes_runs_through_ingest_index_and_query() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let memory = Memory::default();
    let registry = ghbench::registry::builtin().with(Arc::new(memory.clone()));
    let table = table("plugin");
    let work = tempfile::tempdir().unwrap();
    let source = real.parent().unwrap().to_str().unwrap();
    let quarantine = work.path().join("quarantine");
    let common = ["--table", table.as_str(), "--pg-url", &pg_url()].map(str::to_string);
    let with = |args: &[&str]| -> Vec<String> { args.iter().map(|a| a.to_string()).chain(common.iter().cloned()).collect() };
    let run = |args: Vec<String>| ghbench(&registry, &args.iter().map(String::as_str).collect::<Vec<_>>());

    let ingest = with(&["ingest", "--engines", "memory,postgres", "--source", source, "--from", "2015-01-01T00", "--drop"]);
    let ingest = [ingest, vec!["--quarantine-dir".into(), quarantine.display().to_string()]].concat();
    assert_eq!(run(ingest), ExitCode::SUCCESS);
    assert_eq!(memory.store.lock().unwrap().ledger.values().sum::<u64>(), 7702, "every event of the hour, once");

    // No indexes to build: said, not failed.
    let output = work.path().join("results");
    let out = output.to_str().unwrap();
    assert_eq!(run(with(&["index", "--engines", "memory", "--output", out])), ExitCode::SUCCESS);

    let catalog = work.path().join("catalog");
    catalog_with_memory_engine(&catalog);
    let query = with(&["query", "A", "--variant", "corrected", "--repeat", "2", "--engines", "memory,pg", "--baseline", "postgres"]);
    let query = [query, vec!["--catalog".into(), catalog.display().to_string(), "--output".into(), out.into()]].concat();
    assert_eq!(run(query), ExitCode::SUCCESS, "the engines agree on the data and on Query A");

    let json = std::fs::read_dir(&output).unwrap().map(|e| e.unwrap().path()).find(|p| {
        p.file_name().unwrap().to_str().unwrap().starts_with("olap-") && p.extension().is_some_and(|e| e == "json")
    });
    let record: Value = serde_json::from_slice(&std::fs::read(json.expect("a results file")).unwrap()).unwrap();
    assert_eq!(record["schema"], "ghbench-olap/2");
    assert_eq!(record["context"]["baseline"], "postgres");
    let engines = record["context"]["engines"].as_array().unwrap();
    assert_eq!(engines[0]["engine"], "memory");
    assert_eq!(engines[0]["capabilities"]["server"], false);
    assert_eq!(engines[0]["server"]["product"], "in-test memory engine");
    assert!(engines[1]["data"]["load_seconds"].as_f64().is_some_and(|s| s > 0.0), "PostgreSQL's load time is recorded");
    let a = &record["queries"][0];
    assert_eq!(a["verification"]["status"], "agree");
    let rows: Vec<&Value> = a["engines"].as_array().unwrap().iter().map(|e| &e["rows"]).collect();
    assert!(rows[0].as_u64().is_some_and(|n| n > 10), "{rows:?}");
    assert_eq!(rows[0], rows[1]);
    // The engine-wide setting its queries run with was on for each of its runs,
    // and undone once its query was done (before any other engine ran).
    let store = memory.store.lock().unwrap();
    assert_eq!((store.ran_with_setting, store.setting_on), (2, false), "set for both runs, restored after");
    drop(store);

    // Cleanup of PostgreSQL's side.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let pg = pg().await;
        let _ = pg.batch_execute(&format!("DROP TABLE IF EXISTS {table}")).await;
        let _ = pg.execute("DELETE FROM ghbench_ledger WHERE tbl = $1", &[&table]).await;
    });
}

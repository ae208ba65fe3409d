//! A MongoDB-wire server (MongoDB or SecantusDB), one collection. Query files
//! are JSON objects `{"comment": [...], "pipeline": [...]}` in relaxed
//! extended JSON; aggregations run as the paper ran them: `allowDiskUse: true`
//! and a very large batch size, the cursor drained.

use std::time::Instant;

use anyhow::{anyhow, Context as _};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_olap::backend::{prepared, Backend, BackendResult, OnIndexBuilt, Prepared};
use ghbench_olap::catalog::{parse_json, QueryFile};
use ghbench_olap::ledger::Ledger;
use ghbench_olap::record::{IndexBuild, IndexSize, Plan, Storage};
use ghbench_olap::rows::{Cell, Row};
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::ErrorKind;
use mongodb::Database;
use serde::Deserialize;

use crate::ledger::{number, MongoLedger};
use crate::SPEC;

/// The paper used "a very large cursor batch size"; servers cap a batch at 16 MB anyway.
const BATCH_SIZE: u32 = 100_000;
/// Plan stages that read an index.
const INDEX_STAGES: [&str; 4] = ["IXSCAN", "COUNT_SCAN", "DISTINCT_SCAN", "IDHACK"];

pub struct MongoBackend {
    db: Database,
    url: String,
    table: TableName,
}

#[derive(Deserialize)]
struct PipelineFile {
    pipeline: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct IndexFile {
    indexes: Vec<serde_json::Value>,
}

impl MongoBackend {
    pub async fn connect(url: &str, table: &TableName) -> BackendResult<Self> {
        Ok(MongoBackend { db: crate::connect::connect(&SPEC, url).await?, url: url.to_string(), table: table.clone() })
    }

    fn pipeline(&self, query: &QueryFile) -> BackendResult<Vec<Document>> {
        let file: PipelineFile = parse_json(&query.path, &query.for_table(&self.table))?;
        file.pipeline.into_iter().map(|stage| to_document(stage, &query.path)).collect()
    }

    async fn coll_stats(&self) -> BackendResult<Document> {
        Ok(self.db.run_command(doc! {"collStats": self.table.as_str()}).await?)
    }
}

fn to_document(json: serde_json::Value, path: &str) -> BackendResult<Document> {
    match Bson::try_from(json).with_context(|| format!("{path}: not extended JSON"))? {
        Bson::Document(d) => Ok(d),
        other => Err(anyhow!("{path}: expected an object, found {other}")),
    }
}

#[async_trait]
impl Backend for MongoBackend {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        Ok(crate::connect::describe(&SPEC, &self.db, &self.url).await?)
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        Ok(MongoLedger { db: &self.db, engine: &SPEC.engine, table: &self.table }.report().await?)
    }

    async fn sizes(&self) -> BackendResult<Storage> {
        let stats = self.coll_stats().await.context("collStats")?;
        let indexes = stats
            .get_document("indexSizes")
            .map(|sizes| {
                sizes.keys().map(|name| IndexSize { name: name.clone(), bytes: number(sizes, name).unwrap_or(0) }).collect()
            })
            .unwrap_or_default();
        Ok(Storage {
            rows: number(&stats, "count").unwrap_or(0),
            rows_exact: true,
            table_bytes: number(&stats, "size").unwrap_or(0),
            index_bytes: number(&stats, "totalIndexSize").unwrap_or(0),
            indexes,
        })
    }

    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        let specs: IndexFile = parse_json(&file.path, &file.for_table(&self.table))?;
        let coll = self.db.collection::<Document>(self.table.as_str());
        let mut builds = Vec::new();
        for spec in specs.indexes {
            let definition = spec.to_string();
            let spec = to_document(spec, &file.path)?;
            let name = spec.get_str("name").with_context(|| format!("{}: every index needs a name", file.path))?.to_string();
            let existed = coll.list_index_names().await.unwrap_or_default().contains(&name);
            let started = Instant::now();
            let command = doc! {"createIndexes": self.table.as_str(), "indexes": [spec]};
            self.db.run_command(command).await.with_context(|| format!("creating {name}"))?;
            let seconds = started.elapsed().as_secs_f64();
            let bytes = self.coll_stats().await.ok().and_then(|s| s.get_document("indexSizes").ok().and_then(|d| number(d, &name)));
            let build = IndexBuild { name, definition, created: !existed, seconds, bytes, skipped: None };
            built(&build);
            builds.push(build);
        }
        Ok(builds)
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        Ok(Box::new(self.pipeline(query)?))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let pipeline: &Vec<Document> = prepared(self.engine(), query)?;
        let coll = self.db.collection::<Document>(self.table.as_str());
        let cursor = coll.aggregate(pipeline.clone()).allow_disk_use(true).batch_size(BATCH_SIZE).await?;
        let docs: Vec<Document> = cursor.try_collect().await?;
        Ok(docs.iter().map(normalise).collect())
    }

    async fn explain(&self, query: &QueryFile) -> Plan {
        let mut plan = Plan { command: "explain aggregate, verbosity executionStats".into(), ..Plan::default() };
        let pipeline = match self.pipeline(query) {
            Ok(p) => p,
            Err(e) => {
                plan.error = Some(format!("{e:#}"));
                return plan;
            }
        };
        let command = doc! {
            "explain": {"aggregate": self.table.as_str(), "pipeline": pipeline, "cursor": {}},
            "verbosity": "executionStats",
        };
        match self.db.run_command(command).await {
            Ok(reply) => {
                let json = Bson::Document(reply).into_relaxed_extjson();
                let mut stages = Vec::new();
                collect_stages(&json, &mut stages, &mut plan.indexes);
                // A reply without any stage is a format we cannot read: say "unknown".
                plan.index_used = (!stages.is_empty()).then(|| stages.iter().any(|s| INDEX_STAGES.contains(&s.as_str())));
                plan.json = Some(json);
            }
            Err(e) => plan.error = Some(format!("explain unsupported or failed: {}", short(&e))),
        }
        plan
    }

    async fn clear_caches(&self) -> Vec<String> {
        let done = match self.db.run_command(doc! {"planCacheClear": self.table.as_str()}).await {
            Ok(_) => "planCacheClear (cached plans dropped)".to_string(),
            Err(e) => format!("planCacheClear not done: {}", short(&e)),
        };
        vec![format!("MongoDB-wire server: {done}; its data cache stays warm: server not restarted")]
    }

    fn lost_connection(&self, error: &anyhow::Error) -> bool {
        error.chain().any(|cause| cause.downcast_ref::<mongodb::error::Error>().is_some_and(crate::error::is_lost_connection))
    }

    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        Ok(Box::new(MongoBackend::connect(&self.url, &self.table).await?))
    }

    /// The driver's pool runs as tasks of the runtime; a client dropped only
    /// when the runtime ends can find its pool worker gone first and panic
    /// (`connection_requester.rs`: `unwrap()` on a `SendError`). Shut down
    /// here, bounded: a server that does not answer cannot hold the exit.
    async fn close(&self) {
        let _ = tokio::time::timeout(CLOSE_LIMIT, self.db.client().clone().shutdown()).await;
    }
}

/// How long closing a client may wait for the driver's own shutdown.
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The server's own words for a failed command (the driver's Display adds the raw reply).
fn short(e: &mongodb::error::Error) -> String {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => format!("{} ({})", c.message, c.code_name),
        _ => e.to_string(),
    }
}

/// `_id` (the group key) as text; counts as integers; averages as f64.
fn normalise(doc: &Document) -> Row {
    doc.iter()
        .map(|(key, value)| match value {
            Bson::Null | Bson::Undefined => Cell::Null,
            Bson::String(s) => Cell::Text(s.clone()),
            Bson::Int32(n) if key != "_id" => Cell::Int(i64::from(*n)),
            Bson::Int64(n) if key != "_id" => Cell::Int(*n),
            Bson::Double(x) if key != "_id" => Cell::Float(*x),
            Bson::Decimal128(d) if key != "_id" => Cell::from_sql_value(Some(&d.to_string())),
            other => Cell::Text(other.clone().into_relaxed_extjson().to_string()),
        })
        .collect()
}

/// Every `stage` and `indexName` anywhere in an explain reply (its shape varies
/// by server and version).
fn collect_stages(json: &serde_json::Value, stages: &mut Vec<String>, indexes: &mut Vec<String>) {
    match json {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("stage", serde_json::Value::String(s)) => stages.push(s.clone()),
                    ("indexName", serde_json::Value::String(s)) if !indexes.contains(s) => indexes.push(s.clone()),
                    _ => collect_stages(value, stages, indexes),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_stages(v, stages, indexes)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_results_normalise_to_key_and_value() {
        let row = normalise(&doc! {"_id": "a/b", "total": 3_i32});
        assert_eq!(row, vec![Cell::Text("a/b".into()), Cell::Int(3)]);
        let row = normalise(&doc! {"_id": null, "avg": 2.5});
        assert_eq!(row, vec![Cell::Null, Cell::Float(2.5)]);
        assert_eq!(normalise(&doc! {"_id": 7_i32, "n": 1_i64})[0], Cell::Text("7".into()));
    }

    #[test]
    fn finds_index_stages_at_any_depth() {
        let json = serde_json::json!({"stages": [{"$cursor": {"queryPlanner": {"winningPlan":
            {"stage": "FETCH", "inputStage": {"stage": "IXSCAN", "indexName": "type_1"}}}}}]});
        let (mut stages, mut indexes) = (Vec::new(), Vec::new());
        collect_stages(&json, &mut stages, &mut indexes);
        assert_eq!(stages, ["FETCH", "IXSCAN"]);
        assert_eq!(indexes, ["type_1"]);
    }
}

//! A MongoDB-wire server (MongoDB or SecantusDB), one collection. Query files
//! are JSON objects `{"comment": [...], "pipeline": [...]}` in relaxed
//! extended JSON; aggregations run as the paper ran them: `allowDiskUse: true`
//! and a very large batch size, the cursor drained. Besides, each states what
//! a server's defaults could change: its time limit (MongoDB 8's
//! `defaultMaxTimeMS` would cut it otherwise) and the `simple` collation (a
//! collection created with a default collation would group and sort by it).
//!
//! The commands around the queries (explain, statistics, `planCacheClear`)
//! follow the URI's read preference, as the queries do, so they describe
//! and clear the node the queries ran on.

use std::time::Instant;

use anyhow::{anyhow, bail, Context as _};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_olap::backend::{prepared, Backend, BackendResult, OnIndexBuilt, Prepared};
use ghbench_olap::catalog::{parse_json, QueryFile};
use ghbench_olap::ledger::Ledger;
use ghbench_olap::record::{IndexBuild, IndexSize, Plan, Storage};
use ghbench_olap::rows::{Cell, Row};
use mongodb::action::{Action, RunCommand};
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{Collation, Hint};
use mongodb::Database;
use serde::Deserialize;

use crate::error::{refusal, with_advice};
use crate::explain::WinningPlans;
use crate::ledger::MongoLedger;
use crate::setup::{MongoSetup, ServerParameters};
use crate::stats::{CollectionSizes, IndexReply};

/// The paper used "a very large cursor batch size"; servers cap a batch at 16 MB anyway.
const BATCH_SIZE: u32 = 100_000;
/// Each aggregation's `maxTimeMS`: long enough for any query ghbench times,
/// and explicit, so no server default (MongoDB 8's `defaultMaxTimeMS`) cuts one.
pub const QUERY_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

pub struct MongoBackend {
    setup: &'static MongoSetup,
    db: Database,
    url: String,
    table: TableName,
    /// The collection's name in this setup (`tuned.<table>`, or the table's).
    collection: String,
    /// `simple`, unless the server misreads it (see `Product::states_simple_collation`).
    collation: Option<Collation>,
    /// The server parameters the setup sets for its queries, and whether the server lets it.
    parameters: ServerParameters,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineFile {
    #[allow(dead_code)]
    #[serde(default)]
    comment: Vec<String>,
    pipeline: Vec<serde_json::Value>,
    /// The index the aggregation must use (its key pattern or its name), where
    /// the planner would choose worse.
    #[serde(default)]
    hint: Option<serde_json::Value>,
}

/// A pipeline read from its file, ready to send.
struct Aggregation {
    pipeline: Vec<Document>,
    /// A key pattern (a document) or an index name (a string), as `aggregate` takes it.
    hint: Option<Bson>,
}

impl Aggregation {
    /// The hint as the driver takes it.
    fn driver_hint(&self) -> Option<Hint> {
        match self.hint.clone()? {
            Bson::String(name) => Some(Hint::Name(name)),
            Bson::Document(keys) => Some(Hint::Keys(keys)),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct IndexFile {
    indexes: Vec<serde_json::Value>,
}

impl MongoBackend {
    pub async fn connect(setup: &'static MongoSetup, url: &str, table: &TableName) -> BackendResult<Self> {
        let db = crate::connect::connect(&setup.spec, url).await?;
        let (product, _) = crate::connect::product(&db, url).await.context("buildInfo")?;
        let collation = product.states_simple_collation().then(simple_collation);
        let parameters = ServerParameters::probe(&db, &setup.parameters).await;
        let collection = setup.collection(table);
        Ok(MongoBackend { setup, db, url: url.to_string(), table: table.clone(), collection, collation, parameters })
    }

    fn aggregation(&self, query: &QueryFile) -> BackendResult<Aggregation> {
        let file: PipelineFile = parse_json(&query.path, &query.for_table(&self.table))?;
        let hint = match file.hint {
            None => None,
            Some(serde_json::Value::String(name)) => Some(Bson::String(name)),
            Some(keys @ serde_json::Value::Object(_)) => Some(Bson::Document(to_document(keys, &query.path)?)),
            Some(other) => bail!("{}: hint must name an index by its key pattern (an object) or its name (a string), not {other}", query.path),
        };
        let pipeline = file.pipeline.into_iter().map(|stage| to_document(stage, &query.path)).collect::<BackendResult<_>>()?;
        Ok(Aggregation { pipeline, hint })
    }

    /// A command to the node the queries go to (the URI's read preference).
    fn command(&self, command: Document) -> RunCommand<'_> {
        self.db.run_command(command).selection_criteria(crate::connect::queries_node(&self.db))
    }

    /// The collection's sizes from `$collStats` (summed over shards), or from
    /// the deprecated `collStats` command where the stage fails or answers no
    /// sizes for a collection of `rows` documents; with the source, said.
    async fn collection_sizes(&self, rows: u64) -> BackendResult<(CollectionSizes, String)> {
        let coll = self.db.collection::<Document>(&self.collection);
        let stage = vec![doc! {"$collStats": {"storageStats": {}}}];
        let why_not_stage = match coll.aggregate(stage).await {
            Ok(cursor) => {
                let replies: Vec<Document> = cursor.try_collect().await?;
                let sizes = CollectionSizes::from_coll_stats_stage(&replies);
                if !sizes.unmeasured(rows) {
                    let source = format!("$collStats storageStats of {} shard document(s)", sizes.shards);
                    return Ok((sizes, source));
                }
                "the $collStats stage answered zero sizes for a non-empty collection".to_string()
            }
            Err(e) => format!("the $collStats stage failed: {}", refusal("$collStats", &e)),
        };
        let command = doc! {"collStats": &self.collection};
        let reply = self.command(command).await.map_err(|e| with_advice("collStats", e).context(format!("collStats, after {why_not_stage}")))?;
        Ok((CollectionSizes::from_coll_stats_command(&reply), format!("the collStats command ({why_not_stage})")))
    }

    /// The options the collection was created with, as the server keeps them
    /// (it may have taken options it does not apply), or why they are unknown.
    async fn collection_options(&self) -> String {
        let command = doc! {"listCollections": 1, "filter": {"name": &self.collection}};
        let reply = match self.db.run_command(command).await {
            Ok(reply) => reply,
            Err(e) => return format!("unknown: {}", refusal("listCollections", &e)),
        };
        let Ok(batch) = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")) else {
            return "unknown: listCollections answered without a cursor".into();
        };
        match batch.first().and_then(Bson::as_document) {
            Some(listed) => listed.get("options").cloned().unwrap_or(Bson::Null).into_relaxed_extjson().to_string(),
            None => "collection not created yet".into(),
        }
    }

    /// The index names on the collection; none when it does not exist yet
    /// (NamespaceNotFound). Any other failure is an error, never "no indexes".
    async fn index_names(&self) -> BackendResult<Vec<String>> {
        match self.db.collection::<Document>(&self.collection).list_index_names().await {
            Ok(names) => Ok(names),
            Err(e) if crate::error::code(&e) == Some(26) => Ok(Vec::new()),
            Err(e) => Err(with_advice("listIndexes", e).context(format!("listing the indexes of {}", self.collection))),
        }
    }
}

/// Compares strings by their bytes, as PostgreSQL's `C` collation and the
/// other engines do, whatever collation the collection was created with.
fn simple_collation() -> Collation {
    Collation::builder().locale("simple").build()
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
        &self.setup.spec
    }

    /// The server, and what this setup sets on it: its server parameters
    /// (or why not) and the options its collection was created with.
    async fn describe(&self) -> BackendResult<ServerInfo> {
        let mut info = crate::connect::describe(&self.setup.spec, &self.db, &self.url).await?;
        info.settings.extend(self.parameters.settings());
        if !self.setup.create.is_empty() {
            info.settings.insert(format!("collection {} options", self.collection), self.collection_options().await);
        }
        Ok(info)
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        Ok(MongoLedger { db: &self.db, engine: &self.setup.spec.engine, table: &self.table }.report().await?)
    }

    /// Rows counted exactly (the statistics' `count` is the fast count: off
    /// after an unclean shutdown, and counting orphans on a sharded cluster);
    /// the table's size on disk (`storageSize`, as PostgreSQL's is), its
    /// uncompressed BSON size beside it.
    async fn sizes(&self) -> BackendResult<Storage> {
        let coll = self.db.collection::<Document>(&self.collection);
        let rows = coll.count_documents(doc! {}).await.map_err(|e| with_advice("aggregate", e).context("counting the documents"))?;
        let (sizes, source) = self.collection_sizes(rows).await?;
        Ok(Storage {
            rows,
            rows_exact: true,
            table_bytes: sizes.on_disk,
            index_bytes: sizes.indexes_total,
            indexes: sizes.indexes.into_iter().map(|(name, bytes)| IndexSize { name, bytes }).collect(),
            logical_bytes: Some(sizes.logical),
            sizes_from: Some(format!("rows counted (countDocuments); sizes on disk (storageSize) from {source}")),
        })
    }

    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        let specs: IndexFile = parse_json(&file.path, &file.for_table(&self.table))?;
        let coll = self.db.collection::<Document>(&self.collection);
        // Indexes before any load: the collection is made as the setup makes it
        // (its block compressor), not implicitly by createIndexes with the server's defaults.
        if self.index_names().await?.is_empty() {
            self.setup.create_collection(&self.db, &self.collection).await.map_err(|e| with_advice("create", e).context(format!("creating {}", self.collection)))?;
        }
        let mut builds = Vec::new();
        for spec in specs.indexes {
            let definition = spec.to_string();
            let spec = to_document(spec, &file.path)?;
            let name = spec.get_str("name").with_context(|| format!("{}: every index needs a name", file.path))?.to_string();
            let existed = self.index_names().await?.contains(&name);
            let started = Instant::now();
            // To the primary, whatever the read preference: only it builds.
            let command = doc! {"createIndexes": &self.collection, "indexes": [spec]};
            let reply = self.db.run_command(command).await.map_err(|e| with_advice("createIndexes", e).context(format!("creating {name}")))?;
            let seconds = started.elapsed().as_secs_f64();
            // On a replica set the reply returns once the commit quorum's members have built it.
            let said = IndexReply::read(&reply);
            let rows = coll.estimated_document_count().await.unwrap_or(1);
            let bytes = self.collection_sizes(rows).await.ok().and_then(|(sizes, _)| sizes.indexes.get(&name).copied());
            let created = said.created.unwrap_or(!existed);
            let build = IndexBuild { name, definition, created, seconds, bytes, skipped: None, commit_quorum: said.commit_quorum };
            built(&build);
            builds.push(build);
        }
        Ok(builds)
    }

    /// The pipeline read, and the setup's server parameters set (undone by
    /// [`Backend::after_query`]).
    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        let aggregation = self.aggregation(query)?;
        self.parameters.apply(&self.db).await.map_err(|e| with_advice("setParameter", e).context("setting this setup's server parameters"))?;
        Ok(Box::new(aggregation))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let aggregation: &Aggregation = prepared(self.engine(), query)?;
        let coll = self.db.collection::<Document>(&self.collection);
        let failed = |e: mongodb::error::Error| {
            // BadValue naming the hint: the index it names is not there (not built yet, or dropped with the data).
            let missing_index = crate::error::code(&e) == Some(2) && aggregation.hint.is_some() && e.to_string().contains("hint");
            let advice = format!("the index this query's hint names is not on {}: run `ghbench index --engines {}`", self.collection, self.engine());
            let error = with_advice("aggregate", e);
            if missing_index { error.context(advice) } else { error }
        };
        let cursor = coll
            .aggregate(aggregation.pipeline.clone())
            .allow_disk_use(true)
            .batch_size(BATCH_SIZE)
            .max_time(QUERY_TIME_LIMIT)
            .optional(self.collation.clone(), |aggregate, collation| aggregate.collation(collation))
            .optional(aggregation.driver_hint(), |aggregate, hint| aggregate.hint(hint))
            .await
            .map_err(failed)?;
        let docs: Vec<Document> = cursor.try_collect().await.map_err(failed)?;
        Ok(docs.iter().map(normalise).collect())
    }

    async fn explain(&self, query: &QueryFile) -> Plan {
        let mut plan = Plan { command: "explain aggregate, verbosity executionStats".into(), ..Plan::default() };
        let aggregation = match self.aggregation(query) {
            Ok(a) => a,
            Err(e) => {
                plan.error = Some(format!("{e:#}"));
                return plan;
            }
        };
        // The aggregation as `execute` runs it, so the plan is the timed one's.
        let mut aggregate = doc! {
            "aggregate": &self.collection, "pipeline": aggregation.pipeline, "cursor": {}, "allowDiskUse": true,
            "maxTimeMS": QUERY_TIME_LIMIT.as_millis() as i64,
        };
        if let Some(hint) = aggregation.hint {
            aggregate.insert("hint", hint);
        }
        if self.collation.is_some() {
            aggregate.insert("collation", doc! {"locale": "simple"});
        }
        match self.command(doc! {"explain": aggregate, "verbosity": "executionStats"}).await {
            Ok(reply) => {
                if let Ok(server) = reply.get_document("serverInfo") {
                    let port = server.get("port").map(|p| format!(":{p}")).unwrap_or_default();
                    plan.command = format!("{} (answered by {}{port})", plan.command, server.get_str("host").unwrap_or("?"));
                }
                let json = Bson::Document(reply).into_relaxed_extjson();
                // Only the winning plans (one per shard); a shape without one is "unknown".
                let winning = WinningPlans::read(&json);
                plan.index_used = winning.index_used();
                plan.indexes = winning.indexes;
                plan.json = Some(json);
            }
            Err(e) => plan.error = Some(format!("explain unsupported or failed: {}", refusal("explain", &e))),
        }
        plan
    }

    async fn clear_caches(&self) -> Vec<String> {
        let done = match self.command(doc! {"planCacheClear": &self.collection}).await {
            Ok(_) => format!("planCacheClear on the node the queries read ({}): cached plans dropped", crate::connect::read_preference(&self.db)),
            Err(e) => format!("planCacheClear not done: {}", refusal("planCacheClear", &e)),
        };
        vec![format!("MongoDB-wire server: {done}; its data cache stays warm: server not restarted")]
    }

    /// `serverStatus` of the node the queries read, and how ghbench's clients
    /// reach it.
    async fn concurrency_limits(&self) -> std::collections::BTreeMap<String, String> {
        let mut limits = match self.db.client().database("admin").run_command(doc! {"serverStatus": 1}).selection_criteria(crate::connect::queries_node(&self.db)).await {
            Ok(reply) => crate::stats::concurrency_limits(&reply),
            Err(e) => [("serverStatus".to_string(), format!("not answered: {}", refusal("serverStatus", &e)))].into(),
        };
        limits.insert("driver".into(), "a client (its own connection pool) per ghbench client, one query at a time on each".into());
        limits
    }

    async fn after_query(&self) -> BackendResult<()> {
        self.parameters.restore(&self.db).await.map_err(|e| with_advice("setParameter", e).context("restoring the server parameters this setup set"))
    }

    fn lost_connection(&self, error: &anyhow::Error) -> bool {
        error.chain().any(|cause| cause.downcast_ref::<mongodb::error::Error>().is_some_and(crate::error::is_transient))
    }

    fn server_url(&self) -> Option<&str> {
        Some(&self.url)
    }

    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        Ok(Box::new(MongoBackend::connect(self.setup, &self.url, &self.table).await?))
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
}

//! A MongoDB-wire server (MongoDB or SecantusDB), one collection. Query files
//! are JSON objects `{"comment": [...], "pipeline": [...]}` in relaxed
//! extended JSON; aggregations run as the paper ran them: `allowDiskUse: true`
//! and a very large batch size, the cursor drained. Besides, each states what
//! a server's defaults could change: its time limit (`maxTimeMS: 0`, none,
//! unless `--query-timeout` gives one: an explicit value overrides MongoDB 8's
//! `defaultMaxTimeMS`) and the `simple` collation (a collection created with a
//! default collation would group and sort by it). Each carries a `comment`
//! naming it, by which it is found and stopped (`killOp`) when ghbench stops
//! waiting for it.
//!
//! The commands around the queries (explain, statistics, `planCacheClear`)
//! follow the URI's read preference, as the queries do, so they describe
//! and clear the node the queries ran on.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use ghbench_core::stop::{Cancel, Running};
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_engine::ledger::Ledger;
use ghbench_engine::query::{parse_json, prepared, this_machine_memory, Backend, BackendResult, OnIndexBuilt, Prepared, QueryFile, QueryTimedOut, EXACT_COUNT_MAX_BYTES};
use ghbench_engine::record::{IndexBuild, IndexSize, MemoryShare, Plan, Storage};
use ghbench_engine::rows::{Cell, Row};
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
/// MaxTimeMSExpired: the aggregation ran past its `maxTimeMS`.
const MAX_TIME_EXPIRED: i32 = 50;
/// Numbers each command's `comment` within this process.
static COMMANDS: AtomicU64 = AtomicU64::new(0);

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
    /// `--query-timeout`, sent as each aggregation's `maxTimeMS` (0 without).
    limit: Option<Duration>,
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
        crate::abandoned::end_abandoned(&db, url, setup.spec.engine.name()).await;
        let (product, _) = crate::connect::product(&db, url).await.context("buildInfo")?;
        let collation = product.states_simple_collation().then(simple_collation);
        // A server ghbench cannot name by one address (a replica set's hosts)
        // is named in the journal by its URL, password hidden.
        let named = crate::address(url).unwrap_or_else(|| ghbench_core::redact_url(url));
        let parameters = ServerParameters::probe(&db, &setup.parameters, (named, setup.spec.engine.to_string())).await;
        let collection = setup.collection(table);
        Ok(MongoBackend { setup, db, url: url.to_string(), table: table.clone(), collection, collation, parameters, limit: None })
    }

    /// Another client of the same setup and table, with the same limit.
    async fn another(&self) -> BackendResult<Box<dyn Backend>> {
        let mut fresh = MongoBackend::connect(self.setup, &self.url, &self.table).await?;
        fresh.limit = self.limit;
        Ok(Box::new(fresh))
    }

    /// Each aggregation's `maxTimeMS`: the limit, or 0 (none) stated, so no
    /// server default cuts it.
    fn max_time(&self) -> Duration {
        self.limit.unwrap_or(crate::NO_TIME_LIMIT)
    }

    /// A `comment` of its own for a command, and the command registered as
    /// running under it (stopped by it if ghbench stops waiting); `what`
    /// names the command for people.
    fn register(&self, what: &str) -> (String, Running) {
        // Unique across machines and containers: the owner is named whole (see `ghbench_core::owner`).
        let comment = format!("{} {}", ghbench_core::owner::me().label(), COMMANDS.fetch_add(1, Ordering::Relaxed));
        let said = format!("{} at {}: {what} ({comment})", self.engine(), ghbench_core::redact_url(&self.url));
        let running = Running::start(said, self.kill_by_comment(comment.clone()));
        (comment, running)
    }

    /// What stops the command that carries `comment` on the server: its
    /// operations found in `currentOp` by the comment, each `killOp`ed. A
    /// server that does not list commands' comments cannot be told which
    /// (SecantusDB 0.7 does not): said so, the command runs to its end.
    fn kill_by_comment(&self, comment: String) -> Cancel {
        let db = self.db.clone();
        Arc::new(move || {
            let (db, comment) = (db.clone(), comment.clone());
            Box::pin(async move { kill_by_comment(&db, &comment).await })
        })
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

    /// The finished hours, and the documents of each hour a load began and
    /// did not finish (counted by its ids' range): unlike a transaction's
    /// rows, they are in every answer until a load removes them.
    async fn ledger(&self) -> BackendResult<Ledger> {
        let entries = MongoLedger { db: &self.db, engine: &self.setup.spec.engine, table: &self.table };
        let coll = self.db.collection::<Document>(&self.collection);
        let mut part_written = BTreeMap::new();
        for (stem, _) in entries.unfinished().await? {
            let rows = coll.count_documents(crate::sink::hour_ids(&stem)).max_time(crate::NO_TIME_LIMIT).await?;
            part_written.insert(stem, rows);
        }
        Ok(entries.report().await?.with_part_written(part_written))
    }

    /// Rows as the load counted them when the ledger and the collection's
    /// metadata count agree; else counted exactly up to
    /// [`EXACT_COUNT_MAX_BYTES`] on disk, as PostgreSQL's are; beyond, the fast count (the collection's metadata:
    /// off after an unclean shutdown, counting orphans on a sharded cluster),
    /// said as not exact. The table's size on disk (`storageSize`, as
    /// PostgreSQL's is), its uncompressed BSON size beside it.
    async fn sizes(&self) -> BackendResult<Storage> {
        let coll = self.db.collection::<Document>(&self.collection);
        let fast = coll.estimated_document_count().await.map_err(|e| with_advice("count", e).context("counting the documents from the metadata"))?;
        let (sizes, source) = self.collection_sizes(fast).await?;
        // The load counted every hour it stored: when the metadata agrees
        // with the ledger, that count stands, paid once per load, not per command.
        // Hours begun and not finished were counted, by their ids, with the ledger.
        let loaded = self.ledger().await.ok().map(|ledger| {
            let said = match ledger.part_written.is_empty() {
                true => "rows as the load counted them (its ledger), the collection's metadata count agreeing",
                false => "rows as the load counted them (its ledger) and the documents of hours begun and not finished counted by their ids, the collection's metadata count agreeing",
            };
            (ledger.events() + ledger.part_written_rows(), said)
        });
        let (rows, rows_exact, counted) = match (sizes.on_disk <= EXACT_COUNT_MAX_BYTES, loaded) {
            (_, Some((rows, said))) if rows == fast && fast > 0 => (fast, true, said),
            (true, _) => {
                let exact = coll.count_documents(doc! {}).max_time(crate::NO_TIME_LIMIT).await;
                (exact.map_err(|e| with_advice("aggregate", e).context("counting the documents"))?, true, "rows counted (countDocuments)")
            }
            (false, _) => (fast, false, "rows from the collection's metadata (estimatedDocumentCount; an exact count of over 1 GiB would read it all)"),
        };
        Ok(Storage {
            rows,
            rows_exact,
            table_bytes: sizes.on_disk,
            index_bytes: sizes.indexes_total,
            indexes: sizes.indexes.into_iter().map(|(name, bytes)| IndexSize { name, bytes }).collect(),
            logical_bytes: Some(sizes.logical),
            sizes_from: Some(format!("{counted}; sizes on disk (storageSize) from {source}")),
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
            let (comment, running) = self.register(&format!("createIndexes {name}"));
            let command = doc! {"createIndexes": &self.collection, "indexes": [spec], "comment": comment};
            let reply = self.db.run_command(command).await;
            running.finished();
            let reply = reply.map_err(|e| with_advice("createIndexes", e).context(format!("creating {name}")))?;
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
        self.parameters.apply(&self.db).await.context("setting this setup's server parameters")?;
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
        let cut_or = |e: mongodb::error::Error| match self.limit {
            Some(limit) if crate::error::code(&e) == Some(MAX_TIME_EXPIRED) => QueryTimedOut::wrap(limit, failed(e)),
            _ => failed(e),
        };
        let (comment, running) = self.register("aggregate");
        let docs = async {
            let cursor = coll
                .aggregate(aggregation.pipeline.clone())
                .allow_disk_use(true)
                .batch_size(BATCH_SIZE)
                .max_time(self.max_time())
                .comment(Bson::String(comment))
                .optional(self.collation.clone(), |aggregate, collation| aggregate.collation(collation))
                .optional(aggregation.driver_hint(), |aggregate, hint| aggregate.hint(hint))
                .await
                .map_err(cut_or)?;
            cursor.try_collect::<Vec<Document>>().await.map_err(cut_or)
        }
        .await;
        running.finished();
        Ok(docs?.iter().map(normalise).collect())
    }

    fn limit_queries(&mut self, limit: Option<Duration>) {
        self.limit = limit;
    }

    /// WiredTiger's cache counters of the node the queries read (the whole
    /// server's: a collection's own would need `$collStats` per query).
    async fn read_counters(&self) -> Result<std::collections::BTreeMap<String, u64>, String> {
        let admin = self.db.client().database("admin");
        let reply = admin.run_command(doc! {"serverStatus": 1}).selection_criteria(crate::connect::queries_node(&self.db)).await.map_err(|e| format!("serverStatus: {}", refusal("serverStatus", &e)))?;
        crate::stats::cache_reads(&reply)
    }

    /// `queryPlanner` (the winning plan, without running it), or, measured,
    /// `executionStats` (which runs it).
    async fn explain(&self, query: &QueryFile, measured: bool) -> Plan {
        let verbosity = if measured { "executionStats" } else { "queryPlanner" };
        let mut plan = Plan { command: format!("explain aggregate, verbosity {verbosity}"), ..Plan::default() };
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
            "maxTimeMS": self.max_time().as_millis() as i64,
        };
        if let Some(hint) = aggregation.hint {
            aggregate.insert("hint", hint);
        }
        if self.collation.is_some() {
            aggregate.insert("collation", doc! {"locale": "simple"});
        }
        // executionStats runs the query: registered like it, to be stopped like it.
        let (comment, running) = self.register("explain of an aggregate");
        aggregate.insert("comment", comment);
        let explained = self.command(doc! {"explain": aggregate, "verbosity": verbosity}).await;
        running.finished();
        match explained {
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

    fn server_url(&self) -> Option<&str> {
        Some(&self.url)
    }

    fn server_address(&self) -> Option<String> {
        crate::address(&self.url)
    }

    /// This machine's memory for a server here; else the server's own, as
    /// `hostInfo` reports it (None when it does not).
    async fn memory(&self) -> Option<MemoryShare> {
        if let Some(here) = this_machine_memory(self).await {
            return Some(here);
        }
        let reply = self.db.client().database("admin").run_command(doc! {"hostInfo": 1}).await.ok()?;
        reported_memory(reply.get_document("system").ok()?)
    }

    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        self.another().await
    }

    /// The driver's pool runs as tasks of the runtime; a client dropped only
    /// when the runtime ends can find its pool worker gone first and panic
    /// (`connection_requester.rs`: `unwrap()` on a `SendError`). Shut down
    /// here, bounded: a server that does not answer cannot hold the exit.
    async fn close(&self) {
        let _ = tokio::time::timeout(CLOSE_LIMIT, self.db.client().clone().shutdown()).await;
    }
}

/// Finds the operations that carry `comment` (`currentOp`, on the node the
/// queries read) and `killOp`s each; what was done, or why nothing could be.
pub(crate) async fn kill_by_comment(db: &Database, comment: &str) -> Result<String, String> {
    let admin = db.client().database("admin");
    // $ownOps: a user without the inprog privilege (an Atlas user) sees its own.
    let filter = doc! {"currentOp": 1, "$ownOps": true, "command.comment": comment};
    let node = crate::connect::queries_node(db);
    let reply = admin.run_command(filter).selection_criteria(node.clone()).await.map_err(|e| format!("currentOp: {}", refusal("currentOp", &e)))?;
    let ops = reply.get_array("inprog").map(|ops| ops.as_slice()).unwrap_or_default();
    // Checked here too: a server may ignore the filter and list everything.
    let ours: Vec<Bson> = ops
        .iter()
        .filter_map(Bson::as_document)
        .filter(|op| op.get_document("command").ok().and_then(|c| c.get_str("comment").ok()) == Some(comment))
        .filter_map(|op| op.get("opid").cloned())
        .collect();
    if ours.is_empty() {
        return Err("the server lists no operation with ghbench's comment (it ended, or the server does not show commands' comments in currentOp, as SecantusDB 0.7 does not): if it still runs, it runs to its end".into());
    }
    // On the node that listed them: an opid means nothing on another.
    for opid in &ours {
        admin.run_command(doc! {"killOp": 1, "op": opid.clone()}).selection_criteria(node.clone()).await.map_err(|e| format!("killOp: {}", refusal("killOp", &e)))?;
    }
    Ok(format!("killOp sent for {} operation(s) found by its comment", ours.len()))
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

/// The memory `hostInfo`'s `system` says the server has: its limit
/// (`memLimitMB`, which mongod reports when a cgroup limits it, as in a
/// container) where below the machine's (`memSizeMB`).
fn reported_memory(system: &Document) -> Option<MemoryShare> {
    let size = crate::ledger::number(system, "memSizeMB");
    let limited = crate::ledger::number(system, "memLimitMB").filter(|&limit| size.is_none_or(|size| limit < size));
    let (megabytes, from) = match limited {
        Some(limit) => (limit, "the server's memory limit as it reports it (hostInfo system.memLimitMB)"),
        None => (size?, "the server's memory as it reports it (hostInfo system.memSizeMB)"),
    };
    Some(MemoryShare { bytes: megabytes << 20, from: from.into(), limit: None, nodes: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replies shaped as MongoDB's `hostInfo` documentation shows them: a
    /// host's, and a container's with a memory limit.
    #[test]
    fn the_memory_a_server_reports_is_its_limit_where_it_has_one() {
        let host = doc! {"hostname": "db1", "memSizeMB": 65536_i64, "memLimitMB": 65536_i64, "numCores": 16};
        assert_eq!(reported_memory(&host).map(|m| (m.bytes, m.from.contains("memSizeMB"))), Some((64 << 30, true)));
        let container = doc! {"hostname": "db1", "memSizeMB": 65536_i64, "memLimitMB": 8192_i64};
        assert_eq!(reported_memory(&container).map(|m| (m.bytes, m.from.contains("memLimitMB"))), Some((8 << 30, true)));
        let older = doc! {"hostname": "db1", "memSizeMB": 24105};
        assert_eq!(reported_memory(&older).map(|m| m.bytes), Some(24105 << 20));
        assert_eq!(reported_memory(&doc! {"hostname": "db1"}), None, "nothing said, nothing guessed");
    }

    #[test]
    fn group_results_normalise_to_key_and_value() {
        let row = normalise(&doc! {"_id": "a/b", "total": 3_i32});
        assert_eq!(row, vec![Cell::Text("a/b".into()), Cell::Int(3)]);
        let row = normalise(&doc! {"_id": null, "avg": 2.5});
        assert_eq!(row, vec![Cell::Null, Cell::Float(2.5)]);
        assert_eq!(normalise(&doc! {"_id": 7_i32, "n": 1_i64})[0], Cell::Text("7".into()));
    }
}

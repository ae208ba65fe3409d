//! PostgreSQL, one `jsonb` column. Queries go over the simple query protocol,
//! as psql sends them: every value arrives as text, which keeps `numeric`
//! averages exact until they are normalised.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use ghbench_core::{EngineSpec, ServerInfo, Setup, TableName};
use ghbench_engine::ledger::Ledger;
use ghbench_engine::query::{prepared, this_machine_disk_limit, this_machine_memory, Backend, BackendResult, OnIndexBuilt, Prepared, QueryFile, EXACT_COUNT_MAX_BYTES};
use ghbench_engine::record::{AfterIndexes, DiskLimit, IndexBuild, IndexSize, MemoryShare, Plan, Storage};
use ghbench_engine::rows::{Cell, Row};
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::ledger::PgLedger;
use crate::session::Session;
use crate::setup::{JsonbSetup, Server};
use crate::sql;

/// The plan as the query ran (`--analyze-plans`): it runs the query.
const EXPLAIN_ANALYZE: &str = "EXPLAIN (ANALYZE, BUFFERS)";
/// The planner's plan, without running the query.
const EXPLAIN_ESTIMATED: &str = "EXPLAIN (FORMAT JSON)";

pub struct PostgresBackend {
    setup: &'static JsonbSetup,
    client: Session,
    url: String,
    table: TableName,
    /// On Citus, the two-phase commits recovered as it connected (see
    /// [`crate::citus::recover_prepared`]), or why not, for the record.
    recovered: Option<Result<i32, String>>,
    /// On Citus, what the counts' warm-ups read, left out of every count
    /// (see [`crate::citus::read_counters`]).
    warm_ups: std::sync::Mutex<BTreeMap<String, u64>>,
}

impl PostgresBackend {
    pub async fn connect(setup: &'static JsonbSetup, url: &str, table: &TableName) -> BackendResult<Self> {
        crate::abandoned::end_abandoned(&setup.spec, url).await;
        let client = Session::open(setup, url).await?;
        // Not fatal here: with a worker down the queries fail, naming it, and wait for it.
        let recovered = match setup.server {
            Server::Citus => Some(match crate::citus::workers_answer(&client).await {
                // Citus counts 0 for a worker it cannot reach: not run, said why.
                Err(why) => Err(format!("not run: {why}")),
                Ok(()) => crate::citus::recover_prepared(&client).await.map_err(|e| format!("not run: {e}")),
            }),
            Server::Postgres => None,
        };
        Ok(PostgresBackend { setup, client, url: url.to_string(), table: table.clone(), recovered, warm_ups: Default::default() })
    }

    /// Another session of the same engine and table, with the same limit.
    /// On Citus, once every worker answers too: a query lost to a worker
    /// that stopped is made again only when it is back (the runner's
    /// reconnect waits, backing off, for as long as its limit).
    async fn another(&self) -> BackendResult<Box<dyn Backend>> {
        let mut fresh = PostgresBackend::connect(self.setup, &self.url, &self.table).await?;
        if self.setup.server == Server::Citus {
            crate::citus::workers_answer(&fresh.client).await.map_err(anyhow::Error::msg)?;
        }
        fresh.client.limit_queries(self.client.limit());
        Ok(Box::new(fresh))
    }
}

/// Every row the statement returns, as text cells (None for NULL).
pub async fn text_rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect())
}

/// A query's result rows, as every engine's are compared.
pub async fn result_rows(client: &Client, sql: &str) -> Result<Vec<Row>, tokio_postgres::Error> {
    Ok(text_rows(client, sql).await?.into_iter().map(normalise).collect())
}

/// Runs each `CREATE INDEX IF NOT EXISTS` statement of `file` (already made
/// for its tables), timing it and reporting it as built with its bytes (on
/// Citus, `server`, summed over the shards). `schema` is where
/// the indexes must land (their tables' schema), None for the session's own:
/// an index found nowhere else after its statement ran is an error, so a
/// setup never takes another's index for its own. No time limit cuts a
/// build: the session started with no `statement_timeout` or `lock_timeout`
/// (see [`crate::connect`]), and `--query-timeout`'s, left by a query
/// before, is lifted.
pub async fn create_indexes(
    client: &Session,
    file: &QueryFile,
    text: &str,
    schema: Option<&str>,
    server: Server,
    built: &OnIndexBuilt,
) -> BackendResult<Vec<IndexBuild>> {
    client.lift_limit().await.context("lifting --query-timeout for the index builds")?;
    let mut builds = Vec::new();
    for statement in sql::statements(text).with_context(|| file.path.clone())? {
        let name = sql::created_index_name(&statement).with_context(|| format!("{}: {statement}", file.path))?;
        let regclass = schema.map_or_else(|| name.to_string(), |schema| format!("{schema}.{name}"));
        let exists = "SELECT to_regclass($1) IS NOT NULL";
        let existed: bool = client.query_one(exists, &[&regclass]).await?.get(0);
        let started = Instant::now();
        // Cancelled on the server if dropped unfinished (Ctrl-C): a build of hours.
        client.cancellable(&format!("building {name}"), client.batch_execute(&statement)).await.with_context(|| format!("creating {name}"))?;
        let seconds = started.elapsed().as_secs_f64();
        let size = "SELECT pg_relation_size(to_regclass($1))";
        let Some(bytes) = client.query_one(size, &[&regclass]).await?.get::<_, Option<i64>>(0) else {
            anyhow::bail!("{}: index {name} is not in schema {} after its statement ran: the statement must create it on that schema's table", file.path, schema.unwrap_or("of the session"));
        };
        let bytes = match server {
            Server::Postgres => bytes.max(0) as u64,
            Server::Citus => crate::citus::index_bytes(client, &regclass).await?,
        };
        let build = IndexBuild { name: name.to_string(), definition: statement, created: !existed, seconds, bytes: Some(bytes), skipped: None, commit_quorum: None };
        built(&build);
        builds.push(build);
    }
    Ok(builds)
}

/// `ANALYZE` of `tables` once indexes were built on them, timed: an
/// expression index gets its statistics (the values of what it indexes) only
/// from an `ANALYZE` after it exists, and the load's ran before. Cancelled on
/// the server if dropped unfinished.
pub async fn analyze(client: &Session, tables: &[String]) -> BackendResult<AfterIndexes> {
    let step = format!("ANALYZE {}", tables.join(", "));
    let started = Instant::now();
    client.cancellable(&step, client.batch_execute(&step)).await.with_context(|| step.clone())?;
    Ok(AfterIndexes { step, seconds: started.elapsed().as_secs_f64() })
}

/// Whether an expression index on `table` has no statistics yet (they live
/// in `pg_stats` under the index's name): built, and no `ANALYZE` since.
pub async fn lacks_expression_statistics(client: &Session, table: &str) -> BackendResult<bool> {
    let sql = "SELECT EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE i.indrelid = to_regclass($1) AND i.indexprs IS NOT NULL
                   AND NOT EXISTS (SELECT FROM pg_stats s WHERE s.schemaname = c.relnamespace::regnamespace::name AND s.tablename = c.relname))";
    Ok(client.query_one(sql, &[&table]).await?.get(0))
}

/// The plan of `sql`, with the indexes it uses (on `session`, so it can be
/// cancelled and `--query-timeout` holds for it too): the planner's estimate
/// as JSON, or, `measured`, `EXPLAIN (ANALYZE, BUFFERS)`, which runs it.
pub async fn explain(session: &Session, sql: &str, measured: bool) -> Plan {
    let command = if measured { EXPLAIN_ANALYZE } else { EXPLAIN_ESTIMATED };
    let mut plan = Plan { command: command.into(), ..Plan::default() };
    let started = Instant::now();
    // The query file may start with comments: they are white space after EXPLAIN.
    let explained = session.cancellable("EXPLAIN of a query", text_rows(session, &format!("{command}\n{sql}"))).await;
    match explained.map_err(|e| session.cut_or(e, started.elapsed())) {
        Ok(lines) => {
            let text: Vec<String> = lines.into_iter().filter_map(|mut l| l.pop().flatten()).collect();
            if measured {
                plan.indexes = indexes_in_plan(&text);
                plan.text = Some(text.join("\n"));
            } else {
                match serde_json::from_str::<serde_json::Value>(&text.concat()) {
                    Ok(json) => {
                        plan.indexes = indexes_in_json_plan(&json);
                        plan.json = Some(json);
                    }
                    Err(e) => plan.error = Some(format!("the JSON plan did not read: {e}")),
                }
            }
            plan.index_used = plan.error.is_none().then_some(!plan.indexes.is_empty());
        }
        Err(e) => plan.error = Some(format!("{e:#}")),
    }
    plan
}

/// Index names in a JSON plan: every node's `Index Name`, in order, once each.
fn indexes_in_json_plan(plan: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        match node {
            serde_json::Value::Object(fields) => {
                if let Some(serde_json::Value::String(name)) = fields.get("Index Name") {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                stack.extend(fields.values().rev());
            }
            serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
    names
}

/// The block counters of `tables` (qualified where needed) and their
/// indexes and TOAST, summed, as the statistics have them once this session's
/// own are flushed (PostgreSQL 15's `pg_stat_force_next_flush`; older servers
/// flush within a second, so their last run's reads may be missing).
pub async fn read_counters(client: &Client, tables: &[String]) -> Result<BTreeMap<String, u64>, String> {
    let version: i32 = client.query_one("SELECT current_setting('server_version_num')::int", &[]).await.map_err(|e| format!("server_version_num: {e}"))?.get(0);
    if version >= 150_000 {
        // Flushed as the session goes idle after this statement.
        let _ = client.batch_execute("SELECT pg_stat_force_next_flush()").await;
    } else {
        // Before 15 the statistics reach others every half second at most.
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    }
    let sql = "SELECT coalesce(sum(heap_blks_read), 0)::bigint, coalesce(sum(heap_blks_hit), 0)::bigint,
                      coalesce(sum(idx_blks_read), 0)::bigint, coalesce(sum(idx_blks_hit), 0)::bigint,
                      coalesce(sum(toast_blks_read), 0)::bigint, coalesce(sum(toast_blks_hit), 0)::bigint
               FROM pg_statio_all_tables WHERE relid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) t)";
    let row = client.query_one(sql, &[&tables]).await.map_err(|e| format!("pg_statio_all_tables: {e}"))?;
    let names = ["heap_blks_read", "heap_blks_hit", "idx_blks_read", "idx_blks_hit", "toast_blks_read", "toast_blks_hit"];
    let mut counters: BTreeMap<String, u64> = names.iter().enumerate().map(|(i, name)| (name.to_string(), row.get::<_, i64>(i).max(0) as u64)).collect();
    // What sorts and hashes spilled past work_mem: counted per database, so
    // over a query's runs it is theirs while no other session writes there.
    let sql = "SELECT temp_files, temp_bytes FROM pg_stat_database WHERE datname = current_database()";
    let row = client.query_one(sql, &[]).await.map_err(|e| format!("pg_stat_database: {e}"))?;
    counters.insert("temp_files (database-wide)".into(), row.get::<_, i64>(0).max(0) as u64);
    counters.insert("temp_bytes (database-wide)".into(), row.get::<_, i64>(1).max(0) as u64);
    Ok(counters)
}

/// The settings that bound how many sessions the server takes and how much
/// of the machine each query may use, and how many client sessions it has.
pub const CONCURRENCY_SETTINGS: [&str; 7] = [
    "max_connections",
    "superuser_reserved_connections",
    "max_worker_processes",
    "max_parallel_workers",
    "max_parallel_workers_per_gather",
    "shared_buffers",
    "work_mem",
];

/// [`CONCURRENCY_SETTINGS`] as the server says them (with units), and its
/// client sessions at this moment; what it would not say, said so.
pub async fn concurrency_limits(client: &Client) -> BTreeMap<String, String> {
    let mut limits = BTreeMap::new();
    let names: Vec<String> = CONCURRENCY_SETTINGS.iter().map(|s| s.to_string()).collect();
    match client.query("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1)", &[&names]).await {
        Ok(rows) => limits.extend(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))),
        Err(e) => {
            limits.insert("settings".into(), format!("not read: {e}"));
        }
    }
    let sessions = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'";
    let said = match client.query_one(sessions, &[]).await {
        Ok(row) => format!("{} (before the clients connect)", row.get::<_, i64>(0)),
        Err(e) => format!("not read: {e}"),
    };
    limits.insert("client sessions open".into(), said);
    limits
}

/// What can be cleared between runs without restarting the server.
pub async fn clear_caches(session: &Session) -> Vec<String> {
    let done = match session.discard_all().await {
        Ok(()) => "DISCARD ALL (session plans and temp state dropped)".to_string(),
        Err(e) => format!("DISCARD ALL failed: {e}"),
    };
    vec![format!("PostgreSQL: {done}; shared_buffers stay warm: server not restarted")]
}

/// Rows of `table` (of `bytes` on disk), and whether exactly: a `count(*)`
/// up to [`EXACT_COUNT_MAX_BYTES`], the planner's `estimate` beyond.
pub async fn row_count(client: &Client, table: &str, bytes: i64, estimate: i64) -> Result<(u64, bool), tokio_postgres::Error> {
    if bytes as u64 > EXACT_COUNT_MAX_BYTES {
        return Ok((estimate.max(0) as u64, false));
    }
    let rows: i64 = client.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await?.get(0);
    Ok((rows.max(0) as u64, true))
}

/// Sizes of the indexes on the tables `regclasses` names (qualified where needed).
pub async fn index_sizes(client: &Client, tables: &[String]) -> Result<Vec<IndexSize>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
             FROM pg_index i WHERE i.indrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) t) ORDER BY 1",
            &[&tables],
        )
        .await?;
    Ok(rows.iter().map(|r| IndexSize { name: r.get(0), bytes: r.get::<_, i64>(1) as u64 }).collect())
}

#[async_trait]
impl Backend for PostgresBackend {
    fn spec(&self) -> &EngineSpec {
        &self.setup.spec
    }

    fn dialect(&self) -> &str {
        self.setup.dialect()
    }

    fn setup(&self) -> Option<Setup> {
        self.setup.setup.clone()
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        Ok(match self.setup.server {
            Server::Postgres => crate::connect::describe(&self.setup.spec, &self.client, &self.url).await?,
            Server::Citus => {
                let mut info = crate::citus::describe(&self.setup.spec, &self.client, &self.url, &self.setup.table(&self.table)).await?;
                if let Some(recovered) = &self.recovered {
                    info.settings.insert(crate::citus::RECOVERED.into(), recovered.as_ref().map_or_else(Clone::clone, i32::to_string));
                }
                info
            }
        })
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        PgLedger { engine: &self.setup.spec.engine, table: &self.table }.report(&self.client).await
    }

    async fn sizes(&self) -> BackendResult<Storage> {
        let qualified = self.setup.table(&self.table);
        let t = qualified.as_str();
        if self.setup.server == Server::Citus {
            return self.distributed_sizes(t).await;
        }
        let row = self
            .client
            .query_one(
                "SELECT pg_table_size(c.oid), pg_indexes_size(c.oid), c.reltuples::bigint
                 FROM pg_class c WHERE c.oid = to_regclass($1)",
                &[&t],
            )
            .await
            .with_context(|| format!("table {t} not found"))?;
        let (table_bytes, index_bytes, estimate): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        let (rows, rows_exact) = row_count(&self.client, t, table_bytes, estimate).await?;
        let indexes = index_sizes(&self.client, &[t.to_string()]).await?;
        Ok(Storage { rows, rows_exact, table_bytes: table_bytes as u64, index_bytes: index_bytes as u64, indexes, ..Storage::default() })
    }

    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        create_indexes(&self.client, file, &file.for_table(&self.table), self.setup.schema(), self.setup.server, built).await
    }

    async fn after_indexes(&self, built_now: bool) -> BackendResult<Option<AfterIndexes>> {
        let table = self.setup.table(&self.table);
        let lacking = match self.setup.server {
            Server::Postgres => lacks_expression_statistics(&self.client, &table).await?,
            Server::Citus => crate::citus::lacks_expression_statistics(&self.client, &table).await?,
        };
        // On Citus, ANALYZE of the coordinator's table analyses every shard.
        if !built_now && !lacking {
            return Ok(None);
        }
        Ok(Some(analyze(&self.client, &[table]).await?))
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        self.client.apply_limit().await?;
        Ok(Box::new(query.for_table(&self.table)))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let sql: &String = prepared(self.engine(), query)?;
        self.client.rows(sql).await
    }

    fn limit_queries(&mut self, limit: Option<Duration>) {
        self.client.limit_queries(limit);
    }

    async fn read_counters(&self) -> Result<BTreeMap<String, u64>, String> {
        match self.setup.server {
            Server::Postgres => read_counters(&self.client, &[self.setup.table(&self.table)]).await,
            Server::Citus => crate::citus::read_counters(&self.client, &self.setup.table(&self.table), &self.warm_ups).await,
        }
    }

    /// On Citus, every worker answers.
    async fn health(&self) -> Result<(), String> {
        match self.setup.server {
            Server::Postgres => Ok(()),
            Server::Citus => crate::citus::workers_answer(&self.client).await,
        }
    }

    async fn reading_nodes(&self) -> Option<Result<Vec<String>, String>> {
        match self.setup.server {
            Server::Postgres => None,
            Server::Citus => Some(crate::citus::nodes(&self.client, &self.url).await),
        }
    }

    async fn memory(&self) -> Option<MemoryShare> {
        match self.setup.server {
            Server::Postgres => this_machine_memory(self).await,
            Server::Citus => crate::citus::memory(&self.client, &self.url, &self.setup.table(&self.table)).await,
        }
    }

    /// On Citus, every node's throttle (`--disk` limits each node).
    async fn disk_limit(&self) -> Option<DiskLimit> {
        match self.setup.server {
            Server::Postgres => this_machine_disk_limit(self).await,
            Server::Citus => ghbench_engine::query::nodes_disk_limit(crate::citus::nodes(&self.client, &self.url).await.ok()?).await,
        }
    }

    async fn explain(&self, query: &QueryFile, measured: bool) -> Plan {
        if let Err(e) = self.client.apply_limit().await {
            return Plan { error: Some(format!("setting --query-timeout: {e}")), ..Plan::default() };
        }
        explain(&self.client, &query.for_table(&self.table), measured).await
    }

    fn server_url(&self) -> Option<&str> {
        Some(&self.url)
    }

    fn server_address(&self) -> Option<String> {
        crate::address(&self.url)
    }

    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        self.another().await
    }

    async fn clear_caches(&self) -> Vec<String> {
        clear_caches(&self.client).await
    }

    async fn concurrency_limits(&self) -> BTreeMap<String, String> {
        concurrency_limits(&self.client).await
    }

    async fn progress(&self) -> Option<String> {
        let table = self.setup.table(&self.table);
        crate::progress::index_build(&self.client, &table).await.or(crate::progress::whole_table(&self.client, &table).await)
    }
}

impl PostgresBackend {
    /// [`Backend::sizes`] of a table distributed on Citus: summed over its shards.
    async fn distributed_sizes(&self, t: &str) -> BackendResult<Storage> {
        let (table_bytes, index_bytes) = crate::citus::table_and_index_bytes(&self.client, t).await?.with_context(|| format!("table {t} not found"))?;
        let (rows, rows_exact) = if table_bytes > EXACT_COUNT_MAX_BYTES {
            (crate::citus::planned_rows(&self.client, t).await?, false)
        } else {
            let rows: i64 = self.client.query_one(&format!("SELECT count(*) FROM {t}"), &[]).await?.get(0);
            (rows.max(0) as u64, true)
        };
        let indexes = crate::citus::index_sizes(&self.client, t).await?;
        Ok(Storage { rows, rows_exact, table_bytes, index_bytes, indexes, ..Storage::default() })
    }
}

/// Key (first column) as text, the other columns as numbers where they are numbers.
fn normalise(row: Vec<Option<String>>) -> Row {
    let mut cells = row.into_iter();
    let key = match cells.next().flatten() {
        Some(text) => Cell::Text(text),
        None => Cell::Null,
    };
    std::iter::once(key).chain(cells.map(|c| Cell::from_sql_value(c.as_deref()))).collect()
}

/// Index names in a text plan: `Index Scan using x on t`, `Index Only Scan
/// using x`, `Bitmap Index Scan on x`.
fn indexes_in_plan(lines: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in lines {
        for marker in ["Index Scan using ", "Index Only Scan using ", "Bitmap Index Scan on "] {
            if let Some(rest) = line.split(marker).nth(1) {
                let name = rest.split_whitespace().next().unwrap_or("").to_string();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_index_use_from_text_plans() {
        let plan = [
            "Bitmap Heap Scan on t  (cost=4.3..8.4 rows=1 width=32)".to_string(),
            "  ->  Bitmap Index Scan on t_type  (cost=0.00..4.29 rows=1 width=0)".to_string(),
            "  ->  Index Scan using t_repo_name on t".to_string(),
        ];
        assert_eq!(indexes_in_plan(&plan), ["t_type", "t_repo_name"]);
        assert!(indexes_in_plan(&["Seq Scan on t".to_string()]).is_empty());
    }

    #[test]
    fn reads_index_use_from_json_plans() {
        let plan = serde_json::json!([{"Plan": {"Node Type": "Aggregate", "Plans": [
            {"Node Type": "Bitmap Heap Scan", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "t_type"}]},
            {"Node Type": "Index Scan", "Index Name": "t_repo_name"},
            {"Node Type": "Index Scan", "Index Name": "t_type"}
        ]}}]);
        assert_eq!(indexes_in_json_plan(&plan), ["t_type", "t_repo_name"]);
        assert!(indexes_in_json_plan(&serde_json::json!([{"Plan": {"Node Type": "Seq Scan"}}])).is_empty());
    }

    #[test]
    fn keys_stay_text_and_values_become_numbers() {
        let row = normalise(vec![Some("123".into()), Some("7".into())]);
        assert_eq!(row, vec![Cell::Text("123".into()), Cell::Int(7)]);
        assert_eq!(normalise(vec![None, Some("2.5".into())]), vec![Cell::Null, Cell::Float(2.5)]);
    }
}

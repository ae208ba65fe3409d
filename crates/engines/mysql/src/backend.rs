//! The MySQL family, one JSON column and its generated columns. Queries go
//! over the text protocol, as the `mysql` client sends them: every value
//! arrives as text, so averages are compared as the numbers they print.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_engine::ledger::Ledger;
use ghbench_engine::query::{prepared, Backend, BackendResult, OnIndexBuilt, Prepared, QueryFile, QueryTimedOut, EXACT_COUNT_MAX_BYTES};
use ghbench_engine::record::{IndexBuild, IndexSize, Plan, Storage};
use ghbench_engine::rows::{Cell, Row};
use ghbench_engine::sql::{created_index_name, statements, SqlDialect};
use mysql_async::prelude::Queryable;
use mysql_async::Value;
use tokio::sync::Mutex;

use crate::abandoned::labelled;
use crate::cancel::cancellable;
use crate::connect::{set_lock_waits, Server, LOCK_WAIT_SECONDS};
use crate::error::{engine_error, server_code};
use crate::explain::{index_use, indexes_in_text};
use crate::ledger::MyLedger;
use crate::product::Product;
use crate::setup::MysqlSetup;

pub struct MysqlBackend {
    setup: &'static MysqlSetup,
    server: Mutex<Server>,
    /// The server's product, read on connecting (the same for the session).
    product: Product,
    /// The connection's id on the server, for `KILL QUERY`.
    id: u32,
    url: String,
    table: TableName,
    /// `--query-timeout`, set before each prepared query.
    limit: Option<Duration>,
    /// The session's lock-wait and statement limits, lifted on connecting,
    /// as recorded (see [`crate::connect::without_limits`]).
    limits_lifted: BTreeMap<String, String>,
}

impl MysqlBackend {
    pub async fn connect(setup: &'static MysqlSetup, url: &str, table: &TableName) -> BackendResult<Self> {
        let mut server = Server::connect(&setup.spec, url).await?;
        crate::abandoned::end_abandoned(&setup.spec, url, &mut server.conn).await;
        let (product, id) = (server.product(), server.conn.id());
        let limits_lifted = crate::connect::without_limits(&mut server.conn, product).await.map_err(engine_error).context("lifting the session's lock-wait and statement limits")?;
        Ok(MysqlBackend { setup, server: Mutex::new(server), product, id, url: url.to_string(), table: table.clone(), limit: None, limits_lifted })
    }

    async fn another(&self) -> BackendResult<Box<dyn Backend>> {
        let mut fresh = MysqlBackend::connect(self.setup, &self.url, &self.table).await?;
        fresh.limit = self.limit;
        Ok(Box::new(fresh))
    }

    fn data_table(&self) -> String {
        self.setup.table(&self.table)
    }

    /// Sets the session's statement limit to `--query-timeout`.
    async fn apply_limit(&self) -> BackendResult<()> {
        self.limit_statements(self.limit).await.context("setting --query-timeout")
    }

    /// Sets the session's statement limit to `limit` (None: none).
    async fn limit_statements(&self, limit: Option<Duration>) -> BackendResult<()> {
        let sql = self.product.statement_limit(limit);
        let mut server = self.server.lock().await;
        Ok(live(&mut server)?.query_drop(sql).await.map_err(engine_error)?)
    }

    /// Every row `sql` returns, as text cells (None for NULL); killed on the
    /// server if dropped unfinished; a statement its limit stopped said so.
    async fn text_rows(&self, sql: &str) -> BackendResult<Vec<Vec<Option<String>>>> {
        let mut server = self.server.lock().await;
        let conn = live(&mut server)?;
        let what = format!("the statement {}", ghbench_engine::sql::head(sql));
        let fetched = cancellable(&self.setup.spec, &self.url, self.id, &what, conn.query::<mysql_async::Row, _>(labelled(sql))).await;
        match fetched {
            Ok(rows) => Ok(rows.into_iter().map(|row| row.unwrap().into_iter().map(text_of).collect()).collect()),
            Err(e) => match (self.limit, server_code(&e)) {
                (Some(limit), Some(code)) if self.product.stopped_by_limit(code) => Err(QueryTimedOut::wrap(limit, engine_error(e))),
                _ => Err(engine_error(e).into()),
            },
        }
    }

    /// Whether the table has an index named `name`.
    async fn index_exists(&self, name: &str) -> BackendResult<bool> {
        let sql = "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND INDEX_NAME = ?";
        let mut server = self.server.lock().await;
        let n: Option<u64> = server.conn.exec_first(sql, (self.setup.database(), self.table.as_str(), name)).await.map_err(engine_error)?;
        Ok(n.unwrap_or(0) > 0)
    }

    /// The generated columns of the table, as the server has them: name,
    /// kind (VIRTUAL or STORED) and collation, for every report.
    async fn generated_columns(&self) -> String {
        let sql = "SELECT COLUMN_NAME, EXTRA, COALESCE(COLLATION_NAME, DATA_TYPE) FROM information_schema.COLUMNS
                   WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND EXTRA LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION";
        let mut server = self.server.lock().await;
        match server.conn.exec::<(String, String, String), _, _>(sql, (self.setup.database(), self.table.as_str())).await {
            Ok(columns) if columns.is_empty() => "none (or the table is not loaded yet)".into(),
            Ok(columns) => columns.iter().map(|(name, extra, collation)| format!("{name} {} {collation}", extra.replace(" GENERATED", ""))).collect::<Vec<_>>().join(", "),
            Err(e) => format!("not read: {}", ghbench_core::error_chain(&e)),
        }
    }
}

/// A text-protocol value as text (None for NULL).
fn text_of(value: Value) -> Option<String> {
    match value {
        Value::NULL => None,
        Value::Bytes(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
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

#[async_trait]
impl Backend for MysqlBackend {
    fn spec(&self) -> &EngineSpec {
        &self.setup.spec
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        let mut info = {
            let mut server = self.server.lock().await;
            crate::connect::describe(&self.setup.spec, &mut server, &self.url).await.map_err(engine_error)?
        };
        info.settings.insert("generated columns".into(), self.generated_columns().await);
        info.settings.extend(self.limits_lifted.clone());
        Ok(info)
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        let mut server = self.server.lock().await;
        MyLedger { engine: &self.setup.spec.engine, table: &self.table }.report(&mut server.conn).await
    }

    /// Sizes from `information_schema` after `ANALYZE TABLE` (its figures
    /// are InnoDB's statistics, cached until then): the clustered index (the
    /// rows) and the secondary indexes, each index's pages from
    /// `mysql.innodb_index_stats`. TiDB's are estimates from its statistics.
    async fn sizes(&self) -> BackendResult<Storage> {
        let t = self.data_table();
        let mut server = self.server.lock().await;
        let conn = live(&mut server)?;
        let analyze = format!("ANALYZE TABLE {t}");
        let _: Vec<mysql_async::Row> = cancellable(&self.setup.spec, &self.url, self.id, &analyze, conn.query(&analyze)).await.map_err(engine_error)?;
        let sql = "SELECT DATA_LENGTH, INDEX_LENGTH, TABLE_ROWS, COALESCE(CREATE_OPTIONS, '') FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?";
        let said: Option<(Option<u64>, Option<u64>, Option<u64>, String)> = conn.exec_first(sql, (self.setup.database(), self.table.as_str())).await.map_err(engine_error)?;
        let (data, index, estimate, options) = said.with_context(|| format!("table {t} not found"))?;
        let (mut table_bytes, mut index_bytes) = (data.unwrap_or(0), index.unwrap_or(0));
        let mut logical_bytes = None;
        // A page-compressed table's figures are its pages uncompressed: on
        // disk it is its file's allocated blocks (holes punched), read once
        // its pages are flushed, shared between rows and indexes as their pages are.
        let options = options.to_ascii_lowercase();
        if options.contains("page_compressed") || options.contains("compression=") {
            if let Some(allocated) = allocated_bytes(conn, self.product, &t, self.setup.database(), self.table.as_str()).await.map_err(engine_error)? {
                let pages = (table_bytes + index_bytes).max(1);
                logical_bytes = Some(pages);
                // In u128: a year's pages times its allocated bytes pass u64.
                let rows_share = (u128::from(allocated) * u128::from(table_bytes) / u128::from(pages)) as u64;
                (table_bytes, index_bytes) = (rows_share, allocated.saturating_sub(rows_share));
            }
        }
        let (rows, rows_exact) = match table_bytes > EXACT_COUNT_MAX_BYTES {
            true => (estimate.unwrap_or(0), false),
            false => {
                let count = format!("SELECT COUNT(*) FROM {t}");
                (cancellable(&self.setup.spec, &self.url, self.id, &count, conn.query_first::<u64, _>(&count)).await.map_err(engine_error)?.unwrap_or(0), true)
            }
        };
        let per_index = "SELECT index_name, stat_value * @@innodb_page_size FROM mysql.innodb_index_stats
                         WHERE database_name = COALESCE(?, DATABASE()) AND table_name = ? AND stat_name = 'size' AND index_name <> 'PRIMARY' ORDER BY index_name";
        let indexes: Vec<IndexSize> = match conn.exec::<(String, u64), _, _>(per_index, (self.setup.database(), self.table.as_str())).await {
            Ok(found) => found.into_iter().map(|(name, bytes)| IndexSize { name, bytes }).collect(),
            // TiDB has no such table: the total stands alone.
            Err(_) => Vec::new(),
        };
        let sizes_from = match (self.product, logical_bytes) {
            (Product::TiDb, _) => "information_schema.TABLES after ANALYZE TABLE: TiDB's estimates from its statistics",
            (_, Some(_)) => "the table file's allocated bytes (page-compressed; INNODB_SYS_TABLESPACES after FLUSH TABLES FOR EXPORT), shared between rows and indexes as their pages in information_schema.TABLES are; each index's figure is its pages uncompressed",
            (_, None) => "information_schema.TABLES after ANALYZE TABLE (DATA_LENGTH: the clustered index; INDEX_LENGTH: the secondary ones)",
        };
        Ok(Storage { rows, rows_exact, table_bytes, index_bytes, indexes, logical_bytes, sizes_from: Some(sizes_from.into()) })
    }

    /// Each `CREATE INDEX IF NOT EXISTS` of the file, timed; an index that
    /// exists is skipped where the server has no such clause (MySQL 8).
    /// No statement limit cuts a build: `--query-timeout`'s, left by a query
    /// before, is lifted (the next query's `prepare` sets it again).
    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        self.limit_statements(None).await.context("lifting the statement limit for the index builds")?;
        let mut builds = Vec::new();
        let database = self.setup.database();
        for statement in statements(SqlDialect::MySql, &file.for_table(&self.table)).with_context(|| file.path.clone())? {
            let name = created_index_name(SqlDialect::MySql, &statement).with_context(|| format!("{}: {statement}", file.path))?;
            let existed = self.index_exists(name.as_str()).await?;
            let started = Instant::now();
            if !existed || self.product.creates_index_if_not_exists() {
                let sql = match self.product.creates_index_if_not_exists() {
                    true => statement.clone(),
                    false => remove_if_not_exists(&statement),
                };
                let mut server = self.server.lock().await;
                let conn = live(&mut server)?;
                let what = format!("building index {name}");
                cancellable(&self.setup.spec, &self.url, self.id, &what, conn.query_drop(labelled(&sql))).await.map_err(engine_error).with_context(|| format!("creating {name}"))?;
            }
            let seconds = started.elapsed().as_secs_f64();
            if !self.index_exists(name.as_str()).await? {
                anyhow::bail!("{}: index {name} is not on {} after its statement ran: the statement must create it on that table", file.path, self.data_table());
            }
            let size = "SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = COALESCE(?, DATABASE()) AND table_name = ? AND index_name = ? AND stat_name = 'size'";
            let bytes: Option<u64> = self.server.lock().await.conn.exec_first(size, (database, self.table.as_str(), name.as_str())).await.ok().flatten();
            let build = IndexBuild { name: name.to_string(), definition: statement, created: !existed, seconds, bytes, skipped: None, commit_quorum: None };
            built(&build);
            builds.push(build);
        }
        Ok(builds)
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        self.apply_limit().await?;
        Ok(Box::new(query.for_table(&self.table)))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let sql: &String = prepared(self.engine(), query)?;
        Ok(self.text_rows(sql).await?.into_iter().map(normalise).collect())
    }

    fn limit_queries(&mut self, limit: Option<Duration>) {
        self.limit = limit;
    }

    /// InnoDB's buffer pool counters, server-wide (the family counts reads by
    /// table only in `performance_schema`, often off): logical reads, reads
    /// that went to disk, and bytes read; and the temporary tables that went
    /// to disk (its spills, counted, not sized).
    ///
    /// Read on a connection of their own: the runner may stop waiting for
    /// them, and a call dropped half way must not leave its answer on the
    /// queries' connection.
    async fn read_counters(&self) -> Result<BTreeMap<String, u64>, String> {
        let sql = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_read_requests', 'Innodb_buffer_pool_reads', 'Innodb_data_read', 'Created_tmp_disk_tables')";
        let mut conn = crate::connect::connect(&self.setup.spec, &self.url).await.map_err(|e| e.to_string())?;
        let said: Result<Vec<(String, String)>, _> = conn.query(sql).await;
        let _ = conn.disconnect().await;
        let said = said.map_err(|e| format!("SHOW GLOBAL STATUS: {e}"))?;
        Ok(said.into_iter().filter_map(|(name, value)| Some((format!("{} (server-wide)", name.to_ascii_lowercase()), value.parse().ok()?))).collect())
    }

    /// The estimated plan as JSON (which index, whether covering), or, `measured`,
    /// the plan as the query ran (MariaDB's `ANALYZE FORMAT=JSON`, MySQL's and
    /// TiDB's `EXPLAIN ANALYZE`), which runs it.
    async fn explain(&self, query: &QueryFile, measured: bool) -> Plan {
        let command = match measured {
            true => self.product.explain_measured(),
            false => self.product.explain_estimated(),
        };
        let mut plan = Plan { command: command.into(), ..Plan::default() };
        if let Err(e) = self.apply_limit().await {
            plan.error = Some(format!("{e:#}"));
            return plan;
        }
        match self.text_rows(&format!("{command}\n{}", query.for_table(&self.table))).await {
            Ok(rows) => {
                let text: Vec<String> = rows.into_iter().map(|row| row.into_iter().flatten().collect::<Vec<_>>().join("\t")).collect();
                match serde_json::from_str::<serde_json::Value>(&text.concat()) {
                    Ok(json) => {
                        let used = index_use(&json);
                        plan.covering = Some(used.covering);
                        plan.indexes = used.indexes;
                        plan.json = Some(json);
                    }
                    Err(_) => {
                        plan.indexes = indexes_in_text(&text.join("\n"));
                        plan.text = Some(text.join("\n"));
                    }
                }
                plan.index_used = Some(!plan.indexes.is_empty());
            }
            Err(e) => plan.error = Some(format!("{e:#}")),
        }
        plan
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
        let mut server = self.server.lock().await;
        let done = match server.conn.reset().await {
            // The reset gives the session the server's limits back: lifted again.
            Ok(_) => match crate::connect::without_limits(&mut server.conn, self.product).await {
                Ok(_) => "the session reset (COM_RESET_CONNECTION)".to_string(),
                Err(e) => format!("the session reset (COM_RESET_CONNECTION), but lifting its limits again failed: {e}"),
            },
            Err(e) => format!("resetting the session failed: {e}"),
        };
        vec![format!("{}: {done}; the buffer pool stays warm: server not restarted", self.product)]
    }

    async fn concurrency_limits(&self) -> BTreeMap<String, String> {
        let names = ["max_connections", "thread_handling", "thread_pool_size", "innodb_buffer_pool_size", "innodb_read_io_threads", "tmp_table_size"];
        let mut server = self.server.lock().await;
        let mut limits = crate::connect::settings(&mut server.conn, &names).await;
        let sessions = match server.conn.query_first::<(String, String), _>("SHOW GLOBAL STATUS LIKE 'Threads_connected'").await {
            Ok(Some((_, n))) => format!("{n} (before the clients connect)"),
            Ok(None) => "not said".into(),
            Err(e) => format!("not read: {e}"),
        };
        limits.insert("client sessions open".into(), sessions);
        limits
    }
}

/// The connection, unless a call on it was dropped half way (its answer
/// would be read as the next statement's) or it failed for good: then the
/// typed lost connection, so the runner goes on on a new one.
fn live(server: &mut Server) -> BackendResult<&mut mysql_async::Conn> {
    match server.conn.is_disconnected() {
        true => Err(ghbench_engine::EngineError::new(
            ghbench_engine::FailureKind::LostConnection,
            "the connection was left in the middle of a statement (a call stopped unfinished, or the server went away)",
        )
        .into()),
        false => Ok(&mut server.conn),
    }
}

/// The bytes the table's file takes on disk (`ALLOCATED_SIZE` of MariaDB's
/// `INNODB_SYS_TABLESPACES`, MySQL 8's `INNODB_TABLESPACES`), its dirty pages
/// flushed first (`FLUSH TABLES ... FOR EXPORT`, which holds writes for the
/// moment). None where the server does not say or would not flush (no
/// RELOAD right, a lock held elsewhere for [`LOCK_WAIT_SECONDS`]): the
/// pages' own figures stand. An error only where the session's lock waits
/// could not be lifted again after the flush.
async fn allocated_bytes(conn: &mut mysql_async::Conn, product: Product, qualified: &str, database: Option<&str>, table: &str) -> Result<Option<u64>, mysql_async::Error> {
    let view = match product {
        Product::MariaDb => "INNODB_SYS_TABLESPACES",
        Product::MySql => "INNODB_TABLESPACES",
        Product::TiDb => return Ok(None),
    };
    // A figure is not worth waiting on another session's writes for: the
    // session's lock waits are bounded for the flush alone.
    set_lock_waits(conn, Some(LOCK_WAIT_SECONDS)).await?;
    let allocated = match conn.query_drop(format!("FLUSH TABLES {qualified} FOR EXPORT")).await {
        Ok(()) => {
            let sql = format!("SELECT ALLOCATED_SIZE FROM information_schema.{view} WHERE NAME = CONCAT(COALESCE(?, DATABASE()), '/', ?)");
            let allocated: Option<u64> = conn.exec_first(sql, (database, table)).await.ok().flatten();
            // The table's lock goes before anything else can fail.
            conn.query_drop("UNLOCK TABLES").await.ok().and(allocated)
        }
        Err(_) => None,
    };
    set_lock_waits(conn, None).await?;
    Ok(allocated)
}

/// The statement without `IF NOT EXISTS` after `CREATE INDEX`, for a server
/// that has no such clause (the index was looked up first).
fn remove_if_not_exists(statement: &str) -> String {
    let words: Vec<&str> = statement.split_whitespace().collect();
    match words.get(2..5) {
        Some(clause) if clause.iter().zip(["IF", "NOT", "EXISTS"]).all(|(w, c)| w.eq_ignore_ascii_case(c)) => {
            words[..2].iter().chain(&words[5..]).copied().collect::<Vec<_>>().join(" ")
        }
        _ => statement.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_8_gets_create_index_without_the_clause_it_lacks() {
        assert_eq!(remove_if_not_exists("CREATE INDEX IF NOT EXISTS t_a ON t (a)"), "CREATE INDEX t_a ON t (a)");
        assert_eq!(remove_if_not_exists("create index if not exists t_a on t (a)"), "create index t_a on t (a)");
        assert_eq!(remove_if_not_exists("CREATE INDEX t_a ON t (a)"), "CREATE INDEX t_a ON t (a)");
    }

    #[test]
    fn keys_stay_text_and_values_become_numbers() {
        assert_eq!(normalise(vec![Some("123".into()), Some("7".into())]), vec![Cell::Text("123".into()), Cell::Int(7)]);
        assert_eq!(normalise(vec![None, Some("2.5".into())]), vec![Cell::Null, Cell::Float(2.5)]);
        assert_eq!(text_of(Value::NULL), None);
        assert_eq!(text_of(Value::Bytes(b"IssuesEvent".to_vec())).as_deref(), Some("IssuesEvent"));
    }
}

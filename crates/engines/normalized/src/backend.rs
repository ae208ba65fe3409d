//! Queries over the derived tables: plain SQL (`queries/normalized/`), the
//! names taken from the recorded metadata (see [`crate::template`]).

use anyhow::{anyhow, Context as _};
use async_trait::async_trait;
use ghbench_core::{EngineSpec, ServerInfo, TableName};
use ghbench_normalize::Schema;
use ghbench_engine::ledger::Ledger;
use ghbench_engine::query::{prepared, Backend, BackendResult, OnIndexBuilt, Prepared, QueryFile};
use ghbench_engine::record::{AfterIndexes, IndexBuild, Plan, Storage};
use ghbench_engine::rows::Row;
use ghbench_postgres::backend as pg;
use ghbench_postgres::error::engine_error;
use ghbench_postgres::session::Session;
use ghbench_postgres::sql;
use tokio_postgres::Client;

use crate::meta::{self, qualified, SCHEMA};
use crate::sink::ledger_of;
use crate::template::{self, Missing};
use crate::SPEC;

/// Query files name derived tables unqualified (see [`crate::template`]):
/// the session reads schema `normalized` first.
async fn read_derived_tables_first(client: &Client) -> Result<(), tokio_postgres::Error> {
    client.batch_execute(&format!("SET search_path = {SCHEMA}, public")).await
}

pub struct NormalizedBackend {
    client: Session,
    url: String,
    table: TableName,
}

impl NormalizedBackend {
    pub async fn connect(url: &str, table: &TableName) -> BackendResult<Self> {
        ghbench_postgres::abandoned::end_abandoned(&SPEC, url).await;
        let client = Session::connect(&SPEC, url).await?;
        read_derived_tables_first(&client).await?;
        Ok(NormalizedBackend { client, url: url.to_string(), table: table.clone() })
    }

    /// Another session of the same table, with the same limit.
    async fn another(&self) -> BackendResult<Box<dyn Backend>> {
        let mut fresh = NormalizedBackend::connect(&self.url, &self.table).await?;
        fresh.client.limit_queries(self.client.limit());
        Ok(Box::new(fresh))
    }

    async fn schema(&self) -> BackendResult<Schema> {
        meta::load(&self.client, self.table.as_str()).await.map_err(engine_error).context("reading the normalized tables' metadata")
    }

    /// `file`'s text with the derived tables' names in place; a path no
    /// loaded document has reads NULL, as `->>` reads a missing key.
    async fn resolve(&self, file: &QueryFile) -> BackendResult<String> {
        let schema = self.schema().await?;
        template::resolve(&file.text, &schema, Missing::ReadsNull).map_err(|e| anyhow!("{}: {e}", file.path))
    }

    async fn tables(&self) -> BackendResult<Vec<String>> {
        let names = meta::table_names(&self.client, self.table.as_str()).await.map_err(engine_error)?;
        Ok(names.iter().map(|t| qualified(t)).collect())
    }
}

#[async_trait]
impl Backend for NormalizedBackend {
    fn spec(&self) -> &EngineSpec {
        &SPEC
    }

    async fn describe(&self) -> BackendResult<ServerInfo> {
        Ok(ghbench_postgres::connect::describe(&SPEC, &self.client, &self.url).await?)
    }

    async fn ledger(&self) -> BackendResult<Ledger> {
        ledger_of(&self.table).report(&self.client).await
    }

    /// Every derived table of the collection together; rows are documents (the root's).
    async fn sizes(&self) -> BackendResult<Storage> {
        let tables = self.tables().await?;
        if tables.is_empty() {
            return Err(anyhow!("no normalized tables for '{}' (load them with --engines normalized or ghbench normalize)", self.table));
        }
        let row = self
            .client
            .query_one(
                "SELECT coalesce(sum(pg_table_size(to_regclass(t))), 0)::bigint, coalesce(sum(pg_indexes_size(to_regclass(t))), 0)::bigint,
                        pg_table_size(to_regclass($1[1])), (SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass($1[1]))
                 FROM unnest($1::text[]) t",
                &[&tables],
            )
            .await?;
        let (table_bytes, index_bytes): (i64, i64) = (row.get(0), row.get(1));
        let (root_bytes, estimate): (Option<i64>, Option<i64>) = (row.get(2), row.get(3));
        let (root_bytes, estimate) = match root_bytes.zip(estimate) {
            Some(both) => both,
            None => return Err(anyhow!("the root table {} is recorded but missing: reload with --drop", tables[0])),
        };
        let (rows, rows_exact) = pg::row_count(&self.client, &tables[0], root_bytes, estimate).await?;
        let indexes = pg::index_sizes(&self.client, &tables).await?;
        Ok(Storage { rows, rows_exact, table_bytes: table_bytes as u64, index_bytes: index_bytes as u64, indexes, ..Storage::default() })
    }

    /// Each index of the file, but one over a path no loaded document has
    /// yet, which is left out and recorded so (the other engines index
    /// nothing there either; a later load makes the column).
    async fn create_indexes(&self, file: &QueryFile, built: &OnIndexBuilt) -> BackendResult<Vec<IndexBuild>> {
        let schema = self.schema().await?;
        let mut builds = Vec::new();
        for statement in sql::statements(&file.text).with_context(|| file.path.clone())? {
            // A file that cannot mean anything fails as it is; a missing path only skips.
            let as_read = template::resolve(&statement, &schema, Missing::ReadsNull).map_err(|e| anyhow!("{}: {e}", file.path))?;
            match template::resolve(&statement, &schema, Missing::IsError) {
                Ok(text) => builds.extend(pg::create_indexes(&self.client, file, &text, Some(SCHEMA), ghbench_postgres::setup::Server::Postgres, built).await?),
                Err(why) => {
                    let name = sql::created_index_name(&as_read).map_or_else(|_| statement.clone(), |n| n.to_string());
                    let build = IndexBuild::left_out(name, statement, why);
                    built(&build);
                    builds.push(build);
                }
            }
        }
        Ok(builds)
    }

    /// Every derived table of the collection, the indexes being on several,
    /// once one was built anew: they index plain columns, whose statistics
    /// the load's `ANALYZE` gathered, but a new index is planned better with fresh ones.
    async fn after_indexes(&self, built_now: bool) -> BackendResult<Option<AfterIndexes>> {
        if !built_now {
            return Ok(None);
        }
        Ok(Some(pg::analyze(&self.client, &self.tables().await?).await?))
    }

    async fn prepare(&self, query: &QueryFile) -> BackendResult<Prepared> {
        self.client.apply_limit().await?;
        Ok(Box::new(self.resolve(query).await?))
    }

    async fn execute(&self, query: &Prepared) -> BackendResult<Vec<Row>> {
        let sql: &String = prepared(self.engine(), query)?;
        self.client.rows(sql).await
    }

    fn limit_queries(&mut self, limit: Option<std::time::Duration>) {
        self.client.limit_queries(limit);
    }

    async fn read_counters(&self) -> Result<std::collections::BTreeMap<String, u64>, String> {
        let tables = self.tables().await.map_err(|e| format!("{e:#}"))?;
        pg::read_counters(&self.client, &tables).await
    }

    async fn explain(&self, query: &QueryFile, measured: bool) -> Plan {
        if let Err(e) = self.client.apply_limit().await {
            return Plan { error: Some(format!("setting --query-timeout: {e}")), ..Plan::default() };
        }
        match self.resolve(query).await {
            Ok(sql) => pg::explain(&self.client, &sql, measured).await,
            Err(e) => Plan { error: Some(format!("{e:#}")), ..Plan::default() },
        }
    }

    fn server_url(&self) -> Option<&str> {
        Some(&self.url)
    }

    fn server_address(&self) -> Option<String> {
        ghbench_postgres::address(&self.url)
    }

    async fn reconnect(&self) -> BackendResult<Box<dyn Backend>> {
        self.another().await
    }

    async fn clear_caches(&self) -> Vec<String> {
        let mut done = pg::clear_caches(&self.client).await;
        // DISCARD ALL resets the session's search_path, which the queries need.
        if let Err(e) = read_derived_tables_first(&self.client).await {
            done.push(format!("restoring search_path failed: {e}"));
        }
        done
    }

    async fn concurrency_limits(&self) -> std::collections::BTreeMap<String, String> {
        pg::concurrency_limits(&self.client).await
    }
}

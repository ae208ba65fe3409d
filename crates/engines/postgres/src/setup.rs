//! The setups of the `jsonb` layout: the paper's (`postgres`: one `jsonb`
//! column in the connection's schema, the paper's five expression indexes)
//! and any other written down under `queries/<engine>/` (`postgres-tuned`):
//! its `setup.json` (what changes, why, the source; the schema its table lives
//! in, apart from the paper's), its `table.sql` (the table's DDL), its
//! `indexes.sql` and its queries. A further setup is such a folder and one
//! registry line, `.with(ghbench_postgres::setup_plugin("<engine>"))`.

use std::sync::LazyLock;

use anyhow::{bail, Context as _};
use ghbench_core::{EngineOption, EngineSpec, Setup, TableName};
use ghbench_engine::query::Catalog;

use crate::SPEC;

/// The DDL file of a setup other than the paper's, beside its `setup.json`.
pub const TABLE_FILE: &str = "table.sql";

/// The column a table on Citus keeps each row's hour in (see [`Server::Citus`]).
pub const HOUR_COLUMN: &str = "ghbench_hour";

/// The server a setup's table lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// One PostgreSQL: an hour's rows are found by the transaction that
    /// wrote them and its ledger entry (their `xmin`), with no column of
    /// ghbench's in the table.
    Postgres,
    /// A Citus coordinator (`crate::citus`), the table distributed over its
    /// workers: each row carries the worker's own transaction id, which can
    /// equal another worker's or the coordinator's, so every row keeps its
    /// hour in [`HOUR_COLUMN`] (`yyyymmddhh`, indexed), by which an hour is
    /// counted and replaced.
    Citus,
}

/// One setup of the `jsonb` layout, as the engine runs it.
#[derive(Debug)]
pub struct JsonbSetup {
    pub spec: EngineSpec,
    /// As written down in the catalog (None if the folder has no `setup.json`).
    pub setup: Option<Setup>,
    /// `table.sql` with `{table}` in it; None: the paper's `(data jsonb)`.
    table_ddl: Option<String>,
    pub server: Server,
}

/// The paper's setup: the `postgres` engine.
pub static PAPER: LazyLock<JsonbSetup> = LazyLock::new(|| {
    let setup = ghbench_engine::query::embedded_setup(SPEC.engine.name());
    JsonbSetup { spec: SPEC.clone(), setup, table_ddl: None, server: Server::Postgres }
});

impl JsonbSetup {
    /// The setup the catalog writes down for `engine` (`postgres-tuned`): its
    /// `setup.json` (with a namespace: the schema) and `table.sql`.
    pub fn from_catalog(catalog: &Catalog, engine: &str) -> anyhow::Result<JsonbSetup> {
        let (setup, ddl) = written_down(catalog, engine)?;
        if setup.namespace.is_none() {
            bail!("{engine}/setup.json: a setup beside the paper's names its schema (namespace)");
        }
        Ok(JsonbSetup { spec: SPEC.for_setup(engine, &setup.about), setup: Some(setup), table_ddl: Some(ddl), server: Server::Postgres })
    }

    /// A setup on Citus written down for `engine` (`citus`, `citus-tuned`):
    /// its `setup.json` and `table.sql`, which creates the table with
    /// [`HOUR_COLUMN`] and distributes it. It lives on a server of its own
    /// (`url`): in the connection's schema as the paper's table does on its
    /// server, or in the schema its namespace names.
    pub fn citus_from_catalog(catalog: &Catalog, engine: &str, url: &'static [EngineOption], connect_hint: &'static str) -> anyhow::Result<JsonbSetup> {
        let (setup, ddl) = written_down(catalog, engine)?;
        for needed in ["create_distributed_table", HOUR_COLUMN, ghbench_engine::query::TABLE_PLACEHOLDER] {
            if !ddl.contains(needed) {
                bail!("{engine}/{TABLE_FILE} must name {needed}: a table on Citus is distributed and keeps each row's hour");
            }
        }
        let spec = SPEC.for_setup(engine, &setup.about);
        let spec = EngineSpec { options: url, connect_hint, capabilities: ghbench_core::Capabilities { optional: true, ..spec.capabilities }, ..spec };
        Ok(JsonbSetup { spec, setup: Some(setup), table_ddl: Some(ddl), server: Server::Citus })
    }

    /// Whether each row keeps its hour in [`HOUR_COLUMN`] (see [`Server`]).
    pub fn hour_column(&self) -> Option<&'static str> {
        (self.server == Server::Citus).then_some(HOUR_COLUMN)
    }

    /// The option naming the setup's server.
    pub fn url_option(&self) -> &'static EngineOption {
        let options: &'static [EngineOption] = self.spec.options;
        &options[0]
    }

    /// The folder of `queries/` its indexes and queries come from: its own,
    /// or the one its setup names (a setup on Citus runs the single
    /// server's texts, as written there).
    pub fn dialect(&self) -> &str {
        self.setup.as_ref().and_then(|s| s.queries.as_deref()).unwrap_or(self.spec.engine.name())
    }

    /// The columns the loader fills beside `data` (and the hour), each with
    /// the path of keys it is read from ([`Setup::loaded_columns`]).
    pub fn loaded_columns(&self) -> Vec<(&str, Vec<&str>)> {
        let Some(setup) = &self.setup else { return Vec::new() };
        setup.loaded_columns.iter().map(|(column, path)| (column.as_str(), path.split('.').collect())).collect()
    }

    /// The schema the setup's table lives in; None: the connection's own (the paper's).
    pub fn schema(&self) -> Option<&str> {
        self.setup.as_ref().and_then(|s| s.namespace.as_deref()).filter(|_| self.table_ddl.is_some())
    }

    /// `table`, qualified with the setup's schema: how SQL names it.
    pub fn table(&self, table: &TableName) -> String {
        self.qualified(table.as_str())
    }

    /// Any name of the setup's schema (a table, an index), qualified.
    pub fn qualified(&self, name: &str) -> String {
        match self.schema() {
            Some(schema) => format!("{schema}.{name}"),
            None => name.to_string(),
        }
    }

    /// Creates the table (and its schema) if missing; run inside the caller's
    /// transaction.
    pub fn create_sql(&self, table: &TableName) -> String {
        match &self.table_ddl {
            Some(ddl) => ddl.replace(ghbench_engine::query::TABLE_PLACEHOLDER, table.as_str()),
            None => format!("CREATE TABLE IF NOT EXISTS {table} (data jsonb);"),
        }
    }

    /// The key of the table's loading lock: the paper's is the table's name
    /// (the key older ghbench used), another setup's says whose it is.
    pub fn lock_key(&self, table: &TableName) -> String {
        match self.schema() {
            Some(_) => format!("{}:{table}", self.spec.engine),
            None => table.to_string(),
        }
    }
}

/// A setup's `setup.json` and `table.sql`, the DDL checked to create the
/// table in the schema the setup names, if it names one.
fn written_down(catalog: &Catalog, engine: &str) -> anyhow::Result<(Setup, String)> {
    let setup = catalog.setup(engine)?.with_context(|| format!("the catalog has no {engine}/setup.json"))?;
    let ddl_path = format!("{engine}/{TABLE_FILE}");
    let ddl = catalog.file(&ddl_path).with_context(|| format!("the catalog has no {ddl_path}"))?.text;
    if let Some(schema) = setup.namespace.as_deref() {
        if !ddl.contains(&format!("{schema}.{{table}}")) {
            bail!("{ddl_path} must create {schema}.{{table}} (the schema {engine}/setup.json names)");
        }
    }
    // Named in a statement, not in a comment.
    let statements = crate::sql::statements(&ddl).map_err(|e| anyhow::anyhow!("{ddl_path}: {e:#}"))?.join("\n");
    for column in setup.loaded_columns.keys() {
        if !statements.split(|c: char| !c.is_alphanumeric() && c != '_').any(|word| word == column) {
            bail!("{ddl_path} must make the column {column} that {engine}/setup.json says the loader fills");
        }
    }
    Ok((setup, ddl))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tuned_setup_lives_in_its_own_schema_and_the_paper_where_it_always_did() {
        let table: TableName = "github2015".parse().unwrap();
        assert_eq!(PAPER.table(&table), "github2015");
        assert_eq!(PAPER.lock_key(&table), "github2015");
        assert_eq!(PAPER.create_sql(&table), "CREATE TABLE IF NOT EXISTS github2015 (data jsonb);");
        assert_eq!(PAPER.setup.as_ref().map(|s| s.name.as_str()), Some("paper"));
        let tuned = JsonbSetup::from_catalog(&Catalog::embedded().unwrap(), "postgres-tuned").unwrap();
        assert_eq!(tuned.table(&table), "tuned.github2015");
        assert_eq!(tuned.lock_key(&table), "postgres-tuned:github2015");
        assert!(tuned.create_sql(&table).contains("CREATE TABLE IF NOT EXISTS tuned.github2015"));
        assert!(tuned.setup.as_ref().unwrap().tuned);
    }

    #[test]
    fn the_citus_setup_keeps_each_rows_hour_and_runs_the_papers_indexes_and_queries() {
        let catalog = Catalog::embedded().unwrap();
        let citus = JsonbSetup::citus_from_catalog(&catalog, "citus", &crate::citus::URL, crate::citus::CONNECT_HINT).unwrap();
        let table: TableName = "github2015".parse().unwrap();
        assert_eq!(citus.table(&table), "github2015", "on a server of its own, where the paper's table is on its");
        assert_eq!((citus.hour_column(), PAPER.hour_column()), (Some(HOUR_COLUMN), None));
        assert_eq!((citus.dialect(), PAPER.dialect()), ("postgres", "postgres"));
        assert_eq!(citus.url_option().long, "citus-url");
        assert!(!citus.spec.default, "not in the default --engines: the paper's replay needs no cluster");
        assert!(citus.spec.capabilities.optional && !PAPER.spec.capabilities.optional, "bench goes on without a cluster");
        let ddl = citus.create_sql(&table);
        assert!(ddl.contains("create_distributed_table('github2015', 'data')") && ddl.contains("ghbench_hour int NOT NULL"), "{ddl}");
        assert_eq!(crate::sql::statements(&ddl).unwrap().len(), 3, "sent one by one: {ddl}");
        let mut files: std::collections::BTreeMap<String, String> = [
            ("variants/v.json", r#"{"queries":{}}"#),
            ("c/setup.json", r#"{"name":"c","tuned":false,"about":"a","changes":[]}"#),
            ("c/table.sql", "CREATE TABLE IF NOT EXISTS {table} (data jsonb);"),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let undistributed = Catalog::from_files("test".into(), files.clone()).unwrap();
        let error = JsonbSetup::citus_from_catalog(&undistributed, "c", &crate::citus::URL, "").unwrap_err().to_string();
        assert!(error.contains("must name create_distributed_table"), "{error}");
        files.insert("c/table.sql".into(), "CREATE TABLE IF NOT EXISTS {table} (data jsonb); SELECT create_distributed_table('{table}', 'data');".into());
        let hourless = Catalog::from_files("test".into(), files).unwrap();
        let error = JsonbSetup::citus_from_catalog(&hourless, "c", &crate::citus::URL, "").unwrap_err().to_string();
        assert!(error.contains("must name ghbench_hour"), "{error}");
    }

    #[test]
    fn the_tuned_citus_setup_lives_in_its_schema_runs_the_tuned_texts_and_loads_its_distribution_column() {
        let catalog = Catalog::embedded().unwrap();
        let tuned = JsonbSetup::citus_from_catalog(&catalog, "citus-tuned", &crate::citus::URL, crate::citus::CONNECT_HINT).unwrap();
        let table: TableName = "github2015".parse().unwrap();
        assert_eq!(tuned.table(&table), "tuned.github2015");
        assert_eq!(tuned.lock_key(&table), "citus-tuned:github2015");
        assert_eq!(tuned.dialect(), "postgres-tuned");
        assert_eq!(tuned.loaded_columns(), [("repo_name", vec!["repo", "name"])]);
        assert_eq!(tuned.url_option().long, "citus-url", "the same cluster as the citus setup");
        let ddl = tuned.create_sql(&table);
        assert!(ddl.contains("create_distributed_table('tuned.github2015', 'repo_name')") && ddl.contains("USING columnar"), "{ddl}");
        let mut files: std::collections::BTreeMap<String, String> = [
            ("variants/v.json", r#"{"queries":{}}"#),
            ("c/setup.json", r#"{"name":"c","tuned":false,"about":"a","loaded_columns":{"repo_name":"repo.name"},"changes":[]}"#),
            ("c/table.sql", "-- repo_name is loaded\nCREATE TABLE IF NOT EXISTS {table} (data jsonb, ghbench_hour int); SELECT create_distributed_table('{table}', 'data');"),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let columnless = Catalog::from_files("test".into(), files.clone()).unwrap();
        let error = JsonbSetup::citus_from_catalog(&columnless, "c", &crate::citus::URL, "").unwrap_err().to_string();
        assert!(error.contains("must make the column repo_name"), "named in a comment only: {error}");
        files.insert("c/table.sql".into(), "CREATE TABLE IF NOT EXISTS {table} (data jsonb, ghbench_hour int, repo_name text); SELECT create_distributed_table('{table}', 'repo_name');".into());
        assert!(JsonbSetup::citus_from_catalog(&Catalog::from_files("test".into(), files).unwrap(), "c", &crate::citus::URL, "").is_ok());
    }

    #[test]
    fn a_setup_whose_ddl_creates_its_table_elsewhere_is_refused() {
        let mut files: std::collections::BTreeMap<String, String> = [
            ("variants/v.json", r#"{"queries":{}}"#),
            ("x/setup.json", r#"{"name":"t","tuned":true,"about":"a","namespace":"t","changes":[{"what":"w","why":"y","source":"s"}]}"#),
            ("x/table.sql", "CREATE TABLE IF NOT EXISTS {table} (data jsonb);"),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let catalog = Catalog::from_files("test".into(), files.clone()).unwrap();
        let error = JsonbSetup::from_catalog(&catalog, "x").unwrap_err().to_string();
        assert!(error.contains("must create t.{table}"), "{error}");
        files.remove("x/table.sql");
        let catalog = Catalog::from_files("test".into(), files).unwrap();
        assert!(JsonbSetup::from_catalog(&catalog, "x").unwrap_err().to_string().contains("no x/table.sql"));
    }
}

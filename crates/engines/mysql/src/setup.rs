//! The setups of the JSON-column layout, each written down under
//! `queries/<engine>/`: its `setup.json` (what changes, why, the source; the
//! database its table lives in, apart from the paper's), its `table.sql` (the
//! table with its generated columns: the loader names only `id` and `data`),
//! its `indexes.sql` and its queries. The paper's (`mysql`) lives in the
//! URL's database; another (`mysql-tuned`) in a database of its own, so no
//! setup ever uses another's indexes. A further setup is such a folder and
//! one registry line, `.with(ghbench_mysql::setup_plugin("<engine>"))`.

use anyhow::{bail, Context as _};
use ghbench_core::{EngineSpec, Setup, TableName};
use ghbench_engine::query::Catalog;
use ghbench_engine::sql::{statements, SqlDialect};

use crate::SPEC;

/// The DDL file of every setup, beside its `setup.json`.
pub const TABLE_FILE: &str = "table.sql";

/// One setup of the layout, as the engine runs it.
#[derive(Debug)]
pub struct MysqlSetup {
    pub spec: EngineSpec,
    pub setup: Option<Setup>,
    /// `table.sql`'s statements, `{table}` still in them.
    ddl: Vec<String>,
    /// The database the table lives in (the setup's namespace); None: the URL's.
    database: Option<TableName>,
}

impl MysqlSetup {
    /// The setup the catalog writes down for `engine` (`mysql`, `mysql-tuned`).
    pub fn from_catalog(catalog: &Catalog, engine: &str) -> anyhow::Result<MysqlSetup> {
        let setup = catalog.setup(engine)?.with_context(|| format!("the catalog has no {engine}/setup.json"))?;
        let ddl_path = format!("{engine}/{TABLE_FILE}");
        let text = catalog.file(&ddl_path).with_context(|| format!("the catalog has no {ddl_path}"))?.text;
        let ddl = statements(SqlDialect::MySql, &text).with_context(|| ddl_path.clone())?;
        let database = match setup.namespace.as_deref() {
            Some(name) => Some(name.parse::<TableName>().with_context(|| format!("{engine}/setup.json: namespace '{name}' is no plain database name"))?),
            None => None,
        };
        // The DDL must create the table where the setup says it lives.
        let target = match &database {
            Some(db) => format!("{db}.{{table}}"),
            None => "{table}".to_string(),
        };
        let creates_target = |statement: &String| {
            let words: Vec<&str> = statement.split_whitespace().collect();
            let shape = ["CREATE", "TABLE", "IF", "NOT", "EXISTS"];
            words.len() > shape.len()
                && words.iter().zip(shape).all(|(w, s)| w.eq_ignore_ascii_case(s))
                && words[shape.len()].split('(').next() == Some(target.as_str())
        };
        if !ddl.iter().any(creates_target) {
            bail!("{ddl_path} must have CREATE TABLE IF NOT EXISTS {target} (where {engine}/setup.json puts the table)");
        }
        let spec = match engine == SPEC.engine.name() {
            true => SPEC.clone(),
            false => SPEC.for_setup(engine, &setup.about),
        };
        Ok(MysqlSetup { spec, setup: Some(setup), ddl, database })
    }

    /// The database the setup's table lives in; None: the URL's own (the paper's).
    pub fn database(&self) -> Option<&str> {
        self.database.as_ref().map(TableName::as_str)
    }

    /// `table`, qualified with the setup's database: how SQL names it.
    pub fn table(&self, table: &TableName) -> String {
        match self.database() {
            Some(db) => format!("{db}.{table}"),
            None => table.to_string(),
        }
    }

    /// The statements that create the table (and its database) if missing.
    pub fn create_statements(&self, table: &TableName) -> Vec<String> {
        self.ddl.iter().map(|s| s.replace(ghbench_engine::query::TABLE_PLACEHOLDER, table.as_str())).collect()
    }

    /// The key of the table's loading lock: the paper's is the table's name,
    /// another setup's says whose it is.
    pub fn lock_key(&self, table: &TableName) -> String {
        match self.database() {
            Some(_) => format!("{}:{table}", self.spec.engine),
            None => table.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_lives_in_the_urls_database_and_the_tuned_setup_in_its_own() {
        let catalog = Catalog::embedded().unwrap();
        let table: TableName = "github2015".parse().unwrap();
        let paper = MysqlSetup::from_catalog(&catalog, "mysql").unwrap();
        assert_eq!((paper.table(&table), paper.lock_key(&table)), ("github2015".into(), "github2015".into()));
        assert!(paper.create_statements(&table).iter().any(|s| s.starts_with("CREATE TABLE IF NOT EXISTS github2015 ")));
        assert_eq!(paper.spec.engine, *"mysql");
        let tuned = MysqlSetup::from_catalog(&catalog, "mysql-tuned").unwrap();
        assert_eq!(tuned.table(&table), "tuned.github2015");
        assert_eq!(tuned.lock_key(&table), "mysql-tuned:github2015");
        assert!(tuned.setup.as_ref().unwrap().tuned && !tuned.spec.default);
    }

    #[test]
    fn a_setup_whose_ddl_creates_its_table_elsewhere_is_refused() {
        let files = |ddl: &str| {
            [
                ("variants/v.json", r#"{"queries":{}}"#.to_string()),
                ("x/setup.json", r#"{"name":"t","tuned":true,"about":"a","namespace":"t","changes":[{"what":"w","why":"y","source":"s"}]}"#.to_string()),
                ("x/table.sql", ddl.to_string()),
            ]
            .into_iter()
            .map(|(p, t)| (p.to_string(), t))
            .collect()
        };
        let catalog = Catalog::from_files("test".into(), files("CREATE TABLE IF NOT EXISTS {table} (id BIGINT PRIMARY KEY, data JSON);")).unwrap();
        let error = MysqlSetup::from_catalog(&catalog, "x").unwrap_err().to_string();
        assert!(error.contains("t.{table}"), "{error}");
        let catalog = Catalog::from_files("test".into(), files("CREATE DATABASE IF NOT EXISTS t; CREATE TABLE IF NOT EXISTS t.{table} (id BIGINT PRIMARY KEY, data JSON);")).unwrap();
        assert_eq!(MysqlSetup::from_catalog(&catalog, "x").unwrap().create_statements(&"h".parse().unwrap()).len(), 2);
    }
}

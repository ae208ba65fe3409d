//! A table of its own per test, loaded with the real hour on both shared
//! servers by the ingest library, dropped again at the end (also when the
//! test panics); and query backends on what a test loaded.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ghbench_core::{Hour, HourRange, TableName};
use ghbench_ingest::clean::Policy;
use ghbench_ingest::sink::Loader;
use ghbench_ingest::{ingest, IngestOptions, Quiet, Source};
use mongodb::bson::doc;

use crate::data::{data_dir, HOUR, HOUR_EVENTS};
use crate::servers::{servers, Servers};

/// The ingest library's options for what a plain `ghbench ingest` of
/// `hour` from the folder `source` into `table` on `engines` does: one hour
/// at a time, no retry, a minute for any step. A test says what it is about
/// with `IngestOptions { drop: true, ..ingest_options(…) }`.
pub fn ingest_options(hour: Hour, source: PathBuf, engines: Vec<Arc<dyn Loader>>, policy: Policy, table: TableName, quarantine_dir: PathBuf) -> IngestOptions {
    IngestOptions {
        hours: HourRange::new(hour, hour).unwrap(),
        source: Source::Dir(source),
        engines,
        policy,
        table,
        concurrency: 1,
        retries: 0,
        timeout: Duration::from_secs(60),
        force: false,
        server_folders: Vec::new(),
        check_stored: false,
        whole_table_timeout: None,
        accept_damaged: false,
        quarantine_dir,
        drop: false,
        dry_run: false,
        reload: Default::default(),
        reload_changed: false,
    }
}

/// `t_olap_<test>_<pid>`: never a name anyone else uses.
pub fn table_name(test: &str) -> TableName {
    format!("t_olap_{test}_{}", std::process::id()).parse().expect("valid table name")
}

pub struct LoadedTable {
    pub table: TableName,
    pub servers: Servers,
}

impl LoadedTable {
    /// Loads the real hour into a fresh table on both engines with the
    /// ingest library, cleaning as `policy` says (ghbench's own is
    /// `ghbench::registry::builtin().policy()`, which only the tests of the
    /// `ghbench` package can name).
    pub async fn load(test: &str, policy: Policy) -> LoadedTable {
        let fixture = LoadedTable::empty(test);
        let quarantine = tempfile::tempdir().unwrap();
        let loaders = fixture.servers.loaders();
        let options = ingest_options(HOUR.parse().unwrap(), data_dir(), loaders, policy, fixture.table.clone(), quarantine.path().to_path_buf());
        let options = IngestOptions { drop: true, ..options };
        let summary = ingest(options, Arc::new(Quiet)).await.expect("ingest");
        assert_eq!(summary.totals.engines.len(), 2, "both engines loaded");
        for (engine, totals) in &summary.totals.engines {
            assert_eq!(totals.table_events, Some(HOUR_EVENTS), "{engine} loaded");
        }
        fixture
    }

    /// A name to load into by other means (the CLI); dropped at the end all the same.
    pub fn empty(test: &str) -> LoadedTable {
        LoadedTable { table: table_name(test), servers: servers() }
    }
}

impl Drop for LoadedTable {
    /// Drops the table and its ledger entries on both engines. Runs on its own
    /// thread and runtime, since a test's runtime may be gone (or panicking).
    fn drop(&mut self) {
        let (table, servers) = (self.table.clone(), self.servers.clone());
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                if let Ok(pg) = servers.postgres().await {
                    let t = table.as_str();
                    let _ = pg.batch_execute(&format!("DROP TABLE IF EXISTS {t}")).await;
                    let _ = pg.execute("DELETE FROM ghbench_ledger WHERE tbl = $1", &[&t]).await;
                }
                if let Ok(db) = servers.mongo().await {
                    let _ = db.collection::<mongodb::bson::Document>(table.as_str()).drop().await;
                    let _ = db.collection::<mongodb::bson::Document>("ghbench_ledger").delete_many(doc! {"table": table.as_str()}).await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// Backends on `table` as loaded into PostgreSQL (the paper's setup, at
/// `pg_url`) and polars (in `polars`).
pub async fn postgres_and_polars(table: &str, pg_url: &str, polars: &Path) -> Vec<Box<dyn ghbench_olap::Backend>> {
    let table = table.parse().unwrap();
    vec![
        Box::new(ghbench_postgres::backend::PostgresBackend::connect(&ghbench_postgres::setup::PAPER, pg_url, &table).await.unwrap()),
        Box::new(ghbench_polars::backend::PolarsBackend::open(polars, &table).unwrap()),
    ]
}

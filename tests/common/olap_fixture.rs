//! A table of its own per test, loaded with the real hour on both real servers,
//! dropped again at the end (also when the test panics).

#![allow(dead_code)] // each test file uses part of it

use std::path::PathBuf;
use std::sync::Arc;

use ghbench_core::{Hour, HourRange, TableName};
use ghbench_ingest::{ingest, IngestOptions, Quiet, Source};
use mongodb::bson::doc;

include!("servers.rs");

pub const HOUR: &str = "2015-01-01T00";
pub const HOUR_EVENTS: u64 = 7702;

pub fn servers() -> Servers {
    Servers::from_env()
}

/// The shared folder of real hours, beside the checkout.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gharchive")
}

/// The real hour's file, or None (with a message saying why the test is skipped).
pub fn real_hour() -> Option<PathBuf> {
    let path = data_dir().join("2015-01-01-0.json.gz");
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("SKIPPED: the real hour {} is absent (it lives in ../shared beside the checkout)", path.display());
        None
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
    /// Loads the real hour into a fresh table on both engines with the ingest library.
    pub async fn load(test: &str) -> LoadedTable {
        let fixture = LoadedTable::empty(test);
        let hour: Hour = HOUR.parse().unwrap();
        let quarantine = tempfile::tempdir().unwrap();
        let options = IngestOptions {
            hours: HourRange::new(hour, hour).unwrap(),
            source: Source::Dir(data_dir()),
            engines: fixture.servers.loaders(),
            policy: ghbench::registry::builtin().policy(),
            table: fixture.table.clone(),
            concurrency: 1,
            retries: 0,
            timeout: std::time::Duration::from_secs(60),
            force: false,
            server_folders: Vec::new(),
            check_stored: false,
            whole_table_timeout: None,
            accept_damaged: false,
            quarantine_dir: quarantine.path().to_path_buf(),
            drop: true,
            dry_run: false,
            reload: Default::default(),
            reload_changed: false,
        };
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

//! The servers `just setup` starts (or `DATABASE_URL` / `MONGODB_URI`),
//! reached through the engines' own code, as ghbench reaches them; and what
//! a test does on them: its own table, counted, and dropped again. Every
//! test of the integration binary that uses them holds
//! [`crate::shared_servers`] (or a stronger guard).

use mongodb::bson::doc;

/// Where a test's PostgreSQL and MongoDB-wire server are.
#[derive(Debug, Clone)]
pub struct Servers {
    pub pg_url: String,
    pub mongo_url: String,
}

impl Servers {
    /// The ones `just setup` starts (or `DATABASE_URL` / `MONGODB_URI`).
    pub fn from_env() -> Servers {
        Servers {
            pg_url: std::env::var("DATABASE_URL").unwrap_or_else(|_| ghbench_postgres::DEFAULT_URL.into()),
            mongo_url: std::env::var("MONGODB_URI").unwrap_or_else(|_| ghbench_mongo::DEFAULT_URL.into()),
        }
    }

    pub async fn postgres(&self) -> Result<tokio_postgres::Client, ghbench_core::ConnectError> {
        ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &self.pg_url).await
    }

    pub async fn mongo(&self) -> Result<mongodb::Database, ghbench_core::ConnectError> {
        ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, &self.mongo_url).await
    }

    /// Both engines as configured for these servers.
    pub fn engines(&self) -> Vec<(std::sync::Arc<dyn ghbench_engine::EnginePlugin>, ghbench_core::EngineConfig)> {
        vec![
            (ghbench_postgres::plugin(), ghbench_core::EngineConfig::default().with(ghbench_postgres::URL.long, &self.pg_url)),
            (ghbench_mongo::plugin(), ghbench_core::EngineConfig::default().with(ghbench_mongo::URL.long, &self.mongo_url)),
        ]
    }

    /// Both engines' loaders, for the ingest library.
    pub fn loaders(&self) -> Vec<std::sync::Arc<dyn ghbench_engine::Loader>> {
        self.engines().iter().map(|(plugin, config)| plugin.loader(config)).collect()
    }
}

pub fn servers() -> Servers {
    Servers::from_env()
}

pub fn pg_url() -> String {
    servers().pg_url
}

pub fn mongo_url() -> String {
    servers().mongo_url
}

/// The MySQL-family server `just setup` starts (MariaDB), or `MYSQL_URL`.
pub fn mysql_url() -> String {
    std::env::var("MYSQL_URL").unwrap_or_else(|_| ghbench_mysql::DEFAULT_URL.into())
}

pub async fn pg() -> tokio_postgres::Client {
    servers().postgres().await.expect("PostgreSQL from `just setup` must be running")
}

pub async fn mongo() -> mongodb::Database {
    servers().mongo().await.expect("MongoDB-wire server from `just setup` must be running")
}

/// `t_<test>_<pid>`: a table name no other test uses, as long as each test
/// names its own `test` (every test runs in one process, so the pid alone
/// tells no two tests apart).
pub fn table(test: &str) -> String {
    format!("t_{test}_{}", std::process::id())
}

/// Rows in the PostgreSQL table and documents in the MongoDB collection.
pub async fn counts(table: &str) -> (u64, u64) {
    let pg: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
    let mongo = mongo().await.collection::<mongodb::bson::Document>(table).count_documents(doc! {}).await.unwrap();
    (pg as u64, mongo)
}

/// Both engines hold exactly `expected` documents: none lost, none loaded twice.
pub async fn assert_exact(table: &str, expected: u64) {
    assert_eq!(counts(table).await, (expected, expected), "row counts (postgres, mongo) of {table}");
}

/// Hour stems each engine's ledger lists as done for `table`: (postgres, mongo).
pub async fn ledger_hours(table: &str) -> (Vec<String>, Vec<String>) {
    let rows = pg().await.query("SELECT hour FROM ghbench_ledger WHERE tbl = $1 ORDER BY hour", &[&table]).await.unwrap();
    let pg_hours: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let ledger = mongo().await.collection::<mongodb::bson::Document>("ghbench_ledger");
    let mut mongo_hours = Vec::new();
    let mut cursor = ledger.find(doc! {"table": table, "state": "done"}).await.unwrap();
    while cursor.advance().await.unwrap() {
        mongo_hours.push(cursor.deserialize_current().unwrap().get_str("hour").unwrap().to_string());
    }
    mongo_hours.sort();
    (pg_hours, mongo_hours)
}

/// Removes the test's table, collection and ledger entries.
pub async fn drop_table(table: &str) {
    let pg = pg().await;
    pg.batch_execute(&format!("DROP TABLE IF EXISTS {table}")).await.unwrap();
    let _ = pg.execute("DELETE FROM ghbench_ledger WHERE tbl = $1", &[&table]).await;
    let db = mongo().await;
    db.collection::<mongodb::bson::Document>(table).drop().await.unwrap();
    db.collection::<mongodb::bson::Document>("ghbench_ledger").delete_many(doc! {"table": table}).await.unwrap();
}

/// Removes the collection's derived tables (the normalized engine's), its
/// jsonb table, its MongoDB collection and every ledger entry.
pub async fn drop_all(table: &str) {
    let pg = pg().await;
    let exists: bool = pg.query_one("SELECT to_regclass('normalized.ghbench_tables') IS NOT NULL", &[]).await.unwrap().get(0);
    if exists {
        ghbench_normalized::meta::drop_collection(&pg, table).await.unwrap();
    }
    let _ = pg.execute("DELETE FROM ghbench_upkeep WHERE tbl = $1", &[&table]).await;
    drop_table(table).await;
}

//! No lock-wait or statement limit, of ghbench's own or a server's or a
//! role's, ends an index build, against the real servers and the real hour:
//! `ghbench index` waits out a lock another session holds for longer than
//! the limit and builds every index; the record says what was lifted.

use std::future::Future;
use std::pin::Pin;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::ghbench_on_servers;
use ghbench_testkit::*;
use mysql_async::prelude::Queryable;
use serde_json::Value;

/// How long an index build may take to start waiting, and then to finish
/// once the lock is gone (the real hour's indexes take seconds).
const STEP_LIMIT: Duration = Duration::from_secs(300);

/// `ghbench index --engines <engine> --table <table>`, records in `results`,
/// started; `extra` adds the engine's URL where the environment's is not it.
fn start_index(engine: &str, table: &str, results: &std::path::Path, extra: &[&str]) -> Owned {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["index", "--engines", engine, "--table", table])
        .args(extra)
        .arg("--output")
        .arg(results)
        .env("DATABASE_URL", pg_url())
        .env("MYSQL_URL", mysql_url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Owned::spawn(&mut command)
}

/// The index build `building` behind a lock another session holds: once the
/// server shows it waiting (`waiting`), the lock is kept `hold` longer, the
/// build must still be waiting then (not given up), and `release` ends the
/// lock. The build's output, and how long it was seen waiting.
async fn waits_out_the_lock<W: Future<Output = bool>>(mut building: Owned, hold: Duration, waiting: impl Fn() -> W, release: impl Future<Output = ()>) -> (Output, Duration) {
    let asked = Instant::now();
    while !waiting().await {
        if !building.still_running() {
            panic!("the index build ended before it waited for the lock: {}", text(&building.wait_within(STEP_LIMIT)));
        }
        assert!(asked.elapsed() < STEP_LIMIT, "the index build never waited for the lock");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let seen = Instant::now();
    tokio::time::sleep(hold).await;
    let gave_up = !building.still_running() || !waiting().await;
    release.await;
    let out = building.wait_within(STEP_LIMIT);
    assert!(!gave_up, "the index build stopped waiting before the lock was released ({:?} in): {}", seen.elapsed(), text(&out));
    (out, seen.elapsed())
}

/// Runs its cleanup when dropped, however the test ends: on a thread and
/// runtime of its own, since the test's may be gone, or panicking.
struct Cleanup(Option<CleanupStep>);

type CleanupStep = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

impl Cleanup {
    fn new<F: Future<Output = ()> + 'static>(cleanup: impl FnOnce() -> F + Send + 'static) -> Cleanup {
        Cleanup(Some(Box::new(move || Box::pin(cleanup()))))
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(cleanup) = self.0.take() {
            let _ = std::thread::spawn(move || tokio::runtime::Runtime::new().unwrap().block_on(cleanup())).join();
        }
    }
}

/// The index record's builds of its one engine, each checked built.
fn builds_of(results: &std::path::Path, expected: usize) -> Value {
    let record = newest_record(results, "index");
    let engine = &record["engines"][0];
    assert!(engine["error"].is_null(), "{engine}");
    let indexes = engine["indexes"].as_array().unwrap();
    assert_eq!(indexes.len(), expected, "{engine}");
    assert!(indexes.iter().all(|b| b["created"] == true), "every index built by this run: {engine}");
    record["context"]["engines"][0]["server"]["settings"].clone()
}

/// An online index build on MariaDB needs the table's metadata lock to itself
/// at its start and end: while another session has the table open in a
/// transaction it waits. ghbench used to cap that wait at 50 s
/// (`lock_wait_timeout`), rolling back a build of hours; now it waits as long
/// as the other session holds the table, and builds all five indexes.
#[tokio::test(flavor = "multi_thread")]
async fn a_mariadb_index_build_waits_out_a_metadata_lock_held_past_50_s() {
    const HOLD: Duration = Duration::from_secs(55);
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("lockwait_mysql");
    let connect = || async { mysql_async::Conn::new(mysql_async::Opts::from_url(&mysql_url()).unwrap()).await.expect("MariaDB must be running") };
    let dropped = table.clone();
    let _table = Cleanup::new(move || async move {
        let mut conn = connect().await;
        let _ = conn.query_drop(format!("DROP TABLE IF EXISTS {dropped}")).await;
        let _ = conn.exec_drop("DELETE FROM ghbench_ledger WHERE tbl = ?", (&dropped,)).await;
    });
    let work = tempfile::tempdir().unwrap();
    let (source, quarantine) = (real.parent().unwrap().to_str().unwrap(), work.path().join("q"));
    let args = ["ingest", "--engines", "mysql", "--table", &table, "--source", source, "--from", HOUR, "--to", HOUR, "--drop", "--quarantine-dir", quarantine.to_str().unwrap()];
    let loaded = ghbench_on_servers(&args);
    assert!(loaded.status.success(), "{}", text(&loaded));

    let (table, connect) = (&table, &connect);
    // The reader's open transaction holds a shared metadata lock on the table until it ends.
    let mut reader = connect().await;
    reader.query_drop("START TRANSACTION").await.unwrap();
    reader.query_drop(format!("SELECT 1 FROM {table} LIMIT 1")).await.unwrap();

    let results = work.path().join("results");
    let building = start_index("mysql", table, &results, &[]);
    let waiting = move || async move {
        let sql = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table metadata lock' AND INFO LIKE CONCAT('%CREATE INDEX%', ?, '%')";
        let n: Option<u64> = connect().await.exec_first(sql, (table,)).await.unwrap();
        n.unwrap_or(0) > 0
    };
    let commit = async move { reader.query_drop("COMMIT").await.unwrap() };
    let (out, waited) = waits_out_the_lock(building, HOLD, waiting, commit).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(waited >= HOLD, "waited {waited:?}");

    let settings = builds_of(&results, 5);
    let lock_wait = settings["lock_wait_timeout"].as_str().unwrap_or_default();
    assert!(lock_wait.starts_with("31536000"), "the session's metadata-lock wait, lifted, in the record: {settings}");
    assert!(settings["max_statement_time"].as_str().is_some_and(|t| t.parse::<f64>() == Ok(0.0)), "{settings}");

    let indexed: Vec<String> = connect()
        .await
        .exec("SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'", (table,))
        .await
        .unwrap();
    assert_eq!(indexed.len(), 5, "{indexed:?}");
}

/// A role and its database of the test's own, dropped at the end however
/// the test ends (a role's defaults are server-wide state).
struct ScratchRole {
    name: String,
    _dropped: Cleanup,
}

impl ScratchRole {
    async fn create(name: String, defaults: &[&str]) -> ScratchRole {
        let admin = pg().await;
        let dropped = name.clone();
        let role = ScratchRole {
            name,
            _dropped: Cleanup::new(move || async move {
                let admin = pg().await;
                let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {dropped} WITH (FORCE)")).await;
                let _ = admin.batch_execute(&format!("DROP ROLE IF EXISTS {dropped}")).await;
            }),
        };
        let name = &role.name;
        // One statement each: CREATE DATABASE cannot run in a multi-statement string's transaction.
        for statement in [format!("CREATE ROLE {name} LOGIN"), format!("CREATE DATABASE {name} OWNER {name}")] {
            admin.batch_execute(&statement).await.unwrap();
        }
        for setting in defaults {
            admin.batch_execute(&format!("ALTER ROLE {name} SET {setting}")).await.unwrap();
        }
        role
    }

    /// `postgres://<user>@<the shared server>/<the role's database>`.
    fn url_as(&self, user: &str) -> String {
        let config: tokio_postgres::Config = pg_url().parse().unwrap();
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(host) => host.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        };
        format!("postgres://{user}@{host}:{}/{}", config.get_ports()[0], self.name)
    }

    fn admin_user() -> String {
        let config: tokio_postgres::Config = pg_url().parse().unwrap();
        config.get_user().unwrap_or("postgres").to_string()
    }
}

/// A role whose `lock_timeout` is 1 s would cut a `CREATE INDEX` that waits
/// for a writer: ghbench's sessions start without it, so the build waits the
/// writer out, and the record says the role's limit was lifted.
#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_index_build_waits_past_the_role_s_lock_timeout() {
    const HOLD: Duration = Duration::from_secs(5);
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let role = ScratchRole::create(format!("t_lockwait_role_{}", std::process::id()), &["lock_timeout = '1s'"]).await;
    let (url, admin_url) = (role.url_as(&role.name), role.url_as(&ScratchRole::admin_user()));
    let work = tempfile::tempdir().unwrap();
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    ingest
        .args(["ingest", "--engines", "postgres", "--table", "locked", "--pg-url", &url, "--from", HOUR, "--to", HOUR])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--quarantine-dir")
        .arg(work.path().join("q"));
    let loaded = output_within(&mut ingest, STEP_LIMIT);
    assert!(loaded.status.success(), "{}", text(&loaded));

    let admin_url = admin_url.as_str();
    let connect = move || async move {
        let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await.expect("PostgreSQL must be running");
        tokio::spawn(connection);
        client
    };
    // A writer's lock (what an INSERT takes), which CREATE INDEX waits for.
    let writer = connect().await;
    writer.batch_execute("BEGIN; LOCK TABLE locked IN ROW EXCLUSIVE MODE").await.unwrap();

    let results = work.path().join("results");
    let building = start_index("postgres", "locked", &results, &["--pg-url", &url]);
    let waiting = move || async move {
        let sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'CREATE INDEX%'";
        connect().await.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) > 0
    };
    let commit = async move { writer.batch_execute("COMMIT").await.unwrap() };
    let (out, waited) = waits_out_the_lock(building, HOLD, waiting, commit).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(waited >= HOLD, "waited {waited:?}");

    let settings = builds_of(&results, 5);
    assert_eq!(settings["lock_timeout"], "0", "the session's, in the record: {settings}");
    let lifted = settings[ghbench_postgres::connect::LIMITS_LIFTED].as_str().unwrap_or_default();
    assert!(lifted.contains("lock_timeout=1s"), "the role's limit, said lifted: {settings}");
}

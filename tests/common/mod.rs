//! Test helpers: the real hour from ../shared, the real servers `just setup`
//! starts, files with injected defects, and the ghbench binary itself.
#![allow(dead_code)]

pub mod faulty_http;
pub mod throwaway_mongo;
/// Shared with the postgres engine's own tests, through the kit.
pub mod throwaway_pg {
    #[allow(unused_imports)] // each test file uses part of it
    pub use ghbench_testkit::host::{free_port, is_root};
    pub use ghbench_testkit::throwaway_pg::*;
}

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::write::GzEncoder;
use flate2::Compression;
use mongodb::bson::doc;

pub const REAL_HOUR_FILE: &str = "2015-01-01-0.json.gz";

/// The shared real hour, or `None` (and a message saying why the test skips).
pub fn real_hour() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gharchive").join(REAL_HOUR_FILE);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("SKIPPED: {} not found; this test needs ../shared beside the repository", path.display());
        None
    }
}

/// The lines of the real hour, decompressed.
pub fn real_lines(path: &Path) -> Vec<Vec<u8>> {
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()), &mut text).unwrap();
    text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect()
}

include!("servers.rs");

pub fn pg_url() -> String {
    Servers::from_env().pg_url
}

pub fn mongo_url() -> String {
    Servers::from_env().mongo_url
}

pub fn servers() -> Servers {
    Servers::from_env()
}

/// A table name no other test uses.
pub fn table(test: &str) -> String {
    format!("t_{test}_{}", std::process::id())
}

/// Gzips `lines` (each gets a `\n`) into `dir/<hour file>`.
pub fn write_hour(dir: &Path, file_name: &str, lines: &[Vec<u8>]) -> PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, gzip_lines(lines)).unwrap();
    path
}

/// Runs `ghbench ingest` for `table` with a quarantine folder in `work`, plus `args`.
pub fn ingest(table: &str, work: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .arg("ingest")
        .args(["--table", table, "--pg-url", &pg_url(), "--mongo-url", &mongo_url()])
        .arg("--quarantine-dir")
        .arg(work.join("quarantine"))
        .args(args)
        .output()
        .expect("run ghbench");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs ingest and returns its JSON report.
pub fn ingest_report(table: &str, work: &Path, args: &[&str]) -> serde_json::Value {
    let (out, report) = ingest_any(table, work, args);
    assert!(out.status.success(), "ghbench ingest failed: {}", String::from_utf8_lossy(&out.stderr));
    report.expect("a report")
}

/// Runs ingest, successful or not; its output and JSON report (if written).
pub fn ingest_any(table: &str, work: &Path, args: &[&str]) -> (std::process::Output, Option<serde_json::Value>) {
    let report = work.join(format!("report-{}.json", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--report", report.to_str().unwrap()]);
    let out = ingest(table, work, &all);
    let json = std::fs::read(&report).ok().filter(|b| !b.is_empty()).map(|b| serde_json::from_slice(&b).unwrap());
    (out, json)
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

/// Gzipped bytes of `lines` (each gets a `\n`).
pub fn gzip_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    for line in lines {
        gz.write_all(line).unwrap();
        gz.write_all(b"\n").unwrap();
    }
    gz.finish().unwrap()
}

pub fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub async fn pg() -> tokio_postgres::Client {
    servers().postgres().await.expect("PostgreSQL from `just setup` must be running")
}

pub async fn mongo() -> mongodb::Database {
    servers().mongo().await.expect("MongoDB-wire server from `just setup` must be running")
}

/// Rows in the PostgreSQL table and documents in the MongoDB collection.
pub async fn counts(table: &str) -> (u64, u64) {
    let pg: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
    let mongo = mongo().await.collection::<mongodb::bson::Document>(table).count_documents(doc! {}).await.unwrap();
    (pg as u64, mongo)
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

/// The test's table loaded with the real hour into PostgreSQL (at `pg_url`) and polars.
pub fn load_postgres_and_polars(table: &str, pg_url: &str, polars: &Path, work: &Path) {
    let real = real_hour().expect("checked by the caller");
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", "postgres,polars", "--table", table, "--pg-url", pg_url, "--from", "2015-01-01T00"])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--polars-dir")
        .arg(polars)
        .arg("--quarantine-dir")
        .arg(work.join("q"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// A PostgreSQL of the test's own with the real hour loaded into `table`
/// there and into polars; the work folder lives as long as it.
/// (Bind `work` to a name, not `_`, to keep the folder.)
pub struct LoadedThrowaway {
    pub pg: throwaway_pg::ThrowawayPg,
    pub work: tempfile::TempDir,
    pub polars: PathBuf,
}

/// [`LoadedThrowaway`] named `name`; None (the test skips, said) without the
/// real hour or PostgreSQL's binaries.
pub fn throwaway_with_real_hour(name: &str, table: &str) -> Option<LoadedThrowaway> {
    real_hour()?;
    let pg = throwaway_pg::ThrowawayPg::start(name)?;
    let work = tempfile::tempdir().unwrap();
    let polars = work.path().join("polars");
    load_postgres_and_polars(table, &pg.url(), &polars, work.path());
    Some(LoadedThrowaway { pg, work, polars })
}

/// Backends on what [`load_postgres_and_polars`] loaded: PostgreSQL (the
/// paper's setup, at `pg_url`) and polars (in `polars`).
pub async fn postgres_and_polars(table: &str, pg_url: &str, polars: &Path) -> Vec<Box<dyn ghbench_olap::Backend>> {
    let table = table.parse().unwrap();
    vec![
        Box::new(ghbench_postgres::backend::PostgresBackend::connect(&ghbench_postgres::setup::PAPER, pg_url, &table).await.unwrap()),
        Box::new(ghbench_polars::backend::PolarsBackend::open(polars, &table).unwrap()),
    ]
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

/// Both engines hold exactly `expected` documents: none lost, none loaded twice.
pub async fn assert_exact(table: &str, expected: u64) {
    assert_eq!(counts(table).await, (expected, expected), "row counts (postgres, mongo) of {table}");
}

/// Runs `command` to its end, or kills it after `limit` and fails the test:
/// a test of a hang must not hang itself.
pub fn output_within(command: &mut Command, limit: std::time::Duration) -> std::process::Output {
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("run ghbench");
    wait_within(child, limit)
}

/// Waits for `child` to end, or kills it after `limit` and fails the test.
pub fn wait_within(mut child: std::process::Child, limit: std::time::Duration) -> std::process::Output {
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            child.kill().expect("kill");
            let out = child.wait_with_output().expect("output");
            panic!("ghbench still ran after {limit:?}: {}", text(&out));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// The bench record in `dir` (the newest when several).
pub fn bench_record(dir: &Path) -> (PathBuf, serde_json::Value) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.file_name().unwrap().to_string_lossy().starts_with("bench-"))
        .collect();
    files.sort();
    let file = files.pop().expect("a bench results file");
    let record = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, record)
}


/// Copies the folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs ghbench with the servers' URLs in the environment, bounded, its
/// output shown (for the test's log).
pub fn ghbench_on_servers(args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(args).env("DATABASE_URL", pg_url()).env("MONGODB_URI", mongo_url());
    let out = output_within(&mut command, std::time::Duration::from_secs(600));
    eprintln!("ghbench {}:\n{}", args.join(" "), text(&out));
    out
}

/// The newest results JSON file of `prefix` (`olap`, `index`, `bench`) that ghbench wrote into `dir`.
pub fn newest_file(dir: &Path, prefix: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files.pop().unwrap_or_else(|| panic!("no {prefix} record in {}", dir.display()))
}

/// The newest results record of `prefix` in `dir` (see [`newest_file`]).
pub fn newest_record(dir: &Path, prefix: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(newest_file(dir, prefix)).unwrap()).unwrap()
}

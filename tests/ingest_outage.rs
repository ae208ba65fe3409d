//! Server outages, reproduced for real on a PostgreSQL cluster of the test's
//! own: a restart in the middle of a run, a server frozen mid-run, and a
//! listener that accepts connections but never answers.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ghbench_testkit::faulty_http::SilentListener;
use ghbench_testkit::throwaway_mongo::ThrowawayMongo;
use ghbench_testkit::throwaway_pg::{rows, ThrowawayPg};

use crate::util::SmallDisk;
use ghbench_testkit::*;

const HOURS: u64 = 8;

/// A folder of `HOURS` copies of the real hour.
fn hours_dir(work: &std::path::Path, real: &std::path::Path) -> std::path::PathBuf {
    let dir = work.join("hours");
    std::fs::create_dir(&dir).unwrap();
    for h in 0..HOURS {
        std::fs::copy(real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    dir
}

fn ingest_into(pg: &ThrowawayPg, dir: &std::path::Path, work: &std::path::Path, extra: &[&str]) -> Command {
    ingest_engine("postgres", &pg.url(), dir, work, extra)
}

/// `ghbench ingest` of the test's hours into `engine` at `url`, table `outage`.
fn ingest_engine(engine: &str, url: &str, dir: &std::path::Path, work: &std::path::Path, extra: &[&str]) -> Command {
    let url_flag = if engine == "postgres" { "--pg-url" } else { "--mongo-url" };
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["ingest", "--engines", engine, "--table", "outage", url_flag, url])
        .arg("--source")
        .arg(dir)
        .args(["--from", "2015-01-01T00", "--hours", &HOURS.to_string(), "--concurrency", "2"])
        .arg("--quarantine-dir")
        .arg(work.join("quarantine"))
        .arg("--report")
        .arg(work.join("report.json"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits until the table holds more than one hour's rows but not all of them.
async fn wait_mid_run(pg: &ThrowawayPg, per_hour: u64, child: &mut std::process::Child) {
    let url = pg.url();
    wait_until_more_than(per_hour, child, || rows(&url, "outage")).await;
}

async fn wait_until_more_than<F: std::future::Future<Output = u64>>(n: u64, child: &mut std::process::Child, count: impl Fn() -> F) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while count().await <= n {
        assert!(Instant::now() < deadline, "ingest never got going");
        assert!(child.try_wait().unwrap().is_none(), "ingest ended before the fault");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_restart_mid_run_is_survived_with_exact_counts_and_a_summary() {
    let Some(real) = real_hour() else { return };
    let Some(pg) = ThrowawayPg::start("restart") else { return };
    let per_hour = real_lines(&real).len() as u64;
    let work = tempfile::tempdir().unwrap();
    let dir = hours_dir(work.path(), &real);

    let mut child = ingest_into(&pg, &dir, work.path(), &["--retries", "6"]).spawn().unwrap();
    wait_mid_run(&pg, per_hour, &mut child).await;
    pg.restart();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    eprintln!("{said}");

    assert!(out.status.success(), "every hour must end loaded: {said}");
    assert!(said.contains("hours:") && said.contains("retries:"), "the summary is printed, retries included");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("report.json")).unwrap()).unwrap();
    let t = &report["totals"];
    assert_eq!(t["hours_loaded"], HOURS, "{t}");
    assert!(t["retries"].as_u64().unwrap() >= 1, "the restart broke hours in flight, which were retried: {t}");
    // Counted at the end on a new connection: the first one died in the restart.
    assert_eq!(t["engines"]["postgres"]["table_events"], HOURS * per_hour);
    assert_eq!(rows(&pg.url(), "outage").await, HOURS * per_hour, "no hour lost or doubled");

    // The ledger keeps each hour's retries with its load time, and the query
    // report's data line says the time includes them.
    let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &pg.url()).await.unwrap();
    let recorded: i64 = client.query_one("SELECT sum(retries)::bigint FROM ghbench_ledger WHERE tbl = 'outage'", &[]).await.unwrap().get(0);
    assert_eq!(recorded as u64, t["retries"].as_u64().unwrap(), "every retry of the run is in the ledger");
    let ledger = ghbench_postgres::ledger::PgLedger { engine: &ghbench_postgres::SPEC.engine, table: &"outage".parse().unwrap() };
    let summary = ledger.report(&client).await.unwrap().summary();
    assert_eq!(summary.load_retries, recorded as u64);
    let results = work.path().join("results");
    let query = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["query", "A", "--variant", "corrected", "--repeat", "1", "--engines", "postgres", "--table", "outage", "--pg-url", &pg.url()])
        .arg("--output")
        .arg(&results)
        .output()
        .unwrap();
    let said = text(&query);
    assert!(query.status.success(), "{said}");
    let retries = if recorded == 1 { "includes 1 retry".to_string() } else { format!("includes {recorded} retries") };
    assert!(said.contains(&format!("events/s; {retries})")), "the load time says it includes the retries: {said}");
}

#[tokio::test]
async fn a_frozen_server_times_out_fails_its_hours_and_a_rerun_completes() {
    let Some(real) = real_hour() else { return };
    let Some(pg) = ThrowawayPg::start("frozen") else { return };
    let per_hour = real_lines(&real).len() as u64;
    let work = tempfile::tempdir().unwrap();
    let dir = hours_dir(work.path(), &real);

    let mut child = ingest_into(&pg, &dir, work.path(), &["--retries", "1", "--timeout", "3"]).spawn().unwrap();
    wait_mid_run(&pg, per_hour, &mut child).await;
    // Accepts connections (the kernel does) but answers nothing, mid-COPY.
    pg.signal_all("STOP");
    // A hang here fails the test (and the server is thawed when it is dropped).
    let out = wait_within(child, Duration::from_secs(90));
    pg.signal_all("CONT");
    let said = text(&out);
    eprintln!("{said}");
    assert!(!out.status.success(), "hours failed: the exit status says so");
    assert!(said.contains("did not answer within 3 s") || said.contains("no answer within 3 s"), "names the silence: {said}");
    assert!(said.contains("FAILED"), "{said}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("report.json")).unwrap()).unwrap();
    assert!(report["totals"]["hours_failed"].as_u64().unwrap() >= 1);

    // Once the server answers again, a plain rerun loads exactly what is missing.
    let rerun = output_within(&mut ingest_into(&pg, &dir, work.path(), &[]), Duration::from_secs(120));
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert_eq!(rows(&pg.url(), "outage").await, HOURS * per_hour);
}

#[test]
fn a_server_that_never_answers_is_given_up_on_with_a_message() {
    let silent = SilentListener::start();
    let work = tempfile::tempdir().unwrap();
    let cases = [
        ("postgres", "--pg-url", format!("postgres://u@127.0.0.1:{}/x?connect_timeout=2", silent.port)),
        ("mongo", "--mongo-url", format!("mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=2000", silent.port)),
    ];
    for (engine, flag, url) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command.args(["ingest", "--engines", engine, flag, &url, "--from", "2015-01-01T00"]).arg("--source").arg(work.path());
        let out = output_within(&mut command, Duration::from_secs(30));
        let said = text(&out);
        assert!(!out.status.success(), "{engine}: {said}");
        assert!(said.contains(&format!("cannot reach {engine}")), "{engine}: {said}");
        let why = if engine == "postgres" { "no answer within 2 s during the PostgreSQL handshake" } else { "Server selection timeout" };
        assert!(said.contains(why), "{engine}: {said}");
        assert!(!said.contains("panicked"), "{said}");
    }
}

/// Documents in the throwaway server's `outage` collection (0 while it is away).
async fn documents(url: &str) -> u64 {
    let Ok(db) = ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, url).await else { return 0 };
    db.collection::<mongodb::bson::Document>("outage").count_documents(mongodb::bson::doc! {}).await.unwrap_or(0)
}

/// Documents in the `outage` collection once the server answers (a count
/// that fails, on a machine busy enough, is tried again for up to 10 s).
async fn documents_counted(url: &str) -> u64 {
    let mut last = String::new();
    for _ in 0..20 {
        match ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, url).await {
            Ok(db) => match db.collection::<mongodb::bson::Document>("outage").count_documents(mongodb::bson::doc! {}).await {
                Ok(n) => return n,
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the documents could not be counted: {last}");
}

#[tokio::test]
async fn a_mongodb_restart_mid_run_is_survived_with_exact_counts() {
    let Some(real) = real_hour() else { return };
    let Some(mut mongo) = ThrowawayMongo::start() else {
        eprintln!("SKIPPED: no mongod on PATH and no SecantusDB in .ghbench/venv; run `just setup`");
        return;
    };
    let per_hour = real_lines(&real).len() as u64;
    let work = tempfile::tempdir().unwrap();
    let dir = hours_dir(work.path(), &real);
    let url = mongo.url();

    let mut child = ingest_engine("mongo", &url, &dir, work.path(), &["--retries", "6"]).spawn().unwrap();
    wait_until_more_than(per_hour, &mut child, || documents(&url)).await;
    mongo.restart();
    // Restarted after one hour of eight: hours were in flight when it went down.
    let out = wait_within(child, Duration::from_secs(300));
    let said = text(&out);
    eprintln!("{said}");

    assert!(out.status.success(), "every hour must end loaded: {said}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("report.json")).unwrap()).unwrap();
    let t = &report["totals"];
    assert_eq!(t["hours_loaded"], HOURS, "{t}");
    // Whether an hour had to be retried depends on the moment: the driver itself
    // retries a write once when the server is back within server selection.
    // What must hold either way: every hour loaded, exactly once.
    eprintln!("hours retried after the restart: {}", t["hours_retried"]);
    assert_eq!(t["engines"]["mongo"]["table_events"], HOURS * per_hour);
    assert_eq!(documents_counted(&url).await, HOURS * per_hour, "no hour lost or doubled");
}

/// A load too big for the disk is refused before it writes anything, with
/// the space it needs; forced, a full disk (PostgreSQL's 53100) stops the run
/// at once: no other hour is downloaded and tried after it, and one line says
/// what to do; the hours loaded before it are kept.
#[tokio::test]
async fn a_full_disk_stops_the_run_with_one_clear_message() {
    let Some(real) = real_hour() else { return };
    // The disk first: it is dropped (unmounted) after the server that writes to it.
    let Some(disk) = SmallDisk::mount("full-disk", 24) else { return };
    let Some(pg) = ThrowawayPg::start("full") else { return };
    let admin = pg.url();
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    // Every table ghbench makes goes on the small disk; WAL stays where it was.
    client.batch_execute(&format!("CREATE TABLESPACE small LOCATION '{}'", disk.dir.display())).await.unwrap();
    client.batch_execute("ALTER DATABASE postgres SET default_tablespace = small").await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = hours_dir(work.path(), &real);

    // The estimate made before loading refuses it, with the numbers, having written nothing.
    let out = ingest_into(&pg, &dir, work.path(), &[]).output().unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    let disk_line = format!("{} needs about ", disk.dir.display());
    assert!(said.contains("not enough free space for this load") && said.contains(&disk_line), "{said}");
    assert!(said.contains("postgres table") && said.contains("of gzip hours taken at their JSON size"), "{said}");
    assert!(said.contains("are free") && said.contains("--force"), "{said}");
    assert!(!said.contains("WAL growing to max_wal_size"), "the WAL is on another file system than the table: {said}");
    assert_eq!(rows(&admin, "outage").await, 0, "nothing written");

    // Forced, the load goes on until the disk is full.
    let out = ingest_into(&pg, &dir, work.path(), &["--force"]).output().unwrap();
    let said = text(&out);
    eprintln!("{said}");
    assert!(!out.status.success(), "{said}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("report.json")).unwrap()).unwrap();
    let hours = report["hours"].as_array().unwrap();
    let attempts: Vec<u64> = hours.iter().map(|h| h["attempts"].as_u64().unwrap()).collect();
    let loaded = report["totals"]["hours_loaded"].as_u64().unwrap();
    eprintln!("attempts per hour: {attempts:?}, {loaded} loaded");
    assert!(loaded >= 1 && loaded < HOURS, "some hours fit: {said}");
    assert!(attempts.iter().all(|a| *a <= 1), "a full disk is not retried: {attempts:?}");
    assert!(attempts.iter().filter(|a| **a == 0).count() >= 1, "the hours after it are not tried: {attempts:?}");
    assert_eq!(said.matches("STOPPED: postgres's storage is full (PostgreSQL: ").count(), 1, "{said}");
    assert!(said.contains("No space left on device") || said.contains("could not extend"), "in the server's own words: {said}");
    assert!(said.contains("NOT TRIED ") && !said.contains("FAILED 2015-01-01T07"), "the untried hours in one line: {said}");
    assert!(report["stopped"].as_str().is_some_and(|s| s.starts_with("postgres's storage is full")), "{}", report["stopped"]);
    assert_eq!(rows(&admin, "outage").await, loaded * real_lines(&real).len() as u64, "the hours loaded are kept whole");
}

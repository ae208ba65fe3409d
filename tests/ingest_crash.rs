//! kill -9 in the middle of a run, then a rerun: exact counts in both engines.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::ingest_report;
use ghbench_testkit::*;

#[tokio::test]
async fn a_killed_run_leaves_no_partial_hour_after_the_rerun() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let per_hour = real_lines(&real).len() as u64;
    let hours = 6;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    for h in 0..hours {
        std::fs::copy(&real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let table = table("crash");
    drop_table(&table).await;
    let args = ["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "6", "--concurrency", "2"];

    let mut child = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .arg("ingest")
        .args(["--table", &table, "--pg-url", &pg_url(), "--mongo-url", &mongo_url()])
        .arg("--quarantine-dir")
        .arg(work.path().join("quarantine"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill once more than an hour's worth has arrived (so some hours are done and
    // others half-written) but before the run can finish.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, mongo) = counts_if_exists(&table).await;
        if mongo > per_hour && mongo % per_hour != 0 {
            break;
        }
        assert!(Instant::now() < deadline, "ingest never started writing");
        assert!(child.try_wait().unwrap().is_none(), "ingest ended before it could be killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (pg_after_kill, mongo_after_kill) = counts_if_exists(&table).await;
    assert!(mongo_after_kill < hours * per_hour, "the kill came too late to test anything");
    eprintln!("after kill: postgres {pg_after_kill}, mongo {mongo_after_kill}");

    let report = ingest_report(&table, work.path(), &args);
    assert_exact(&table, hours * per_hour).await;
    let t = &report["totals"];
    assert_eq!(t["hours_loaded"].as_u64().unwrap() + t["hours_skipped"].as_u64().unwrap(), hours);
    for engine in ["postgres", "mongo"] {
        assert_eq!(t["engines"][engine]["table_events"], hours * per_hour, "{engine} ledger");
    }
    drop_table(&table).await;
}

/// Counts that tolerate the table not existing yet.
async fn counts_if_exists(table: &str) -> (u64, u64) {
    let pg = pg().await;
    let exists: bool = pg.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).await.unwrap().get(0);
    if exists {
        counts(table).await
    } else {
        (0, 0)
    }
}

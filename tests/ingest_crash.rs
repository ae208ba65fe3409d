//! kill -9 in the middle of a run, then a rerun: exact counts in both engines.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{ghbench_on_servers, ingest_report};
use ghbench_testkit::*;

#[tokio::test]
async fn a_killed_run_leaves_no_partial_hour_after_the_rerun() {
    let _servers = shared_servers();
    let hours = 6;
    let work = tempfile::tempdir().unwrap();
    let Some((dir, per_hour)) = real_hour_copies(work.path(), hours as usize) else { return };
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
    let named = table.as_str();
    kill_once(&mut child, "ingest writing", || async move {
        let (_, mongo) = counts_if_exists(named).await;
        mongo > per_hour && mongo % per_hour != 0
    })
    .await;
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

/// Kills `child` (SIGKILL) once `reached` says so, asked every 20 ms; it must not end before.
async fn kill_once<F: std::future::Future<Output = bool>>(child: &mut std::process::Child, what: &str, mut reached: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !reached().await {
        assert!(Instant::now() < deadline, "never seen: {what}");
        assert!(child.try_wait().unwrap().is_none(), "ingest ended before it could be killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
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

/// MongoDB writes an hour's documents before its ledger says `done`, so a
/// load killed mid-hour leaves documents every answer counts. With MongoDB
/// alone (no other engine to disagree with), a query names the hour and its
/// exact rows; the next load, of other hours, removes them.
#[tokio::test]
async fn a_mongodb_hour_killed_part_way_is_named_by_a_query_and_removed_by_the_next_load_of_other_hours() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let Some((dir, per_hour)) = real_hour_copies(work.path(), 2) else { return };
    let table = table("mongo_part");
    drop_table(&table).await;
    let collection = mongo().await.collection::<mongodb::bson::Document>(&table);
    let source = ["--engines", "mongo", "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--concurrency", "1"];

    // One hour after the other: more than an hour's documents, not two whole
    // hours, means hour 01 is part written.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--table", &table, "--mongo-url", &mongo_url(), "--hours", "2"])
        .args(source)
        .arg("--quarantine-dir")
        .arg(work.path().join("quarantine"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let documents = &collection;
    kill_once(&mut child, "ingest reaching the second hour", || async move {
        let n = documents.count_documents(mongodb::bson::doc! {}).await.unwrap();
        n > per_hour && n < 2 * per_hour
    })
    .await;
    // A batch sent before the kill may still go in after it: counted once it stops changing.
    let mut held = collection.count_documents(mongodb::bson::doc! {}).await.unwrap();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = collection.count_documents(mongodb::bson::doc! {}).await.unwrap();
        if now == held {
            break;
        }
        held = now;
    }
    let part = held - per_hour;
    assert!(part > 0 && part < per_hour, "killed with {held} documents");

    // A query of MongoDB alone: the hour is named with its exact rows, and the
    // run says its results cannot be trusted as they stand.
    let results = work.path().join("results");
    let query = ["query", "A", "--variant", "corrected", "--repeat", "1", "--engines", "mongo", "--table", &table, "--output", results.to_str().unwrap()];
    let out = ghbench_on_servers(&query);
    assert_eq!(out.status.code(), Some(1), "part-written data is not to be trusted");
    let named = format!("mongo's table holds {part} rows of 1 hour a load began and did not finish: 2015-01-01T01 ({part} rows)");
    assert!(text(&out).contains(&named), "the query names the hour: {named}");
    let record = only_record(&results);
    let differences = record["context"]["data_consistency"]["differences"].as_array().unwrap();
    assert_eq!(differences.len(), 1, "one cause, said once: {differences:?}");
    assert!(differences[0].as_str().unwrap().starts_with(&named));

    // A load of hour 00 alone, which is done: it removes hour 01's documents and its mark.
    let report = ingest_report(&table, work.path(), &[&source[..], &["--hours", "1"]].concat());
    let removed = format!("mongo: removed {part} documents of hour 2015-01-01-1, which a load began and did not finish");
    assert!(report["warnings"].as_array().unwrap().iter().any(|w| w == removed.as_str()), "said: {}", report["warnings"]);
    assert_eq!(collection.count_documents(mongodb::bson::doc! {}).await.unwrap(), per_hour, "exactly the finished hour");
    let ledger = mongo().await.collection::<mongodb::bson::Document>("ghbench_ledger");
    assert_eq!(ledger.count_documents(mongodb::bson::doc! {"table": &table, "state": {"$ne": "done"}}).await.unwrap(), 0, "no mark left");

    std::fs::remove_dir_all(&results).unwrap();
    let out = ghbench_on_servers(&query);
    assert!(out.status.success(), "the same query now trusted: {}", text(&out));
    drop_table(&table).await;
}

/// The one `olap-*.json` record in `dir`.
fn only_record(dir: &std::path::Path) -> serde_json::Value {
    let records: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    serde_json::from_slice(&std::fs::read(&records[0]).unwrap()).unwrap()
}

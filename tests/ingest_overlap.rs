//! Two real ingest processes on one table: the second is refused at start on
//! each engine, the first finishes exact; a holder killed with -9 leaves no
//! lock behind that blocks the next run.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::ingest_report;
use ghbench_testkit::*;
use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

fn ingest_command(table: &str, work: &std::path::Path, dir: &std::path::Path, hours: u32, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .arg("ingest")
        .args(["--table", table, "--pg-url", &pg_url(), "--mongo-url", &mongo_url()])
        .arg("--quarantine-dir")
        .arg(work.join("quarantine"))
        .arg("--source")
        .arg(dir)
        .args(["--from", "2015-01-01T00", "--hours", &hours.to_string(), "--concurrency", "2"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits until MongoDB holds more than `rows` documents of `table`: the run is
/// past taking its locks and loading.
async fn wait_loading(table: &str, rows: u64, child: &mut Child) {
    let collection = mongo().await.collection::<mongodb::bson::Document>(table);
    let deadline = Instant::now() + Duration::from_secs(120);
    while collection.estimated_document_count().await.unwrap_or(0) <= rows {
        assert!(Instant::now() < deadline, "ingest never started loading");
        assert!(child.try_wait().unwrap().is_none(), "ingest ended before the test could overlap it");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn refused(out: &Output, engine: &str) {
    let said = text(out);
    assert!(!out.status.success(), "the second run must be refused: {said}");
    assert!(said.contains("another ghbench run is loading table") && said.contains(&format!("into {engine}")), "{said}");
    assert!(!said.contains("panicked"), "{said}");
}

#[tokio::test]
async fn a_second_run_on_the_same_table_is_refused_and_a_killed_holder_blocks_nothing() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let Some((dir, per_hour)) = real_hour_copies(work.path(), 10) else { return };
    let table = table("overlap");
    drop_table(&table).await;

    // Eight hours: long enough to still be loading after both refusals.
    let mut first = ingest_command(&table, work.path(), &dir, 8, &[]).spawn().unwrap();
    wait_loading(&table, 0, &mut first).await;
    // The same table on both engines, then on MongoDB alone: refused by each engine's lock.
    let limit = Duration::from_secs(60);
    refused(&output_within(&mut ingest_command(&table, work.path(), &dir, 8, &["--engines", "mongo"]), limit), "mongo");
    refused(&output_within(&mut ingest_command(&table, work.path(), &dir, 8, &[]), limit), "postgres");
    assert!(first.try_wait().unwrap().is_none(), "the refusals came while the first run was still loading");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "the first run is undisturbed: {}", text(&out));
    assert_exact(&table, 8 * per_hour).await;
    let ledger = mongo().await.collection::<mongodb::bson::Document>("ghbench_ledger");
    assert_eq!(ledger.count_documents(doc! {"table": &table, "state": {"$ne": "done"}}).await.unwrap(), 0, "no hour left marked loading");

    // A holder killed with -9 mid-run: its session lock dies with it, and its
    // lease (held by a process gone from this host) is taken over at once.
    let mut killed = ingest_command(&table, work.path(), &dir, 10, &[]).spawn().unwrap();
    wait_loading(&table, 8 * per_hour, &mut killed).await;
    killed.kill().unwrap();
    killed.wait().unwrap();
    let report = ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "10"]);
    assert_exact(&table, 10 * per_hour).await;
    assert_eq!(report["totals"]["engines"]["mongo"]["table_events"], 10 * per_hour);
    drop_table(&table).await;
}

/// Another container may have this host name and this boot: its ingest's
/// process id is not visible here, so its live lease must not be taken for a
/// dead one. Seen from its own namespace, the same lease of a gone process is.
#[tokio::test]
async fn a_lease_held_in_another_container_of_the_same_host_name_is_not_taken_over() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&real, dir.join("2015-01-01-0.json.gz")).unwrap();
    let table = table("container");
    drop_table(&table).await;
    let read = |path: &str| std::fs::read_to_string(path).unwrap().trim().to_string();
    let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap().display().to_string();
    let leases = mongo().await.collection::<Document>("ghbench_locks");
    leases.delete_one(doc! {"_id": &table}).await.unwrap();
    // Live for longer than the refused run can take on a busy shared server
    // (in one test binary, other areas' tests load the same MongoDB-wire
    // server): a lease that expired first would be taken over, rightly.
    let in_ten_minutes = DateTime::from_millis(DateTime::now().timestamp_millis() + 600_000);
    leases
        .insert_one(doc! {
            "_id": &table, "owner": ObjectId::new(), "host": read("/proc/sys/kernel/hostname"),
            "boot_id": read("/proc/sys/kernel/random/boot_id"), "pid_namespace": "pid:[4026599999]",
            // No process here has it (pid_max is below 2^22), but the holder's namespace is another.
            "pid": 1_i64 << 23, "started_at": DateTime::now(), "expires_at": in_ten_minutes,
        })
        .await
        .unwrap();
    let limit = Duration::from_secs(300);
    refused(&output_within(&mut ingest_command(&table, work.path(), &dir, 1, &["--engines", "mongo"]), limit), "mongo");

    leases.update_one(doc! {"_id": &table}, doc! {"$set": {"pid_namespace": namespace}}).await.unwrap();
    let out = output_within(&mut ingest_command(&table, work.path(), &dir, 1, &["--engines", "mongo"]), limit);
    assert!(out.status.success(), "a gone holder's lease in this namespace is taken over: {}", text(&out));
    assert_eq!(leases.count_documents(doc! {"_id": &table}).await.unwrap(), 0, "released at the end");
    drop_table(&table).await;
}

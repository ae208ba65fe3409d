//! Faults from the source side, reproduced for real: a download that arrives
//! damaged (an HTML page with 200, a body cut off without Content-Length), and
//! an hour of 0 events. After each, a plain rerun leaves both engines holding
//! exactly the valid events of every hour, with ledgers that agree.

use crate::util::{ingest_any, ingest_report};
use ghbench_testkit::faulty_http::{Reply, ScriptedHttp};
use ghbench_testkit::*;

const LINES: usize = 300;

fn hour_bytes(lines: &[Vec<u8>]) -> Vec<u8> {
    gzip_lines(&lines[..LINES])
}

#[tokio::test]
async fn damaged_downloads_are_retried_until_whole() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let body = hour_bytes(&real_lines(&real));
    let keep = body.len() / 2;
    // Hour 00: an HTML page first; hour 01: cut off first; both whole on the next try.
    let server = ScriptedHttp::start(move |path, n| match (path, n) {
        ("2015-01-01-0.json.gz", 1) => Reply::Html,
        ("2015-01-01-1.json.gz", 1) => Reply::CutWithoutLength { body: body.clone(), keep },
        (_, _) => Reply::Whole(body.clone()),
    });
    let work = tempfile::tempdir().unwrap();
    let table = table("damaged_retry");
    drop_table(&table).await;

    let args = ["--source", &server.url(), "--from", "2015-01-01T00", "--hours", "2", "--retries", "2"];
    let report = ingest_report(&table, work.path(), &args);
    assert_exact(&table, 2 * LINES as u64).await;
    let t = &report["totals"];
    assert_eq!(t["hours_loaded"], 2, "{t}");
    assert_eq!(t["file_defects"], 0, "no damage recorded: the retries got whole files");
    assert_eq!(t["retries"], 2);
    for hour in report["hours"].as_array().unwrap() {
        assert_eq!(hour["attempts"], 2, "{hour}");
    }
    assert_eq!((server.hits("2015-01-01-0.json.gz"), server.hits("2015-01-01-1.json.gz")), (2, 2));
    assert_eq!(ledger_hours(&table).await, (vec!["2015-01-01-0".into(), "2015-01-01-1".into()], vec!["2015-01-01-0".into(), "2015-01-01-1".into()]));
    drop_table(&table).await;
}

#[tokio::test]
async fn damage_that_persists_fails_the_hour_and_a_rerun_loads_it() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let body = hour_bytes(&real_lines(&real));
    let broken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = broken.clone();
    // Hour 00 is fine; hour 01 is an HTML page for as long as `broken` holds.
    let server = ScriptedHttp::start(move |path, _| {
        if path == "2015-01-01-1.json.gz" && flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::Html
        } else {
            Reply::Whole(body.clone())
        }
    });
    let work = tempfile::tempdir().unwrap();
    let table = table("damaged_fail");
    drop_table(&table).await;
    let url = server.url();
    let args = ["--source", url.as_str(), "--from", "2015-01-01T00", "--hours", "2", "--retries", "1"];

    let (out, report) = ingest_any(&table, work.path(), &args);
    assert!(!out.status.success(), "an hour failed: the exit status must say so");
    let report = report.expect("the report is written even when hours fail");
    assert_eq!(report["totals"]["hours_loaded"], 1);
    assert_eq!(report["totals"]["hours_failed"], 1);
    let failed = &report["hours"][1];
    assert_eq!((failed["status"].as_str(), failed["attempts"].as_u64()), (Some("failed"), Some(2)));
    assert!(failed["error"].as_str().unwrap().contains("damaged download"), "{failed}");
    assert!(text(&out).contains("--accept-damaged"), "the message says what to do");
    let said = text(&out);
    let line = said.lines().find(|l| l.starts_with("FAILED 2015-01-01T01")).expect("the failed hour is said");
    assert_eq!((line.matches("rerun").count(), line.matches("attempt").count()), (1, 1), "each said once: {line}");
    assert_eq!(server.hits("2015-01-01-1.json.gz"), 2);
    // Off a terminal (standard error is a pipe here) the log says each step
    // as it happens, with the time: the retry, the failure, the hour loaded.
    let log = String::from_utf8_lossy(&out.stderr);
    // `2026-11-26T02:40:01Z (+3 s) …`
    let stamped = |what: &str| log.lines().any(|l| l.contains(what) && l.get(10..11) == Some("T") && l.get(19..23) == Some("Z (+"));
    assert!(stamped("retrying 2015-01-01T01 (attempt 1 failed: "), "{log}");
    assert!(stamped("2015-01-01T01: Failed: "), "{log}");
    assert!(stamped("2015-01-01T00 loaded in "), "{log}");
    // Nothing of the damaged hour is recorded: the engines agree on hour 00 alone.
    assert_exact(&table, LINES as u64).await;
    assert_eq!(ledger_hours(&table).await, (vec!["2015-01-01-0".into()], vec!["2015-01-01-0".into()]));

    // A plain rerun once the source is healthy loads the hour whole.
    broken.store(false, std::sync::atomic::Ordering::SeqCst);
    let rerun = ingest_report(&table, work.path(), &args);
    assert_eq!((rerun["totals"]["hours_loaded"].as_u64(), rerun["totals"]["hours_skipped"].as_u64()), (Some(1), Some(1)));
    assert_exact(&table, 2 * LINES as u64).await;
    drop_table(&table).await;

    // --accept-damaged records what a still damaged file held (nothing here) as a damaged hour.
    broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let accept: Vec<&str> = args.iter().copied().chain(["--accept-damaged"]).collect();
    let accepted = ingest_report(&table, work.path(), &accept);
    assert_eq!((accepted["totals"]["hours_loaded"].as_u64(), accepted["totals"]["file_defects"].as_u64()), (Some(2), Some(1)));
    assert_exact(&table, LINES as u64).await;
    drop_table(&table).await;
}

#[tokio::test]
async fn an_hour_of_no_events_keeps_both_ledgers_in_step() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let lines = real_lines(&real);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    // A local empty file: recorded in both engines as a damaged hour of 0 events.
    std::fs::write(dir.join("2015-01-01-0.json.gz"), b"").unwrap();
    let table = table("zero_events");
    drop_table(&table).await;
    let report = ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"]);
    assert_eq!(report["totals"]["file_defects"], 1);

    // The file is replaced and the next hour added; the rerun must treat hour 00
    // alike in both engines (it is loaded, with 0 events, in both): kept, and
    // reported in both as stored from another copy of its file (exit 1).
    write_hour(&dir, "2015-01-01-0.json.gz", &lines[..50]);
    write_hour(&dir, "2015-01-01-1.json.gz", &lines[..50]);
    let (out, rerun) = ingest_any(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "2"]);
    let rerun = rerun.expect("a report");
    assert!(!out.status.success());
    assert_eq!(rerun["totals"]["hours_changed"], 1);
    let engines: Vec<&str> = rerun["changed"].as_array().unwrap().iter().map(|c| c["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["postgres", "mongo"]);
    assert_eq!(rerun["totals"]["hours_skipped"], 0);
    assert_eq!(rerun["totals"]["hours_loaded"], 1);
    assert_exact(&table, 50).await;
    let both = vec!["2015-01-01-0".to_string(), "2015-01-01-1".to_string()];
    assert_eq!(ledger_hours(&table).await, (both.clone(), both));
    drop_table(&table).await;
}

/// An hour to load again that the one-pass removal did not take (its source
/// did not have it when the run looked) is removed as it loads; on
/// PostgreSQL that is a pass over the whole table (an hour's rows are found
/// by the transaction that wrote them), so the per-step `--timeout` must not
/// cut it, as it would every time on a year of data. Here a session holding
/// the table in SHARE mode for longer than that timeout makes the pass last.
#[tokio::test]
async fn replacing_a_postgres_hour_is_a_whole_table_step_not_cut_by_the_step_timeout() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let body = hour_bytes(&real_lines(&real));
    // Request 1 loads the hour; request 2, the reload's look before removing, finds nothing; then it is there.
    let server = ScriptedHttp::start(move |_, n| if n == 2 { Reply::NotFound } else { Reply::Whole(body.clone()) });
    let work = tempfile::tempdir().unwrap();
    let table = table("replace_step");
    drop_table(&table).await;
    let url = server.url();
    let args = ["--engines", "postgres", "--source", url.as_str(), "--from", "2015-01-01T00"];
    ingest_report(&table, work.path(), &args);

    let holder = pg().await;
    holder.batch_execute(&format!("BEGIN; LOCK TABLE {table} IN SHARE MODE")).await.unwrap();
    let started = std::time::Instant::now();
    let report = work.path().join("reload.json");
    let mut reload = std::process::Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--table", &table, "--pg-url", &pg_url(), "--reload", "2015-01-01T00", "--timeout", "1", "--retries", "0"])
        .args(["--engines", "postgres", "--source", url.as_str()])
        .arg("--quarantine-dir")
        .arg(work.path().join("quarantine"))
        .arg("--report")
        .arg(&report)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let held = std::time::Duration::from_secs(4);
    tokio::time::sleep(held).await;
    assert!(reload.try_wait().unwrap().is_none(), "the replacement waited for the table, past the 1 s step limit");
    holder.batch_execute("COMMIT").await.unwrap();
    let out = tokio::task::spawn_blocking(move || reload.wait_with_output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(started.elapsed() >= held);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!((report["totals"]["hours_loaded"].as_u64(), report["totals"]["retries"].as_u64()), (Some(1), Some(0)), "{}", report["totals"]);
    assert_eq!(server.hits("2015-01-01-0.json.gz"), 3, "loaded, looked for, loaded again");
    let rows: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
    assert_eq!(rows as usize, LINES, "the hour exactly once");
    drop_table(&table).await;
}

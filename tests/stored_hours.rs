//! Stored hours that are no longer what their ledger says, found and repaired
//! for real: a polars Parquet file cut short or changed on disk (found by
//! `query`, which names the file, and reloaded by an ingest rerun), `ingest
//! --reload` replacing chosen hours exactly once, and an hour loaded from a
//! damaged copy of its file reported once the good file is back, then
//! repaired by `--reload`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ghbench_testkit::*;
use serde_json::Value;

/// A folder with the real hour in it (a link: the data is never copied).
fn source_with_real_hour(work: &Path, real: &Path) -> PathBuf {
    let source = empty_source(work);
    std::os::unix::fs::symlink(real, source.join(REAL_HOUR_FILE)).unwrap();
    source
}

/// An empty folder of hours in `work`.
fn empty_source(work: &Path) -> PathBuf {
    let source = work.join("hours");
    std::fs::create_dir_all(&source).unwrap();
    source
}

/// `ghbench` with the shared servers and the test's own polars folder.
fn ghbench(work: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(args)
        .args(["--pg-url", &pg_url(), "--mongo-url", &mongo_url()])
        .arg("--polars-dir")
        .arg(work.join("polars"))
        .env_remove("GHBENCH_POLARS_DIR")
        .output()
        .unwrap();
    eprintln!("ghbench {}:\n{}", args.join(" "), text(&out));
    out
}

/// `ghbench ingest` from `source` into `table` on `engines`, plus `extra`.
fn ingest_from(work: &Path, source: &Path, table: &str, engines: &str, extra: &[&str]) -> std::process::Output {
    let quarantine = work.join("quarantine");
    let mut args = vec!["ingest", "--engines", engines, "--table", table, "--source", source.to_str().unwrap()];
    args.extend(["--quarantine-dir", quarantine.to_str().unwrap()]);
    args.extend(extra);
    ghbench(work, &args)
}

fn polars_entry(work: &Path, table: &str, stem: &str) -> Value {
    serde_json::from_slice(&std::fs::read(work.join("polars").join(table).join(format!("{stem}.ledger.json"))).unwrap()).unwrap()
}

fn parquet(work: &Path, table: &str, stem: &str) -> PathBuf {
    work.join("polars").join(table).join(format!("{stem}.parquet"))
}

async fn pg_rows(table: &str) -> i64 {
    pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0)
}

/// The PostgreSQL ledger's (hour, events) for the table.
async fn pg_ledger(table: &str) -> Vec<(String, i64)> {
    let rows = pg().await.query("SELECT hour, events FROM ghbench_ledger WHERE engine = 'postgres' AND tbl = $1 ORDER BY hour", &[&table]).await.unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

#[test]
fn a_damaged_polars_file_is_named_by_query_and_reloaded_by_a_rerun() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = source_with_real_hour(work, &real);
    let table = table("damaged_parquet");
    assert!(ingest_from(work, &source, &table, "polars", &["--from", HOUR]).status.success());
    let file = parquet(work, &table, "2015-01-01-0");
    let whole = std::fs::read(&file).unwrap();
    let entry = polars_entry(work, &table, "2015-01-01-0");
    assert_eq!(entry["parquet_bytes"].as_u64(), Some(whole.len() as u64), "the entry records the file's size");
    assert!(entry["parquet_digest"].as_str().is_some_and(|d| d.starts_with("blake3:")), "and its checksum: {entry}");

    // Cut short on disk: the query names the file and the hour, and what to run.
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let out = ghbench(work, &["query", "A", "--engines", "polars", "--table", &table, "--repeat", "1", "--output", work.join("results").to_str().unwrap()]);
    let said = text(&out);
    assert!(said.contains(file.to_str().unwrap()), "the damaged file is named: {said}");
    assert!(said.contains("of hour 2015-01-01-0") && said.contains("ghbench ingest --reload 2015-01-01T00 --engines polars"), "{said}");

    // A rerun finds it and loads the hour again, saying so.
    let out = ingest_from(work, &source, &table, "polars", &["--from", HOUR]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("reloading 2015-01-01T00 on polars: its stored copy is not whole"), "{said}");
    assert_eq!(std::fs::read(&file).unwrap().len(), whole.len(), "the hour's file is whole again");

    // Same size, other bytes: only the checksum tells; the rerun does.
    let mut changed = whole.clone();
    let middle = changed.len() / 2;
    changed[middle] ^= 0xff;
    std::fs::write(&file, &changed).unwrap();
    let said = text(&ingest_from(work, &source, &table, "polars", &["--from", HOUR]));
    assert!(said.contains("has another checksum"), "{said}");
    assert!(said.contains("1 loaded, 0 skipped"), "{said}");
    assert_eq!(polars_entry(work, &table, "2015-01-01-0")["events"], 7702);

    // An entry from before sizes and checksums is accepted, and that is said once.
    let mut old = polars_entry(work, &table, "2015-01-01-0");
    old.as_object_mut().unwrap().retain(|k, _| !k.starts_with("parquet_") && k != "source_digest" && k != "retries");
    std::fs::write(work.join("polars").join(&table).join("2015-01-01-0.ledger.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    let said = text(&ingest_from(work, &source, &table, "polars", &["--from", HOUR]));
    assert!(said.contains("0 loaded, 1 skipped"), "{said}");
    assert_eq!(said.matches("are not checked").count(), 1, "said once: {said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_replaces_chosen_hours_exactly_once_on_postgres_and_polars() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = source_with_real_hour(work, &real);
    let lines = real_lines(&real);
    write_hour(&source, "2015-01-01-1.json.gz", &lines[..100]);
    let table = table("reload");
    let engines = "postgres,polars";
    for (bad, why) in [("2015-01-01T05..2015-01-01T02", "the last hour is before the first"), ("noon", "invalid hour 'noon'"), (",", "name at least one hour")] {
        let out = ingest_from(work, &source, &table, engines, &["--reload", bad]);
        assert!(!out.status.success() && text(&out).contains(why), "{bad}: {}", text(&out));
    }
    assert!(ingest_from(work, &source, &table, engines, &["--from", HOUR, "--hours", "2", "--drop"]).status.success());
    assert_eq!(pg_rows(&table).await, 7802);

    // Hour 1's file now holds 50 lines: a plain rerun keeps the stored copy and says so.
    write_hour(&source, "2015-01-01-1.json.gz", &lines[..50]);
    let out = ingest_from(work, &source, &table, engines, &["--from", HOUR, "--hours", "2"]);
    let said = text(&out);
    assert!(!out.status.success(), "the data is not what the source holds: {said}");
    assert!(said.contains("hour 2015-01-01T01 on postgres was loaded from another copy of its file"), "{said}");
    assert!(said.contains("reload it with --reload 2015-01-01T01"), "{said}");
    assert_eq!(pg_rows(&table).await, 7802, "kept as it was");

    // --reload of that hour alone (no range): replaced once, hour 0 untouched,
    // and an hour never loaded (2) is simply loaded.
    write_hour(&source, "2015-01-01-2.json.gz", &lines[..10]);
    for round in 0..2 {
        let out = ingest_from(work, &source, &table, engines, &["--reload", "2015-01-01T01..2015-01-01T02"]);
        let said = text(&out);
        assert!(out.status.success(), "{said}");
        assert!(said.contains("2 requested, 2 loaded, 0 skipped"), "{said}");
        // Hour 2 is stored from the second round on; one line for the hours reloaded for one reason.
        let reloaded = if round == 0 { "2015-01-01T01" } else { "2015-01-01T01 .. 2015-01-01T02 (2 hours)" };
        assert!(said.contains(&format!("reloading {reloaded} on polars: asked for with --reload")), "{said}");
        assert_eq!(pg_rows(&table).await, 7702 + 50 + 10, "each hour once, however often it is reloaded");
        let ledger = pg_ledger(&table).await;
        assert_eq!(ledger, [("2015-01-01-0".into(), 7702), ("2015-01-01-1".into(), 50), ("2015-01-01-2".into(), 10)]);
        assert_eq!(polars_entry(work, &table, "2015-01-01-1")["events"], 50);
        assert_eq!(polars_entry(work, &table, "2015-01-01-2")["events"], 10);
        let files: Vec<_> = std::fs::read_dir(work.join("polars").join(&table)).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(files.len(), 6, "one file and one entry per hour, nothing left aside: {files:?}");
    }
    // The plain rerun now agrees with the source.
    let said = text(&ingest_from(work, &source, &table, engines, &["--from", HOUR, "--hours", "3"]));
    assert!(said.contains("0 loaded, 3 skipped"), "{said}");
    drop_table(&table).await;
}

/// `--reload` removes the hours it replaces in one pass over the table before
/// loading, under no time limit of ghbench's own: a session holding the table
/// for longer than the per-step `--timeout` delays it and cuts nothing (the
/// per-hour replace it stands in for timed out and retried); each hour's rows
/// are deleted exactly once (the server's statistics say so) and loaded once.
/// An hour the source no longer has keeps its stored copy.
#[tokio::test(flavor = "multi_thread")]
async fn reload_of_several_hours_removes_them_in_one_pass_without_a_time_limit() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = source_with_real_hour(work, &real);
    let lines = real_lines(&real);
    write_hour(&source, "2015-01-01-1.json.gz", &lines[..300]);
    write_hour(&source, "2015-01-01-2.json.gz", &lines[..200]);
    let table = table("reload_pass");
    assert!(ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "3", "--drop"]).status.success());
    let deleted = || async {
        let pg = pg().await;
        pg.execute("SELECT pg_stat_force_next_flush()", &[]).await.ok();
        let sql = "SELECT n_tup_del FROM pg_stat_user_tables WHERE relid = to_regclass($1)";
        pg.query_one(sql, &[&table]).await.unwrap().get::<_, i64>(0)
    };
    let before = deleted().await;
    std::fs::remove_file(source.join("2015-01-01-2.json.gz")).unwrap();
    // Another session holds the table for 4 s: the delete waits for it.
    let holder = pg().await;
    holder.batch_execute(&format!("BEGIN; LOCK TABLE {table} IN SHARE MODE")).await.unwrap();
    let release = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(4)).await;
        holder.batch_execute("COMMIT").await.unwrap();
    });
    let (work_dir, source_dir, name) = (work.to_path_buf(), source.clone(), table.clone());
    let out = tokio::task::spawn_blocking(move || {
        ingest_from(&work_dir, &source_dir, &name, "postgres", &["--reload", "2015-01-01T01..2015-01-01T02", "--timeout", "2", "--report", work_dir.join("reload.json").to_str().unwrap()])
    })
    .await
    .unwrap();
    release.await.unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let report: Value = serde_json::from_slice(&std::fs::read(work.join("reload.json")).unwrap()).unwrap();
    let totals = &report["totals"];
    assert_eq!((totals["hours_loaded"].as_u64(), totals["hours_missing"].as_u64(), totals["retries"].as_u64()), (Some(1), Some(1), Some(0)), "{said}");
    assert_eq!(deleted().await - before, 300, "the reloaded hour's rows deleted exactly once, the missing hour's not at all");
    assert_eq!(pg_rows(&table).await, 7702 + 300 + 200, "loaded once, and the missing hour's stored copy kept");
    assert_eq!(pg_ledger(&table).await.len(), 3, "{:?}", pg_ledger(&table).await);
    drop_table(&table).await;
}

/// The server's statistic `column` of `table` (e.g. `seq_tup_read`, the
/// rows its sequential scans read) once the sessions that touched it have
/// reported (two reads 300 ms apart agree).
async fn settled_stat(table: &str, column: &str) -> i64 {
    let client = pg().await;
    let mut last = -1;
    for _ in 0..40 {
        client.batch_execute("SELECT pg_stat_clear_snapshot()").await.unwrap();
        let sql = format!("SELECT {column} FROM pg_stat_user_tables WHERE relname = $1");
        let now: i64 = client.query_one(&sql, &[&table]).await.unwrap().get(0);
        if now == last {
            return now;
        }
        last = now;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    last
}

/// A rerun about one hour of a table of eight reads none of the other seven
/// (the server's statistics show it): not to check them, not to count the
/// table. `--check-stored` counts it all.
#[tokio::test(flavor = "multi_thread")]
async fn a_rerun_about_one_hour_of_eight_does_not_read_the_table() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = empty_source(work);
    let lines = real_lines(&real);
    for hour in 0..9 {
        write_hour(&source, &format!("2015-01-01-{hour}.json.gz"), &lines[hour * 500..(hour + 1) * 500]);
    }
    let table = table("touch_one");
    assert!(ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "8", "--drop"]).status.success());
    let before = settled_stat(&table, "seq_tup_read").await;
    let out = ingest_from(work, &source, &table, "postgres", &["--from", "2015-01-01T08"]);
    assert!(out.status.success() && text(&out).contains("1 loaded, 0 skipped"), "{}", text(&out));
    let touched = settled_stat(&table, "seq_tup_read").await - before;
    assert!(touched < 4000, "a run about one hour read {touched} rows of the 4000 stored before it");
    let before = settled_stat(&table, "seq_tup_read").await;
    let out = ingest_from(work, &source, &table, "postgres", &["--from", "2015-01-01T08", "--check-stored"]);
    assert!(out.status.success() && text(&out).contains("0 loaded, 1 skipped"), "{}", text(&out));
    assert!(settled_stat(&table, "seq_tup_read").await - before >= 4500, "--check-stored counts the whole table");
    drop_table(&table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_hour_loaded_from_a_damaged_copy_is_reported_and_reload_repairs_it() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = work.join("hours");
    std::fs::create_dir_all(&source).unwrap();
    let whole = std::fs::read(&real).unwrap();
    // A copy cut short, as a download interrupted or a disk that filled.
    std::fs::write(source.join(REAL_HOUR_FILE), &whole[..whole.len() / 3]).unwrap();
    let table = table("damaged_copy");
    let engines = "postgres,polars";
    assert!(ingest_from(work, &source, &table, engines, &["--from", HOUR, "--drop"]).status.success());
    let partial = pg_rows(&table).await;
    assert!(partial > 0 && partial < 7702, "{partial}");

    // Rerun with the same damaged copy: kept, and said to be a damaged copy.
    let said = text(&ingest_from(work, &source, &table, engines, &["--from", HOUR]));
    assert!(said.contains("hour 2015-01-01T00 on postgres is stored from a damaged copy of its file (truncated"), "{said}");

    // The good file is back: the rerun does not skip the hour silently.
    std::fs::remove_file(source.join(REAL_HOUR_FILE)).unwrap();
    std::os::unix::fs::symlink(&real, source.join(REAL_HOUR_FILE)).unwrap();
    let out = ingest_from(work, &source, &table, engines, &["--from", HOUR]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    for engine in ["postgres", "polars"] {
        assert!(said.contains(&format!("hour 2015-01-01T00 on {engine} was loaded from another copy of its file (stored from")), "{said}");
    }
    assert!(said.contains("0 skipped") && said.contains("1 stored from another copy of their file"), "{said}");
    assert_eq!(pg_rows(&table).await, partial, "nothing changed without --reload");

    let out = ingest_from(work, &source, &table, engines, &["--reload", HOUR]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(pg_rows(&table).await, 7702);
    assert_eq!(pg_ledger(&table).await, [("2015-01-01-0".into(), 7702)]);
    let entry = polars_entry(work, &table, "2015-01-01-0");
    assert_eq!(entry["events"], 7702);
    assert_eq!(entry["file_defect"], Value::Null, "the entry is the good copy's");
    let (_, digest) = digest_of(&real);
    assert_eq!(entry["source_digest"].as_str(), Some(digest.as_str()));
    drop_table(&table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_and_lost_documents_on_mongo_and_normalized_with_one_small_hour() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = empty_source(work);
    let lines = real_lines(&real);
    write_hour(&source, REAL_HOUR_FILE, &lines[..40]);
    let table = table("reload_small");
    let engines = "mongo,normalized";
    assert!(ingest_from(work, &source, &table, engines, &["--from", HOUR, "--drop"]).status.success());
    let db = mongo().await;
    let documents = || async { db.collection::<mongodb::bson::Document>(&table).count_documents(mongodb::bson::doc! {}).await.unwrap() };
    let root = format!("normalized.\"{table}\"");
    let normalized = || async { pg().await.query_one(&format!("SELECT count(*) FROM {root}"), &[]).await.unwrap().get::<_, i64>(0) };

    write_hour(&source, REAL_HOUR_FILE, &lines[..30]);
    let out = ingest_from(work, &source, &table, engines, &["--reload", HOUR]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(documents().await, 30, "the old hour's documents are gone, the new ones stored once");
    assert_eq!(normalized().await, 30);
    let (_, mongo_hours) = ledger_hours(&table).await;
    assert_eq!(mongo_hours, ["2015-01-01-0"]);

    // Documents lost behind the ledger's back. MongoDB writes an hour's
    // documents apart from its entry: the rerun counts the hour it touches
    // (its metadata count differing) and reloads it. The normalized rows
    // commit with their entry: only --check-stored counts them.
    db.collection::<mongodb::bson::Document>(&table).delete_many(mongodb::bson::doc! {"_id": {"$in": ["2015-01-01-0/1", "2015-01-01-0/2"]}}).await.unwrap();
    pg().await.batch_execute(&format!("DELETE FROM {root} WHERE did IN (SELECT did FROM {root} LIMIT 3)")).await.unwrap();
    let out = ingest_from(work, &source, &table, engines, &["--from", HOUR]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("mongo collection {table} holds 28 of its rows where its ledger entry lists 30")), "{said}");
    assert!(!said.contains("normalized table"), "{said}");
    assert_eq!((documents().await, normalized().await), (30, 27));
    let out = ingest_from(work, &source, &table, engines, &["--from", HOUR, "--check-stored"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("normalized table {table} holds 27 of its rows where its ledger entry lists 30")), "{said}");
    assert_eq!((documents().await, normalized().await), (30, 30));
    ghbench_normalized::meta::drop_collection(&pg().await, &table).await.unwrap();
    drop_table(&table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_table_whose_count_differs_from_its_ledger_is_repaired_or_refused() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let source = source_with_real_hour(work, &real);
    write_hour(&source, "2015-01-01-1.json.gz", &real_lines(&real)[..100]);
    let table = table("count_differs");
    assert!(ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "2", "--drop"]).status.success());
    // Five rows of hour 1 deleted by hand.
    let hour_one = format!("(SELECT xmin FROM ghbench_ledger WHERE engine = 'postgres' AND tbl = '{table}' AND hour = '2015-01-01-1')");
    pg().await.batch_execute(&format!("DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table} WHERE xmin = {hour_one} LIMIT 5)")).await.unwrap();
    // A run without --check-stored trusts the ledger, which commits with the
    // rows: five of 7802 are within what the statistics are let differ by.
    let out = ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "2"]);
    assert!(text(&out).contains("0 loaded, 2 skipped"), "{}", text(&out));
    assert_eq!(pg_rows(&table).await, 7797);
    let check = ["--from", HOUR, "--hours", "2", "--check-stored"];
    let out = ingest_from(work, &source, &table, "postgres", &check);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("reloading 2015-01-01T01 on postgres: its stored copy is not whole: postgres table {table} holds 95 of its rows")), "{said}");
    assert!(said.contains("1 loaded, 1 skipped"), "hour 0 is whole and kept: {said}");
    assert_eq!(pg_rows(&table).await, 7802);

    // A row no hour wrote: the run refuses, and says what to do.
    pg().await.batch_execute(&format!("INSERT INTO {table} VALUES ('{{}}')")).await.unwrap();
    let out = ingest_from(work, &source, &table, "postgres", &check);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("7803 rows where its ledger lists 7802 events, 1 of them of no hour the ledger lists") && said.contains("--drop"), "{said}");

    // Most of the table gone by hand: the statistics say so without a count.
    pg().await.batch_execute(&format!("DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table} LIMIT 7000)")).await.unwrap();
    let live = settled_stat(&table, "n_live_tup").await;
    let out = ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "2"]);
    let said = text(&out);
    assert!(said.contains(&format!("estimates {live} rows where its ledger lists 7802 events (`ghbench ingest --check-stored` with the same --table")), "{said}");
    // All of it: an empty table is known for certain (its rows cannot be
    // told from rows written under other transactions: --drop, as counted).
    pg().await.batch_execute(&format!("TRUNCATE {table}")).await.unwrap();
    let out = ingest_from(work, &source, &table, "postgres", &["--from", HOUR, "--hours", "2"]);
    let said = text(&out);
    assert!(said.contains(&format!("postgres table {table} holds 0 of its rows where its ledger entry lists 7702")), "{said}");
    assert!(said.contains("load the table again with --drop"), "{said}");
    drop_table(&table).await;
}

/// The size and digest ghbench records for a file.
fn digest_of(path: &Path) -> (u64, String) {
    ghbench_ingest::digest::of_file(path).unwrap()
}

/// What `ghbench bench` does: with `reload_changed`, an hour stored from a
/// damaged copy is reloaded from the good file the source holds now.
#[tokio::test(flavor = "multi_thread")]
async fn reload_changed_reloads_an_hour_stored_from_another_copy() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("hours");
    std::fs::create_dir_all(&source).unwrap();
    let whole = std::fs::read(&real).unwrap();
    std::fs::write(source.join(REAL_HOUR_FILE), &whole[..whole.len() / 2]).unwrap();
    let table = table("reload_changed");
    let (plugin, config) = servers().engines().remove(0);
    let hour: ghbench_core::Hour = HOUR.parse().unwrap();
    let options = |drop: bool| ghbench_ingest::IngestOptions {
        drop,
        reload_changed: true,
        ..ingest_options(hour, source.clone(), vec![plugin.loader(&config)], ghbench::registry::builtin().policy(), table.parse().unwrap(), work.path().join("quarantine"))
    };
    let run = |drop| async move { ghbench_ingest::ingest(options(drop), std::sync::Arc::new(ghbench_ingest::Quiet)).await.unwrap() };
    let first = run(true).await;
    assert_eq!(first.totals.file_defects, 1);
    assert!(pg_rows(&table).await < 7702);

    std::fs::remove_file(source.join(REAL_HOUR_FILE)).unwrap();
    std::os::unix::fs::symlink(&real, source.join(REAL_HOUR_FILE)).unwrap();
    let rerun = run(false).await;
    assert_eq!((rerun.totals.hours_loaded, rerun.totals.hours_changed), (1, 0), "reloaded, not reported");
    assert_eq!(rerun.reloaded.len(), 1);
    assert!(rerun.reloaded[0].detail.starts_with("loaded from another copy of its file (stored from"), "{:?}", rerun.reloaded);
    assert_eq!(pg_rows(&table).await, 7702);
    assert_eq!(pg_ledger(&table).await, [("2015-01-01-0".into(), 7702)]);
    drop_table(&table).await;
}

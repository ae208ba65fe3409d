//! A ledger written by an older ghbench (keyed by table and hour only) is
//! upgraded in place: its hours stay loaded, now as the `postgres` engine's,
//! and a second engine in the same server would get keys of its own. On a
//! PostgreSQL cluster of the test's own, so the shared ledger is untouched.

use std::process::Command;

use ghbench_testkit::throwaway_pg::ThrowawayPg;
use ghbench_testkit::*;

/// The ledger as ghbench 52f25de and earlier created it.
const OLD_LEDGER: &str = "CREATE TABLE ghbench_ledger (
    tbl text NOT NULL, hour text NOT NULL, events bigint NOT NULL, lines bigint NOT NULL,
    quarantined bigint NOT NULL, sanitized bigint NOT NULL, compressed_bytes bigint NOT NULL,
    file_defect text, ghbench_version text NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tbl, hour))";

#[tokio::test(flavor = "multi_thread")]
async fn an_old_ledger_keeps_its_hours_and_gains_the_engine_key() {
    let Some(real) = real_hour() else { return };
    let Some(pg) = ThrowawayPg::start("ledger-upgrade") else { return };
    let work = tempfile::tempdir().unwrap();
    // The real hour, and a next hour of its first 100 lines.
    let source = work.path().join("hours");
    std::fs::create_dir(&source).unwrap();
    std::os::unix::fs::symlink(&real, source.join("2015-01-01-0.json.gz")).unwrap();
    write_hour(&source, "2015-01-01-1.json.gz", &real_lines(&real)[..100]);
    let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &pg.url()).await.unwrap();
    // An hour an older ghbench loaded: its rows and its ledger entry.
    client.batch_execute(OLD_LEDGER).await.unwrap();
    client.batch_execute("CREATE TABLE old_load (data jsonb); INSERT INTO old_load SELECT '{}'::jsonb FROM generate_series(1, 7702)").await.unwrap();
    // It read the whole file: its size is the one recorded (a rerun compares it).
    let size = std::fs::metadata(&real).unwrap().len();
    client
        .batch_execute(&format!("INSERT INTO ghbench_ledger VALUES ('old_load', '2015-01-01-0', 7702, 7702, 0, 0, {size}, NULL, '0.1.0', now())"))
        .await
        .unwrap();

    let ingest = |hours: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
            .args(["ingest", "--engines", "postgres", "--table", "old_load", "--pg-url", &pg.url()])
            .args(["--source", source.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", hours])
            .arg("--quarantine-dir")
            .arg(work.path().join("quarantine"))
            .output()
            .unwrap();
        let said = text(&out);
        eprintln!("{said}");
        assert!(out.status.success(), "{said}");
        said
    };
    let said = ingest("1");
    assert!(said.contains("0 loaded, 1 skipped (already loaded)"), "the old entry still counts: {said}");

    let key: Vec<String> = client
        .query(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
             WHERE i.indrelid = 'ghbench_ledger'::regclass AND i.indisprimary ORDER BY a.attnum",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(key, ["tbl", "hour", "engine"], "the primary key now holds the engine");
    let owner: String = client.query_one("SELECT engine FROM ghbench_ledger WHERE tbl = 'old_load'", &[]).await.unwrap().get(0);
    assert_eq!(owner, "postgres");

    // Another engine's entry for the same table and hour is its own row.
    client
        .batch_execute("INSERT INTO ghbench_ledger (engine, tbl, hour, events, lines, quarantined, sanitized, compressed_bytes, ghbench_version)
                        VALUES ('normalized', 'old_load', '2015-01-01-0', 1, 1, 0, 0, 0, 'test')")
        .await
        .unwrap();
    // The run still sees its own hour only, and records a new one with its load time.
    let said = ingest("2");
    assert!(said.contains("1 loaded, 1 skipped (already loaded)"), "{said}");
    let seconds: Vec<Option<f64>> = client
        .query("SELECT seconds FROM ghbench_ledger WHERE engine = 'postgres' ORDER BY hour", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(seconds.len(), 2);
    assert_eq!(seconds[0], None, "the old entry was not timed");
    assert!(seconds[1].is_some_and(|s| s > 0.0), "the new hour's load time is recorded");
    // The old entry gains the source's digest and the retries as unknown; the new one records them.
    let rows = client
        .query("SELECT source_digest, retries FROM ghbench_ledger WHERE engine = 'postgres' ORDER BY hour", &[])
        .await
        .unwrap();
    let kept: Vec<(Option<String>, Option<i32>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(kept[0], (None, None), "nothing is made up for the old entry");
    assert!(kept[1].0.as_deref().is_some_and(|d| d.starts_with("blake3:")), "{kept:?}");
    assert_eq!(kept[1].1, Some(0));
    // Its rows cannot be told apart (written apart from their entry): --reload refuses and says what to do.
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", "postgres", "--table", "old_load", "--pg-url", &pg.url(), "--reload", "2015-01-01T00"])
        .args(["--source", source.to_str().unwrap()])
        .arg("--quarantine-dir")
        .arg(work.path().join("quarantine"))
        .output()
        .unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("cannot reload hour 2015-01-01-0 of old_load") && said.contains("--drop"), "{said}");
    let rows: i64 = client.query_one("SELECT count(*) FROM old_load", &[]).await.unwrap().get(0);
    assert_eq!(rows, 7702 + 100, "nothing changed");
}

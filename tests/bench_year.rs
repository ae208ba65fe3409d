//! `just bench-year` as CI runs it: a month of hour files (744) from a local
//! HTTP mirror into every engine, each load killed with SIGKILL part way and
//! run again, then the indexes and Queries A-D, beside the same events in two
//! hour files. Read from the records the script leaves, not from its words.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ghbench_testkit::*;
use serde_json::Value;

const ENGINES: [&str; 8] = ["postgres", "postgres-tuned", "normalized", "mysql", "mysql-tuned", "mongo", "mongo-tuned", "polars"];
const MONTH: u64 = 744;

/// Kills a process group when dropped.
struct KillGroup(i32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // SAFETY: kill(2) with a negated group id signals that group alone.
        unsafe { libc::kill(-self.0, libc::SIGKILL) };
    }
}

fn record(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// engine -> query -> the whole answer's digest, from a query record.
fn digests(record: &Value) -> std::collections::BTreeMap<(String, String), String> {
    let mut out = std::collections::BTreeMap::new();
    for query in record["queries"].as_array().unwrap() {
        for result in query["engines"].as_array().unwrap() {
            let digest = result["answer_digest"].as_str().unwrap_or_else(|| panic!("no answer digest: {result}"));
            out.insert((result["engine"].as_str().unwrap().to_string(), query["query"].as_str().unwrap().to_string()), digest.to_string());
        }
    }
    out
}

#[test]
fn a_month_of_hour_files_loads_once_on_every_engine_through_a_kill_and_answers_as_two_files_do() {
    // Alone: eight loads of 744 hours each, two on SecantusDB, would hold up
    // another test's steps past their timeouts (a real-hour load over HTTP
    // beside it failed once).
    let _servers = alone_with_servers();
    let work = tempfile::tempdir().unwrap();
    let table = table("month");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("bash");
    // A process group of its own, killed whole when the test ends: a recipe
    // killed at the time limit cannot run its trap, and its mirrors and load
    // would outlive the test.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .arg(repo.join("scripts/bench-year.sh"))
        .args(["2", "1000", "2"])
        .env("GHBENCH_BIN", env!("CARGO_BIN_EXE_ghbench"))
        .env("GHBENCH_BENCH_WORK", work.path())
        .env("GHBENCH_YEAR_HOURS", MONTH.to_string())
        .env("GHBENCH_YEAR_TABLE", &table)
        .env("DATABASE_URL", pg_url())
        .env("MONGODB_URI", mongo_url())
        .env("MYSQL_URL", mysql_url());
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = Owned::spawn(&mut command);
    let _group = KillGroup(child.id() as i32);
    let out = child.wait_within(Duration::from_secs(900));
    let said = text(&out);
    eprintln!("{said}");
    assert!(out.status.success(), "the recipe failed: {said}");
    let results = work.path().join("results");

    for engine in ENGINES {
        let rerun = record(&results.join(format!("load-{engine}-year.json")));
        let totals = &rerun["totals"];
        let (kept, loaded) = (totals["hours_skipped"].as_u64().unwrap(), totals["hours_loaded"].as_u64().unwrap());
        assert!(kept > 0 && loaded > 0, "{engine}: killed part way, so the rerun keeps some hours and loads the rest: {kept} kept, {loaded} loaded");
        assert_eq!(kept + loaded, MONTH, "{engine}: every hour of the month, once");
        assert_eq!(totals["engines"][engine]["table_events"].as_u64(), Some(2000), "{engine}: every event exactly once");
        assert_eq!(rerun["source"].as_str().map(|s| s.starts_with("http://127.0.0.1:")), Some(true), "{engine}: loaded over HTTP");
        let few = record(&results.join(format!("load-{engine}-few.json")));
        assert_eq!(few["source"].as_str().map(|s| s.starts_with("http://127.0.0.1:")), Some(true), "{engine}: the two files over HTTP too");
    }
    // polars' month is one segment to read, not 744 files.
    let parquet = std::fs::read_dir(work.path().join("polars").join(&table)).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".parquet")).count();
    assert_eq!(parquet, 1, "the month's hours merged into one segment");

    let (month_record, few_record) = (record(&results.join(format!("query-{table}.json"))), record(&results.join(format!("query-{table}_few.json"))));
    for run in [&month_record, &few_record] {
        // Each table's exact row count against its ledger, counted by `query` before timing.
        assert_eq!(run["context"]["data_consistency"]["agree"], true, "{}", run["context"]["data_consistency"]);
    }
    let (month, few) = (digests(&month_record), digests(&few_record));
    assert_eq!(month.len(), ENGINES.len() * 4, "A-D on every engine: {month:?}");
    assert_eq!(month, few, "the same answers over the month's files as over two");
    assert!(said.contains("answers compared whole") && !said.contains("WRONG"), "{said}");
}

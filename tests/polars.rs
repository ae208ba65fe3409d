//! The embedded polars engine through the real commands: the real hour
//! loaded beside PostgreSQL and the MongoDB-wire server gives the same
//! answers to Queries A–D; a key first seen late in an hour is kept (polars'
//! own NDJSON inference would drop it); with no server answering, ingest and
//! query work on polars alone; a load killed with SIGKILL leaves no partial
//! hour, and the rerun stores every hour once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ghbench_testkit::*;
use serde_json::Value;

/// Runs ghbench with `env` (the servers' URLs, or ones nothing answers at).
fn ghbench_with(env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(args).env_remove("GHBENCH_POLARS_DIR");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = output_within(&mut command, Duration::from_secs(600));
    eprintln!("ghbench {}:\n{}", args.join(" "), text(&out));
    out
}

fn ghbench(args: &[&str]) -> std::process::Output {
    ghbench_with(&[("DATABASE_URL", &pg_url()), ("MONGODB_URI", &mongo_url())], args)
}

/// The one results JSON `ghbench query --output dir` wrote.
fn results(dir: &Path) -> Value {
    let file = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).expect("a results file");
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

fn engine<'a>(record: &'a Value, name: &str) -> &'a Value {
    record["context"]["engines"].as_array().unwrap().iter().find(|e| e["engine"] == name).unwrap_or_else(|| panic!("no {name} in {record}"))
}

/// The names of the files in a table's folder.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn the_real_hour_gives_the_same_answers_on_polars_postgres_and_mongo() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let shared = real.parent().unwrap().to_str().unwrap();
    let table = table("polars_real");
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("polars");
    let quarantine = work.path().join("q");
    let common = ["--engines", "postgres,mongo,polars", "--table", &table, "--polars-dir", data.to_str().unwrap()];

    let mut ingest = vec!["ingest", "--source", shared, "--from", "2015-01-01T00", "--drop", "--quarantine-dir", quarantine.to_str().unwrap()];
    ingest.extend(common);
    assert!(ghbench(&ingest).status.success());
    assert_eq!(files(&data.join(&table)), ["2015-01-01-0.ledger.json", "2015-01-01-0.parquet"], "one file per hour and its ledger entry, nothing temporary");
    let entry: Value = serde_json::from_slice(&std::fs::read(data.join(&table).join("2015-01-01-0.ledger.json")).unwrap()).unwrap();
    assert_eq!((entry["events"].as_u64(), entry["lines"].as_u64()), (Some(7702), Some(7702)));

    let mut index = vec!["index"];
    index.extend(common);
    let out = ghbench(&index);
    assert!(out.status.success());
    assert!(text(&out).contains("polars") && text(&out).contains("takes no indexes"));

    let output = work.path().join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", output.to_str().unwrap()];
    query.extend(common);
    assert!(ghbench(&query).status.success(), "every query agrees on every engine");
    let record = results(&output);
    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 8, "A-D, both variants");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
        let polars = q["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "polars").unwrap();
        assert!(polars["plan"]["text"].as_str().is_some_and(|t| t.contains("Parquet") || t.contains("SCAN")), "{}", polars["plan"]);
    }
    let corrected_a = queries.iter().find(|q| q["query"] == "A" && q["variant"] == "corrected").unwrap();
    assert!(corrected_a["engines"][0]["rows"].as_u64().unwrap() > 100, "A has real rows to compare");
    let polars = engine(&record, "polars");
    assert_eq!(polars["data"]["events"], 7702);
    assert!(polars["data"]["load_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(polars["storage"]["rows"], 7702, "rows counted from the files' footers");
    let parquet = polars["storage"]["table_bytes"].as_u64().unwrap();
    assert!(parquet > 100_000 && parquet < std::fs::metadata(&real).unwrap().len() * 3, "{parquet} bytes of Parquet");
    assert_eq!(polars["server"]["product"], "polars");
    assert!(polars["server"]["caveat"].as_str().unwrap().contains("embedded"));
    // Its data against the memory its workers have here: the machine's.
    assert_eq!(polars["memory"]["bytes"], record["context"]["machine"]["memory_bytes"], "{}", polars["memory"]);
    assert!(record["context"]["cold"]["label"].as_str().unwrap().contains("polars data 0.0"), "{}", record["context"]["cold"]["label"]);
    drop_everywhere(&table);
}

fn drop_everywhere(table: &str) {
    tokio::runtime::Runtime::new().unwrap().block_on(drop_table(table));
}

/// `n` JSON lines, the last the only one with `payload.issue.comments`.
fn late_key_hour(dir: &Path, n: usize) -> PathBuf {
    let mut lines: Vec<Vec<u8>> = (0..n)
        .map(|i| format!(r#"{{"id":"{i}","type":"IssueCommentEvent","actor":{{"login":"a{}"}},"repo":{{"name":"r/early"}},"payload":{{"action":"created"}}}}"#, i % 7).into_bytes())
        .collect();
    lines.push(br#"{"id":"late","type":"IssueCommentEvent","actor":{"login":"z"},"repo":{"name":"r/late"},"payload":{"action":"created","issue":{"comments":7}}}"#.to_vec());
    write_hour(dir, "2015-01-01-0.json.gz", &lines)
}

#[test]
fn with_no_server_answering_ingest_and_query_run_on_polars_alone_and_keep_late_keys() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    std::fs::create_dir(&source).unwrap();
    late_key_hour(&source, 5000);
    // Nothing listens on port 1: both servers refuse at once.
    let nowhere = [("DATABASE_URL", "postgresql://ghbench@127.0.0.1:1/ghbench"), ("MONGODB_URI", "mongodb://127.0.0.1:1/ghbench?serverSelectionTimeoutMS=2000")];
    let data = work.path().join("polars");
    let dir = ["--polars-dir", data.to_str().unwrap()];

    let mut ingest = vec!["ingest", "--source", source.to_str().unwrap(), "--from", "2015-01-01T00"];
    ingest.extend(dir);
    let out = ghbench_with(&nowhere, &ingest);
    assert!(out.status.success());
    let said = text(&out);
    assert_eq!(said.matches("no database server answers").count(), 1, "one notice: {said}");
    assert!(said.contains("postgres at") && said.contains("mongo at"), "names what did not answer");
    assert!(data.join("github2015/2015-01-01-0.parquet").is_file());

    let output = work.path().join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", output.to_str().unwrap()];
    query.extend(dir);
    let out = ghbench_with(&nowhere, &query);
    assert!(out.status.success());
    let record = results(&output);
    let engines: Vec<&Value> = record["context"]["engines"].as_array().unwrap().iter().map(|e| &e["engine"]).collect();
    assert_eq!(engines, ["polars"]);
    let d = record["queries"].as_array().unwrap().iter().find(|q| q["query"] == "D" && q["variant"] == "corrected").unwrap();
    assert_eq!(d["engines"][0]["rows"], 1, "the one event with comments, first seen on the last line: {d}");
    let b = record["queries"].as_array().unwrap().iter().find(|q| q["query"] == "B" && q["variant"] == "corrected").unwrap();
    assert_eq!(b["engines"][0]["rows"], 1, "one event type");
    assert_eq!(engine(&record, "polars")["data"]["events"], 5001);

    let help = text(&ghbench_with(&[], &["ingest", "--help"]));
    assert!(help.contains("polars (no server) stands in"), "--help says when polars stands in: {help}");
    assert!(help.contains("[env: GHBENCH_POLARS_DIR]"), "an unset variable is named, not shown as set to nothing: {help}");
    let help = text(&ghbench_with(&[("GHBENCH_POLARS_DIR", "/srv/parquet")], &["ingest", "--help"]));
    assert!(help.contains("[env: GHBENCH_POLARS_DIR=/srv/parquet]"), "a set one shows its value: {help}");

    // Asked for by name, an unreachable server is an error, not replaced.
    let mut named = vec!["query", "B", "--engines", "postgres", "--output", output.to_str().unwrap()];
    named.extend(dir);
    let out = ghbench_with(&nowhere, &named);
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot reach postgres"), "{}", text(&out));
}

/// kill -9 while the load merges its 48 hours into a segment (its temporary
/// file being written): the rerun, which loads nothing, stores every hour
/// exactly once, leaves nothing half-written and merges what the killed run
/// left unmerged; a later load of one hour leaves it beside that segment (two
/// files to merge wait for more).
#[test]
fn a_load_killed_while_merging_hours_leaves_each_hour_stored_once() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let split = work.path().join("split");
    // The real hour, six times over as 48 hours (46,212 events): merging
    // them takes long enough (seconds) to be caught at it.
    let sources: Vec<PathBuf> = (0..6).map(|n| {
        let copy = work.path().join(format!("copies/2015-01-0{}-0.json.gz", n + 1));
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(&real, &copy).unwrap();
        copy
    }).collect();
    let mut gen = vec!["gen", "--split"];
    gen.extend(sources.iter().map(|p| p.to_str().unwrap()));
    gen.extend(["--data-dir", split.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "48"]);
    assert!(ghbench_with(&[], &gen).status.success());
    let data = work.path().join("polars");
    let table_dir = data.join("github2015");
    let quarantine = work.path().join("q");
    let args = [
        "ingest", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--source", split.to_str().unwrap(),
        "--from", "2015-01-01T00", "--hours", "48", "--quarantine-dir", quarantine.to_str().unwrap(),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    let merging = |names: &[String]| names.iter().any(|f| f.contains("--") && f.ends_with(".parquet.tmp"));
    while !table_dir.is_dir() || !merging(&files(&table_dir)) {
        assert!(started.elapsed() < Duration::from_secs(300), "the merge never began: {:?}", files(&table_dir));
        assert!(child.try_wait().unwrap().is_none(), "the load ended before it could be killed mid-merge: {:?}", files(&table_dir));
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let hour_files = files(&table_dir).iter().filter(|f| f.ends_with(".parquet") && !f.contains("--")).count();
    assert_eq!(hour_files, 48, "killed mid-merge: the hours as loaded: {:?}", files(&table_dir));

    let out = ghbench_with(&[], &args);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("0 loaded, 48 skipped (already loaded)"), "{}", text(&out));
    assert!(text(&out).contains("merged 48 files into 1 segment of 48 hours"), "the rerun merges what the killed run left: {}", text(&out));
    assert!(!files(&table_dir).iter().any(|f| f.ends_with(".tmp")), "nothing half-written is left: {:?}", files(&table_dir));
    assert_eq!(files(&table_dir).iter().filter(|f| f.ends_with(".parquet")).count(), 1, "{:?}", files(&table_dir));
    let output = work.path().join("results");
    let query = ["query", "B", "--variant", "corrected", "--repeat", "1", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--output", output.to_str().unwrap()];
    assert!(ghbench_with(&[], &query).status.success());
    assert_eq!(engine(&results(&output), "polars")["data"]["events"].as_u64(), Some(6 * 7702), "every event once");
    // 48 hours merged and one more: not due until there are 24 files to merge.
    std::fs::copy(&real, split.join("2015-01-03-0.json.gz")).unwrap();
    let more = ["ingest", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--source", split.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "49", "--quarantine-dir", quarantine.to_str().unwrap()];
    let out = ghbench_with(&[], &more);
    assert!(out.status.success(), "{}", text(&out));
    let out = ghbench_with(&[], &more);
    assert!(out.status.success() && !text(&out).contains("merged"), "a rerun with two files to merge waits: {}", text(&out));
    let names = files(&table_dir);
    assert_eq!(names.iter().filter(|f| f.ends_with(".parquet")).count(), 2, "the segment and the new hour: {names:?}");
}

#[test]
fn a_killed_polars_load_leaves_no_partial_hour_and_the_rerun_stores_each_hour_once() {
    let Some(real) = real_hour() else { return };
    let hours = 6u64;
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("hours");
    std::fs::create_dir(&source).unwrap();
    for h in 0..hours {
        std::fs::copy(&real, source.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let data = work.path().join("polars");
    let table_dir = data.join("github2015");
    let args = [
        "ingest", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--source", source.to_str().unwrap(),
        "--from", "2015-01-01T00", "--hours", "6", "--concurrency", "2",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Killed while an hour is being written: after the first hour is committed.
    let started = Instant::now();
    while !table_dir.is_dir() || !files(&table_dir).iter().any(|f| f.ends_with(".parquet")) {
        assert!(started.elapsed() < Duration::from_secs(120), "no hour was committed");
        assert!(child.try_wait().unwrap().is_none(), "the load ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let committed = files(&table_dir).iter().filter(|f| f.ends_with(".parquet")).count() as u64;
    assert!(committed < hours, "killed before the end");

    let out = ghbench_with(&[], &args);
    assert!(out.status.success());
    let names = files(&table_dir);
    assert_eq!(names.iter().filter(|f| f.ends_with(".parquet")).count() as u64, hours, "{names:?}");
    assert!(!names.iter().any(|f| f.ends_with(".tmp")), "nothing half-written is left: {names:?}");
    let loaded = format!("{} loaded, {committed} skipped (already loaded)", hours - committed);
    assert!(text(&out).contains(&loaded), "committed hours are not loaded again: {}", text(&out));

    let output = work.path().join("results");
    let query = ["query", "B", "--variant", "corrected", "--repeat", "1", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--output", output.to_str().unwrap()];
    assert!(ghbench_with(&[], &query).status.success());
    let record = results(&output);
    let polars = engine(&record, "polars");
    assert_eq!(polars["data"]["events"], hours * 7702, "the ledger: each hour once");
    assert_eq!(polars["storage"]["rows"], hours * 7702, "the files: each hour once");
    let b = &record["queries"][0]["engines"][0];
    assert!(b["rows"].as_u64().unwrap() > 5);
}

#[test]
fn a_damaged_polars_ledger_is_named_by_ingest_and_query_never_skipped_or_called_empty() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("polars");
    let table_dir = data.join("github2015");
    let dir = ["--engines", "polars", "--polars-dir", data.to_str().unwrap()];
    let source = real.parent().unwrap().to_str().unwrap();
    let mut ingest = vec!["ingest", "--source", source, "--from", "2015-01-01T00"];
    ingest.extend(dir);
    let output = work.path().join("results");
    let mut query = vec!["query", "B", "--repeat", "1", "--output", output.to_str().unwrap()];
    query.extend(dir);

    // A data file nobody recorded (not written by ghbench: no ledger entry).
    std::fs::create_dir_all(&table_dir).unwrap();
    std::fs::write(table_dir.join("2015-01-01-0.parquet"), b"not parquet").unwrap();
    let out = ghbench_with(&[], &ingest);
    assert!(!out.status.success(), "the hour must not count as loaded");
    assert!(text(&out).contains("has no ledger entry") && text(&out).contains("delete the file"), "{}", text(&out));
    let out = ghbench_with(&[], &query);
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot read its ingest ledger"), "the cause, not 'run ingest first': {}", text(&out));

    // --drop starts over, then a damaged entry is named the same way.
    let mut reload = ingest.clone();
    reload.push("--drop");
    assert!(ghbench_with(&[], &reload).status.success());
    assert!(!data.join("github2015.dropping").exists(), "nothing left aside by the drop");
    std::fs::write(table_dir.join("2015-01-01-0.ledger.json"), b"{bad").unwrap();
    let out = ghbench_with(&[], &query);
    assert!(!out.status.success());
    assert!(text(&out).contains("2015-01-01-0.ledger.json"), "names the entry: {}", text(&out));

    // A data folder that cannot be one says so, without a server's hint.
    let file = work.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let mut bad = vec!["ingest", "--source", source, "--from", "2015-01-01T00", "--engines", "polars", "--polars-dir"];
    bad.push(file.to_str().unwrap());
    let out = ghbench_with(&[], &bad);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("polars cannot use its data folder") && said.contains(file.to_str().unwrap()) && !said.contains("just setup"), "{said}");
}

/// The results record of the newest `ghbench query` in `dir`.
fn newest_results(dir: &Path) -> Value {
    newest_record(dir, "olap-")
}

#[test]
fn paths_missing_null_or_of_another_type_read_on_polars_as_postgres_arrows_read_them() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    std::fs::create_dir(&source).unwrap();
    let events = [
        r#""type":"IssuesEvent","actor":{"login":"a"},"repo":{"name":"r/1"},"payload":{"action":"opened"}"#,
        r#""type":"IssuesEvent","actor":{"login":"a"},"repo":{"name":"r/1"},"payload":{"action":"opened"}"#,
        // actor not an object, repo.name null: both null.
        r#""type":"IssuesEvent","actor":"someone","repo":{"name":null},"payload":{"action":"opened"}"#,
        // repo.name missing; actor.login missing.
        r#""type":"IssuesEvent","actor":{},"repo":{"id":5},"payload":{"action":"opened"}"#,
        // Numbers and booleans read as their JSON text.
        r#""type":"IssuesEvent","actor":{"login":7},"repo":{"name":7},"payload":{"action":"opened"}"#,
        r#""type":"IssuesEvent","actor":{"login":true},"repo":{"name":"7"},"payload":{"action":"opened"}"#,
        // An array where an object or a string is expected.
        r#""type":"IssuesEvent","actor":{"login":"b"},"repo":[1,2],"payload":{"action":["opened"]}"#,
        r#""type":"IssuesEvent","actor":{"login":"\u00e9"},"repo":{"name":"r/\u00e9"},"payload":{"action":"opened"}"#,
        // type missing, null, a number.
        r#""actor":{"login":"a"},"repo":{"name":"r/1"}"#,
        r#""type":null,"actor":{"login":"a"}"#,
        r#""type":3,"actor":{"login":"c"}"#,
        // Comments: numbers count, anything else does not.
        r#""type":"IssueCommentEvent","actor":{"login":"c"},"repo":{"name":"r/1"},"payload":{"issue":{"comments":5}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"c"},"repo":{"name":"r/1"},"payload":{"issue":{"comments":"9"}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"c"},"repo":{"name":"r/2"},"payload":{"issue":{"comments":4.5}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"d"},"repo":{"name":"r/2"},"payload":{"issue":null}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"d"},"repo":{"name":"r/3"},"payload":{"issue":{"comments":null}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"d"},"repo":{"name":null},"payload":{"issue":{"comments":[3]}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"d"},"payload":{"issue":{"comments":true}}"#,
        r#""type":"IssueCommentEvent","actor":{"login":"d"},"payload":{"issue":{"comments":12}}"#,
    ];
    let lines: Vec<Vec<u8>> = events.iter().enumerate().map(|(i, e)| format!(r#"{{"id":"{i}",{e}}}"#).into_bytes()).collect();
    write_hour(&source, "2015-01-01-0.json.gz", &lines);
    let table = table("polars_odd");
    let data = work.path().join("polars");
    let common = ["--engines", "postgres,polars", "--table", &table, "--polars-dir", data.to_str().unwrap()];
    let mut ingest = vec!["ingest", "--source", source.to_str().unwrap(), "--from", "2015-01-01T00", "--drop"];
    let quarantine = work.path().join("q");
    ingest.extend(["--quarantine-dir", quarantine.to_str().unwrap()]);
    ingest.extend(common);
    assert!(ghbench(&ingest).status.success());
    let output = work.path().join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", output.to_str().unwrap()];
    query.extend(common);
    let out = ghbench(&query);
    let record = newest_results(&output);
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
    }
    assert!(out.status.success());
    let rows = |query: &str| {
        let q = record["queries"].as_array().unwrap().iter().find(|q| q["query"] == query && q["variant"] == "corrected").unwrap();
        q["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "polars").unwrap()["rows"].as_u64().unwrap()
    };
    // A: r/1, null, "7" (the number 7 and the string "7" are one group), r/é; the
    // array repo with an array action is not 'opened'.
    assert_eq!(rows("A"), 4, "{record}");
    assert_eq!(rows("B"), 4, "IssuesEvent, IssueCommentEvent, null (missing or null), and 3 as text");
    // D: r/1 (5; "9" is no number), r/2 (4.5), null (12); 3 is in an array.
    assert_eq!(rows("D"), 3);
    drop_everywhere(&table);
}

#[test]
fn a_polars_table_of_the_struct_layout_is_refused_with_how_to_reload_and_never_misread() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("polars");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/polars-struct-layout/structs");
    let table_dir = data.join("structs");
    copy_dir(&fixture, &table_dir);
    let before = files(&table_dir);
    let stored = std::fs::read(table_dir.join("2015-01-01-0.parquet")).unwrap();
    let dir = ["--engines", "polars", "--table", "structs", "--polars-dir", data.to_str().unwrap()];
    let reload = format!("ghbench ingest --engines polars --polars-dir {} --table structs --drop", data.display());
    let refused = |out: &std::process::Output| {
        let said = text(out);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains("1 of its 1 hours (hour 2015-01-01-0) in another layout"), "{said}");
        assert!(said.contains("struct columns") && said.contains("it reads flat-1: type text") && said.contains(&reload), "{said}");
    };

    let output = work.path().join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", output.to_str().unwrap()];
    query.extend(dir);
    refused(&ghbench_with(&[], &query));

    // Loading more hours into it would mix layouts in one table.
    let source = work.path().join("source");
    std::fs::create_dir(&source).unwrap();
    late_key_hour(&source, 50);
    std::fs::rename(source.join("2015-01-01-0.json.gz"), source.join("2015-01-01-1.json.gz")).unwrap();
    let mut ingest = vec!["ingest", "--source", source.to_str().unwrap(), "--from", "2015-01-01T01"];
    let quarantine = work.path().join("q");
    ingest.extend(["--quarantine-dir", quarantine.to_str().unwrap()]);
    ingest.extend(dir);
    refused(&ghbench_with(&[], &ingest));
    assert_eq!(files(&table_dir), before, "nothing written beside the old hour");
    assert_eq!(std::fs::read(table_dir.join("2015-01-01-0.parquet")).unwrap(), stored, "the old hour untouched");

    // As the message says: --drop loads it again, in today's layout.
    ingest.push("--drop");
    assert!(ghbench_with(&[], &ingest).status.success());
    assert!(ghbench_with(&[], &query).status.success());
    let record = newest_results(&output);
    let polars = engine(&record, "polars");
    assert_eq!(polars["data"]["events"], 51);
    let layout = polars["server"]["settings"]["layout"].as_str().unwrap();
    assert!(layout.starts_with("flat-1: type text, repo.name text"), "the record says what was flattened: {layout}");
    let entry: Value = serde_json::from_slice(&std::fs::read(table_dir.join("2015-01-01-1.ledger.json")).unwrap()).unwrap();
    assert_eq!(entry["layout"], layout, "each hour's entry records its layout");
}

/// Every engine's rows per query of the one `query` run in `output`, from
/// the answers folder kept beside its record (`olap-<time>.answers/`), by file name.
fn answers(output: &Path) -> std::collections::BTreeMap<String, Value> {
    let record = std::fs::read_dir(output).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).expect("a results file");
    let folder = record.with_extension("answers");
    let read = |p: PathBuf| (p.file_name().unwrap().to_string_lossy().into_owned(), serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap());
    std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())).map(|e| read(e.unwrap().path())).collect()
}

/// The real hour's events split (`gen --split`) into one hour file and into
/// 48: polars merges the 48 into one segment once loaded and answers A–D
/// the same; `--reload` of one hour of the segment changes no answer.
#[test]
fn the_same_events_in_one_hour_file_and_in_forty_eight_give_polars_the_same_answers() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("polars");
    let mut seen = Vec::new();
    for hours in [1usize, 48] {
        let split = work.path().join(format!("split-{hours}"));
        let n = hours.to_string();
        let hour_range = ["--from", "2015-01-01T00", "--hours", &n];
        let mut gen = vec!["gen", "--split", real.to_str().unwrap(), "--data-dir", split.to_str().unwrap()];
        gen.extend(hour_range);
        assert!(ghbench_with(&[], &gen).status.success());
        let manifest: Value = serde_json::from_slice(&std::fs::read(split.join("split-manifest.json")).unwrap()).unwrap();
        let shares: Vec<u64> = manifest["hours"].as_array().unwrap().iter().map(|h| h["lines"].as_u64().unwrap()).collect();
        assert_eq!(shares.len(), hours);
        assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1, "spread evenly: {shares:?}");
        assert_eq!(shares.iter().sum::<u64>(), manifest["lines"].as_u64().unwrap());

        let table = format!("hours_{hours}");
        let common = ["--engines", "polars", "--table", &table, "--polars-dir", data.to_str().unwrap()];
        let quarantine = work.path().join("q");
        let mut ingest = vec!["ingest", "--source", split.to_str().unwrap(), "--quarantine-dir", quarantine.to_str().unwrap()];
        ingest.extend(hour_range);
        ingest.extend(common);
        assert!(ghbench_with(&[], &ingest).status.success());
        // 48 hours are merged into one segment once loaded: one file to read either way.
        let stored = files(&data.join(&table)).into_iter().filter(|f| f.ends_with(".parquet")).count();
        assert_eq!(stored, 1, "one file for {hours} hours: {:?}", files(&data.join(&table)));

        let output = work.path().join(format!("results-{hours}"));
        let mut query = vec!["query", "--all", "--variant", "corrected", "--repeat", "1", "--output", output.to_str().unwrap()];
        query.extend(common);
        assert!(ghbench_with(&[], &query).status.success());
        seen.push((engine(&results(&output), "polars")["data"]["events"].clone(), answers(&output)));
    }
    // A bench of the split hours says whose events they are, in its record and its words.
    let (split, output) = (work.path().join("split-48"), work.path().join("bench"));
    let (data_dir, quarantine) = (work.path().join("bench-data"), work.path().join("q"));
    let bench = ["bench", "--source", split.to_str().unwrap(), "--hours", "48", "--engines", "polars", "--polars-dir", data.to_str().unwrap(), "--repeat", "1", "--variant", "corrected"];
    let places = ["--output", output.to_str().unwrap(), "--data-dir", data_dir.to_str().unwrap(), "--quarantine-dir", quarantine.to_str().unwrap()];
    let out = ghbench_with(&[], &[&bench[..], &places[..]].concat());
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let record = results(&output);
    let of = &record["data"]["split"];
    assert_eq!((of["hours"].as_u64(), of["events"].as_u64()), (Some(48), seen[1].0.as_u64()), "{of}");
    assert_eq!(of["sources"][0]["file"].as_str(), real.to_str(), "{of}");
    let events = seen[1].0.as_u64().unwrap();
    assert!(said.contains("split into 48 hours by ghbench gen --split") && said.contains(&format!("the {} events of 1 hour file ({})", ghbench_olap::record::thousands(events), real.display())), "{said}");
    let (few, many) = (&seen[0], &seen[1]);
    assert_eq!(few.0, many.0, "the same events");
    assert_eq!(few.1.keys().collect::<Vec<_>>(), ["A-corrected.json", "B-corrected.json", "C-corrected.json", "D-corrected.json"]);
    assert_eq!(few.1, many.1, "the same answers");

    // One hour of the segment loaded again: taken out of it, loaded as a file
    // of its own, every other hour as it was: the same answers again.
    let common = ["--engines", "polars", "--table", "hours_48", "--polars-dir", data.to_str().unwrap()];
    let quarantine = work.path().join("q");
    let reload = ["ingest", "--source", split.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "48", "--reload", "2015-01-01T05", "--quarantine-dir", quarantine.to_str().unwrap()];
    let out = ghbench_with(&[], &[&reload[..], &common[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names = files(&data.join("hours_48"));
    assert_eq!(names.iter().filter(|f| f.ends_with(".parquet")).count(), 2, "the segment without the hour, and the hour: {names:?}");
    assert!(names.contains(&"2015-01-01-5.parquet".to_string()) && names.iter().any(|f| f.ends_with(".g2.segment.json")), "{names:?}");
    let output = work.path().join("results-reloaded");
    let query = ["query", "--all", "--variant", "corrected", "--repeat", "1", "--output", output.to_str().unwrap()];
    assert!(ghbench_with(&[], &[&query[..], &common[..]].concat()).status.success());
    assert_eq!(engine(&results(&output), "polars")["data"]["events"], many.0, "every event once");
    assert_eq!(answers(&output), many.1, "the same answers after the reload");
}

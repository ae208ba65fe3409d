//! `ghbench ingest → index → query → report` as a person runs them, against the
//! real servers and the real hour, in a table of the test's own.

#[path = "common/olap_fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::{Command, Output};

use fixture::{data_dir, real_hour, LoadedTable, HOUR, HOUR_EVENTS};
use serde_json::Value;

fn ghbench(fixture: &LoadedTable, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(args)
        .args(["--table", fixture.table.as_str()])
        .env("DATABASE_URL", &fixture.servers.pg_url)
        .env("MONGODB_URI", &fixture.servers.mongo_url)
        .output()
        .expect("run ghbench");
    eprintln!("ghbench {args:?}\n{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    output
}

fn report(files: &[&Path]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").args(files).output().expect("run ghbench report");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// The one file of `kind` the command wrote into `dir`.
fn written(dir: &Path, kind: &str, ext: &str) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext) && p.file_name().unwrap().to_string_lossy().starts_with(kind))
        .collect();
    assert_eq!(files.len(), 1, "{kind}*.{ext} in {}: {files:?}", dir.display());
    files[0].clone()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn ingest_index_query_report_in_one_go() {
    if real_hour().is_none() {
        return;
    }
    let fixture = LoadedTable::empty("cli");
    let tmp = tempfile::tempdir().unwrap();
    let (quarantine, out) = (tmp.path().join("quarantine"), tmp.path().join("results"));
    let source = data_dir().display().to_string();
    let ingest = ["ingest", "--source", &source, "--from", HOUR, "--quarantine-dir", quarantine.to_str().unwrap()];
    assert!(ghbench(&fixture, &ingest).status.success());

    let out_arg = out.to_str().unwrap();
    assert!(ghbench(&fixture, &["index", "--output", out_arg]).status.success());
    let index_json = json(&written(&out, "index", "json"));
    for engine in index_json["engines"].as_array().unwrap() {
        let indexes = engine["indexes"].as_array().unwrap();
        assert_eq!(indexes.len(), 5, "{engine}");
        assert!(indexes.iter().all(|i| i["created"] == true && i["seconds"].as_f64().is_some()), "{engine}");
    }
    // Again: a no-op that says so.
    let again = ghbench(&fixture, &["index", "--output", tmp.path().join("again").to_str().unwrap()]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout).matches("already there").count(), 10);

    // One variant and one run keep the test short; the library tests cover the rest.
    let query = ghbench(&fixture, &["query", "--all", "--variant", "corrected", "--repeat", "1", "--output", out_arg]);
    assert!(query.status.success(), "every query verified");
    let stdout = String::from_utf8_lossy(&query.stdout);
    assert_eq!(stdout.matches('✓').count(), 8, "4 queries × 2 engines verified");
    assert!(!stdout.contains('✗'));
    let results = written(&out, "olap", "json");
    let record = json(&results);
    assert_eq!(record["schema"], "ghbench-olap/1");
    assert_eq!(record["queries"].as_array().unwrap().len(), 4);
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["verification"]["status"], "agree", "{}", q["query"]);
        for e in q["engines"].as_array().unwrap() {
            assert_eq!(e["iterations"].as_array().unwrap().len(), 1);
            assert!(e["stats"]["median"].as_f64().unwrap() > 0.0);
        }
    }
    for engine in record["context"]["engines"].as_array().unwrap() {
        assert_eq!(engine["data"]["events"], HOUR_EVENTS, "{engine}");
        assert_eq!(engine["data"]["hours"], 1);
        assert_eq!(engine["storage"]["rows"], HOUR_EVENTS);
    }
    let mongo = &record["context"]["engines"][1]["server"];
    if mongo["settings"].get("reported_mongodb_version").is_some() {
        assert_eq!(mongo["product"], "SecantusDB", "a MongoDB-wire server is never labelled MongoDB");
    }
    let markdown = std::fs::read_to_string(written(&out, "olap", "md")).unwrap();
    assert!(markdown.contains("## Beside the paper's published numbers") && markdown.contains("5295"));

    let shown = report(&[&results]);
    assert_eq!(String::from_utf8_lossy(&shown.stdout).matches('✓').count(), 8);
    let compared = String::from_utf8_lossy(&report(&[&results, &results]).stdout).to_string();
    assert_eq!(compared.matches("same within 10%").count(), 8, "{compared}");
}

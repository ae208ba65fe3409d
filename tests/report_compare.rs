//! `ghbench report old.json new.json` lists every query, variant, engine and
//! size of both runs with a verdict: faster, slower or the same, failed (with
//! the error), only in one run, answers differ. Records made by real runs
//! (the real hour on the PostgreSQL `just setup` started, and polars), then
//! changed as a second run would differ.

use std::path::Path;
use std::process::Command;

use ghbench_testkit::*;
use serde_json::{json, Value};

fn ghbench(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(args).env("DATABASE_URL", pg_url()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

use ghbench_testkit::newest_file as newest;

fn save(path: &Path, record: &Value) -> String {
    std::fs::write(path, serde_json::to_string_pretty(record).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// The query record's entry of `query` `variant`.
fn query<'a>(record: &'a mut Value, name: &str, variant: &str) -> &'a mut Value {
    record["queries"].as_array_mut().unwrap().iter_mut().find(|q| q["query"] == name && q["variant"] == variant).unwrap()
}

/// The table's line of `query`, `variant` and `engine`.
fn line<'a>(said: &'a str, q: &str, variant: &str, engine: &str) -> &'a str {
    said.lines()
        .find(|l| {
            let cells: Vec<&str> = l.split(['│', '┆', '|']).map(str::trim).collect();
            cells.len() > 4 && cells[1] == q && cells[2] == variant && cells[3] == engine
        })
        .unwrap_or_else(|| panic!("no line for {q} {variant} {engine} in:\n{said}"))
}

#[tokio::test]
async fn every_query_variant_and_engine_of_both_runs_is_listed_with_a_verdict() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("compare");
    drop_table(&table).await;
    let work = tempfile::tempdir().unwrap();
    let polars = work.path().join("polars");
    let engines = ["--engines", "postgres,polars", "--table", &table, "--polars-dir", polars.to_str().unwrap()];
    let quarantine = work.path().join("q");
    let mut ingest = vec!["ingest", "--source", real.parent().unwrap().to_str().unwrap(), "--from", "2015-01-01T00"];
    ingest.extend(["--quarantine-dir", quarantine.to_str().unwrap()]);
    ingest.extend(engines);
    assert!(ghbench(&ingest).0);
    let results = work.path().join("results");
    let mut query_args = vec!["query", "--all", "--repeat", "1", "--output", results.to_str().unwrap()];
    query_args.extend(engines);
    assert!(ghbench(&query_args).0);
    let run: Value = serde_json::from_slice(&std::fs::read(newest(&results, "olap-")).unwrap()).unwrap();

    // The old run had only the corrected texts; the new one lost polars on A,
    // failed C on postgres, disagreed on D, and has no B.
    let mut old = run.clone();
    old["queries"].as_array_mut().unwrap().retain(|q| q["variant"] == "corrected");
    let mut new = run.clone();
    query(&mut new, "A", "corrected")["engines"].as_array_mut().unwrap().retain(|e| e["engine"] != "polars");
    let c = &mut query(&mut new, "C", "corrected")["engines"][0];
    c["error"] = json!("relation \"gone\" does not exist");
    c["stats"] = Value::Null;
    c["iterations"] = json!([]);
    let d = query(&mut new, "D", "corrected");
    d["verification"]["status"] = json!("mismatch");
    d["verification"]["mismatches"] = json!([{"engine": "polars", "reason": "row 3 differs", "first_differences": []}]);
    new["queries"].as_array_mut().unwrap().retain(|q| !(q["query"] == "B" && q["variant"] == "corrected"));
    // As many rows, the same first ones, another whole answer (its digest): C on polars.
    let c_polars = query(&mut new, "C", "corrected")["engines"].as_array_mut().unwrap().iter_mut().find(|e| e["engine"] == "polars").unwrap();
    assert!(c_polars["answer_digest"].as_str().is_some_and(|d| d.starts_with("blake3:")), "a run keeps its answers' digests: {c_polars}");
    c_polars["answer_digest"] = json!("blake3:another");
    let (old_path, new_path) = (save(&work.path().join("old.json"), &old), save(&work.path().join("new.json"), &new));

    let (ok, said) = ghbench(&["report", &old_path, &new_path]);
    assert!(ok, "{said}");
    assert!(line(&said, "A", "corrected", "polars").contains("only in old"));
    assert!(line(&said, "A", "corrected", "postgres").contains("same within") || line(&said, "A", "corrected", "postgres").contains("new "));
    assert!(line(&said, "B", "corrected", "postgres").contains("only in old"));
    assert!(line(&said, "C", "corrected", "postgres").contains("failed in new"));
    assert!(said.contains("C corrected on postgres: failed in the new run: relation \"gone\" does not exist"), "the error is said: {said}");
    assert!(line(&said, "D", "corrected", "polars").contains("answers differ"));
    assert!(line(&said, "C", "corrected", "polars").contains("answers differ"), "{said}");
    assert!(!line(&said, "C", "corrected", "postgres").contains("answers differ"), "{said}");
    assert!(said.contains("row 3 differs"), "{said}");
    for q in ["A", "B", "C", "D"] {
        for engine in ["postgres", "polars"] {
            assert!(line(&said, q, "published", engine).contains("only in new"), "{q} published {engine}");
        }
    }
    let (ok, md) = ghbench(&["report", &old_path, &new_path, "--markdown", "-"]);
    assert!(ok && md.contains("| C ") && md.contains("failed in new"), "{md}");
    drop_table(&table).await;
}

#[test]
fn two_benches_compare_size_by_size() {
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let args = ["bench", "--scale", "1,2", "--events-per-hour", "300", "--engines", "polars", "--variant", "corrected", "--repeat", "1"];
    let mut bench = args.to_vec();
    let (data, polars, q, results) = (path("data"), path("polars"), path("q"), path("results"));
    bench.extend(["--data-dir", &data, "--polars-dir", &polars, "--quarantine-dir", &q, "--output", &results]);
    let (ok, said) = ghbench(&bench);
    assert!(ok, "{said}");
    let record: Value = serde_json::from_slice(&std::fs::read(newest(Path::new(&results), "bench-")).unwrap()).unwrap();
    let mut smaller = record.clone();
    smaller["sizes"].as_array_mut().unwrap().retain(|s| s["hours"] == 1);
    let (old_path, new_path) = (save(&work.path().join("old.json"), &record), save(&work.path().join("new.json"), &smaller));

    let (ok, said) = ghbench(&["report", &old_path, &new_path]);
    assert!(ok, "{said}");
    assert!(said.contains("== 1 h: old 300 events, new 300 events"), "{said}");
    assert!(said.contains("== 2 h: only in old (600 events)"), "the size the new run lacks is said: {said}");
    assert_eq!(said.matches("same within").count() + said.matches("new faster").count() + said.matches("new slower").count(), 4, "A-D of the 1 h size: {said}");
}

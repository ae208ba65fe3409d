//! The normalized engine against the real PostgreSQL (and the MongoDB-wire
//! server): loaded by ingest beside jsonb and MongoDB, its Queries A–D give
//! the same answers; every document comes back from its rows as it was, from
//! either way of loading; a load killed with SIGKILL and run again leaves
//! exact row counts in every derived table, with hours loading side by side.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::ingest_report;
use ghbench_normalize::Schema;
use ghbench_testkit::*;

use crate::util::ghbench_on_servers as ghbench;

/// Rows per path of every derived table of `table`, as the database holds them.
async fn derived_counts(table: &str) -> BTreeMap<String, u64> {
    let pg = pg().await;
    let sql = "SELECT table_name, path FROM normalized.ghbench_tables WHERE collection = $1";
    let mut counts = BTreeMap::new();
    for row in pg.query(sql, &[&table]).await.unwrap() {
        let (name, path): (String, String) = (row.get(0), row.get(1));
        let n: i64 = pg.query_one(&format!("SELECT count(*) FROM normalized.\"{name}\""), &[]).await.unwrap().get(0);
        counts.insert(path, n as u64);
    }
    counts
}

/// Rows per path the mapping derives from `hours` copies of the real hour,
/// computed here without any database.
fn expected_counts(real: &Path, hours: u64) -> BTreeMap<String, u64> {
    let mut schema = Schema::new("x");
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (did, line) in real_lines(real).iter().enumerate() {
        let doc: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(line).unwrap();
        for row in schema.derive(did as i64, &doc).rows {
            *counts.entry(schema.tables()[row.table].path.clone()).or_default() += hours;
        }
    }
    counts
}

#[tokio::test]
async fn the_real_hour_gives_the_same_answers_and_comes_back_document_by_document() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let table = table("norm_real");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let quarantine = work.path().join("q");
    let engines = ["--engines", "postgres,mongo,normalized", "--table", &table];

    let mut ingest = vec!["ingest", "--source", &shared, "--from", "2015-01-01T00", "--quarantine-dir", quarantine.to_str().unwrap()];
    ingest.extend(engines);
    let out = ghbench(&ingest);
    assert!(out.status.success());
    assert!(text(&out).contains("normalized: VACUUM (ANALYZE) 51 tables"), "the load ends with statistics for the planner");
    let expected = expected_counts(&real, 1);
    assert_eq!(derived_counts(&table).await, expected, "rows per derived table");

    let mut index = vec!["index"];
    index.extend(engines);
    assert!(ghbench(&index).status.success());
    let results = work.path().join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", results.to_str().unwrap()];
    query.extend(engines);
    assert!(ghbench(&query).status.success());
    let file = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 8, "A-D, both variants");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
    }
    let normalized = record["context"]["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "normalized").expect("the normalized engine's record");
    assert_eq!(normalized["data"]["events"], 7702);
    assert!(normalized["data"]["upkeep_seconds"].as_f64().unwrap() > 0.0, "VACUUM (ANALYZE) is part of the load time");
    assert!(normalized["storage"]["indexes"].as_array().unwrap().len() >= 6, "the five indexes and the join's");

    // Every document, rebuilt from its rows, is its line of the hour's file.
    let out = ghbench(&["normalize", "--table", &table, "--verify", "100000", "--source", &shared]);
    assert!(out.status.success());
    assert!(text(&out).contains("verified 7702 documents"), "every document checked");

    // Derived again from the jsonb table: the same rows, and the same round trip.
    let out = ghbench(&["normalize", "--table", &table]);
    assert!(out.status.success());
    assert!(text(&out).contains("normalized 7702 documents"));
    assert_eq!(derived_counts(&table).await, expected, "rows per derived table, derived from jsonb");
    let out = ghbench(&["normalize", "--table", &table, "--verify", "100000"]);
    assert!(out.status.success());
    assert!(text(&out).contains("verified 7702 documents"));

    // A document changed behind the mapping's back is named with its path.
    let pg = pg().await;
    pg.execute(&format!("UPDATE normalized.\"{table}_actor\" SET login_s = 'someone-else' WHERE did = (SELECT min(did) FROM normalized.\"{table}_actor\")"), &[])
        .await
        .unwrap();
    let out = ghbench(&["normalize", "--table", &table, "--verify", "100000"]);
    assert!(!out.status.success(), "a difference fails the check");
    assert!(text(&out).contains("$.actor.login: expected"), "the path that differs is named");
    drop_all(&table).await;
}

#[tokio::test]
async fn a_killed_normalized_load_leaves_exact_rows_after_the_rerun() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let hours = 6u64;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    for h in 0..hours {
        std::fs::copy(&real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let table = table("norm_crash");
    drop_all(&table).await;
    let quarantine = work.path().join("q");
    // Two hours at a time: both find every table and column at once, and must
    // agree on one schema.
    let args = [
        "ingest", "--engines", "normalized", "--table", &table, "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00",
        "--hours", "6", "--concurrency", "2", "--quarantine-dir", quarantine.to_str().unwrap(),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(args)
        .env("DATABASE_URL", pg_url())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pg = pg().await;
    let done = "SELECT count(*) FROM ghbench_ledger WHERE engine = 'normalized' AND tbl = $1";
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let n: i64 = pg.query_one(done, &[&table]).await.map(|r| r.get(0)).unwrap_or(0);
        if n >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "ingest never committed an hour");
        assert!(child.try_wait().unwrap().is_none(), "ingest ended before it could be killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL, with the other worker's hour under way
    child.wait().unwrap();
    let after_kill: i64 = pg.query_one(done, &[&table]).await.unwrap().get(0);
    assert!((after_kill as u64) < hours, "the kill came too late to test anything");

    let out = ghbench(&args);
    assert!(out.status.success());
    assert_eq!(derived_counts(&table).await, expected_counts(&real, hours), "rows per derived table after the rerun");
    let listed: i64 = pg.query_one("SELECT sum(events)::bigint FROM ghbench_ledger WHERE engine = 'normalized' AND tbl = $1", &[&table]).await.unwrap().get(0);
    assert_eq!(listed as u64, hours * 7702);
    // One name per path, whichever worker found it first.
    let names: i64 = pg
        .query_one("SELECT count(DISTINCT path) - count(*) FROM normalized.ghbench_tables WHERE collection = $1", &[&table])
        .await
        .unwrap()
        .get(0);
    assert_eq!(names, 0);
    let out = ghbench(&["normalize", "--table", &table, "--verify", "300", "--source", dir.to_str().unwrap()]);
    assert!(out.status.success());
    drop_all(&table).await;
}

/// Loads `lines` as one hour into postgres, normalized and polars (and
/// indexes them), runs every query and returns the `index` output and the
/// query record; each command must succeed.
fn load_index_query(table: &str, work: &Path, lines: &[Vec<u8>]) -> (String, serde_json::Value) {
    let dir = work.join("hours");
    std::fs::create_dir_all(&dir).unwrap();
    write_hour(&dir, REAL_HOUR_FILE, lines);
    let polars = work.join("polars");
    let engines = ["--engines", "postgres,normalized,polars", "--table", table, "--polars-dir", polars.to_str().unwrap()];
    let quarantine = work.join("q");
    let mut ingest = vec!["ingest", "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--quarantine-dir", quarantine.to_str().unwrap()];
    ingest.extend(engines);
    assert!(ghbench(&ingest).status.success(), "ingest");
    let mut index = vec!["index"];
    index.extend(engines);
    let indexed = ghbench(&index);
    assert!(indexed.status.success(), "index");
    let results = work.join("results");
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", results.to_str().unwrap()];
    query.extend(engines);
    assert!(ghbench(&query).status.success(), "every query answered and verified");
    let file = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    (text(&indexed), serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap())
}

/// Every query of `record` agreed across its engines.
fn assert_all_agree(record: &serde_json::Value) -> &Vec<serde_json::Value> {
    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 8, "A-D, both variants");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
    }
    queries
}

/// The real hour's lines whose event type is `kind`, at most `n`, parsed.
fn real_events(real: &Path, kind: &str, n: usize) -> Vec<serde_json::Value> {
    let all = real_lines(real).into_iter().map(|l| serde_json::from_slice::<serde_json::Value>(&l).unwrap());
    all.filter(|e| e["type"] == kind).take(n).collect()
}

fn lines_of(events: &[serde_json::Value]) -> Vec<Vec<u8>> {
    events.iter().map(|e| serde_json::to_vec(e).unwrap()).collect()
}

#[tokio::test]
async fn a_path_no_document_has_reads_as_null_and_its_index_is_skipped() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("norm_unseen");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    // PushEvents have no payload.action and no payload.issue.
    let pushes = real_events(&real, "PushEvent", 500);
    assert_eq!(pushes.len(), 500);
    let (indexed, record) = load_index_query(&table, work.path(), &lines_of(&pushes));
    assert!(indexed.contains("skipped"), "the indexes over paths never seen are skipped, said: {indexed}");
    for q in assert_all_agree(&record) {
        if q["query"] == "A" || q["query"] == "D" {
            let normalized = q["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "normalized").unwrap();
            assert_eq!(normalized["rows"], 0, "{} {}: no opened issue, no comments: {normalized}", q["query"], q["variant"]);
        }
    }
    drop_all(&table).await;
}

#[tokio::test]
async fn an_object_with_more_keys_than_columns_is_quarantined_for_every_engine() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("norm_wide");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let mut events = real_events(&real, "IssuesEvent", 100);
    let mut wide = events[0].clone();
    wide["payload"] = (0..2000).map(|i| (format!("k{i}"), serde_json::json!(i))).collect::<serde_json::Map<_, _>>().into();
    events.push(wide);
    let dir = work.path().join("hours");
    std::fs::create_dir_all(&dir).unwrap();
    write_hour(&dir, REAL_HOUR_FILE, &lines_of(&events));
    let args = ["--engines", "postgres,normalized", "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"];
    let report = ingest_report(&table, work.path(), &args);
    assert_eq!(report["totals"]["quarantined"]["too_many_keys"], 1, "{}", report["totals"]);
    assert_eq!(report["totals"]["hours_loaded"], 1, "the hour is whole on both engines: {}", report["totals"]);
    let listed = "SELECT engine, events FROM ghbench_ledger WHERE tbl = $1 ORDER BY engine";
    let rows = pg().await.query(listed, &[&table]).await.unwrap();
    let ledger: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(ledger, vec![("normalized".to_string(), 100), ("postgres".to_string(), 100)]);
    // Nothing is left to retry.
    let again = ingest_report(&table, work.path(), &args);
    assert_eq!(again["totals"]["hours_skipped"], 1, "{}", again["totals"]);
    assert_eq!(again["totals"]["hours_loaded"], 0);
    drop_all(&table).await;
}

#[tokio::test]
async fn values_of_other_types_are_read_as_jsonb_reads_them() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("norm_types");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let mut opened = real_events(&real, "IssuesEvent", 200);
    opened.retain(|e| e["payload"]["action"] == "opened");
    let mut comments = real_events(&real, "IssueCommentEvent", 200);
    comments.retain(|e| e["payload"]["issue"]["comments"].as_u64().is_some_and(|n| n > 2));
    assert!(opened.len() >= 4 && comments.len() >= 5, "enough events of each kind in the real hour");
    // A repository name that is a number, or a boolean; comments fractional,
    // beyond 32 bits, or a string (which counts nowhere).
    opened[0]["repo"]["name"] = serde_json::json!(12345);
    opened[1]["repo"]["name"] = serde_json::json!(12345);
    opened[2]["repo"]["name"] = serde_json::json!(true);
    comments[0]["payload"]["issue"]["comments"] = serde_json::json!(3.5);
    comments[1]["payload"]["issue"]["comments"] = serde_json::json!(1_099_511_627_776_i64);
    comments[2]["payload"]["issue"]["comments"] = serde_json::json!("7");
    comments[3]["repo"]["name"] = serde_json::json!(12345);
    comments[4]["type"] = serde_json::json!(7);
    let events: Vec<serde_json::Value> = opened.into_iter().chain(comments).collect();
    let (_, record) = load_index_query(&table, work.path(), &lines_of(&events));
    assert_all_agree(&record);
    // The numbers were really read: the number-named repository is a group of
    // A, as jsonb's ->> names it.
    let a = record["queries"].as_array().unwrap().iter().find(|q| q["query"] == "A" && q["variant"] == "corrected").unwrap();
    let normalized = a["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "normalized").unwrap();
    assert!(normalized["head"].to_string().contains("12345"), "{}", normalized["head"]);
    drop_all(&table).await;
}

/// A JSON object with a key twice: `jsonb` would keep the last value, BSON
/// both (MongoDB reading the first), so one policy holds for every engine:
/// the line is quarantined, and all four engines hold the same events.
/// SecantusDB re-encodes what it receives and keeps one key, so the server's
/// copy proves nothing about what ghbench sent: the encoding is checked too.
#[tokio::test]
async fn an_object_with_a_key_twice_is_quarantined_for_every_engine_and_never_sent() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("norm_dupkey");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let events = real_events(&real, "IssuesEvent", 40);
    let mut lines = lines_of(&events);
    let twice = [r#"{"id":"dup_top","type":"IssuesEvent","type":"PushEvent"}"#, r#"{"id":"dup_nested","type":"IssuesEvent","payload":{"action":"opened","action":"closed"}}"#];
    lines.extend(twice.iter().map(|l| l.as_bytes().to_vec()));
    // The same key in sibling objects is no duplicate.
    lines.push(br#"{"id":"siblings","type":"IssuesEvent","actor":{"login":"a"},"repo":{"login":"b"},"payload":{"action":"opened"}}"#.to_vec());
    let dir = work.path().join("hours");
    std::fs::create_dir_all(&dir).unwrap();
    write_hour(&dir, REAL_HOUR_FILE, &lines);
    let polars = work.path().join("polars");
    let args = ["--engines", "postgres,mongo,normalized,polars", "--polars-dir", polars.to_str().unwrap(), "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"];
    let report = ingest_report(&table, work.path(), &args);
    assert_eq!(report["totals"]["quarantined"]["duplicate_key"], 2, "{}", report["totals"]);
    for engine in ["postgres", "mongo", "normalized", "polars"] {
        assert_eq!(report["totals"]["engines"][engine]["table_events"], 41, "{engine}: {}", report["totals"]);
    }
    let records = std::fs::read_to_string(work.path().join("quarantine").join(&table).join("2015-01-01-0.jsonl")).unwrap();
    assert!(records.contains("duplicate_key") && records.contains(r#"\"action\""#), "{records}");

    // What ghbench sends MongoDB: the cleaning policy of every registered
    // engine refuses the lines before any encoder sees them; the encoder by
    // itself would have sent both keys (so the rule is what keeps them out).
    let policy = ghbench::registry::builtin().policy();
    for (i, line) in lines.iter().enumerate() {
        let text = std::str::from_utf8(line).unwrap();
        match policy.clean_line(i as u64 + 1, line) {
            Ok(doc) => {
                let bson = ghbench_mongo::encode::to_bson(&doc.json, "t/1").unwrap();
                assert!(no_key_twice(&bson), "sent with a key twice: {text}");
            }
            Err(rejected) => assert!(twice.contains(&text), "only the two lines are refused, not {text}: {}", rejected.detail),
        }
    }
    let unchecked = ghbench_mongo::encode::to_bson(twice[0], "t/1").unwrap();
    assert!(!no_key_twice(&unchecked), "the encoder alone keeps both keys, as MongoDB would store them");
    drop_all(&table).await;
}

/// No document or array element of `doc` (at any depth) has a key twice.
fn no_key_twice(doc: &mongodb::bson::RawDocument) -> bool {
    use mongodb::bson::RawBsonRef;
    let mut seen = std::collections::HashSet::new();
    doc.iter().all(|element| {
        let (key, value) = element.unwrap();
        seen.insert(key.to_string())
            && match value {
                RawBsonRef::Document(d) => no_key_twice(d),
                RawBsonRef::Array(a) => a.into_iter().all(|item| match item.unwrap() {
                    RawBsonRef::Document(d) => no_key_twice(d),
                    _ => true,
                }),
                _ => true,
            }
    })
}

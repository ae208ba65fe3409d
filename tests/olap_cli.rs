//! `ghbench ingest → index → query → report` as a person runs them, against the
//! real servers and the real hour, in a table of the test's own.

use std::path::Path;
use std::process::{Command, ExitStatus, Output};

use ghbench_testkit::{alone_with_servers, copy_dir, data_dir, disturbs_servers, free_port, is_root, newest_file, pg, real_hour, real_lines, shared_servers, write_hour, LoadedTable, HOUR, HOUR_EVENTS};
use serde_json::Value;

/// `ghbench <args> --table <the fixture's>` against the fixture's servers.
fn command(fixture: &LoadedTable, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(args)
        .args(["--table", fixture.table.as_str()])
        .env("DATABASE_URL", &fixture.servers.pg_url)
        .env("MONGODB_URI", &fixture.servers.mongo_url);
    command
}

fn ghbench(fixture: &LoadedTable, args: &[&str]) -> Output {
    let output = command(fixture, args).output().expect("run ghbench");
    eprintln!("ghbench {args:?}\n{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    output
}

/// Runs ghbench with stdout and stderr into one file, as a terminal shows
/// them, so the test can tell what was said before what.
fn ghbench_interleaved(fixture: &LoadedTable, args: &[&str], log: &Path) -> (ExitStatus, String) {
    let file = std::fs::File::create(log).unwrap();
    let status = command(fixture, args).stdout(file.try_clone().unwrap()).stderr(file).status().expect("run ghbench");
    let text = std::fs::read_to_string(log).unwrap();
    eprintln!("ghbench {args:?}\n{text}");
    (status, text)
}

/// `ghbench report FILES`, which must exit with `status` (1: a record whose
/// results cannot be trusted as they stand, as its run exited).
fn report(files: &[&Path], status: i32) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").args(files).output().expect("run ghbench report");
    assert_eq!(output.status.code(), Some(status), "{}", String::from_utf8_lossy(&output.stderr));
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
    let _servers = shared_servers();
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
    // report shows results, and says what an index record is rather than
    // blaming another ghbench for writing it.
    let index_file = written(&out, "index", "json");
    let shown = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(&index_file).output().unwrap();
    let said = String::from_utf8_lossy(&shown.stderr);
    assert!(!shown.status.success() && said.contains("is a `ghbench index` record (ghbench-olap-index/"), "{said}");
    assert!(said.contains("report shows query and bench results") && !said.contains("the ghbench that wrote it"), "{said}");
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
    assert_eq!(record["schema"], "ghbench-olap/2");
    assert_eq!(record["context"]["baseline"], "postgres", "the first engine, by default");
    assert_eq!(record["queries"].as_array().unwrap().len(), 4);
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["verification"]["status"], "agree", "{}", q["query"]);
        for e in q["engines"].as_array().unwrap() {
            assert_eq!(e["iterations"].as_array().unwrap().len(), 1);
            assert!(e["stats"]["median"].as_f64().unwrap() > 0.0);
            // Each server on this machine found by its port, its kernel counters read.
            let kernel = &e["read"]["kernel"];
            assert!(kernel["unavailable"].is_null() && kernel["counters"]["rchar"].is_u64(), "{kernel}");
            assert!(kernel["processes"].as_str().is_some_and(|p| p.contains("(pid ")), "{kernel}");
        }
    }
    assert_eq!(record["context"]["data_consistency"], serde_json::json!({"agree": true, "differences": []}));
    for engine in record["context"]["engines"].as_array().unwrap() {
        assert_eq!(engine["data"]["events"], HOUR_EVENTS, "{engine}");
        assert_eq!(engine["data"]["hours"], 1);
        assert_eq!(engine["storage"]["rows"], HOUR_EVENTS);
    }
    // Each engine's data against the memory it had: all on this machine here.
    let machine_memory = &record["context"]["machine"]["memory_bytes"];
    for engine in record["context"]["engines"].as_array().unwrap() {
        assert_eq!(&engine["memory"]["bytes"], machine_memory, "{engine}");
        assert!(engine["memory"]["from"].as_str().is_some_and(|f| f.starts_with("this machine's memory (MemTotal)")), "{engine}");
    }
    let label = record["context"]["cold"]["label"].as_str().unwrap();
    assert!(label.starts_with("hot: no cache dropped; every run after the first finds data cached; postgres data 0.0"), "{label}");
    assert!(label.contains("× memory, mongo data ") && !label.contains("read from disk"), "the real hour fits: {label}");
    // MongoDB's rows as its load counted them: no exact count per command.
    let counted = record["context"]["engines"][1]["storage"]["sizes_from"].as_str().unwrap_or_default();
    assert!(counted.starts_with("rows as the load counted them (its ledger)"), "{counted}");
    let mongo = &record["context"]["engines"][1]["server"];
    if mongo["settings"].get("reported_mongodb_version").is_some() {
        assert_eq!(mongo["product"], "SecantusDB", "a MongoDB-wire server is never labelled MongoDB");
    }
    let markdown = std::fs::read_to_string(written(&out, "olap", "md")).unwrap();
    assert!(markdown.contains("## Beside the paper's published numbers") && markdown.contains("5295"));

    for engine in record["context"]["engines"].as_array().unwrap() {
        assert!(engine["data"]["load_seconds"].as_f64().is_some_and(|s| s > 0.0), "load time recorded: {engine}");
        assert_eq!(engine["capabilities"]["indexes"], true);
    }
    assert!(stdout.contains("Each engine's median ÷ postgres's") && stdout.contains("geometric mean"), "{stdout}");

    let shown = report(&[&results], 0);
    assert_eq!(String::from_utf8_lossy(&shown.stdout).matches('✓').count(), 8);
    let compared = String::from_utf8_lossy(&report(&[&results, &results], 0).stdout).to_string();
    assert_eq!(compared.matches("same within 10%").count(), 8, "{compared}");
    assert!(compared.contains("new/old") && compared.contains("\nnew: "), "old and new, not A and B (Queries A and B): {compared}");

    // A file of the previous schema, as ghbench wrote it then, is read.
    let mut old = record.clone();
    old["schema"] = "ghbench-olap/1".into();
    for engine in old["context"]["engines"].as_array_mut().unwrap() {
        for field in ["capabilities", "server_error"] {
            engine.as_object_mut().unwrap().remove(field);
        }
        engine["server"].as_object_mut().unwrap().remove("caveat");
        for field in ["load_seconds", "wall_seconds"] {
            engine["data"].as_object_mut().unwrap().remove(field);
        }
    }
    old["context"].as_object_mut().unwrap().remove("baseline");
    let published = old["published"].as_object_mut().unwrap();
    published.remove("baseline");
    let faster_by = published.remove("faster_by").unwrap();
    published.insert("postgres_faster_by".into(), faster_by);
    let old_path = tmp.path().join("v1.json");
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    let shown = String::from_utf8_lossy(&report(&[&old_path], 0).stdout).to_string();
    assert!(shown.contains("Each engine's median ÷ postgres's"), "{shown}");
    if mongo["settings"].get("reported_mongodb_version").is_some() {
        assert!(shown.contains("is a MongoDB-wire server, not MongoDB"), "the caveat survives: {shown}");
    }
    let markdown = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(&old_path).args(["--markdown", "-"]).output().unwrap();
    assert!(String::from_utf8_lossy(&markdown.stdout).contains("paper PostgreSQL 11.1 s"), "the paper's numbers still render");
    // One of a schema this ghbench does not know is refused, saying so.
    old["schema"] = "ghbench-olap/9".into();
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(&old_path).output().unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("schema ghbench-olap/9") && said.contains("ghbench-olap/1, ghbench-olap/2"), "{said}");
}

/// Events of the made-up second hour: few, since SecantusDB is slow.
const OTHER_HOUR_EVENTS: usize = 300;

#[test]
fn engines_holding_different_hours_are_named_as_the_cause() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let fixture = LoadedTable::empty("differ");
    let tmp = tempfile::tempdir().unwrap();
    let (quarantine, out) = (tmp.path().join("quarantine"), tmp.path().join("results"));
    let quarantine = quarantine.to_str().unwrap();
    // PostgreSQL gets the real hour 00; MongoDB a different hour 01, made of
    // the real hour's first lines, in the same table.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let lines = real_lines(&real);
    write_hour(&other, "2015-01-01-1.json.gz", &lines[..OTHER_HOUR_EVENTS]);
    let real_dir = data_dir().display().to_string();
    for (engine, source, hour) in [("postgres", real_dir.as_str(), HOUR), ("mongo", other.to_str().unwrap(), "2015-01-01T01")] {
        let ingest = ["ingest", "--engines", engine, "--source", source, "--from", hour, "--quarantine-dir", quarantine];
        assert!(ghbench(&fixture, &ingest).status.success(), "{engine} loaded");
    }

    let query = ["query", "A", "--variant", "corrected", "--repeat", "1", "--output", out.to_str().unwrap()];
    let (status, said) = ghbench_interleaved(&fixture, &query, &tmp.path().join("query.log"));
    assert!(!status.success(), "a mismatch (and different data) exits non-zero");
    let lacks_00 = "mongo lacks 1 hour postgres holds: 2015-01-01T00 (7702 events)";
    let lacks_01 = format!("postgres lacks 1 hour mongo holds: 2015-01-01T01 ({OTHER_HOUR_EVENTS} events)");
    let warning = said.find("DATA DIFFERS").expect("the different data is named");
    let table = said.find("│ query").expect("the results table");
    assert!(warning < table, "named before the timings");
    assert!(said[warning..table].contains(lacks_00) && said[warning..table].contains(&lacks_01), "both hours named first");
    assert_eq!(said.matches("DATA DIFFERS").count(), 2, "and again beside the table");
    assert!(said.contains("cause: the engines hold different data: "), "the mismatch says why");
    // Every engine's data, not one's.
    assert!(said.contains("1 hour (2015-01-01T00 .. 2015-01-01T00), 7702 events"));
    assert!(said.contains(&format!("1 hour (2015-01-01T01 .. 2015-01-01T01), {OTHER_HOUR_EVENTS} events")));

    let results = written(&out, "olap", "json");
    let record = json(&results);
    let data = &record["context"]["data_consistency"];
    assert_eq!(data["agree"], false);
    assert_eq!(data["differences"], serde_json::json!([lacks_00, lacks_01]));
    let a = &record["queries"][0];
    assert_eq!(a["verification"]["status"], "mismatch");
    let cause = a["verification"]["cause"].as_str().expect("a cause");
    assert_eq!(cause, format!("the engines hold different data: {lacks_00}; {lacks_01}"));
    assert!(a["engines"].as_array().unwrap().iter().all(|e| e["iterations"].as_array().unwrap().len() == 1), "still timed");

    let markdown = std::fs::read_to_string(written(&out, "olap", "md")).unwrap();
    let warning = markdown.find("DATA DIFFERS").expect("the report names the different data");
    assert!(warning < markdown.find("## Results").unwrap(), "at the top");
    assert!(markdown[warning..].contains(lacks_00) && markdown.contains(&lacks_01));
    assert!(markdown.contains("- **postgres**") && markdown.contains("- **mongo**"));

    let shown = String::from_utf8_lossy(&report(&[&results], 1).stdout).to_string();
    assert!(shown.contains("DATA DIFFERS") && shown.contains(lacks_00) && shown.contains("cause: the engines hold different data"));

    // A file from before the check: no data_consistency, no cause. Still shown, without the warning.
    let mut old = record.clone();
    old["context"].as_object_mut().unwrap().remove("data_consistency");
    for q in old["queries"].as_array_mut().unwrap() {
        q["verification"].as_object_mut().unwrap().remove("cause");
    }
    let old_path = tmp.path().join("old.json");
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    let shown = String::from_utf8_lossy(&report(&[&old_path], 1).stdout).to_string();
    assert!(shown.contains("MISMATCH A corrected") && !shown.contains("DATA DIFFERS") && !shown.contains("cause:"));
}

/// An engine's load time is the wall time its hours covered, not their sum:
/// 8 generated hours loaded 4 at a time take about the ingest's own elapsed
/// time (less its upkeep), while their own times add up to far more. Every
/// view says the wall time, and its rate comes from it.
#[test]
fn the_load_time_is_the_wall_time_of_hours_loading_side_by_side_not_their_sum() {
    let _servers = shared_servers();
    let fixture = LoadedTable::empty("wall");
    let work = tempfile::tempdir().unwrap();
    let (source, results, report_path) = (work.path().join("gen"), work.path().join("results"), work.path().join("ingest.json"));
    let gen = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(["gen", "--from", "2015-03-01T00", "--hours", "8", "--events", "4000", "--out", source.to_str().unwrap()]).output().unwrap();
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
    let ingest = ghbench(&fixture, &[
        "ingest", "--engines", "postgres", "--source", source.to_str().unwrap(), "--from", "2015-03-01T00", "--hours", "8", "--concurrency", "4",
        "--quarantine-dir", work.path().join("q").to_str().unwrap(), "--report", report_path.to_str().unwrap(),
    ]);
    assert!(ingest.status.success());
    // Off a terminal, a line for each hour loaded.
    let log = String::from_utf8_lossy(&ingest.stderr);
    assert_eq!(log.lines().filter(|l| l.contains(" loaded in ") && l.contains("postgres 4000")).count(), 8, "{log}");
    let report = json(&report_path);
    let elapsed = report["elapsed_seconds"].as_f64().unwrap();
    // The ingest's own rate is over its loading span, which the checks and upkeep are not part of.
    let loading = report["loading_seconds"].as_f64().unwrap();
    assert!(loading > 0.0 && loading <= elapsed, "{loading} of {elapsed}");
    let rate = report["totals"]["engines"]["postgres"]["events_per_second"].as_f64().unwrap();
    assert!((rate - 32_000.0 / loading).abs() < 1.0, "{rate} events/s over {loading} s");
    let query = ghbench(&fixture, &["query", "A", "--variant", "corrected", "--repeat", "1", "--engines", "postgres", "--output", results.to_str().unwrap()]);
    assert!(query.status.success());
    let record = json(&newest_file(&results, "olap"));
    let data = &record["context"]["engines"][0]["data"];
    let (wall, upkeep) = (data["wall_seconds"].as_f64().expect("the wall time"), data["upkeep_seconds"].as_f64().unwrap_or(0.0));
    let summed = data["load_seconds"].as_f64().unwrap() - upkeep;
    eprintln!("ingest elapsed {elapsed:.2} s, upkeep {upkeep:.2} s; wall {wall:.2} s, hours summed {summed:.2} s");
    assert!(wall <= elapsed && wall >= 0.8 * (elapsed - upkeep), "the wall time within 20% of the ingest's own, less its upkeep");
    assert!(summed > 1.5 * wall, "four hours at a time: their own times add up to far more than the wall time");
    let said = String::from_utf8_lossy(&query.stdout).to_string() + &String::from_utf8_lossy(&query.stderr);
    // Off a terminal, a timestamped line for each run as it ends.
    let run_line = said.lines().find(|l| l.contains("A corrected on postgres: run 1/1 in ")).unwrap_or_default();
    assert!(run_line.contains("Z (+") && run_line.ends_with(" s"), "{said}");
    let rate = format!("{:.0} events/s", data["events"].as_f64().unwrap() / wall);
    assert!(said.contains(&rate) && !said.contains("summed over hours"), "the rate from the wall time: {rate}\n{said}");
}

/// A table of the test's own with the real hour on PostgreSQL, and a copy of
/// the catalog in a work folder whose PostgreSQL `query` (corrected) is `sql`.
fn postgres_with_a_query_of_its_own(name: &str, query: &str, sql: &str) -> (LoadedTable, tempfile::TempDir, std::path::PathBuf) {
    let fixture = LoadedTable::empty(name);
    let work = tempfile::tempdir().unwrap();
    let quarantine = work.path().join("q");
    let ingest = ghbench(&fixture, &["ingest", "--engines", "postgres", "--source", data_dir().to_str().unwrap(), "--from", HOUR, "--quarantine-dir", quarantine.to_str().unwrap()]);
    assert!(ingest.status.success());
    let catalog = work.path().join("queries");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    std::fs::write(catalog.join(format!("postgres/corrected/{query}.sql")), sql).unwrap();
    (fixture, work, catalog)
}

/// A query is run exactly as often as asked: --repeat times (counted on the
/// server, by a sequence each run of the test's query advances), its plan
/// estimated without running it; --analyze-plans adds one run, said in the
/// progress, for the plan as it ran.
#[test]
fn each_query_runs_exactly_repeat_times_and_analyze_plans_adds_one_said() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let (fixture, work, catalog) = postgres_with_a_query_of_its_own("runs", "A", "-- A, counting its runs\nSELECT 'runs' AS repo, nextval('{table}_runs') AS count\n");
    let table = fixture.table.as_str().to_string();
    let runs = || -> i64 {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let sql = format!("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {table}_runs");
            pg().await.query_one(&sql, &[]).await.unwrap().get(0)
        })
    };
    tokio::runtime::Runtime::new().unwrap().block_on(async { pg().await.batch_execute(&format!("CREATE SEQUENCE {table}_runs")).await.unwrap() });
    let results = work.path().join("results");
    let query = |extra: &[&str]| {
        let mut args = vec!["query", "A", "--variant", "corrected", "--engines", "postgres", "--catalog", catalog.to_str().unwrap(), "--output", results.to_str().unwrap()];
        args.extend_from_slice(extra);
        ghbench(&fixture, &args)
    };

    let out = query(&["--repeat", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs(), 3, "three runs, and none for the plan");
    let plan = &json(&newest_file(&results, "olap"))["queries"][0]["engines"][0]["plan"];
    assert_eq!(plan["command"], "EXPLAIN (FORMAT JSON)", "{plan}");
    assert!(plan["json"].is_array() && plan["error"].is_null(), "{plan}");

    std::thread::sleep(std::time::Duration::from_secs(1)); // a record of its own second
    let out = query(&["--repeat", "2", "--analyze-plans"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs(), 3 + 2 + 1, "two runs and one for the measured plan");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("A corrected on postgres: measured plan (one more run, --analyze-plans)"), "{said}");
    let plan = &json(&newest_file(&results, "olap"))["queries"][0]["engines"][0]["plan"];
    assert_eq!(plan["command"], "EXPLAIN (ANALYZE, BUFFERS)", "{plan}");
    tokio::runtime::Runtime::new().unwrap().block_on(async { pg().await.batch_execute(&format!("DROP SEQUENCE {table}_runs")).await.unwrap() });
}

/// A table of the test's own with the real hour on PostgreSQL, whose queries
/// A–D (corrected) each log their every run on the server, in `<table>_runs`,
/// and answer with its place in the order (see [`runs_logged`]).
fn postgres_logging_its_runs(name: &str) -> (LoadedTable, tempfile::TempDir, std::path::PathBuf) {
    let logging = |query: &str| format!("-- {query}, logging its runs\nWITH run AS (INSERT INTO {{table}}_runs (query) VALUES ('{query}') RETURNING n) SELECT '{query}' AS repo, n AS count FROM run\n");
    let (fixture, work, catalog) = postgres_with_a_query_of_its_own(name, "A", &logging("A"));
    for query in ["B", "C", "D"] {
        std::fs::write(catalog.join(format!("postgres/corrected/{query}.sql")), logging(query)).unwrap();
    }
    on_postgres(&format!("CREATE TABLE {}_runs (n bigserial, query text)", fixture.table));
    (fixture, work, catalog)
}

/// The runs [`postgres_logging_its_runs`]' queries made on `table`, in the
/// order the server saw them (`A B C D …`); the log is emptied for the next.
fn runs_logged(table: &str) -> String {
    let runs: Vec<String> = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { pg().await.query(&format!("SELECT query FROM {table}_runs ORDER BY n"), &[]).await.unwrap().iter().map(|r| r.get(0)).collect() });
    on_postgres(&format!("TRUNCATE {table}_runs RESTART IDENTITY"));
    runs.join(" ")
}

fn on_postgres(sql: &str) {
    tokio::runtime::Runtime::new().unwrap().block_on(async { pg().await.batch_execute(sql).await.unwrap() });
}

/// `--rounds` runs A, B, C, D, then again, instead of each query's runs back
/// to back: the server logs every run in the order it came, and each query's
/// first answer in the record is its first run's place in that order. The
/// record and its label say which order it was; a resume that changes it is
/// refused.
#[test]
fn rounds_order_recorded_in_the_record_and_its_label() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let (fixture, work, catalog) = postgres_logging_its_runs("rounds");
    let table = fixture.table.as_str();
    let args = |extra: &[&'static str]| -> Vec<String> {
        let fixed = ["query", "--all", "--variant", "corrected", "--engines", "postgres", "--repeat", "2", "--catalog", catalog.to_str().unwrap()];
        fixed.iter().chain(extra).map(|a| a.to_string()).collect()
    };
    let query = |results: &Path, extra: &[&'static str]| -> (Output, Value) {
        let mut args = args(extra);
        args.extend(["--output".to_string(), results.display().to_string()]);
        let out = ghbench(&fixture, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (out, json(&newest_file(results, "olap")))
    };
    // Each query's first answer: the place of its first run in the order.
    let first_places = |record: &Value| -> Vec<(String, i64)> {
        let first = |q: &Value| q["engines"][0]["head"][0][1].as_i64().unwrap_or_else(|| panic!("{q}"));
        record["queries"].as_array().unwrap().iter().map(|q| (q["query"].as_str().unwrap().to_string(), first(q))).collect()
    };
    let places = |expected: [i64; 4]| ["A", "B", "C", "D"].into_iter().map(String::from).zip(expected).collect::<Vec<_>>();

    let in_rounds = work.path().join("rounds");
    let (out, record) = query(&in_rounds, &["--rounds"]);
    assert_eq!(runs_logged(table), "A B C D A B C D", "one run of each query per round");
    assert_eq!(first_places(&record), places([1, 2, 3, 4]), "{}", record["queries"]);
    let cold = &record["context"]["cold"];
    assert_eq!(cold["rounds"], true, "{cold}");
    assert!(cold["label"].as_str().unwrap().starts_with("hot: no cache dropped; runs in rounds (every query once per round"), "{cold}");
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["engines"][0]["iterations"].as_array().unwrap().len(), 2, "{q}");
        assert_eq!(q["engines"][0]["read"]["runs"], 2, "what its own two runs read, not the others': {}", q["engines"][0]["read"]);
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let at = |line: &str| said.find(line).unwrap_or_else(|| panic!("{line}: {said}"));
    assert!(at("D corrected on postgres: run 1/2 in ") < at("A corrected on postgres: run 2/2 in "), "A's second run after D's first: {said}");

    let back_to_back = work.path().join("back-to-back");
    let (_, record) = query(&back_to_back, &[]);
    assert_eq!(runs_logged(table), "A A B B C C D D", "each query's runs back to back without --rounds, as before it");
    assert_eq!(first_places(&record), places([1, 3, 5, 7]));
    let cold = &record["context"]["cold"];
    assert!(cold.get("rounds").is_none(), "not written when false, as older records lack it: {cold}");
    assert!(cold["label"].as_str().unwrap().starts_with("hot: no cache dropped; every run after the first finds data cached;"), "{cold}");

    // An unfinished record made in rounds cannot go on back to back: the
    // queries it kept found other caches than the rest would.
    let mut unfinished = json(&newest_file(&in_rounds, "olap"));
    unfinished["finished"] = false.into();
    let path = work.path().join("unfinished-rounds.json");
    std::fs::write(&path, serde_json::to_string(&unfinished).unwrap()).unwrap();
    let resume = args(&[]).into_iter().chain(["--resume".to_string(), path.display().to_string()]).collect::<Vec<_>>();
    let refused = ghbench(&fixture, &resume.iter().map(String::as_str).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("cannot resume the run of") && said.contains("--rounds: true then, false now"), "{said}");
    assert_eq!(runs_logged(table), "", "nothing run");
    // Nor in rounds, part way: C and D would run in rounds of their own, not between A's and B's runs.
    unfinished["queries"].as_array_mut().unwrap().truncate(2);
    std::fs::write(&path, serde_json::to_string(&unfinished).unwrap()).unwrap();
    let resume = args(&["--rounds"]).into_iter().chain(["--resume".to_string(), path.display().to_string()]).collect::<Vec<_>>();
    let refused = ghbench(&fixture, &resume.iter().map(String::as_str).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("part way: its runs went in rounds (--rounds)"), "{said}");
    assert_eq!(runs_logged(table), "", "nothing run");
    on_postgres(&format!("DROP TABLE {table}_runs"));
}

/// With --cold, rounds begin with a round of cold runs, each query made cold
/// just before its own, then the hot rounds; the label says both.
#[test]
fn rounds_with_cold_make_each_query_cold_just_before_its_own_first_run() {
    let _servers = disturbs_servers(); // --cold drops the OS page cache
    if real_hour().is_none() {
        return;
    }
    let (fixture, work, catalog) = postgres_logging_its_runs("rounds_cold");
    let results = work.path().join("results");
    let args = ["query", "--all", "--variant", "corrected", "--engines", "postgres", "--repeat", "1", "--rounds", "--cold=clear", "--catalog", catalog.to_str().unwrap(), "--output", results.to_str().unwrap()];
    let out = ghbench(&fixture, &args);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(runs_logged(fixture.table.as_str()), "A B C D A B C D", "the cold round, then the hot one");
    let at = |line: &str| said.find(line).unwrap_or_else(|| panic!("{line}: {said}"));
    assert!(at("A corrected on postgres: making it cold") < at("A corrected on postgres: cold run in "), "{said}");
    assert!(at("A corrected on postgres: cold run in ") < at("B corrected on postgres: making it cold"), "{said}");
    assert!(at("D corrected on postgres: cold run in ") < at("A corrected on postgres: run 1/1 in "), "{said}");
    let record = json(&newest_file(&results, "olap"));
    for q in record["queries"].as_array().unwrap() {
        let engine = &q["engines"][0];
        assert!(engine["cold_run"].is_object() && engine["iterations"].as_array().unwrap().len() == 1, "{engine}");
    }
    let label = record["context"]["cold"]["label"].as_str().unwrap();
    assert!(label.contains("not a true cold run; then the hot runs in rounds (every query once per round"), "{label}");
    on_postgres(&format!("DROP TABLE {}_runs", fixture.table));
}

/// --cold-repeat 3: every query's three cold runs, each made cold on its own
/// just before it, then its hot run; the record keeps each cold run, the
/// views their median and range, and a resume asking another count is refused.
#[test]
fn several_cold_runs_are_each_made_cold_on_their_own_and_all_kept() {
    let _servers = disturbs_servers(); // --cold drops the OS page cache
    if real_hour().is_none() {
        return;
    }
    let (fixture, work, catalog) = postgres_logging_its_runs("cold_repeat");
    let results = work.path().join("results");
    let md = work.path().join("cold.md");
    let args = |cold_runs: &'static str| -> Vec<String> {
        let fixed = ["query", "--all", "--variant", "corrected", "--engines", "postgres", "--repeat", "1", "--cold=clear", "--cold-repeat", cold_runs, "--catalog", catalog.to_str().unwrap()];
        fixed.iter().map(|a| a.to_string()).chain(["--output".into(), results.display().to_string(), "--markdown".into(), md.display().to_string()]).collect()
    };
    let out = ghbench(&fixture, &args("3").iter().map(String::as_str).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(runs_logged(fixture.table.as_str()), "A A A A B B B B C C C C D D D D", "three cold runs, then the hot one, query by query");
    // Each cold run is made cold just before it.
    for query in ["A", "B", "C", "D"] {
        let made_cold: Vec<usize> = said.match_indices(&format!("{query} corrected on postgres: making it cold")).map(|(at, _)| at).collect();
        assert_eq!(made_cold.len(), 3, "{said}");
        for (n, at) in made_cold.iter().enumerate() {
            let run = said.find(&format!("{query} corrected on postgres: cold run {}/3 in ", n + 1)).unwrap_or_else(|| panic!("cold run {}: {said}", n + 1));
            assert!(*at < run && made_cold.get(n + 1).is_none_or(|next| run < *next), "made cold before cold run {} and not again until it ran: {said}", n + 1);
        }
    }
    let record = json(&newest_file(&results, "olap"));
    assert_eq!(record["context"]["cold"]["runs"], 3, "{}", record["context"]["cold"]);
    assert!(record["context"]["cold"]["label"].as_str().unwrap().contains("(3 cold runs of every query, each made so just before it)"), "{}", record["context"]["cold"]);
    for q in record["queries"].as_array().unwrap() {
        let engine = &q["engines"][0];
        let cold: Vec<f64> = engine["cold_runs"].as_array().unwrap_or_else(|| panic!("{engine}")).iter().map(|r| r["seconds"].as_f64().unwrap()).collect();
        assert_eq!(cold.len(), 3, "{engine}");
        assert_eq!(engine["cold_run"], engine["cold_runs"][0], "the first cold run stays where older readers look");
        assert_eq!(engine["iterations"].as_array().unwrap().len(), 1, "{engine}");
        assert_eq!(engine["read"]["runs"], 4, "what the cold and hot runs read: {}", engine["read"]);
    }
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("(n=3, "), "the cold runs' median and range: {markdown}");

    // A resume asking two cold runs of a record made with three is refused.
    let mut unfinished = record.clone();
    unfinished["finished"] = false.into();
    unfinished["queries"].as_array_mut().unwrap().truncate(2);
    let path = work.path().join("unfinished.json");
    std::fs::write(&path, serde_json::to_string(&unfinished).unwrap()).unwrap();
    let resume: Vec<String> = args("2").into_iter().chain(["--resume".into(), path.display().to_string()]).collect();
    let refused = ghbench(&fixture, &resume.iter().map(String::as_str).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("--cold-repeat: 3 then, 2 now"), "{said}");
    assert_eq!(runs_logged(fixture.table.as_str()), "", "nothing run");
    // Without --cold there is nothing to repeat.
    let alone = ghbench(&fixture, &["query", "A", "--engines", "postgres", "--cold-repeat", "2"]);
    let said = String::from_utf8_lossy(&alone.stderr);
    assert!(alone.status.code() == Some(2) && said.contains("--cold"), "{said}");
    on_postgres(&format!("DROP TABLE {}_runs", fixture.table));
}

/// What a query read from storage, as the kernel counted it for the
/// server's processes (found by the port it listens on): a query that reads
/// a file of 8 MiB, evicted from the page cache first, has 8 MiB from
/// storage counted, and 16 MiB through read calls over its two runs. The
/// server's own counters cannot tell the two apart.
#[test]
fn the_kernel_counts_what_a_query_read_from_storage() {
    let _servers = alone_with_servers(); // any other test's reads would count in the server's
    use std::os::unix::fs::PermissionsExt;
    if real_hour().is_none() {
        return;
    }
    const SIZE: u64 = 8 << 20;
    // Where the server (another user) may read it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("blob");
    let bytes: Vec<u8> = (0..SIZE).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let sql = format!("-- A, reading a file\nSELECT 'file' AS repo, length(pg_read_binary_file('{}')) AS count\n", path.display());
    let (fixture, work, catalog) = postgres_with_a_query_of_its_own("kernel_reads", "A", &sql);
    // Written out, then out of the page cache: the first run reads it from storage.
    let file = std::fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: posix_fadvise(2) on a descriptor this test holds open.
    assert_eq!(unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&file), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
    let results = work.path().join("results");
    let args = ["query", "A", "--variant", "corrected", "--engines", "postgres", "--repeat", "2", "--catalog", catalog.to_str().unwrap(), "--output", results.to_str().unwrap()];
    let out = ghbench(&fixture, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record = json(&newest_file(&results, "olap"));
    let kernel = &record["queries"][0]["engines"][0]["read"]["kernel"];
    assert!(kernel["unavailable"].is_null(), "{kernel}");
    assert!(kernel["processes"].as_str().unwrap().starts_with("postgres (pid "), "{kernel}");
    let counted = |name: &str| kernel["counters"][name].as_u64().unwrap_or_else(|| panic!("{name} in {kernel}"));
    assert!(counted("rchar") >= 2 * SIZE, "two runs read the file through read calls: {kernel}");
    assert!(counted("read_bytes") >= SIZE, "the first from storage: {kernel}");
    assert!(counted("read_bytes") < 2 * SIZE, "the second from the page cache: {kernel}");
}

/// A run killed part way (SIGKILL: nothing of it runs after) leaves a whole
/// record of the queries it finished, marked unfinished: written after every
/// query, each time whole (written beside, then renamed). `--resume` goes on
/// from it, keeping what it finished; killed again, the next `--resume`
/// credits each kept query to the run that timed it; not once the data changed.
#[test]
fn a_query_run_killed_part_way_leaves_a_record_of_what_it_finished_and_resumes() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    // B and C sleep as long as their tables `<table>_delay_b` and `_c` say:
    // ten minutes for the query a run is killed in, none otherwise.
    let slow = |which: &str| format!("SELECT 'slow' AS key, count(*) AS n FROM {{table}} CROSS JOIN (SELECT pg_sleep(max(seconds)) FROM {{table}}_delay_{which}) AS d GROUP BY 1\n");
    let (fixture, work, catalog) = postgres_with_a_query_of_its_own("killed_run", "B", &slow("b"));
    std::fs::write(catalog.join("postgres/corrected/C.sql"), slow("c")).unwrap();
    let table = fixture.table.as_str().to_string();
    let delay = |which: &str, seconds: i32| {
        let sql = format!("DROP TABLE IF EXISTS {table}_delay_{which}; CREATE TABLE {table}_delay_{which} AS SELECT {seconds} AS seconds");
        tokio::runtime::Runtime::new().unwrap().block_on(async { pg().await.batch_execute(&sql).await.unwrap() });
    };
    delay("b", 600);
    delay("c", 600);
    let results = work.path().join("results");
    let args = ["query", "--all", "--variant", "corrected", "--engines", "postgres", "--repeat", "1", "--catalog", catalog.to_str().unwrap(), "--output", results.to_str().unwrap()];
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The marker goes in as a parameter: in the text, this very query would match it.
    let running = "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $2 || '%' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()";
    let watcher = rt.block_on(pg());
    let sleeping = |table: &str| -> Vec<i32> { rt.block_on(async { watcher.query(running, &[&table, &"pg_sleep(max(seconds))"]).await.unwrap().iter().map(|r| r.get(0)).collect() }) };
    // Runs ghbench with `args` and sends it `signal` once query `which` (b or
    // c) sleeps: by its own delay table, since the other's text matches too
    // and a B of no delay, seen running, is not yet finished. Its sleeping
    // query is ended. What it said on standard error.
    let stopped_while_sleeping = |args: &[&str], signal: i32, which: &str| -> String {
        let delayed = format!("{table}_delay_{which}");
        let said = work.path().join("stopped.log");
        // Outside any checkout: the ghbench a record names is the one built, not the directory's.
        let mut child = command(&fixture, args).current_dir(work.path()).stdout(std::process::Stdio::null()).stderr(std::fs::File::create(&said).unwrap()).spawn().unwrap();
        let started = std::time::Instant::now();
        while sleeping(&delayed).is_empty() && started.elapsed() < std::time::Duration::from_secs(120) {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        // SAFETY: kill(2) on the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let _ = child.wait();
        let left = sleeping(&delayed);
        rt.block_on(async {
            let pg = pg().await;
            for pid in left {
                let _ = pg.execute("SELECT pg_terminate_backend($1)", &[&pid]).await;
            }
        });
        std::fs::read_to_string(&said).unwrap()
    };
    stopped_while_sleeping(&args, libc::SIGKILL, "b");

    let record = json(&newest_file(&results, "olap"));
    assert_eq!(record["finished"], false, "marked unfinished");
    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 1, "A, finished before the kill, and nothing of B: {queries:?}");
    assert_eq!(queries[0]["query"], "A");
    assert_eq!(queries[0]["engines"][0]["iterations"].as_array().unwrap().len(), 1, "{}", queries[0]);
    // What A read, from the server's counters around its run: at least the
    // whole table once (it has no index here), read or found in the buffers.
    let read = &queries[0]["engines"][0]["read"];
    let relpages: i32 = rt.block_on(async { pg().await.query_one("SELECT relpages FROM pg_class WHERE oid = to_regclass($1)", &[&table]).await.unwrap().get(0) });
    let counted = |name: &str| read["counters"][name].as_u64().unwrap_or_else(|| panic!("{name} in {read}"));
    assert_eq!(read["runs"], 1, "{read}");
    assert!(relpages > 0 && counted("heap_blks_read") + counted("heap_blks_hit") >= relpages as u64, "{relpages} pages, {read}");
    let leftovers: Vec<_> = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).filter(|n| n.ends_with(".writing")).collect();
    assert!(leftovers.is_empty() || leftovers.len() == 1, "at most the one being written when killed: {leftovers:?}");
    // The report reads it and says so.
    let shown = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(newest_file(&results, "olap")).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&shown.stdout), String::from_utf8_lossy(&shown.stderr));
    assert!(said.contains("UNFINISHED: the run stopped after 1 query run(s)"), "{said}");
    assert_eq!(shown.status.code(), Some(1), "a partial record, said by the exit status as its run's would have");

    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    if head.status.success() {
        assert_eq!(record["context"]["git_commit"].as_str(), Some(String::from_utf8_lossy(&head.stdout).trim()), "the commit built, run outside the checkout");
    }
    // Another ghbench cannot go on with it.
    let mut other = record.clone();
    other["context"]["git_commit"] = "0123456789abcdef0123456789abcdef01234567".into();
    let other_path = work.path().join("other-build.json");
    std::fs::write(&other_path, serde_json::to_string(&other).unwrap()).unwrap();
    let refused = ghbench(&fixture, &args.iter().copied().chain(["--resume", other_path.to_str().unwrap()]).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains(&format!("ghbench's build: {} 0123456789abcdef0123456789abcdef01234567 (", env!("CARGO_PKG_VERSION"))), "{said}");

    // The same command with --resume goes on in place, A kept as timed then;
    // stopped again by Ctrl-C, during C, it leaves A and B, and its last
    // lines say where, to go on without guessing.
    let unfinished = newest_file(&results, "olap");
    let copy = work.path().join("unfinished-copy.json");
    std::fs::copy(&unfinished, &copy).unwrap();
    delay("b", 0);
    let resumed: Vec<&str> = args.iter().copied().chain(["--resume", unfinished.to_str().unwrap()]).collect();
    let said = stopped_while_sleeping(&resumed, libc::SIGINT, "c");
    let last: Vec<&str> = said.lines().rev().take(4).collect();
    assert_eq!(last[0], format!("wrote {} {}", unfinished.display(), unfinished.with_extension("answers").display()), "the record and the answers it keeps: {said}");
    assert!(last[1].starts_with("note: what was measured so far is kept in") && last[1].contains(&format!("--resume {}", unfinished.display())), "{said}");
    assert_eq!(last[2], "note: UNFINISHED: the run stopped after 2 query run(s) on every engine; this record holds those alone", "what it kept: {said}");
    assert_eq!(last[3], "exit 130", "{said}");
    let second = json(&unfinished);
    assert_eq!(second["finished"], false);
    assert_eq!(second["queries"].as_array().unwrap().len(), 2, "A kept and B timed: {}", second["queries"]);
    assert_eq!(second["queries"][0], record["queries"][0], "A kept as it was timed");
    assert_eq!(second["context"]["resumed"]["kept"], serde_json::json!(["A corrected"]));
    assert_eq!(second["context"]["resumed"]["from_started_at"], record["context"]["started_at"]);

    // The third run finishes it, each kept query credited to the run that timed it;
    // with a phase under load, whose answers for A and B are checked against the kept ones.
    delay("c", 0);
    let under_load = ["--clients", "1", "--duration", "1", "--warmup", "0"];
    let resumed: Vec<&str> = resumed.iter().copied().chain(under_load).collect();
    let out = ghbench(&fixture, &resumed);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a record made in several runs is said by the exit status: {said}");
    let (first_run, second_run) = (record["context"]["started_at"].as_str().unwrap(), second["context"]["started_at"].as_str().unwrap());
    let credited = format!("RESUMED: A corrected timed by the run started {first_run}; B corrected by the run started {second_run}, each of which stopped");
    assert!(said.contains(&credited), "{credited}\n{said}");
    let finished = json(&unfinished);
    assert_eq!(finished["finished"], true);
    let names: Vec<&str> = finished["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap()).collect();
    assert_eq!(names, ["A", "B", "C", "D"]);
    assert_eq!(finished["queries"].as_array().unwrap()[..2], second["queries"].as_array().unwrap()[..], "A and B kept as they were timed");
    let resumed = &finished["context"]["resumed"];
    assert_eq!(resumed["kept"], serde_json::json!(["A corrected", "B corrected"]));
    assert_eq!(resumed["from_started_at"], second_run);
    let timed_by = serde_json::json!([{"started_at": first_run, "kept": ["A corrected"]}, {"started_at": second_run, "kept": ["B corrected"]}]);
    assert_eq!(resumed["timed_by"], timed_by);
    let a_under_load = &finished["concurrency"]["phases"][0]["per_query"][0];
    assert_eq!(a_under_load["query"], "A", "{a_under_load}");
    assert!(a_under_load["left_out"].is_null() && a_under_load["checked_against"].is_string(), "A's kept answers are checked against: {a_under_load}");

    // Once finished, or once the data changed, there is nothing to go on from.
    let again: Vec<&str> = args.iter().copied().chain(["--resume", unfinished.to_str().unwrap()]).collect();
    let refused = ghbench(&fixture, &again);
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("that run finished"));
    // Indexes built since (`ingest --index` of the same hour): the kept A ran without them.
    let quarantine = work.path().join("q");
    let indexed = ghbench(&fixture, &["ingest", "--engines", "postgres", "--source", data_dir().to_str().unwrap(), "--from", HOUR, "--index", "--quarantine-dir", quarantine.to_str().unwrap()]);
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let from_copy: Vec<&str> = args.iter().copied().chain(["--resume", copy.to_str().unwrap()]).collect();
    let refused = ghbench(&fixture, &from_copy);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("cannot resume the run of") && said.contains("postgres's indexes: none then, 5 indexes now"), "{said}");
    assert!(!said.contains("'s data:"), "the data is the same: {said}");
    let more = work.path().join("more");
    let gen = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(["gen", "--from", "2015-01-02T00", "--hours", "1", "--events", "50", "--out", more.to_str().unwrap()]).output().unwrap();
    assert!(gen.status.success());
    let ingest = ghbench(&fixture, &["ingest", "--engines", "postgres", "--source", more.to_str().unwrap(), "--from", "2015-01-02T00", "--quarantine-dir", work.path().join("q").to_str().unwrap()]);
    assert!(ingest.status.success());
    let refused = ghbench(&fixture, &from_copy);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("cannot resume the run of") && said.contains("postgres's data: 1 hours, 7702 events"), "{said}");
    assert!(said.contains("then, 2 hours, 7752 events"), "{said}");
    let drop = format!("DROP TABLE {table}_delay_b, {table}_delay_c");
    tokio::runtime::Runtime::new().unwrap().block_on(async { pg().await.batch_execute(&drop).await.unwrap() });
}

/// The exit status has one meaning per code, whatever the command: 1 for a
/// run that finished and wrote its files but whose engines disagree, 2 for
/// an error that stopped it (a server that cannot be reached); and every
/// file a run wrote is named on standard error's last line, `--json -`
/// giving standard output to the record alone. `--cold=clear` and `--cold`
/// (restart) mean what they say on `query` as on `bench`.
#[test]
fn exit_status_tells_an_error_from_results_that_cannot_be_trusted_and_the_last_line_names_the_files() {
    let _servers = disturbs_servers(); // --cold drops the OS page cache
    if real_hour().is_none() {
        return;
    }
    let fixture = LoadedTable::empty("exit_status");
    let work = tempfile::tempdir().unwrap();
    let (polars, quarantine) = (work.path().join("polars"), work.path().join("q"));
    let (polars, quarantine) = (polars.to_str().unwrap(), quarantine.to_str().unwrap());
    let ingest = ghbench(&fixture, &["ingest", "--engines", "postgres,polars", "--polars-dir", polars, "--source", data_dir().to_str().unwrap(), "--from", HOUR, "--quarantine-dir", quarantine]);
    assert!(ingest.status.success());
    // PostgreSQL's A answers something else: the engines disagree.
    let catalog = work.path().join("queries");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    std::fs::write(catalog.join("postgres/corrected/A.sql"), "SELECT 'nobody/nothing' AS repo, 1::bigint AS count\n").unwrap();
    let (results, md) = (work.path().join("results"), work.path().join("report/run.md"));
    let args = ["query", "A", "--variant", "corrected", "--repeat", "1", "--engines", "postgres,polars", "--polars-dir", polars, "--catalog", catalog.to_str().unwrap()];
    let files = ["--output", results.to_str().unwrap(), "--json", "-", "--markdown", md.to_str().unwrap(), "--cold=clear"];
    let out = ghbench(&fixture, &[&args[..], &files[..]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "finished, but the engines disagree: {stderr}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("standard output is the record alone");
    assert_eq!(printed["schema"], "ghbench-olap/2");
    assert!(printed["context"]["cold"]["label"].as_str().unwrap().contains("not a true cold run"), "--cold=clear restarts nothing: {}", printed["context"]["cold"]);
    assert!(stderr.contains("A corrected"), "the table went to standard error: {stderr}");
    let last = stderr.lines().last().unwrap();
    let wrote: Vec<&Path> = last.strip_prefix("wrote ").unwrap_or_else(|| panic!("the last line names the files: {last}")).split(' ').map(Path::new).collect();
    assert_eq!(wrote.len(), 6, "record, Markdown, charts and answers in --output, --markdown's file and its charts: {last}");
    assert!(wrote[0].starts_with(&results) && wrote[0].extension().unwrap() == "json", "the record first: {last}");
    assert_eq!(json(wrote[0]), printed, "the same record in the folder and on standard output");
    let md_charts = work.path().join("report/run-charts");
    for expected in [wrote[0].with_extension("md"), wrote[0].with_extension("answers"), md.clone(), md_charts.clone()] {
        assert!(wrote.contains(&expected.as_path()), "{} named: {last}", expected.display());
    }
    for path in &wrote {
        assert!(path.exists(), "{} was written", path.display());
    }
    let page = std::fs::read_to_string(&md).unwrap();
    let charts = std::fs::read_dir(&md_charts).unwrap().count();
    assert!(charts > 0 && page.contains("run-charts/"), "--markdown's file links the charts beside it: {page:.600}");
    // `report` of that record says the same with its exit status.
    report(&[wrote[0]], 1);

    // An error stops it: a server that cannot be reached exits 2, writing nothing.
    let nowhere = format!("postgres://ghbench@127.0.0.1:{}/ghbench", free_port());
    let out = ghbench(&fixture, &["query", "A", "--engines", "postgres", "--pg-url", &nowhere, "--output", results.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cannot reach postgres") && !stderr.lines().any(|l| l.starts_with("wrote ")), "{stderr}");

    // A bare --cold restarts what it can: polars, having no server, starts afresh, truly cold.
    let none = work.path().join("no-servers.json");
    std::fs::write(&none, r#"{"servers": []}"#).unwrap();
    let cold = ["query", "A", "--variant", "corrected", "--repeat", "1", "--engines", "polars", "--polars-dir", polars, "--cold", "--servers", none.to_str().unwrap(), "--json", "-", "--output", results.to_str().unwrap()];
    let out = ghbench(&fixture, &cold);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    let label = record["context"]["cold"]["label"].as_str().unwrap();
    if is_root() {
        assert!(label.starts_with("true cold") && label.contains("polars started afresh"), "{label}");
    }
}

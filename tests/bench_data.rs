//! `ghbench bench` reports numbers about exactly the data it names: tables
//! are never reused for another data set (another source, another first
//! hour), generated hours are checked against their manifest, damaged input
//! is shown in every report, and a load that needed retries says so. Against
//! the PostgreSQL `just setup` started (and one of the test's own, restarted
//! mid-load), with polars beside it; small data.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ghbench_testkit::throwaway_pg::ThrowawayPg;
use ghbench_testkit::*;
use serde_json::Value;

/// One test's folders, its bench tables' stem and the runs it makes.
struct Bench {
    work: tempfile::TempDir,
    base: String,
    runs: usize,
}

impl Bench {
    fn new(test: &str) -> Bench {
        Bench { work: tempfile::tempdir().unwrap(), base: table(test), runs: 0 }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// Runs `ghbench bench` on postgres and polars with `args`; its output,
    /// and the record and Markdown and HTML it wrote (each run its own folder).
    fn run(&mut self, args: &[&str]) -> (String, Value, String, String) {
        let (ok, said, record, md, html) = self.run_as_it_ends(args);
        assert!(ok, "bench failed: {said}");
        (said, record, md, html)
    }

    /// As [`Bench::run`], with whether it succeeded.
    fn run_as_it_ends(&mut self, args: &[&str]) -> (bool, String, Value, String, String) {
        self.runs += 1;
        let results = self.path(&format!("results-{}", self.runs));
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command
            .args(["bench", "--engines", "postgres,polars", "--table", &self.base, "--variant", "corrected", "--repeat", "1"])
            .arg("--polars-dir")
            .arg(self.path("polars"))
            .arg("--data-dir")
            .arg(self.path("data"))
            .arg("--quarantine-dir")
            .arg(self.path("q"))
            .arg("--output")
            .arg(&results)
            .args(args)
            .env("DATABASE_URL", pg_url());
        let out = output_within(&mut command, Duration::from_secs(300));
        let said = text(&out);
        eprintln!("ghbench bench {}:\n{said}", args.join(" "));
        let (file, record) = bench_record(&results);
        let md = std::fs::read_to_string(file.with_extension("md")).unwrap();
        let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
        (out.status.success(), said, record, md, html)
    }
}

impl Bench {
    /// The results file of the last run.
    fn last_file(&self) -> PathBuf {
        bench_record(&self.path(&format!("results-{}", self.runs))).0
    }
}

/// The load record of `engine` at the record's only size.
fn load<'a>(record: &'a Value, engine: &str) -> &'a Value {
    record["sizes"][0]["loads"].as_array().unwrap().iter().find(|l| l["engine"] == engine).unwrap()
}

/// A folder holding `lines` as the hour 2015-01-01T00.
fn source_with(dir: &Path, lines: &[Vec<u8>]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    write_hour(dir, REAL_HOUR_FILE, lines);
    dir.to_str().unwrap().to_string()
}

#[test]
fn another_source_or_first_hour_never_reuses_a_table() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let lines = real_lines(&real);
    let mut bench = Bench::new("bench_ident");
    let a = source_with(&bench.path("a"), &lines[..300]);
    let b = source_with(&bench.path("b"), &lines[300..800]);

    let (_, first, md, _) = bench.run(&["--source", &a, "--hours", "1", "--concurrency", "3"]);
    assert_eq!(first["sizes"][0]["run"]["context"]["engines"][0]["data"]["events"], 300);
    // The hours loaded at a time, and the server's index build settings, are recorded and said.
    assert_eq!(load(&first, "postgres")["concurrency"], 3);
    assert!(md.contains("hours loaded up to 3 at a time"), "{md}");
    let settings = &first["sizes"][0]["run"]["context"]["engines"][0]["server"]["settings"];
    assert!(settings["maintenance_work_mem"].is_string() && settings["max_parallel_maintenance_workers"].is_string(), "{settings}");
    let (_, second, ..) = bench.run(&["--source", &b, "--hours", "1"]);
    assert_ne!(first["sizes"][0]["table"], second["sizes"][0]["table"], "another source, another table");
    assert_eq!(load(&second, "postgres")["hours_reused"], 0, "nothing of the other source is reused");
    assert_eq!(second["sizes"][0]["run"]["context"]["engines"][0]["data"]["events"], 500, "the numbers are about the source named");
    assert!(second["data"]["identity"].as_str().unwrap().starts_with("blake3:"), "{}", second["data"]);

    // Generated hours: another first hour is other data, in other tables.
    let (_, jan1, ..) = bench.run(&["--gen", "1", "--events-per-hour", "300", "--from", "2015-01-01T00"]);
    let (_, jan2, ..) = bench.run(&["--gen", "1", "--events-per-hour", "300", "--from", "2015-01-02T00"]);
    assert_ne!(jan1["sizes"][0]["table"], jan2["sizes"][0]["table"]);
    assert_eq!(load(&jan2, "polars")["hours_reused"], 0, "the hour of another day is loaded, not reused");
    // The same data again is reused.
    let (_, again, ..) = bench.run(&["--gen", "1", "--events-per-hour", "300", "--from", "2015-01-02T00"]);
    assert_eq!(again["sizes"][0]["table"], jan2["sizes"][0]["table"]);
    assert_eq!(load(&again, "postgres")["hours_reused"], 1);
}

#[test]
fn a_damaged_generated_hour_is_made_again_before_it_is_reused() {
    let _servers = shared_servers();
    let mut bench = Bench::new("bench_regen");
    let gen = ["--gen", "1", "--events-per-hour", "400"];
    let (_, first, ..) = bench.run(&gen);
    let folder = PathBuf::from(first["data"]["location"].as_str().unwrap());
    let file = folder.join(REAL_HOUR_FILE);
    let whole = std::fs::read(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();

    let (said, second, ..) = bench.run(&gen);
    assert!(said.contains("is damaged") && said.contains("generating again"), "the damage is found and said: {said}");
    assert_eq!(std::fs::read(&file).unwrap(), whole, "the same bytes are made again");
    assert_eq!(second["sizes"][0]["run"]["context"]["engines"][0]["data"]["events"], 400);
}

#[test]
fn damaged_source_hours_and_quarantined_lines_are_in_every_report() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let lines = real_lines(&real);
    let mut bench = Bench::new("bench_damage");
    let dir = bench.path("source");
    std::fs::create_dir_all(&dir).unwrap();
    let mut first: Vec<Vec<u8>> = lines[..200].to_vec();
    first.push(b"{not json".to_vec());
    write_hour(&dir, "2015-01-01-0.json.gz", &first);
    std::fs::write(dir.join("2015-01-01-1.json.gz"), b"").unwrap();
    let cut = gzip_lines(&lines[200..600]);
    std::fs::write(dir.join("2015-01-01-2.json.gz"), &cut[..cut.len() / 2]).unwrap();
    let source = dir.to_str().unwrap().to_string();
    let args = ["--source", &source, "--hours", "3"];

    let (said, record, md, html) = bench.run(&args);
    let damage = &load(&record, "postgres")["damage"];
    let hours: Vec<&str> = damage["damaged_hours"].as_array().unwrap().iter().map(|h| h.as_str().unwrap()).collect();
    assert_eq!(hours.len(), 2, "the empty and the cut file: {damage}");
    assert!(hours[0].starts_with("2015-01-01T01") && hours[1].starts_with("2015-01-01T02"), "{hours:?}");
    assert_eq!(damage["quarantined"]["invalid_json"], 1, "{damage}");
    for (view, text) in [("terminal", &said), ("Markdown", &md), ("HTML", &html)] {
        assert!(text.contains("2015-01-01T01") && text.contains("2015-01-01T02"), "the {view} names the damaged hours");
        assert!(text.contains("invalid_json 1"), "the {view} counts the quarantined lines by defect");
    }
    // `ghbench report` shows the saved bench as `bench` did.
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(bench.last_file()).output().unwrap();
    let shown = text(&out);
    assert!(out.status.success() && shown.contains("damaged input") && shown.contains("2015-01-01T02") && shown.contains("invalid_json 1"), "{shown}");

    // Reused, the damage is still said: the ledger remembers it.
    let (said, record, ..) = bench.run(&args);
    let damage = &load(&record, "polars")["damage"];
    assert_eq!(load(&record, "polars")["hours_reused"], 3);
    assert_eq!(damage["damaged_hours"].as_array().unwrap().len(), 2, "{damage}");
    assert!(damage["quarantined_reused"].as_u64().unwrap() >= 1, "{damage}");
    assert!(said.contains("damaged input"), "{said}");
}

#[tokio::test]
async fn a_load_that_outlived_a_restart_says_its_time_includes_retries() {
    let Some(real) = real_hour() else { return };
    let Some(pg) = ThrowawayPg::start("bench_retry") else { return };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    for h in 0..6 {
        std::fs::copy(&real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let bench = |results: &Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command
            .args(["bench", "--engines", "postgres", "--table", "retry", "--variant", "corrected", "--repeat", "1", "--hours", "6"])
            .args(["--pg-url", &pg.url(), "--from", "2015-01-01T00"])
            .arg("--source")
            .arg(&dir)
            .arg("--quarantine-dir")
            .arg(work.path().join("q"))
            .arg("--output")
            .arg(results);
        command
    };
    let results = work.path().join("results");
    let mut child = bench(&results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Restart once an hour is in and before the last is.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let loaded = match ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &pg.url()).await {
            Ok(client) => client
                .query_one("SELECT count(*) FROM ghbench_ledger WHERE engine = 'postgres' AND tbl LIKE 'retry%'", &[])
                .await
                .map_or(0, |r| r.get::<_, i64>(0)),
            Err(_) => 0,
        };
        if loaded >= 1 {
            assert!(loaded < 6, "the load ended before the restart could test anything");
            break;
        }
        assert!(Instant::now() < deadline, "the load never got going");
        assert!(child.try_wait().unwrap().is_none(), "bench ended before the restart");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pg.restart();
    let out = wait_within(child, Duration::from_secs(300));
    let said = text(&out);
    eprintln!("{said}");
    assert!(out.status.success(), "{said}");
    let (file, record) = bench_record(&results);
    let postgres = load(&record, "postgres");
    let retries = postgres["retries"].as_u64().unwrap();
    assert!(retries >= 1, "the restart's retries are recorded with the load: {postgres}");
    let note = if retries == 1 { "includes 1 retry".to_string() } else { format!("includes {retries} retries") };
    let md = std::fs::read_to_string(file.with_extension("md")).unwrap();
    let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
    for (view, text) in [("terminal", &said), ("Markdown", &md), ("HTML", &html)] {
        assert!(text.contains(&note), "the {view} says the load time includes the retries");
    }

    // Reused, the ledger's time stands in for the load: it says its retries too.
    let again = work.path().join("again");
    let out = output_within(&mut bench(&again), Duration::from_secs(300));
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let (file, record) = bench_record(&again);
    assert_eq!(load(&record, "postgres")["hours_reused"], 6, "{said}");
    let ledger = record["sizes"][0]["run"]["context"]["engines"][0]["data"]["load_retries"].as_u64().unwrap_or(0);
    assert!(ledger >= 1, "the ledger kept the retries with the hours: {}", record["sizes"][0]["run"]["context"]["engines"][0]["data"]);
    let note = if ledger == 1 { "includes 1 retry".to_string() } else { format!("includes {ledger} retries") };
    let md = std::fs::read_to_string(file.with_extension("md")).unwrap();
    let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
    for (view, text) in [("terminal", &said), ("Markdown", &md), ("HTML", &html)] {
        let from_ledger = "from its ingest ledger, the wall time of the runs that loaded them";
        assert!(text.contains(from_ledger) && text.contains(&note), "the {view} says the reused load time is the ledger's wall time and includes the retries");
    }
    let charts = file.with_file_name(format!("{}-charts", file.file_stem().unwrap().to_string_lossy()));
    let chart = std::fs::read_to_string(charts.join("load.svg")).unwrap();
    assert!(chart.contains(&note), "the load-rate chart says its rate includes the retries");
}

#[test]
fn a_data_set_whose_name_leaves_no_room_for_index_names_is_named_by_digest() {
    let _servers = shared_servers();
    let mut bench = Bench::new("bench_long");
    // The largest seed: its data's tag would take PostgreSQL's index names
    // past 63 bytes, and the indexes could not be built.
    let (seed, other) = (u64::MAX.to_string(), (u64::MAX - 1).to_string());
    let gen = |bench: &mut Bench, seed: &str| bench.run(&["--gen", "1", "--events-per-hour", "200", "--seed", seed]);
    let (_, record, md, _) = gen(&mut bench, &seed);
    let table = record["sizes"][0]["table"].as_str().unwrap().to_string();
    assert!(table.starts_with(&format!("{}_1h_d", bench.base)), "the data's digest stands for its tag: {table}");
    assert!(md.contains(&table), "the reports name the table");
    let postgres = record["sizes"][0]["indexes"].as_array().unwrap().iter().find(|i| i["engine"] == "postgres").unwrap();
    assert!(postgres["error"].is_null(), "{postgres}");
    let built = postgres["indexes"].as_array().unwrap();
    assert!(!built.is_empty() && built.iter().all(|b| b["name"].as_str().unwrap().starts_with(&table)), "{postgres}");
    assert_eq!(record["data"]["seed"].as_u64(), Some(u64::MAX), "the record names the data: {}", record["data"]);
    assert!(record["data"]["identity"].as_str().unwrap().starts_with("blake3:"), "and the digest in the name: {}", record["data"]);

    // Another seed is another digest, so another table.
    let (_, another, ..) = gen(&mut bench, &other);
    assert_ne!(another["sizes"][0]["table"], table.as_str());
    assert_eq!(load(&another, "postgres")["hours_reused"], 0);
}

#[test]
fn a_failed_index_build_fails_the_bench_and_is_said_in_every_report() {
    let _servers = shared_servers();
    let mut bench = Bench::new("bench_badindex");
    // The repository's catalog, with an index PostgreSQL refuses to build.
    let catalog = bench.path("catalog");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    let indexes = catalog.join("postgres/indexes.sql");
    let mut sql = std::fs::read_to_string(&indexes).unwrap();
    sql.push_str("CREATE INDEX IF NOT EXISTS {table}_nowhere ON {table} (no_such_column);\n");
    std::fs::write(&indexes, sql).unwrap();

    let (ok, said, record, md, html) = bench.run_as_it_ends(&["--gen", "1", "--events-per-hour", "200", "--catalog", catalog.to_str().unwrap()]);
    assert!(!ok, "the postgres times are not those of the indexed table the bench measures: {said}");
    let postgres = record["sizes"][0]["indexes"].as_array().unwrap().iter().find(|i| i["engine"] == "postgres").unwrap();
    let error = postgres["error"].as_str().expect("the failure is recorded");
    assert!(error.contains("no_such_column"), "{error}");
    for (view, text) in [("terminal", &said), ("Markdown", &md), ("HTML", &html)] {
        assert!(text.contains("postgres: indexes failed") && text.contains("no_such_column"), "the {view} says which indexes failed and why");
    }
}

#[test]
fn generated_hours_made_with_defects_are_not_the_benchs_clean_hours() {
    let _servers = shared_servers();
    let mut bench = Bench::new("bench_defects");
    // `ghbench gen --defects` into the folder the bench keeps its hours of
    // this seed and size in: the same seed and events, other data.
    let folder = bench.path("data").join("gen-300-events-seed-42-growing");
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["gen", "--from", "2015-01-01T00", "--hours", "1", "--events", "300", "--seed", "42", "--defects", "0.2", "--truncate-prob", "0"])
        .arg("--data-dir")
        .arg(&folder)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let (said, record, ..) = bench.run(&["--gen", "1", "--events-per-hour", "300"]);
    assert!(said.contains("made with other settings") && said.contains("generating again"), "{said}");
    assert_eq!(record["sizes"][0]["run"]["context"]["engines"][0]["data"]["events"], 300, "every event, none quarantined");
    assert!(load(&record, "postgres")["damage"]["quarantined"].as_object().unwrap().is_empty(), "{}", load(&record, "postgres"));
}

#[test]
fn a_table_too_long_for_its_index_names_is_refused_before_any_data_is_made() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let base = "t".repeat(40);
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["bench", "--gen", "1", "--events-per-hour", "100", "--table", &base, "--engines", "polars,postgres"])
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    let said = text(&out);
    // The limit, and the name that would pass it.
    assert!(!out.status.success() && said.contains("_idx_issue_comments' would be 76 bytes, more than the 63"), "{said}");
    assert!(said.contains("choose a --table of at most 27 characters") && !data.exists(), "{said}");
}

/// A bench on postgres of the test's own (`bench`), whose corrected `query`
/// sleeps on the tables whose name holds `tables` for as long as the table
/// `<base>_delay` says: killed with SIGKILL while it sleeps, then resumed.
struct SleepingBench<'a> {
    bench: &'a Bench,
    catalog: PathBuf,
    results: PathBuf,
    delay_table: String,
    /// What only the sleeping query's text holds, and only the tables it sleeps on.
    markers: (String, String),
    scale: &'a str,
}

impl<'a> SleepingBench<'a> {
    async fn new(bench: &'a Bench, query: &str, tables: &str, scale: &'a str) -> SleepingBench<'a> {
        let catalog = bench.path("queries");
        copy_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
        let delay_table = format!("{}_delay", bench.base);
        let sleeping = format!(
            "SELECT 'slow' AS key, count(*) AS n FROM {{table}} CROSS JOIN (SELECT pg_sleep(CASE WHEN strpos('{{table}}', '{tables}') > 0 THEN (SELECT max(seconds) FROM {delay_table}) ELSE 0 END)) AS d GROUP BY 1\n"
        );
        std::fs::write(catalog.join(format!("postgres/corrected/{query}.sql")), sleeping).unwrap();
        let markers = ("pg_sleep(CASE".to_string(), tables.to_string());
        let sleeper = SleepingBench { bench, catalog, results: bench.path("results"), delay_table, markers, scale };
        sleeper.delay(600).await;
        sleeper
    }

    async fn delay(&self, seconds: i32) {
        let sql = format!("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} AS SELECT {seconds} AS seconds", self.delay_table);
        pg().await.batch_execute(&sql).await.unwrap();
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command
            .args(["bench", "--engines", "postgres", "--table", &self.bench.base, "--variant", "corrected", "--repeat", "1", "--scale", self.scale, "--events-per-hour", "200"])
            .arg("--catalog")
            .arg(&self.catalog)
            .arg("--data-dir")
            .arg(self.bench.path("data"))
            .arg("--quarantine-dir")
            .arg(self.bench.path("q"))
            .arg("--output")
            .arg(&self.results)
            .env("DATABASE_URL", pg_url());
        command
    }

    /// Starts the bench, kills it (SIGKILL) once the query sleeps, ends the
    /// query on the server; how long it took to get there, the sleeping sessions.
    async fn killed_while_sleeping(&self) -> (Duration, Vec<i32>) {
        let mut child = self.command().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        // The markers go in as parameters: in the text, this very query would match them.
        let slow = "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%' AND query LIKE '%' || $2 || '%'";
        let watcher = pg().await;
        let started = Instant::now();
        let mut running = Vec::new();
        while running.is_empty() && started.elapsed() < Duration::from_secs(240) {
            tokio::time::sleep(Duration::from_millis(300)).await;
            running = watcher.query(slow, &[&self.markers.0, &self.markers.1]).await.unwrap().iter().map(|r| r.get::<_, i32>(0)).collect();
        }
        // SAFETY: kill(2) on the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
        let _ = child.wait();
        for pid in &running {
            let _ = watcher.execute("SELECT pg_terminate_backend($1)", &[pid]).await;
        }
        (started.elapsed(), running)
    }

    /// Drops every table of the bench and their ledger entries.
    async fn drop_tables(&self) {
        let watcher = pg().await;
        let tables: Vec<String> =
            watcher.query("SELECT relname::text FROM pg_class WHERE relkind = 'r' AND strpos(relname, $1) = 1", &[&self.bench.base]).await.unwrap().iter().map(|r| r.get(0)).collect();
        for t in &tables {
            let _ = watcher.batch_execute(&format!("DROP TABLE IF EXISTS {t}")).await;
            let _ = watcher.execute("DELETE FROM ghbench_ledger WHERE tbl = $1", &[t]).await;
        }
    }
}

/// A bench killed during its second size keeps the first: its record is
/// written after every query (unfinished until the report), whole each time;
/// `--resume` keeps that size and measures the second.
#[tokio::test(flavor = "multi_thread")]
async fn a_bench_killed_during_its_second_size_keeps_the_first_and_resumes() {
    let _servers = shared_servers();
    let bench = Bench::new("bench_killed");
    // B sleeps on the second size's table alone.
    let sleeper = SleepingBench::new(&bench, "B", &format!("{}_2h_", bench.base), "1,2").await;
    let (took, running) = sleeper.killed_while_sleeping().await;
    let (file, record) = bench_record(&sleeper.results);
    let killed = (record["finished"].clone(), record["sizes"].as_array().unwrap().len(), record["sizes"][0].clone());
    let shown = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(&file).output().unwrap();

    // The same command with --resume: the first size kept, the second measured.
    sleeper.delay(0).await;
    let resumed = output_within(sleeper.command().arg("--resume").arg(&file), Duration::from_secs(300));
    let finished = bench_record(&sleeper.results).1;
    let again = output_within(sleeper.command().arg("--resume").arg(&file), Duration::from_secs(60));
    sleeper.drop_tables().await;

    eprintln!("B of the second size ran after {took:?}: {running:?}");
    assert!(!running.is_empty(), "the second size's B never ran");
    assert_eq!(killed.0, false, "marked unfinished");
    assert_eq!(killed.1, 1, "the first size, whole");
    assert_eq!(killed.2["hours"], 1);
    assert_eq!(killed.2["run"]["queries"].as_array().unwrap().len(), 4, "{}", killed.2["run"]["queries"]);
    assert!(text(&shown).contains("UNFINISHED: the bench stopped after size(s) 1 h"), "{}", text(&shown));
    assert_eq!(shown.status.code(), Some(1), "a partial bench, said by the exit status");
    let said = text(&resumed);
    assert_eq!(resumed.status.code(), Some(1), "a bench made in two runs is said by the exit status: {said}");
    assert!(said.contains("RESUMED: sizes 1 h measured by the bench started"), "{said}");
    assert!(said.contains("exit status 1, its results not to be trusted as they stand: its numbers come from more than one run (RESUMED"), "why 1, said: {said}");
    assert_eq!(finished["finished"], true);
    let hours: Vec<u64> = finished["sizes"].as_array().unwrap().iter().map(|s| s["hours"].as_u64().unwrap()).collect();
    assert_eq!(hours, [1, 2]);
    assert_eq!(finished["sizes"][0], killed.2, "the first size kept as it was measured");
    assert_eq!(finished["resumed"]["kept"], serde_json::json!(["1 h"]));
    assert!(!again.status.success() && text(&again).contains("that bench finished"), "{}", text(&again));
}

/// A one-size bench killed after two queries keeps them: its record is
/// written after every query, the size it measures beside the finished ones;
/// `--resume` goes on at the third, and the finished record holds each query
/// once, the first two as they were timed.
#[tokio::test(flavor = "multi_thread")]
async fn a_one_size_bench_killed_after_two_queries_resumes_at_the_third() {
    let _servers = shared_servers();
    let bench = Bench::new("bench_one_size");
    let sleeper = SleepingBench::new(&bench, "C", &bench.base, "1").await;
    let (took, running) = sleeper.killed_while_sleeping().await;
    let (file, killed) = bench_record(&sleeper.results);
    let shown = text(&Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("report").arg(&file).output().unwrap());
    sleeper.delay(0).await;
    let resumed = output_within(sleeper.command().arg("--resume").arg(&file), Duration::from_secs(300));
    let finished = bench_record(&sleeper.results).1;
    let answers: Vec<String> = std::fs::read_dir(file.with_extension("answers").join("1h")).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect()).unwrap_or_default();
    sleeper.drop_tables().await;

    assert!(!running.is_empty(), "C never ran ({took:?})");
    assert_eq!((killed["finished"].as_bool(), killed["sizes"].as_array().map(Vec::len)), (Some(false), Some(0)), "no size finished");
    let stopped = &killed["measuring"];
    let names = |run: &Value| run["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&stopped["run"]), ["A", "B"], "the two queries it finished, kept as it went");
    assert_eq!(stopped["run"]["finished"], false);
    assert!(shown.contains("of the 1 h size it stopped in, 2 finished: A corrected, B corrected, kept to go on from"), "{shown}");

    let said = text(&resumed);
    assert!(said.contains("going on from the record it resumes, its loads, index builds and A corrected, B corrected kept"), "{said}");
    assert_eq!(finished["finished"], true, "{said}");
    assert!(finished.get("measuring").is_none(), "nothing left half measured");
    let size = &finished["sizes"][0];
    assert_eq!(names(&size["run"]), ["A", "B", "C", "D"], "each query once");
    for (at, query) in ["A", "B"].iter().enumerate() {
        assert_eq!(size["run"]["queries"][at], stopped["run"]["queries"][at], "{query} as it was timed before the kill");
    }
    assert_eq!(size["loads"], stopped["loads"], "the load as it was measured, not the resume's reuse");
    assert_eq!(size["run"]["context"]["resumed"]["kept"], serde_json::json!(["A corrected", "B corrected"]));
    let mut answers = answers;
    answers.sort();
    assert_eq!(answers, ["A-corrected.json", "B-corrected.json", "C-corrected.json", "D-corrected.json"], "every query's answers kept beside the record");
}

/// A sweep whose limit cannot be had (too little data for its ratio) is
/// refused once the data is loaded, before any query runs, with the
/// numbers; no record is left to resume (a resume would fail the same way).
#[test]
fn a_sweep_too_small_for_its_ratio_is_refused_before_any_query_runs() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: --regime needs root");
        return;
    }
    let bench = Bench::new("regime_small");
    let results = bench.path("results");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(["bench", "--gen", "1", "--events-per-hour", "2000", "--engines", "postgres", "--table", &bench.base, "--regime", "40", "--repeat", "1", "--variant", "corrected"]);
    command.arg("--data-dir").arg(bench.path("data")).arg("--quarantine-dir").arg(bench.path("q")).arg("--output").arg(&results).env("DATABASE_URL", pg_url());
    let out = output_within(&mut command, Duration::from_secs(300));
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--regime 40: postgres's") && said.contains("of data at least"), "the numbers: {said}");
    assert!(!said.contains("run 1/1") && !said.contains("--resume"), "no query ran, nothing to resume: {said}");
    // No record, and no claim on a record's name left behind.
    let left: Vec<String> = std::fs::read_dir(&results).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    assert_eq!(left, Vec::<String>::new(), "nothing left in --output");
}

/// `--scale … --drop-measured`: each size's tables go once its queries are
/// recorded, so the disk holds one size at a time; the record says so per
/// engine, and each size was measured on its own data first.
#[tokio::test(flavor = "multi_thread")]
async fn drop_measured_drops_each_sizes_tables_once_recorded() {
    let _servers = shared_servers();
    let mut bench = Bench::new("bench_drop");
    let (said, record, md, _) = tokio::task::block_in_place(|| {
        bench.run(&[
            "--scale",
            "1,2",
            "--events-per-hour",
            "150",
            "--drop-measured",
        ])
    });
    let sizes = record["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2, "{said}");
    for (size, events) in sizes.iter().zip([150, 300]) {
        let dropped: Vec<&str> = size["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        assert_eq!(dropped, ["postgres: dropped", "polars: dropped"], "{said}");
        assert_eq!(
            size["run"]["context"]["engines"][0]["data"]["events"], events,
            "measured on its data before the drop"
        );
        let table = size["table"].as_str().unwrap();
        let rows: i64 = pg()
            .await
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 0, "{table} holds nothing once measured");
        let ledger: i64 = pg()
            .await
            .query_one(
                "SELECT count(*) FROM ghbench_ledger WHERE tbl = $1",
                &[&table],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            ledger, 0,
            "and its ledger lists no hour, so a rerun loads it again"
        );
        let polars_files = walk(&bench.path("polars").join(table));
        assert!(
            polars_files
                .iter()
                .all(|f| !f.to_string_lossy().ends_with(".parquet")),
            "polars' {table} keeps no data file: {polars_files:?}"
        );
    }
    assert!(
        md.contains("dropped once measured"),
        "the report says the tables went"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            if e.path().is_dir() {
                walk(&e.path())
            } else {
                vec![e.path()]
            }
        })
        .collect()
}

/// Unmounts a file system a test mounted, however the test ends.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// `ghbench bench ARGS` (corrected texts, one hot run) with polars' folder on
/// a tmpfs of `size` (`2m`) mounted for it, unmounted after: its output and
/// results folder.
fn bench_with_polars_on_a_small_disk(bench: &Bench, size: &str, args: &[&str]) -> (std::process::Output, PathBuf) {
    let polars = bench.path("polars");
    std::fs::create_dir_all(&polars).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&polars).status().unwrap();
    assert!(mounted.success(), "mount a {size} tmpfs");
    let _unmount = Unmount(polars.clone());
    let results = bench.path("results");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["bench", "--table", &bench.base, "--variant", "corrected", "--repeat", "1"])
        .args(args)
        .arg("--polars-dir")
        .arg(&polars)
        .arg("--data-dir")
        .arg(bench.path("data"))
        .arg("--quarantine-dir")
        .arg(bench.path("q"))
        .arg("--output")
        .arg(&results)
        .env("DATABASE_URL", pg_url());
    (output_within(&mut command, Duration::from_secs(300)), results)
}

/// `--scale`: a size whose whole estimated need exceeds the free space is
/// refused with the numbers before any of it loads (polars' folder on a 2 MiB
/// file system of the test's own); the size before it is measured and kept.
#[tokio::test(flavor = "multi_thread")]
async fn a_size_that_would_not_fit_is_refused_before_any_of_it_loads() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: mounting a small file system needs root");
        return;
    }
    let bench = Bench::new("bench_nofit");
    let (out, results) = bench_with_polars_on_a_small_disk(&bench, "2m", &["--engines", "postgres,polars", "--scale", "1,24", "--events-per-hour", "400"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "an error stopped it: {said}");
    assert!(said.contains("the 24 h size would not fit") && said.contains("nothing of it was loaded"), "{said}");
    assert!(said.contains("needs about") && said.contains("are free") && said.contains("bytes per gzip byte, as it stored the 1 h size"), "with the numbers and what they rest on: {said}");
    let (_, record) = bench_record(&results);
    let sizes = record["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1, "the 1 h size measured and kept: {record}");
    assert_eq!(sizes[0]["run"]["context"]["engines"][0]["data"]["events"], 400);
    let estimated = sizes[0]["disk_plan"]["estimated"].as_array().unwrap();
    assert_eq!(estimated.len(), 2, "each engine's estimate, set against what it stored: {}", sizes[0]["disk_plan"]);
    // The 24 h tables hold nothing: not an hour of the size was loaded.
    let table = format!("{}_24h", bench.base);
    let tables: Vec<String> = pg().await.query("SELECT tablename::text FROM pg_tables WHERE tablename LIKE $1", &[&format!("{table}%")]).await.unwrap().iter().map(|r| r.get(0)).collect();
    for t in &tables {
        let rows: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {t}"), &[]).await.unwrap().get(0);
        assert_eq!(rows, 0, "{t}");
    }
    let ledger: i64 = pg().await.query_one("SELECT count(*) FROM ghbench_ledger WHERE tbl LIKE $1", &[&format!("{table}%")]).await.unwrap().get(0);
    assert_eq!(ledger, 0, "no hour of the refused size in any ledger");
}

/// `--scale`: a size whose need was measured on the size before and fits is
/// loaded, though its hours' JSON size (all ingest's own check could go on)
/// would not fit: polars, storing a fifth of the JSON, on a 20 MiB file system
/// of the test's own, 8 hours of 2,000 events after 1 (about 38 MB at the JSON
/// size, under the 24 hours that start a merge; some 8 MB measured). At 10M
/// events ingest's guess refused polars' 4.8 GB for 48 GB.
#[tokio::test(flavor = "multi_thread")]
async fn a_size_measured_to_fit_loads_though_its_json_size_would_not() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: mounting a small file system needs root");
        return;
    }
    let bench = Bench::new("bench_fits");
    let (out, results) = bench_with_polars_on_a_small_disk(&bench, "20m", &["--engines", "polars", "--scale", "1,8", "--events-per-hour", "2000"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("polars: measured and found room, so each load skips its own check"), "{said}");
    let (_, record) = bench_record(&results);
    let sizes = record["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2, "{said}");
    assert_eq!(sizes[1]["run"]["context"]["engines"][0]["data"]["events"], 16_000, "{}", sizes[1]["run"]["context"]["engines"][0]);
    assert_eq!(sizes[1]["disk_plan"]["measured"], serde_json::json!(["polars"]), "{}", sizes[1]["disk_plan"]);
    assert!(sizes[0]["disk_plan"].get("measured").is_none(), "the first size has nothing measured: {}", sizes[0]["disk_plan"]);
    // What the JSON size would have asked, against the file system: the test shows something only if it did not fit.
    let json_bytes: u64 = std::fs::read_dir(bench.path("data")).unwrap().flatten().flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten()).filter(|f| f.path().extension().is_some_and(|x| x == "gz")).map(|f| {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(f.path()).unwrap()), &mut plain).unwrap();
        plain.len() as u64
    }).sum();
    assert!(json_bytes > 20 << 20, "the 8 h size's JSON size, {json_bytes} bytes, must exceed the 20 MiB");
}

/// A first size has nothing measured, so its free-space checks take the
/// hours' JSON size (several times what polars stores): refused, saying
/// --force; with --force it loads, saying so. Polars on a 20 MiB file system
/// of the test's own, 8 hours of 2,000 events (about 38 MB at the JSON size,
/// under the 24 hours that start a merge; some 8 MB stored). At 10M events the
/// same guess asked 48 GB for polars' 4.5 GiB.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_size_guessed_not_to_fit_loads_with_force() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: mounting a small file system needs root");
        return;
    }
    let bench = Bench::new("bench_force");
    let asked = ["--engines", "polars", "--hours", "8", "--events-per-hour", "2000"];
    let (out, _) = bench_with_polars_on_a_small_disk(&bench, "20m", &asked);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("not enough free space for this load") && said.contains("pass --force"), "{said}");
    let (out, results) = bench_with_polars_on_a_small_disk(&bench, "20m", &[&asked[..], &["--force"]].concat());
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("polars: loading without its free-space check, as --force asks"), "{said}");
    let (_, record) = bench_record(&results);
    let size = &record["sizes"][0];
    assert_eq!(size["run"]["context"]["engines"][0]["data"]["events"], 16_000, "{}", size["run"]["context"]["engines"][0]);
}

/// `--scale` at three sizes spanning 4x, true cold: the record fits the cold
/// runs and the answers' rows beside the hot medians, each engine's load,
/// index builds and bytes, keeps each size's disk estimate beside what was
/// stored and ghbench's own peak memory per phase, and the reports show them.
#[test]
fn three_sizes_4x_apart_record_cold_hot_answer_load_and_index_growth() {
    // Cold runs restart the servers `just setup` started.
    let _servers = alone_with_servers();
    let mut bench = Bench::new("bench_growth");
    let (said, record, md, _) = bench.run(&["--scale", "1,2,4", "--events-per-hour", "300", "--cold"]);
    let sizes = record["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 3, "{said}");
    for size in sizes {
        let plan = &size["disk_plan"];
        assert_eq!(plan["estimated"].as_array().map(Vec::len), Some(2), "both engines estimated before loading: {plan}");
        assert!(plan["gzip_bytes"].as_u64().unwrap() > 0, "{plan}");
        let memory = &size["ghbench_memory"];
        assert!(memory["load_bytes"].as_u64().unwrap() > 0 && memory["queries_bytes"].as_u64().unwrap() > 0, "ghbench's peaks per phase: {memory}");
    }
    // From the second size on, each estimate rests on what the size before stored.
    let basis = sizes[1]["disk_plan"]["estimated"][0]["basis"].as_str().unwrap();
    assert!(basis.contains("as it stored the 1 h size"), "{basis}");
    assert!(record["report_peak_bytes"].as_u64().unwrap() > 0);
    let growth = record["growth"].as_array().unwrap();
    assert_eq!(growth.len(), 4 * 2, "each query on each engine");
    for g in growth {
        let (cold, rows) = (&g["cold"], &g["rows"]);
        assert_eq!(cold["points"].as_array().map(Vec::len), Some(3), "a cold time per size: {g}");
        assert!(cold["exponent"].as_f64().is_some() && rows["exponent"].as_f64().is_some(), "{g}");
        let answers: Vec<f64> = rows["points"].as_array().unwrap().iter().map(|p| p[1].as_f64().unwrap()).collect();
        assert_eq!(answers.len(), 3, "{g}");
    }
    let engines = record["engine_growth"].as_array().unwrap();
    let postgres = engines.iter().find(|e| e["engine"] == "postgres").unwrap();
    for fit in ["load_seconds", "index_seconds", "stored_bytes"] {
        assert_eq!(postgres[fit]["points"].as_array().map(Vec::len), Some(3), "{fit}: {postgres}");
        assert!(postgres[fit]["exponent"].as_f64().is_some(), "{fit}: {postgres}");
    }
    let stored = postgres["stored_bytes"]["points"].as_array().unwrap();
    assert!(stored[2][1].as_f64().unwrap() > stored[0][1].as_f64().unwrap(), "4x the events take more bytes: {postgres}");
    for text in [&said, &md] {
        assert!(text.contains("cold slope") || text.contains("cold slope "), "the slopes are shown: {text}");
    }
    assert!(md.contains("Each engine's load, index builds and stored bytes") && md.contains("estimated") && md.contains("ghbench itself: peak"), "{md}");
}

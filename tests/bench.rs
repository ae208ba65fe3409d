//! `ghbench bench` end to end, on servers of the test's own that
//! `scripts/setup.sh` starts (its own folder and ports, so restarting them
//! disturbs no other test): generated data loaded into every engine, the
//! indexes, true cold runs (each server really restarted, polars started
//! afresh), hot runs, every answer verified, one results file and its
//! reports; a rerun reuses the loaded hours and `--scale` fits the growth;
//! a server ghbench does not manage is labelled as not truly cold.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ghbench_testkit::*;
use serde_json::Value;

const ENGINES: [&str; 4] = ["postgres", "normalized", "mongo", "polars"];
/// Every registered engine but the optional `citus`: what `bench` runs
/// without --engines where no Citus cluster answers.
const EVERY_ENGINE: [&str; 8] = ["postgres", "postgres-tuned", "mongo", "mongo-tuned", "normalized", "mysql", "mysql-tuned", "polars"];

/// The servers `scripts/setup.sh` started in a folder of the test's own;
/// stopped (and the folder removed) when dropped.
pub(crate) struct OwnSetup {
    pub(crate) home: PathBuf,
    pub(crate) pg_url: String,
    pub(crate) mongo_url: String,
    pub(crate) mysql_url: String,
    /// A Citus coordinator's URL at a port nothing listens on: this setup
    /// starts no cluster, and the shared one must not stand in for it.
    pub(crate) citus_url: String,
}

impl OwnSetup {
    fn start() -> Option<OwnSetup> {
        OwnSetup::start_with(Some("128MB"))
    }

    /// `shared_buffers`: None leaves it to setup (scaled to a memory limit, if any).
    pub(crate) fn start_with(shared_buffers: Option<&str>) -> Option<OwnSetup> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let venv = repo.join(".ghbench/venv");
        let has_mongod = Command::new("sh").args(["-c", "command -v mongod"]).output().is_ok_and(|o| o.status.success());
        if !has_mongod && !venv.join("bin/secantusd-py").is_file() {
            eprintln!("SKIPPED: no mongod and no SecantusDB in {}; run `just setup` first", venv.display());
            return None;
        }
        // Under /tmp: user postgres must be able to enter it when we are root.
        // One folder per setup: the tests run at once, in one process.
        let home = own_temp_dir("bench");
        let _ = std::fs::remove_dir_all(&home);
        let (pg_port, mongo_port) = (free_port(), free_port());
        let mut command = Command::new("bash");
        command.arg(repo.join("scripts/setup.sh")).env("GHBENCH_HOME", &home).env("GHBENCH_VENV", &venv);
        command.env("GHBENCH_PG_PORT", pg_port.to_string()).env("GHBENCH_MONGO_PORT", mongo_port.to_string());
        // Its MariaDB too (setup starts every server), small, on a port of its own.
        let mysql_port = free_port();
        command.env("GHBENCH_MYSQL_PORT", mysql_port.to_string()).env("GHBENCH_MYSQL_BUFFER_POOL", "128M");
        // No Citus cluster (the Citus tests start their own).
        command.env("GHBENCH_CITUS", "off");
        match shared_buffers {
            Some(size) => command.env("GHBENCH_PG_SHARED_BUFFERS", size),
            None => command.env_remove("GHBENCH_PG_SHARED_BUFFERS"),
        };
        let out = command.env_remove("GHBENCH_MEMORY").output().unwrap();
        let setup = OwnSetup {
            home,
            pg_url: format!("postgres://ghbench@127.0.0.1:{pg_port}/ghbench"),
            mongo_url: format!("mongodb://127.0.0.1:{mongo_port}/ghbench?directConnection=true"),
            mysql_url: format!("mysql://ghbench@127.0.0.1:{mysql_port}/ghbench"),
            citus_url: format!("postgres://ghbench@127.0.0.1:{}/ghbench", free_port()),
        };
        assert!(out.status.success(), "setup.sh: {}", text(&out));
        Some(setup)
    }

    pub(crate) fn servers_file(&self) -> PathBuf {
        self.home.join("servers.json")
    }

    /// ghbench with `args` on these servers alone (not yet started).
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command.args(args).env("DATABASE_URL", &self.pg_url).env("MONGODB_URI", &self.mongo_url).env("MYSQL_URL", &self.mysql_url).env("CITUS_URL", &self.citus_url).env_remove("GHBENCH_SERVERS");
        command
    }

    /// ghbench with `args` on these servers, run to its end: whether it succeeded, and what it said.
    pub(crate) fn ghbench(&self, args: &[&str]) -> (bool, String) {
        let out = output_within(&mut self.command(args), Duration::from_secs(600));
        let said = text(&out);
        eprintln!("ghbench {}:\n{said}", args.join(" "));
        (out.status.success(), said)
    }

    pub(crate) async fn postmaster_started(&self) -> String {
        let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &self.pg_url).await.unwrap();
        client.query_one("SELECT pg_postmaster_start_time()::text", &[]).await.unwrap().get(0)
    }

    /// The cgroups a backend of the server runs in (`/proc/<pid>/cgroup`).
    pub(crate) async fn postgres_cgroup(&self) -> String {
        let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &self.pg_url).await.unwrap();
        let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap()
    }

    fn mongo_pid(&self) -> String {
        std::fs::read_to_string(self.home.join("mongo/server.pid")).unwrap_or_default()
    }

    fn mysql_pid(&self) -> String {
        std::fs::read_to_string(self.home.join("mysql/server.pid")).unwrap_or_default()
    }
}

impl Drop for OwnSetup {
    fn drop(&mut self) {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let _ = Command::new("bash").arg(repo.join("scripts/down.sh")).env("GHBENCH_HOME", &self.home).output();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn of<'a>(list: &'a Value, engine: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|e| e["engine"] == engine).unwrap_or_else(|| panic!("no {engine} in {list}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn one_command_loads_indexes_and_runs_true_cold_and_hot_on_every_engine() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some(setup) = OwnSetup::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let (results, data, polars) = (path("results"), path("data"), path("polars"));
    let common = ["--events-per-hour", "1200", "--variant", "corrected", "--repeat", "2"];
    let places = ["--data-dir", &data, "--polars-dir", &polars, "--output", &results, "--quarantine-dir", &path("q")];
    let servers = setup.servers_file();
    let (pg_before, mongo_before, mysql_before) = (setup.postmaster_started().await, setup.mongo_pid(), setup.mysql_pid());

    // No --engines: the whole benchmark is every engine; the optional citus,
    // whose coordinator does not answer, left out in one line.
    let mut args = vec!["bench", "--gen", "2", "--cold", "--servers", servers.to_str().unwrap()];
    args.extend(common.iter().chain(&places));
    let (ok, said) = setup.ghbench(&args);
    assert!(ok, "bench --gen 2 --cold failed: {said}");
    let skipped: Vec<&str> = said.lines().filter(|l| l.contains("going on without citus")).collect();
    assert_eq!(skipped.len(), 1, "{said}");
    let citus_port = setup.citus_url.rsplit(':').next().and_then(|tail| tail.split('/').next()).unwrap();
    assert!(skipped[0].starts_with("note: citus at ") && skipped[0].contains(&format!(":{citus_port}")), "where it was looked for: {said}");
    assert!(skipped[0].contains("going on without citus, citus-tuned (optional engines"), "both setups of the one coordinator in one line: {said}");
    // Output is not a terminal here: the log still shows each cold step and first run.
    assert!(said.contains("A corrected on postgres: making it cold") && said.contains("D corrected on polars: cold run"), "{said}");

    let (file, record) = bench_record(Path::new(&results));
    assert_eq!(record["schema"], "ghbench-bench/1");
    let size = &record["sizes"][0];
    assert_eq!(size["hours"], 2);
    let run = &size["run"];
    let events = run["context"]["engines"][0]["data"]["events"].as_u64().unwrap();
    assert!(events > 2000, "two hours of about 1,200 events, some quarantined at most: {events}");
    for engine in EVERY_ENGINE {
        let load = of(&size["loads"], engine);
        assert_eq!((load["hours_loaded"].as_u64(), load["hours_reused"].as_u64()), (Some(2), Some(0)), "{engine}: {load}");
        assert_eq!(load["events_loaded"].as_u64(), Some(events), "{engine} stored every event once");
        assert!(load["seconds"].as_f64().unwrap() > 0.0 && load["events_per_second"].as_f64().unwrap() > 0.0, "{engine}: {load}");
        let storage = &of(&run["context"]["engines"], engine)["storage"];
        assert!(storage["table_bytes"].as_u64().unwrap() > 0, "{engine} has a size: {storage}");
    }
    assert!(of(&size["loads"], "postgres")["upkeep"].as_str().unwrap().contains("ANALYZE"), "PostgreSQL is analysed as part of its load");
    for engine in ["postgres", "mongo", "mysql"] {
        let built = of(&size["indexes"], engine)["indexes"].as_array().unwrap();
        assert_eq!(built.len(), 5, "{engine}: the paper's five indexes");
        assert!(built.iter().all(|b| b["created"] == true && b["seconds"].as_f64().unwrap() > 0.0), "{engine}: {built:?}");
    }
    for engine in ["postgres-tuned", "mongo-tuned", "mysql-tuned"] {
        assert_eq!(of(&size["indexes"], engine)["indexes"].as_array().unwrap().len(), 4, "{engine}: one index per query");
    }
    assert!(of(&size["indexes"], "polars")["indexes"].as_array().unwrap().is_empty(), "polars takes no indexes");

    // Truly cold: every server restarted, polars afresh, the page cache dropped (root here).
    let cold = &run["context"]["cold"];
    assert_eq!(cold["true_cold"], true, "{cold}");
    assert_eq!(cold["true_cold_engines"].as_array().unwrap().len(), EVERY_ENGINE.len(), "{cold}");
    assert!(cold["label"].as_str().unwrap().starts_with("true cold"), "{cold}");
    assert_ne!(setup.postmaster_started().await, pg_before, "PostgreSQL was restarted");
    assert_ne!(setup.mongo_pid(), mongo_before, "the MongoDB-wire server was restarted");
    assert_ne!(setup.mysql_pid(), mysql_before, "MariaDB was restarted");
    // Restarted from within ghbench's process group, it must not die with it
    // (Ctrl-C, a killed job): it leads a session of its own.
    let pid = setup.mongo_pid().trim().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state, ppid, pgrp, session.
    let session = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(3)).unwrap_or_default().to_string();
    assert_eq!(session, pid, "the MongoDB-wire server {pid} leads its own session: {stat}");
    let queries = run["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 4, "A-D corrected");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{}: {}", q["query"], q["verification"]);
        for r in q["engines"].as_array().unwrap() {
            assert!(r["cold_run"]["seconds"].as_f64().is_some(), "{} {}: a cold run", q["query"], r["engine"]);
            assert_eq!(r["iterations"].as_array().unwrap().len(), 2, "{} {}: two hot runs", q["query"], r["engine"]);
        }
    }
    let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
    assert!(html.contains("ghbench bench") && html.contains("<svg"), "the page has its charts");
    let md = std::fs::read_to_string(file.with_extension("md")).unwrap();
    assert!(md.contains("cold s") && md.contains("true cold"), "the Markdown shows the cold runs");
    // Each tuned setup against the paper's, query by query, cold and hot.
    assert!(md.contains("Each setup against the one it changes") && md.contains("| postgres-tuned | postgres |"), "{md}");
    assert!(md.contains("setup tuned (tuned, changing mongo's)"), "the setup's changes are written out: {md}");
    // `ghbench report` shows a saved bench again: its tables, or its page.
    let (ok, said) = setup.ghbench(&["report", file.to_str().unwrap()]);
    assert!(ok && said.contains("events/s") && said.contains("verified") && said.contains("A corrected"), "{said}");
    let page = work.path().join("again.html");
    let (ok, said) = setup.ghbench(&["report", file.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    assert!(ok, "{said}");
    assert!(std::fs::read_to_string(&page).unwrap().contains("2 hours,"), "the page shows the size");

    // Rerun at two sizes, hot: the 2-hour tables are reused, the 1-hour ones
    // loaded, and the growth fitted and charted.
    let mut args = vec!["bench", "--scale", "2,1", "--engines", "postgres,normalized,mongo,polars"];
    args.extend(common.iter().chain(&places));
    let (ok, said) = setup.ghbench(&args);
    assert!(ok, "bench --scale failed: {said}");
    let (file, record) = bench_record(Path::new(&results));
    let sizes = record["sizes"].as_array().unwrap();
    assert_eq!(sizes.iter().map(|s| s["hours"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2], "smallest first");
    for engine in ENGINES {
        let (small, reused) = (of(&sizes[0]["loads"], engine), of(&sizes[1]["loads"], engine));
        assert_eq!(small["hours_loaded"], 1, "{engine}: {small}");
        assert_eq!((reused["hours_loaded"].as_u64(), reused["hours_reused"].as_u64()), (Some(0), Some(2)), "{engine}: {reused}");
        assert!(reused["seconds"].is_null(), "nothing loaded, no load time: {reused}");
    }
    let md = std::fs::read_to_string(file.with_extension("md")).unwrap();
    assert!(md.contains("from its ingest ledger, the wall time of the runs that loaded them"), "a reused load shows the ledger's time, said so: {md}");
    let growth = record["growth"].as_array().unwrap();
    assert_eq!(growth.len(), 4 * 4, "each query on each engine");
    for g in growth {
        assert_eq!(g["points"].as_array().unwrap().len(), 2, "{g}");
        assert!(g["seconds_per_million_events"].as_f64().is_some() && g["exponent"].as_f64().is_some(), "{g}");
    }
    let charts = file.with_file_name(format!("{}-charts", file.file_stem().unwrap().to_string_lossy()));
    let chart = std::fs::read_to_string(charts.join("growth-A-corrected.svg")).expect("the growth chart of Query A");
    assert!(chart.contains("<polyline") && ENGINES.iter().all(|e| chart.contains(e)), "a line per engine");

    // A --servers file that does not exist is a typo, said before any work.
    let missing = path("no-such-servers.json");
    let mut args = vec!["bench", "--gen", "1", "--cold", "--servers", &missing, "--engines", "postgres,polars"];
    args.extend(&common[2..]);
    args.extend(&places);
    let (ok, said) = setup.ghbench(&args);
    assert!(!ok && said.contains(&format!("--servers {missing} does not exist")), "{said}");
    assert!(!said.contains("[bench"), "refused before any phase: {said}");

    // So is a mix the run does not time: before generating, loading or timing.
    for (mix, refusal) in [("Z", "--queries Z: this run times no query Z"), ("A:published", "--queries A:published: this run times A only as corrected")] {
        let mut args = vec!["bench", "--gen", "1", "--clients", "1", "--queries", mix, "--engines", "postgres,polars"];
        args.extend(&common[2..]);
        args.extend(&places);
        let (ok, said) = setup.ghbench(&args);
        assert!(!ok && said.contains(refusal), "{said}");
        assert!(!said.contains("[bench"), "refused before any phase: {said}");
    }

    // A server not in --servers cannot be restarted: its first runs are not
    // called truly cold; polars (no server) still is.
    let none = path("no-servers.json");
    std::fs::write(&none, r#"{"servers": []}"#).unwrap();
    let mut args = vec!["bench", "--gen", "1", "--cold", "--servers", &none, "--engines", "postgres,polars"];
    args.extend(&common[2..]);
    args.extend(&places);
    let (ok, said) = setup.ghbench(&args);
    assert!(ok, "bench on an unmanaged server failed: {said}");
    let (_, record) = bench_record(Path::new(&results));
    let cold = &record["sizes"][0]["run"]["context"]["cold"];
    assert_eq!(cold["true_cold"], false, "{cold}");
    assert_eq!(cold["true_cold_engines"], serde_json::json!(["polars"]), "{cold}");
    let label = cold["label"].as_str().unwrap();
    assert!(label.contains("not a true cold run"), "{cold}");
    // No server was restarted: the label must not say one was.
    assert!(label.starts_with("true cold where polars started afresh (no server)") && !label.contains("restarted or"), "{label}");
}

/// For the tests of memory limits, which need root (else skipped, said):
/// servers of the test's own whose memory settings follow a limit, as a
/// user's setup would, and a work folder.
pub(crate) fn limited_setup(option: &str) -> Option<(OwnSetup, tempfile::TempDir)> {
    if !is_root() {
        eprintln!("SKIPPED: {option} needs root");
        return None;
    }
    let setup = OwnSetup::start_with(None)?;
    Some((setup, tempfile::tempdir().unwrap()))
}

/// `bench --memory`: the servers restarted inside a cgroup of that size and
/// held under it; the record says so, hot runs of data larger than the limit
/// read from disk, every cold restart goes back inside, and afterwards the
/// servers run as setup left them.
#[tokio::test(flavor = "multi_thread")]
async fn under_memory_the_servers_run_inside_the_limit_and_the_record_says_so() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    // Its memory settings scaled to the limit, as a user's setup would be.
    let Some((setup, work)) = limited_setup("--memory") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    const LIMIT: u64 = 96 << 20;
    // About 90 MB of jsonb: more than the limit leaves for the page cache.
    let args = ["bench", "--gen", "2", "--events-per-hour", "30000", "--engines", "postgres,polars", "--memory", "96MiB", "--cold", "--repeat", "2"];
    let places = ["--variant", "corrected", "--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--polars-dir", &path("polars"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let (ok, said) = setup.ghbench(&[&args[..], &places[..]].concat());
    assert!(ok, "bench --memory failed: {said}");
    assert!(said.contains("inside a 96.0 MiB memory cgroup") && said.contains("restarted as `just setup` left it"), "{said}");

    let (_, record) = bench_record(Path::new(&path("results")));
    let run = &record["sizes"][0]["run"];
    for engine in ["postgres", "polars"] {
        let memory = &of(&run["context"]["engines"], engine)["memory"];
        assert_eq!(memory["bytes"].as_u64(), Some(LIMIT), "{engine}: {memory}");
        let limit = &memory["limit"];
        assert!(limit["cgroup"].as_str().unwrap().starts_with("/ghbench/"), "{engine}: {limit}");
        assert!(limit["enforced_by"].as_str().unwrap().contains("page cache charged to it"), "{engine}: {limit}");
        let over = &limit["over_runs"];
        let peak = over["peak_bytes"].as_u64().unwrap();
        assert!(peak > 0 && peak <= LIMIT + ghbench_olap::cgroup::FORCED_CHARGE_SLACK, "{engine}: the kernel held the limit: {over}");
        assert_eq!(over["oom_kills"].as_u64(), Some(0), "{engine}: {over}");
    }
    let label = run["context"]["cold"]["label"].as_str().unwrap();
    assert!(label.contains("postgres data") && label.contains("(a 96.0 MiB limit): read from disk"), "{label}");
    // The limit held during the load and index builds too; polars loads outside it, said.
    let during_load = &record["sizes"][0]["memory_during_load"];
    let postgres_load = &of(during_load, "postgres")["counters"];
    assert!(postgres_load["peak_bytes"].as_u64().unwrap() <= LIMIT + ghbench_olap::cgroup::FORCED_CHARGE_SLACK, "{during_load}");
    assert_eq!(postgres_load["oom_kills"].as_u64(), Some(0), "{during_load}");
    assert!(of(during_load, "polars")["outside"].as_str().unwrap().contains("ghbench's own process"), "{during_load}");
    assert!(said.contains("postgres: during its load and index builds, peak"), "{said}");
    // Beyond memory the disk sets the pace: which disk, and its measured speed.
    let disk = &run["context"]["machine"]["disk"];
    assert!(disk["sequential_read_bytes_per_second"].as_f64().unwrap() > 0.0 && disk["device"].is_string(), "{disk}");
    // Every restart for a cold run came back inside the limit, and said so.
    let actions: Vec<&str> = run["context"]["cold"]["actions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(actions.iter().any(|a| a.contains("postgres back inside its 96.0 MiB memory cgroup")), "{actions:?}");
    assert!(!actions.iter().any(|a| a.contains("NOT back under")), "{actions:?}");
    let true_cold = run["context"]["cold"]["true_cold_engines"].as_array().unwrap();
    assert!(true_cold.iter().any(|e| e == "postgres"), "every restart came back inside: {}", run["context"]["cold"]);
    // A hot run of the scan queries reads from disk what the limit does not keep.
    let hot_reads: u64 = run["queries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["query"] == "B" || q["query"] == "C")
        .map(|q| of(&q["engines"], "postgres")["read"]["kernel"]["counters"]["read_bytes"].as_u64().unwrap_or(0))
        .sum();
    assert!(hot_reads > 0, "postgres read from disk under the limit");
    // Afterwards: as setup left it, under no limit.
    let cgroup = setup.postgres_cgroup().await;
    assert!(!cgroup.contains("/ghbench/"), "after the bench the server runs outside the limit: {cgroup}");
}

/// Ctrl-C while the servers run under `--memory`'s limit: ghbench exits 130
/// and restarts them as setup left them on its way out, saying so.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_under_memory_puts_the_servers_back_as_setup_left_them() {
    // As root, --memory drops the page cache before the queries if the load
    // ends before the Ctrl-C lands.
    let _servers = disturbs_servers();
    let Some((setup, work)) = limited_setup("--memory") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    let stderr = work.path().join("stderr");
    let args = ["bench", "--gen", "2", "--events-per-hour", "30000", "--engines", "postgres", "--memory", "128MiB", "--servers", servers.to_str().unwrap()];
    let places = ["--data-dir", &path("data"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let child = setup.command(&[&args[..], &places[..]].concat()).stdout(std::process::Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()).spawn().unwrap();
    // The load starts once the server runs under the limit.
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&stderr).unwrap_or_default().contains("] load into") {
        assert!(started.elapsed() < Duration::from_secs(300), "no load began: {}", std::fs::read_to_string(&stderr).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(100));
    }
    let under = setup.postgres_cgroup().await;
    assert!(under.contains("/ghbench/"), "under the limit during the load: {under}");
    // SAFETY: kill(2) on a child this test started and has not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = wait_within(child, Duration::from_secs(120));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(said.contains("postgres restarted as `just setup` left it (it ran under the bench's limits)"), "{said}");
    let after = setup.postgres_cgroup().await;
    assert!(!after.contains("/ghbench/"), "after Ctrl-C the server runs outside the limit: {after}");
}

/// A query that needs more memory than `--memory` leaves: the kernel kills
/// the server's process, and the run records an OOM kill, said as such, not
/// a lost connection retried; the bench exits 1 and the servers go back.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_killed_for_memory_under_the_limit_is_recorded_as_an_oom_kill() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--memory") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    // Query A builds an array of 60 million numbers (about 500 MB) in one
    // backend: far more than 96 MiB, and held in memory, never spilled.
    let catalog = work.path().join("queries");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    let hog = "SELECT 'hog' AS repo, cardinality(array_agg(g)) AS count FROM generate_series(1, 60000000) g, (SELECT 1 FROM {table} LIMIT 1) t\n";
    std::fs::write(catalog.join("postgres/corrected/A.sql"), hog).unwrap();
    let servers = setup.servers_file();
    let args = ["bench", "--gen", "1", "--events-per-hour", "2000", "--engines", "postgres", "--memory", "96MiB", "--repeat", "1", "--variant", "corrected"];
    let places = ["--catalog", catalog.to_str().unwrap(), "--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let (ok, said) = setup.ghbench(&[&args[..], &places[..]].concat());
    assert!(!ok, "a failed query fails the bench: {said}");
    let (_, record) = bench_record(Path::new(&path("results")));
    let run = &record["sizes"][0]["run"];
    let a = of(&run["queries"].as_array().unwrap().iter().find(|q| q["query"] == "A").unwrap()["engines"], "postgres");
    assert!(a["oom_kills"].as_u64().unwrap() >= 1, "{a}");
    let error = a["error"].as_str().unwrap();
    assert!(error.contains("for want of memory") && error.contains("96.0 MiB limit"), "{error}");
    let limit = &of(&run["context"]["engines"], "postgres")["memory"]["limit"];
    assert!(limit["over_runs"]["oom_kills"].as_u64().unwrap() >= 1, "the cgroup counted it: {limit}");
    // The other queries ran on the server PostgreSQL brought back.
    let b = of(&run["queries"].as_array().unwrap().iter().find(|q| q["query"] == "B").unwrap()["engines"], "postgres");
    assert!(b["stats"]["median"].as_f64().is_some(), "{b}");
    let cgroup = setup.postgres_cgroup().await;
    assert!(!cgroup.contains("/ghbench/"), "after the bench the server runs outside the limit: {cgroup}");
}

/// `bench --regime`: one load, then the queries again under limits chosen
/// from postgres's stored bytes; every point written with its limit held,
/// its data ÷ memory as asked, its answers verified; a chart per engine with
/// the line where its data stops fitting; the servers as setup left them after.
#[tokio::test(flavor = "multi_thread")]
async fn a_regime_sweep_queries_under_each_limit_and_charts_every_point() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--regime") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    // About 150 MB of jsonb and indexes: 1.5× leaves a limit above the 64 MiB floor.
    // Fixed pools: with growing ones C's groups at 90,000 events (about 28,000
    // actors) took polars' two clients' workers past the 98 MiB limit (OOM-killed).
    let args = ["bench", "--gen", "3", "--events-per-hour", "30000", "--pools", "fixed", "--engines", "postgres,polars", "--regime", "1.5,0.5", "--repeat", "1", "--variant", "corrected", "--clients", "2", "--duration", "2", "--warmup", "0"];
    let places = ["--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--polars-dir", &path("polars"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let (ok, said) = setup.ghbench(&[&args[..], &places[..]].concat());
    assert!(ok, "bench --regime failed: {said}");
    assert!(said.contains("Data against memory") && said.contains("restarted as `just setup` left it"), "{said}");

    let (json, record) = bench_record(Path::new(&path("results")));
    let regime = &record["regime"];
    assert_eq!(regime["reference"], "postgres");
    let reference = regime["reference_bytes"].as_u64().unwrap();
    let stored = &of(&record["sizes"][0]["run"]["context"]["engines"], "postgres")["storage"];
    assert_eq!(reference, stored["table_bytes"].as_u64().unwrap() + stored["index_bytes"].as_u64().unwrap(), "chosen from what postgres stored");
    let points = regime["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| p["ratio"].as_f64().unwrap()).collect::<Vec<_>>(), [0.5, 1.5], "largest memory first");
    for point in points {
        let (ratio, limit) = (point["ratio"].as_f64().unwrap(), point["memory_bytes"].as_u64().unwrap());
        assert_eq!(limit, (reference as f64 / ratio) as u64 / 4096 * 4096, "{point:.300}");
        let run = &point["run"];
        for engine in ["postgres", "polars"] {
            let memory = &of(&run["context"]["engines"], engine)["memory"];
            assert_eq!(memory["bytes"].as_u64(), Some(limit), "{engine} at {ratio}×: {memory}");
            let over = &memory["limit"]["over_runs"];
            assert!(over["peak_bytes"].as_u64().unwrap() <= limit + ghbench_olap::cgroup::FORCED_CHARGE_SLACK, "{engine} at {ratio}×: {over}");
            assert_eq!(over["oom_kills"].as_u64(), Some(0), "{engine} at {ratio}×: {over}");
        }
        for q in run["queries"].as_array().unwrap() {
            assert_eq!(q["verification"]["status"], "agree", "{ratio}×: {q:.300}");
        }
        // Many clients at once under the limit too, every answer right.
        let phases = run["concurrency"]["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2, "postgres and polars at 2 clients, {ratio}×");
        for phase in phases {
            assert!(phase["completed"].as_u64().unwrap() > 0 && phase["failed_queries"] == 0 && phase["wrong_answers"] == 0, "{ratio}×: {phase:.400}");
        }
        let label = run["context"]["cold"]["label"].as_str().unwrap();
        assert_eq!(label.contains("postgres data 1.5× memory") && label.contains("read from disk"), ratio > 1.0, "{ratio}×: {label}");
        assert!(run["context"]["machine"]["disk"]["sequential_read_bytes_per_second"].as_f64().is_some(), "the disk, measured: {}", run["context"]["machine"]);
    }
    // Per engine a chart of time against memory, with its data's line; the
    // Markdown and the page show the sweep.
    let charts = json.with_file_name(format!("{}-charts", json.file_stem().unwrap().to_str().unwrap()));
    for engine in ["postgres", "polars"] {
        let svg = std::fs::read_to_string(charts.join(format!("regime-{engine}.svg"))).unwrap();
        assert!(svg.contains("time against memory") && svg.contains("its data,"), "{engine}: {svg:.300}");
        assert!(svg.matches("<circle").count() >= 3, "{engine}: free and two limits");
    }
    let md = std::fs::read_to_string(json.with_extension("md")).unwrap();
    assert!(md.contains("## Data against memory") && md.contains("regime-postgres.svg") && md.contains("bytes per event") && md.contains("queries read"), "{md:.600}");
    let html = std::fs::read_to_string(json.with_extension("html")).unwrap();
    assert!(html.contains("id=\"regime\"") && html.contains("OOM kills"), "the page has the sweep");
    // `ghbench report` reads the points back.
    let (ok, report) = setup.ghbench(&["report", json.to_str().unwrap()]);
    assert!(ok && report.contains("Data against memory"), "{report}");
    // Afterwards: as setup left it, under no limit.
    let cgroup = setup.postgres_cgroup().await;
    assert!(!cgroup.contains("/ghbench/"), "after the sweep the server runs outside the limits: {cgroup}");
}

/// A sweep stopped by Ctrl-C in its second point keeps its size and first
/// point; the same command with `--resume` measures the second point alone,
/// names the kept point in its RESUMED line, and says why it exits 1.
#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_stopped_in_its_second_point_resumes_keeping_the_first_and_says_why_it_exits_1() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--regime") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    let stderr = work.path().join("stderr");
    // About 100 MB of jsonb and indexes: 0.5× is the first point (the most memory), 1.5× the second.
    let args = ["bench", "--gen", "2", "--events-per-hour", "30000", "--engines", "postgres", "--regime", "1.5,0.5", "--repeat", "1", "--variant", "corrected"];
    let places = ["--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let child = Owned::spawn(setup.command(&[&args[..], &places[..]].concat()).stdout(std::process::Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()));
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&stderr).unwrap_or_default().contains("[regime 1.5×") {
        assert!(started.elapsed() < Duration::from_secs(300), "the second point never began: {}", std::fs::read_to_string(&stderr).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) on a child this test started and has not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_within(Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(130), "{}", std::fs::read_to_string(&stderr).unwrap());
    let (json, stopped) = bench_record(Path::new(&path("results")));
    assert_eq!(stopped["finished"], false);
    let kept = stopped["regime"]["points"].as_array().unwrap().clone();
    assert_eq!(kept.iter().map(|p| p["ratio"].as_f64().unwrap()).collect::<Vec<_>>(), [0.5], "the first point kept, the second not");
    let (_, shown) = setup.ghbench(&["report", json.to_str().unwrap()]);
    assert!(shown.contains("UNFINISHED: the bench stopped after size(s) 2 h and 1 point of its sweep (") && shown.contains("(0.5×)"), "the kept point is said: {shown}");

    let (ok, said) = setup.ghbench(&[&args[..], &places[..], &["--resume", json.to_str().unwrap()]].concat());
    assert!(!ok, "a bench made in two runs exits 1: {said}");
    assert!(said.contains("0.5×: kept from the record it resumes"), "{said}");
    assert!(said.contains("1.5×: measured whole, from its first query (a point stopped part way keeps none of its queries)"), "{said}");
    assert!(said.contains("RESUMED: sizes 2 h, the sweep's point under a ") && said.contains("(0.5×)"), "the kept point is named: {said}");
    assert!(said.contains("exit status 1, its results not to be trusted as they stand: its numbers come from more than one run (RESUMED"), "{said}");
    let (_, finished) = bench_record(Path::new(&path("results")));
    assert_eq!(finished["finished"], true);
    let points = finished["regime"]["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| p["ratio"].as_f64().unwrap()).collect::<Vec<_>>(), [0.5, 1.5]);
    assert_eq!(points[0], kept[0], "the kept point as it was measured");
    for q in points[1]["run"]["queries"].as_array().unwrap() {
        assert!(q["engines"][0]["stats"]["median"].as_f64().is_some(), "the second point measured: {q:.300}");
    }
}

/// `ghbench bench --gen 1 --engines polars` plus `limit` as user nobody,
/// from a copy of ghbench it can run, in a folder it can write: whether it
/// failed, what it said, and whether any data was made. None (said) where
/// the test cannot become nobody.
pub(crate) fn bench_as_nobody(limit: &[&str]) -> Option<(bool, String, bool)> {
    if !is_root() || Command::new("id").arg("nobody").output().map_or(true, |o| !o.status.success()) {
        eprintln!("SKIPPED: needs root to run ghbench as user nobody");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("ghbench");
    std::fs::copy(env!("CARGO_BIN_EXE_ghbench"), &program).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    for (path, mode) in [(dir.path(), 0o777), (program.as_path(), 0o755)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let data = dir.path().join("data");
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&program)
        .args(["bench", "--gen", "1", "--engines", "polars"])
        .args(limit)
        .arg("--data-dir")
        .arg(&data)
        .arg("--polars-dir")
        .arg(dir.path().join("polars"))
        .arg("--output")
        .arg(dir.path().join("results"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    Some((!out.status.success(), text(&out), data.exists()))
}

/// Without root, `--memory` stops before any data is made, saying what it needs.
#[test]
fn memory_without_root_is_refused_saying_what_it_needs() {
    let Some((failed, said, made)) = bench_as_nobody(&["--memory", "256MiB"]) else { return };
    assert!(failed, "an error stopped it: {said}");
    assert!(said.contains("--memory 256MiB") && said.contains("needs root"), "{said}");
    assert!(!made, "nothing was generated before the check");
}

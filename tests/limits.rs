//! No limit nobody asked for, and every stop cleans up, against the real
//! servers and the real hour: a role's own time limits do not cut a run;
//! `--query-timeout` cuts a query on every engine, recorded and said; Ctrl-C
//! during a long PostgreSQL query cancels it on the server and exits 130; a
//! killed ghbench's query ends on the server too; an abandoned client's query
//! is cancelled.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ghbench_olap::concurrency::{resolve_mix, run_concurrency, ConcurrencyOptions};
use ghbench_olap::runner::{run_queries_keeping_answers, ClearCaches, QueryOptions, Silent};
use ghbench_olap::{Backend, Catalog};
use ghbench_testkit::*;
use serde_json::Value;

/// Query A, corrected, made to take ten minutes on PostgreSQL (the rest of
/// the catalog as it is): what a query of the paper's scale looks like to
/// ghbench, in a test.
const SLOW_A: &str = "-- A, slowed down for a test\nSELECT 'slow' AS repo, count(*) AS count FROM {table} CROSS JOIN pg_sleep(600) GROUP BY 1\n";

/// A copy of the repository's catalog in `dir` whose PostgreSQL A is [`SLOW_A`].
fn slow_catalog(dir: &Path) -> PathBuf {
    let catalog = dir.join("queries");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    std::fs::write(catalog.join("postgres/corrected/A.sql"), SLOW_A).unwrap();
    catalog
}

/// Loads the real hour into `table` on `engines` (polars into `work/polars`).
fn load(table: &str, engines: &str, pg_url: &str, work: &Path) {
    let real = real_hour().expect("checked by the caller");
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", engines, "--table", table, "--from", "2015-01-01T00", "--pg-url", pg_url, "--mongo-url", &mongo_url()])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--polars-dir")
        .arg(work.join("polars"))
        .arg("--quarantine-dir")
        .arg(work.join("quarantine"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// `ghbench <args> --table <table>` on the servers, polars in `work/polars`.
fn ghbench(table: &str, pg_url: &str, work: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(args).args(["--table", table, "--pg-url", pg_url]).arg("--polars-dir").arg(work.join("polars"));
    if args.first() != Some(&"index") {
        command.arg("--output").arg(work.join("results"));
    }
    command.env("MONGODB_URI", mongo_url());
    command
}

/// The PIDs of the server sessions (other than the asker's) running a
/// statement that names `table` and holds `marker` (e.g. the slow A's
/// `pg_sleep(600)`, so a count of the table is not taken for it).
async fn running_on(table: &str, marker: &str) -> Vec<i32> {
    let sql = "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()
               AND query LIKE '%' || $1 || '%' AND query LIKE '%' || $2 || '%'";
    pg().await.query(sql, &[&table, &marker]).await.unwrap().iter().map(|r| r.get(0)).collect()
}

/// What marks the slow A's statement in `pg_stat_activity`.
const SLOW: &str = "pg_sleep(600)";

/// Ends the sessions `pids` (what a failed test left running), so dropping
/// the table does not wait ten minutes behind them.
async fn end_sessions(pids: &[i32]) {
    let client = pg().await;
    for pid in pids {
        let _ = client.execute("SELECT pg_terminate_backend($1)", &[pid]).await;
    }
}

/// Waits up to `limit` for `done` to hold of the sessions running `marker` on `table`.
async fn wait_for_sessions(table: &str, marker: &str, limit: Duration, done: impl Fn(&[i32]) -> bool) -> Vec<i32> {
    let started = Instant::now();
    loop {
        let pids = running_on(table, marker).await;
        if done(&pids) || started.elapsed() > limit {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A table of the test's own (`t_<name>_<pid>`) loaded on PostgreSQL, and
/// `ghbench query` of the slow A on it, started; returns once the server
/// runs it. The work folder lives as long as the test holds it.
struct SlowQuery {
    table: String,
    _work: tempfile::TempDir,
    child: Child,
}

async fn start_slow_query(name: &str) -> SlowQuery {
    let table = table(name);
    let work = tempfile::tempdir().unwrap();
    load(&table, "postgres", &pg_url(), work.path());
    let catalog = slow_catalog(work.path());
    let child = ghbench(&table, &pg_url(), work.path(), &["query", "A", "--variant", "corrected", "--engines", "postgres", "--repeat", "1"])
        .arg("--catalog")
        .arg(&catalog)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ghbench");
    let running = wait_for_sessions(&table, SLOW, Duration::from_secs(120), |pids| !pids.is_empty()).await;
    assert!(!running.is_empty(), "the slow query never showed in pg_stat_activity");
    SlowQuery { table, _work: work, child }
}

/// Waits up to `limit` for the slow query's sessions to end; ends those
/// left (what a failed test left running) and drops the table; the ones left.
async fn sessions_left_then_clean_up(table: &str, limit: Duration) -> Vec<i32> {
    let left = wait_for_sessions(table, SLOW, limit, |pids| pids.is_empty()).await;
    end_sessions(&left).await;
    drop_table(table).await;
    left
}

/// The polars worker processes (`ghbench polars-worker`) serving `table`.
fn polars_workers(table: &str) -> usize {
    let Ok(processes) = std::fs::read_dir("/proc") else { return 0 };
    processes
        .filter_map(|p| std::fs::read(p.ok()?.path().join("cmdline")).ok())
        .map(|line| String::from_utf8_lossy(&line).replace('\0', " "))
        .filter(|line| line.contains("polars-worker") && line.contains(table))
        .count()
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child this test started and has not waited for.
    let sent = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(sent, 0, "signal {signal} to ghbench");
}

/// A role whose defaults would cut everything ghbench does (a statement
/// after 1 ms, an idle session after 1 s, an idle transaction after 1 ms)
/// loads, indexes and queries all the same: ghbench's sessions turn those
/// limits off, and the record shows them as the sessions had them.
#[tokio::test]
async fn a_role_s_own_time_limits_do_not_cut_a_run() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let name = format!("t_limits_role_{}", std::process::id());
    let admin = pg().await;
    // One statement each: CREATE DATABASE cannot run in the implicit
    // transaction of a multi-statement string.
    for statement in [
        format!("CREATE ROLE {name} LOGIN"),
        format!("CREATE DATABASE {name} OWNER {name}"),
        format!("ALTER ROLE {name} SET statement_timeout = '1ms'"),
        format!("ALTER ROLE {name} SET idle_session_timeout = '1s'"),
        format!("ALTER ROLE {name} SET idle_in_transaction_session_timeout = '1ms'"),
    ] {
        admin.batch_execute(&statement).await.unwrap();
    }
    let config: tokio_postgres::Config = pg_url().parse().unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
    };
    let url = format!("postgres://{name}@{host}:{}/{name}", config.get_ports()[0]);
    let work = tempfile::tempdir().unwrap();

    // The role's limits are what any other client's session starts with.
    let defaults = "SELECT setconfig FROM pg_db_role_setting WHERE setrole = (SELECT oid FROM pg_roles WHERE rolname = $1)";
    let defaults: Vec<String> = admin.query_one(defaults, &[&name]).await.unwrap().get(0);
    assert!(defaults.contains(&"statement_timeout=1ms".to_string()), "{defaults:?}");

    load("limited", "postgres", &url, work.path());
    let index = ghbench("limited", &url, work.path(), &["index", "--engines", "postgres"]).output().unwrap();
    assert!(index.status.success(), "{}", text(&index));
    let query = ghbench("limited", &url, work.path(), &["query", "--all", "--variant", "corrected", "--repeat", "1", "--engines", "postgres"]).output().unwrap();
    let said = text(&query);
    admin.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).await.unwrap();
    admin.batch_execute(&format!("DROP ROLE {name}")).await.unwrap();
    assert!(query.status.success(), "{said}");
    assert!(said.contains("no time limit on any query"), "{said}");

    let record = newest_record(&work.path().join("results"), "olap");
    assert!(record["context"]["query_timeout_seconds"].is_null(), "{}", record["context"]);
    let settings = &record["context"]["engines"][0]["server"]["settings"];
    for limit in ["statement_timeout", "idle_session_timeout", "idle_in_transaction_session_timeout"] {
        assert_eq!(settings[limit], "0", "{limit} as ghbench's session had it: {settings}");
    }
    // PostgreSQL 17 has it (0, lifted like the rest); older servers lack it.
    assert!(matches!(settings["transaction_timeout"].as_str(), Some("0" | "(not in this server)")), "{settings}");
    assert_eq!(settings["client_connection_check_interval"], "5s", "{settings}");
    for q in record["queries"].as_array().unwrap() {
        let result = &q["engines"][0];
        assert!(result["error"].is_null() && result["iterations"].as_array().unwrap().len() == 1, "{} ran: {result}", q["query"]);
    }
}

/// `--query-timeout 1ms` cuts A on PostgreSQL (its statement_timeout),
/// on the MongoDB-wire server (maxTimeMS) and on polars (ghbench stops
/// waiting); each result records the limit, the runs after the cut are not
/// made, and the terminal, the loud lines and the Markdown say so. The
/// exit status says the results are not all there.
#[test]
fn a_query_past_query_timeout_is_cut_recorded_and_said_on_every_engine() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let table = table("qlimit");
    let work = tempfile::tempdir().unwrap();
    load(&table, "postgres,mongo,polars", &pg_url(), work.path());
    let args = ["query", "A", "--variant", "corrected", "--repeat", "2", "--query-timeout", "1ms", "--engines", "postgres,mongo,polars"];
    let out = output_within(&mut ghbench(&table, &pg_url(), work.path(), &args), Duration::from_secs(300));
    let said = text(&out);
    tokio::runtime::Runtime::new().unwrap().block_on(drop_table(&table));
    assert_eq!(out.status.code(), Some(1), "{said}");

    let record = newest_record(&work.path().join("results"), "olap");
    assert_eq!(record["context"]["query_timeout_seconds"], 0.001);
    let results = record["queries"][0]["engines"].as_array().unwrap();
    let engine_said = [("postgres", "canceling statement due to statement timeout"), ("mongo", "exceeded time limit"), ("polars", "polars' worker process was killed: the query stopped")];
    for (engine, how) in engine_said {
        let result: &Value = results.iter().find(|r| r["engine"] == engine).unwrap();
        assert_eq!(result["timed_out"], 0.001, "{result}");
        let error = result["error"].as_str().unwrap();
        assert!(error.starts_with("run 1/2 cut by --query-timeout 1ms"), "{error}");
        assert!(error.contains(how), "{engine} says how: {error}");
        assert!(result["iterations"].as_array().unwrap().is_empty(), "no run after the cut: {result}");
        assert!(said.contains(&format!("TIMED OUT A corrected on {engine}: run 1/2 cut by --query-timeout 1ms")), "{said}");
    }
    assert!(said.contains("> 1ms (limit)"), "the table says it: {said}");
    assert_eq!(polars_workers(&table), 0, "no polars worker outlives ghbench");
    assert!(said.contains("each run stopped past --query-timeout 1ms"), "{said}");
    let markdown = std::fs::read_to_string(newest_file(&work.path().join("results"), "olap").with_extension("md")).unwrap();
    assert!(markdown.contains("> 1ms (limit)") && markdown.contains("- time limit: each run stopped past --query-timeout 1ms"), "{markdown}");
}

/// Ctrl-C during a query of ten minutes: ghbench sends PostgreSQL's cancel
/// request, says so, and exits 130; the server runs nothing of it after.
#[tokio::test]
async fn ctrl_c_during_a_long_query_cancels_it_on_the_server_and_exits_130() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let SlowQuery { table, _work, child } = start_slow_query("ctrlc").await;
    signal(&child, libc::SIGINT);
    let out = wait_within(child, Duration::from_secs(60));
    // Less than the 5 s after which the server would find a gone client by itself.
    let left = sessions_left_then_clean_up(&table, Duration::from_secs(3)).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted (Ctrl-C): cancelling what ghbench was running on the servers"), "{said}");
    assert!(said.contains("cancel request sent"), "{said}");
    assert!(left.is_empty(), "still running on the server: {left:?}");
}

/// A ghbench killed outright (SIGKILL: nothing of it runs to cancel) does
/// not leave its query running for ten minutes: its sessions ask the server
/// to check the connection during long queries.
#[tokio::test]
async fn a_killed_ghbench_s_query_ends_on_the_server() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let SlowQuery { table, _work, mut child } = start_slow_query("killed").await;
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    // client_connection_check_interval is 5 s.
    let left = sessions_left_then_clean_up(&table, Duration::from_secs(30)).await;
    assert!(left.is_empty(), "the killed ghbench's query still runs: {left:?}");
}

/// A client of the concurrency phase whose query never comes back (it waits
/// on a lock the test holds) is abandoned after the grace, and its query is
/// cancelled on the server rather than left waiting there.
#[tokio::test(flavor = "multi_thread")]
async fn an_abandoned_client_s_query_is_cancelled_on_the_server() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let table = table("abandon");
    let work = tempfile::tempdir().unwrap();
    load(&table, "postgres", &pg_url(), work.path());
    let name = table.parse().unwrap();
    let mut backends: Vec<Box<dyn Backend>> =
        vec![Box::new(ghbench_postgres::backend::PostgresBackend::connect(&ghbench_postgres::setup::PAPER, &pg_url(), &name).await.unwrap())];
    let catalog = Catalog::embedded().unwrap();
    let timed = QueryOptions { variants: vec!["corrected".into()], queries: Vec::new(), repeat: 1, cold: false, cold_repeat: 1, rounds: false, reconnect_limit: Duration::from_secs(5), query_timeout: None, analyze_plans: false, server_memory: None, skip: Vec::new() };
    let (records, _, answers) = run_queries_keeping_answers(&mut backends, &catalog, &timed, &Silent, &ClearCaches).await.unwrap();
    let options = ConcurrencyOptions {
        clients: vec![1],
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        max_queries: 100_000,
        mix: resolve_mix(&[], &records.iter().map(|q| (q.variant.clone(), q.query.clone())).collect::<Vec<_>>()).unwrap(),
        grace: Duration::from_secs(1),
        connect_limit: Duration::from_secs(5),
    };
    let holder = pg().await;
    holder.batch_execute(&format!("BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")).await.unwrap();
    let record = run_concurrency(&backends, &catalog, &records, &answers, &options, &Silent).await;
    let cancels = ghbench_core::stop::settle().await;
    // The blocked query is the catalog's own, naming the table's data column.
    let left = wait_for_sessions(&table, "data", Duration::from_secs(10), |pids| pids.is_empty()).await;
    end_sessions(&left).await;
    holder.batch_execute("ROLLBACK").await.unwrap();
    for backend in &backends {
        backend.close().await;
    }
    drop_table(&table).await;
    assert_eq!(record.phases[0].abandoned, 1, "{:?}", record.phases[0]);
    assert!(cancels.iter().any(|c| c.contains("cancel request sent")), "{cancels:?}");
    assert!(left.is_empty(), "the abandoned query still waits on the server: {left:?}");
}

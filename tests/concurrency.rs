//! The concurrency phase (`--clients`) against the real servers on the real
//! hour: every engine under two clients records counts, percentiles and what
//! each answer was checked against; a wrong answer injected under load (the
//! table changed while the clients run) is caught and said like a mismatch;
//! a server stopped during the phase fails that engine's phase with a message
//! while the rest of the record stands; a server that stops answering (frozen)
//! is abandoned after the grace and not waited on again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::util::{ghbench_on_servers, ingest, load_postgres_and_polars, throwaway_with_real_hour, LoadedThrowaway};
use ghbench_olap::concurrency::{resolve_mix, run_concurrency, ConcurrencyOptions};
use ghbench_olap::runner::{run_queries_keeping_answers, ClearCaches, QueryOptions, Silent};
use ghbench_olap::Catalog;
use ghbench_testkit::*;
use serde_json::Value;

/// The phases of `engine` in the record, by client count.
fn phases<'a>(record: &'a Value, engine: &str) -> Vec<&'a Value> {
    record["concurrency"]["phases"].as_array().expect("a concurrency record").iter().filter(|p| p["engine"] == engine).collect()
}

fn seconds(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The percentiles are there and in order.
fn assert_percentiles(latency: &Value, what: &str) {
    let (p50, p95, p99, max) = (seconds(&latency["p50"]), seconds(&latency["p95"]), seconds(&latency["p99"]), seconds(&latency["max"]));
    assert!(0.0 < p50 && p50 <= p95 && p95 <= p99 && p99 <= max, "{what}: {latency}");
    assert!(latency["count"].as_u64().unwrap() > 0, "{what}: {latency}");
}

/// `ghbench query` started with its standard error read line by line (its
/// progress lines say when each engine's phase starts).
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
}

impl Running {
    fn start(command: &mut Command) -> Running {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run ghbench");
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Running { child, lines, said: Vec::new() }
    }

    /// Waits for a line of standard error holding `marker`.
    fn wait_for(&mut self, marker: &str) {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(300)) {
                Ok(line) => {
                    let found = line.contains(marker);
                    self.said.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("ghbench never said '{marker}':\n{}", self.said.join("\n")),
            }
        }
    }

    /// Its exit status and everything it said.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let out = wait_within(self.child, Duration::from_secs(300));
        self.said.extend(self.lines.try_iter());
        (out.status, format!("{}{}", String::from_utf8_lossy(&out.stdout), self.said.join("\n")))
    }
}

fn query(args: &[&str], output: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(["query", "--all", "--variant", "corrected", "--repeat", "1"]).args(args).arg("--output").arg(output);
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clients_on_every_engine_record_counts_percentiles_and_what_each_answer_was_checked_against() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("conc_all");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let polars = work.path().join("polars");
    let polars = polars.to_str().unwrap();
    let engines = "postgres,mongo,normalized,polars";
    let source = real.parent().unwrap().to_str().unwrap();
    let loaded = ingest(&table, work.path(), &["--engines", engines, "--polars-dir", polars, "--source", source, "--from", "2015-01-01T00"]);
    assert!(loaded.status.success(), "{}", text(&loaded));
    let built = ghbench_on_servers(&["index", "--engines", "postgres,mongo,normalized", "--table", &table]);
    assert!(built.status.success());

    let results = work.path().join("results");
    let mut command = query(&["--engines", engines, "--table", &table, "--polars-dir", polars, "--clients", "2", "--duration", "3", "--warmup", "1"], &results);
    let out = output_within(command.env("DATABASE_URL", pg_url()).env("MONGODB_URI", mongo_url()), Duration::from_secs(600));
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Many clients at once") && said.contains("q/s"), "the table is shown: {said}");

    let record = newest_record(&results, "olap");
    let mix: Vec<String> = record["concurrency"]["mix"].as_array().unwrap().iter().map(|m| format!("{} {}", m["query"], m["variant"])).collect();
    assert_eq!(mix.len(), 4, "the corrected A-D by default: {mix:?}");
    for engine in engines.split(',') {
        let phases = phases(&record, engine);
        assert_eq!(phases.len(), 1, "{engine}: one client count");
        let p = phases[0];
        assert_eq!(p["clients"], 2);
        assert!(p["error"].is_null(), "{engine}: {}", p["error"]);
        assert_eq!((p["wrong_answers"].as_u64(), p["failed_queries"].as_u64()), (Some(0), Some(0)), "{engine}");
        let completed = p["completed"].as_u64().unwrap();
        assert!(completed > 0, "{engine} answered queries in the window: {p}");
        let rate = seconds(&p["queries_per_second"]);
        assert!((rate - completed as f64 / seconds(&p["window_seconds"])).abs() < 1e-6, "{engine}: the rate is completed over the window");
        assert_percentiles(&p["latency"], engine);
        // A query counts as completed when it finishes in the window, its latency
        // when it was sent there: each client's query in flight as the window
        // opens is the one that may be completed without a latency.
        let clients = p["clients"].as_u64().unwrap();
        assert!(p["latency"]["count"].as_u64().unwrap() + clients >= completed, "{engine}: every completed query's latency is kept: {p}");
        for q in p["per_query"].as_array().unwrap() {
            assert_eq!(q["checked_against"], "its single-client answer, verified across engines", "{engine} {q}");
            assert_eq!(q["wrong"], 0);
        }
        let per_query: u64 = p["per_query"].as_array().unwrap().iter().map(|q| q["completed"].as_u64().unwrap()).sum();
        assert_eq!(per_query, completed, "{engine}: the queries' counts add up");
        let cpu = &p["client_cpu"];
        assert!(seconds(&cpu["seconds"]) > 0.0 && seconds(&cpu["share_of_machine"]) <= 1.0, "{engine}: {cpu}");
        // Through the command, polars runs in worker processes of its own:
        // ghbench's CPU is its clients' alone, for every engine.
        assert_eq!(cpu["engine_in_process"], false, "{engine}");
        let limits = p["limits"].as_object().unwrap();
        let bound = match engine {
            "postgres" | "normalized" => "max_connections",
            "mongo" => "driver",
            _ => "polars thread pool",
        };
        assert!(limits.contains_key(bound) && limits.contains_key("ghbench clients"), "{engine}: {limits:?}");
        assert_eq!(limits["ghbench clients"], if engine == "polars" { "2 handles of their own (no server)" } else { "2 connections of their own" });
        if engine == "polars" {
            let runs = limits["query engine"].as_str().unwrap();
            assert!(runs.contains("a worker process of its own (ghbench polars-worker)"), "{runs}");
        }
    }
    drop_all(&table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_answer_under_load_is_caught_and_said_like_a_mismatch() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let table = table("conc_wrong");
    drop_all(&table).await;
    let work = tempfile::tempdir().unwrap();
    let polars = work.path().join("polars");
    load_postgres_and_polars(&table, &pg_url(), &polars, work.path());
    let results = work.path().join("results");
    let args = ["--engines", "postgres,polars", "--table", &table, "--pg-url", &pg_url(), "--clients", "2", "--duration", "6", "--warmup", "1", "--queries", "A,B"];
    let mut running = Running::start(query(&args, &results).arg("--polars-dir").arg(&polars));
    running.wait_for("postgres: 2 clients at once");
    // Query A counts opened issues per repository: every such event twice
    // now, so its answers from here on are wrong (B's too: it counts events).
    let doubled = format!("INSERT INTO {table} SELECT * FROM {table} WHERE data->>'type' = 'IssuesEvent' AND data->'payload'->>'action' = 'opened'");
    assert!(pg().await.execute(&doubled, &[]).await.unwrap() > 0);
    let (status, said) = running.finish();
    assert!(!status.success(), "a wrong answer under load fails the run: {said}");
    assert!(said.contains("MISMATCH under load ") && said.contains(" corrected on postgres (2 clients; client"), "{said}");
    assert!(said.contains("FAILED under load: postgres, 2 clients: "), "{said}");

    let record = newest_record(&results, "olap");
    let postgres = phases(&record, "postgres")[0];
    assert!(postgres["wrong_answers"].as_u64().unwrap() > 0, "{postgres}");
    let first = &postgres["mismatches"][0];
    assert_eq!(first["variant"], "corrected");
    let difference = first["first_differences"][0].as_str().unwrap();
    assert!(difference.contains(": single-client (") && difference.contains(" vs postgres client "), "{first}");
    assert!(postgres["error"].as_str().unwrap().contains("wrong answer(s) under load"), "{postgres}");
    assert!(postgres["per_query"][0]["wrong"].as_u64().unwrap() > 0, "A's answers after the change are wrong: {postgres}");
    let polars_phase = phases(&record, "polars")[0];
    assert!(polars_phase["error"].is_null() && polars_phase["completed"].as_u64().unwrap() > 0, "polars' phase stands: {polars_phase}");
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["verification"]["status"], "agree", "the single-client phase came before the change: {}", q["query"]);
    }
    drop_all(&table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_stopped_during_the_phase_fails_that_engines_phases_and_the_rest_stands() {
    let Some(LoadedThrowaway { pg, work, polars }) = throwaway_with_real_hour("conc_stop", "stopped") else { return };
    let results = work.path().join("results");
    let args = ["--engines", "postgres,polars", "--table", "stopped", "--pg-url", &pg.url(), "--clients", "1,2", "--duration", "4", "--warmup", "1"];
    let mut running = Running::start(query(&args, &results).arg("--polars-dir").arg(&polars));
    running.wait_for("postgres: 1 client at once");
    std::thread::sleep(Duration::from_millis(1500));
    pg.stop();
    let (status, said) = running.finish();
    assert!(!status.success(), "{said}");
    assert!(said.contains("FAILED under load: postgres, 1 client: client 1 lost its connection"), "{said}");

    let record = newest_record(&results, "olap");
    let postgres = phases(&record, "postgres");
    assert_eq!(postgres.len(), 2, "both client counts are in the record");
    assert!(postgres[0]["error"].as_str().unwrap().contains("lost its connection"), "{}", postgres[0]);
    assert!(postgres[0]["completed"].as_u64().unwrap() > 0, "what it answered before the stop is kept: {}", postgres[0]);
    assert_eq!(postgres[1]["error"], "not run: postgres lost its connections in the phase with 1 client");
    for p in phases(&record, "polars") {
        assert!(p["error"].is_null() && p["completed"].as_u64().unwrap() > 0, "polars' phases stand: {p}");
    }
    assert_eq!(record["queries"].as_array().unwrap().len(), 4, "the single-client results are intact");
    for q in record["queries"].as_array().unwrap() {
        assert_eq!(q["verification"]["status"], "agree", "{}", q["query"]);
    }
}

/// A server that stops answering (every process of it frozen with SIGSTOP:
/// connections are still accepted, nothing is answered) holds no phase: its
/// clients are abandoned once the grace after the window runs out, the phase
/// fails saying so, its later client counts are not run (they would wait on
/// the same silence), and polars' phases stand. Run through the library with
/// a grace and connection limit of 2 s, so the test takes seconds, not the
/// command's 60 s.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_stops_answering_is_abandoned_after_the_grace_and_not_waited_on_again() {
    let Some(LoadedThrowaway { pg, work: _work, polars }) = throwaway_with_real_hour("conc_freeze", "frozen") else { return };
    let mut backends = postgres_and_polars("frozen", &pg.url(), &polars).await;
    let catalog = Catalog::embedded().unwrap();
    let timed = QueryOptions { variants: vec!["corrected".into()], queries: Vec::new(), repeat: 1, cold: false, cold_repeat: 1, rounds: false, reconnect_limit: Duration::from_secs(5), query_timeout: None, analyze_plans: false, server_memory: None, skip: Vec::new() };
    let (records, _, answers) = run_queries_keeping_answers(&mut backends, &catalog, &timed, &Silent, &ClearCaches).await.unwrap();
    let options = ConcurrencyOptions {
        clients: vec![1, 2],
        duration: Duration::from_secs(3),
        warmup: Duration::from_secs(1),
        max_queries: 100_000,
        mix: resolve_mix(&[], &records.iter().map(|q| (q.variant.clone(), q.query.clone())).collect::<Vec<_>>()).unwrap(),
        grace: Duration::from_secs(2),
        connect_limit: Duration::from_secs(2),
    };
    let pg = std::sync::Arc::new(pg);
    let freezer = {
        let pg = pg.clone();
        // Postgres runs first: 2 s in is inside its 1-client window.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            pg.signal_all("STOP");
        })
    };
    let record = run_concurrency(&backends, &catalog, &records, &answers, &options, &Silent).await;
    freezer.join().unwrap();
    pg.signal_all("CONT");
    for backend in &backends {
        backend.close().await;
    }

    let postgres: Vec<_> = record.phases.iter().filter(|p| p.engine.name() == "postgres").collect();
    assert_eq!(postgres.len(), 2, "{postgres:?}");
    assert_eq!(postgres[0].abandoned, 1, "{:?}", postgres[0]);
    let error = postgres[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("1 client still running their query when the phase's time limit ran out: abandoned"), "{error}");
    assert!(postgres[0].completed > 0, "what it answered before the freeze is kept: {:?}", postgres[0]);
    assert_eq!(
        postgres[1].error.as_deref(),
        Some("not run: postgres left 1 client unanswered past the time limit in the phase with 1 client"),
        "{:?}",
        postgres[1]
    );
    for p in record.phases.iter().filter(|p| p.engine.name() == "polars") {
        assert!(p.stands() && p.completed > 0, "polars' phases stand: {p:?}");
    }
}

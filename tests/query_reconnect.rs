//! A server that goes away during the query phase: a run whose connection is
//! lost is made again on a new connection (the lost attempt recorded, never
//! timed); a server that stays down fails that engine's remaining queries
//! with one message while the other engines' results stand. And a MongoDB
//! client is shut down before ghbench exits (the driver panicked at exit once).
//! On a PostgreSQL of the test's own, restarted and stopped for real.

use std::process::Command;
use std::time::Duration;

use crate::util::{ingest, throwaway_with_real_hour, LoadedThrowaway};
use ghbench_olap::runner::{run_queries, ClearCaches, QueryOptions, Silent};
use ghbench_olap::Catalog;
use ghbench_testkit::*;

fn options(limit: Duration) -> QueryOptions {
    QueryOptions { variants: vec!["corrected".into()], queries: Vec::new(), repeat: 2, cold: false, cold_repeat: 1, rounds: false, reconnect_limit: limit, query_timeout: None, analyze_plans: false, server_memory: None, skip: Vec::new() }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_is_reconnected_and_the_lost_run_made_again() {
    let Some(LoadedThrowaway { pg, work: _work, polars }) = throwaway_with_real_hour("reconnect", "lost") else { return };
    let mut backends = postgres_and_polars("lost", &pg.url(), &polars).await;
    // Every session of the backend's is ended by the restart.
    pg.restart();
    let (records, _) = run_queries(&mut backends, &Catalog::embedded().unwrap(), &options(Duration::from_secs(30)), &Silent, &ClearCaches).await.unwrap();

    assert_eq!(records.len(), 4);
    for q in &records {
        for e in &q.engines {
            assert!(e.error.is_none(), "{} on {}: {:?}", q.query, e.engine, e.error);
            assert_eq!(e.iterations.len(), 2, "both runs timed, the lost one not among them");
        }
        assert_eq!(q.verification.status, ghbench_olap::record::VerificationStatus::Agree, "{}", q.query);
    }
    let postgres = &records[0].engines[0];
    assert_eq!(postgres.reconnects.len(), 1, "the first query met the restart: {:?}", postgres.reconnects);
    assert_eq!(postgres.reconnects[0].at, "run 1/2");
    assert!(records[1..].iter().all(|q| q.engines[0].reconnects.is_empty()), "one reconnect serves the queries after it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_stays_down_fails_its_queries_once_and_the_rest_stand() {
    let Some(LoadedThrowaway { pg, work: _work, polars }) = throwaway_with_real_hour("gone", "lost") else { return };
    let mut backends = postgres_and_polars("lost", &pg.url(), &polars).await;
    pg.stop();
    let started = std::time::Instant::now();
    let (records, _) = run_queries(&mut backends, &Catalog::embedded().unwrap(), &options(Duration::from_secs(2)), &Silent, &ClearCaches).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(20), "one wait for the server, not one per query: {:?}", started.elapsed());

    let first = records[0].engines[0].error.as_deref().unwrap();
    assert!(first.contains("no new connection within 2 s"), "the first query says what happened: {first}");
    for q in &records[1..] {
        let later = q.engines[0].error.as_deref().unwrap();
        assert!(later.starts_with("not run: postgres lost its connection at A corrected"), "{later}");
    }
    for q in &records {
        let polars = &q.engines[1];
        assert!(polars.error.is_none() && polars.iterations.len() == 2, "polars' results stand: {:?}", polars.error);
    }
}

#[tokio::test]
async fn a_failed_mongo_query_ends_without_a_panic() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let table = table("mongo_exit");
    drop_table(&table).await;
    let lines = real_lines(&real_hour().unwrap());
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    write_hour(&dir, REAL_HOUR_FILE, &lines[..200]);
    assert!(ingest(&table, work.path(), &["--engines", "mongo", "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"]).status.success());
    // A catalog whose MongoDB query the server refuses.
    let catalog = work.path().join("catalog");
    copy_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries").as_path(), &catalog);
    std::fs::write(catalog.join("mongo/corrected/A.json"), r#"{"pipeline": [{"$noSuchStage": 1}]}"#).unwrap();
    for _ in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
            .args(["query", "A", "B", "--variant", "corrected", "--repeat", "1", "--engines", "mongo", "--table", &table, "--mongo-url", &mongo_url()])
            .arg("--catalog")
            .arg(&catalog)
            .arg("--output")
            .arg(work.path().join("results"))
            .output()
            .unwrap();
        let said = text(&out);
        assert!(!out.status.success() && said.contains("FAILED A corrected on mongo"), "the query fails as it should: {said}");
        assert!(!said.contains("panicked"), "ghbench exits without a panic: {said}");
    }
    drop_table(&table).await;
}

//! Plans rest on statistics of what they filter on: the load's `VACUUM
//! (ANALYZE)` runs before the expression indexes exist, so until an
//! `ANALYZE` after them the planner guesses each indexed expression's
//! selectivity (0.5% for an equality), and Query A's plan with it.

use std::process::Command;

use ghbench_testkit::{data_dir, pg, real_hour, shared_servers, text, LoadedTable, HOUR};
use serde_json::Value;

/// The planner's row estimate for `SELECT 1 FROM table WHERE predicate`, and the true count.
async fn estimate_and_truth(table: &str, predicate: &str) -> (f64, i64) {
    let client = pg().await;
    let explained = client.simple_query(&format!("EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE {predicate}")).await.unwrap();
    let text = explained.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
        _ => None,
    });
    let plan: Value = serde_json::from_str(&text.expect("a plan")).unwrap();
    let estimate = plan[0]["Plan"]["Plan Rows"].as_f64().unwrap();
    let truth: i64 = client.query_one(&format!("SELECT count(*) FROM {table} WHERE {predicate}"), &[]).await.unwrap().get(0);
    (estimate, truth)
}

/// How far apart, as a factor of at least 1.
fn off_by(estimate: f64, truth: i64) -> f64 {
    let (a, b) = (estimate.max(1.0), (truth as f64).max(1.0));
    a.max(b) / a.min(b)
}

#[tokio::test]
async fn after_the_index_builds_an_analyze_gives_query_a_s_filters_estimates_within_2x() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let fixture = LoadedTable::empty("index_stats");
    let table = fixture.table.as_str().to_string();
    let work = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ghbench")).args(args).args(["--table", &table]).env("DATABASE_URL", &fixture.servers.pg_url).output().unwrap();
        assert!(out.status.success(), "ghbench {args:?}: {}", text(&out));
        out
    };
    let quarantine = work.path().join("q");
    run(&["ingest", "--engines", "postgres", "--source", data_dir().to_str().unwrap(), "--from", HOUR, "--quarantine-dir", quarantine.to_str().unwrap()]);
    // Query A's two filters, each an expression index's.
    let filters = ["(data->>'type') = 'IssuesEvent'", "(data->'payload'->>'action') = 'opened'"];
    for filter in filters {
        let (estimate, truth) = estimate_and_truth(&table, filter).await;
        assert!(off_by(estimate, truth) > 2.0, "before the indexes the planner guesses: {filter} estimated {estimate}, truly {truth}");
    }

    let results = work.path().join("results");
    let out = run(&["index", "--engines", "postgres", "--output", results.to_str().unwrap()]);
    assert!(text(&out).contains(&format!("ANALYZE {table} in ")), "said: {}", text(&out));
    let record: Value = serde_json::from_slice(&std::fs::read(ghbench_testkit::newest_file(&results, "index")).unwrap()).unwrap();
    let statistics = &record["engines"][0]["statistics"];
    assert_eq!(statistics["step"], format!("ANALYZE {table}"), "{record}");
    assert!(statistics["seconds"].as_f64().unwrap() > 0.0);
    for filter in filters {
        let (estimate, truth) = estimate_and_truth(&table, filter).await;
        assert!(off_by(estimate, truth) <= 2.0, "after: {filter} estimated {estimate}, truly {truth}");
    }

    // Indexes that were there already, with their statistics: nothing analysed again.
    let index_record = |name: &str| -> Value {
        let results = work.path().join(name);
        run(&["index", "--engines", "postgres", "--output", results.to_str().unwrap()]);
        serde_json::from_slice(&std::fs::read(ghbench_testkit::newest_file(&results, "index")).unwrap()).unwrap()
    };
    let again = index_record("again");
    assert!(again["engines"][0].get("statistics").is_none(), "{again}");
    // An index built, and no ANALYZE since (a run killed between the two): the next run analyses.
    let client = pg().await;
    client.batch_execute(&format!("DROP INDEX {table}_type; CREATE INDEX {table}_type ON {table} ((data->>'type'))")).await.unwrap();
    let (estimate, truth) = estimate_and_truth(&table, filters[0]).await;
    assert!(off_by(estimate, truth) > 2.0, "no statistics on the new index: {estimate} against {truth}");
    let mended = index_record("mended");
    assert!(mended["engines"][0]["indexes"].as_array().unwrap().iter().all(|i| i["created"] == false), "{mended}");
    assert_eq!(mended["engines"][0]["statistics"]["step"], format!("ANALYZE {table}"), "{mended}");
    let (estimate, truth) = estimate_and_truth(&table, filters[0]).await;
    assert!(off_by(estimate, truth) <= 2.0, "after: {estimate} against {truth}");
}

//! The `citus-tuned` setup (issue 54) on a Citus cluster of the test's own,
//! beside `postgres-tuned` on the shared PostgreSQL: its table distributed
//! by the repository's name and columnar, the name filled by the loader as
//! the server reads it (the shards refuse any other), A and D grouped whole
//! on the workers where B merges the workers' groups on the coordinator,
//! A-D answered as the tuned single server answers them, a reload refused
//! before anything is loaded, and an event without a repository name
//! failing its hour, naming its line.

use ghbench_testkit::*;

use crate::citus::{own_cluster, query_one, query_one_i64};

/// The node types of `plan` (EXPLAIN's JSON) above Citus's own scan: what
/// the coordinator does with the workers' answers.
fn coordinator_nodes(plan: &serde_json::Value) -> Vec<String> {
    let mut nodes = Vec::new();
    let mut node = &plan["json"][0]["Plan"];
    while node.is_object() && node["Custom Plan Provider"] != "Citus Adaptive" {
        nodes.push(node["Node Type"].as_str().unwrap_or_default().to_string());
        node = &node["Plans"][0];
    }
    assert!(node.is_object(), "no Citus scan in {plan}");
    nodes
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tuned_citus_setup_groups_by_repository_on_the_workers_answers_as_postgres_tuned_and_refuses_a_reload() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let Some(cluster) = own_cluster() else { return };
    let port = cluster.port;
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_tuned");
    let tuned = format!("tuned.{table}");
    let work = tempfile::tempdir().unwrap();
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let results = work.path().join("results").to_str().unwrap().to_string();
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let with_engines = |command: &[&str], engines: &str| {
        let mut args = command.to_vec();
        args.extend(["--engines", engines, "--table", &table, "--citus-url", &url]);
        crate::util::ghbench_on_servers(&args)
    };
    let run = |command: &[&str]| {
        let out = with_engines(command, "postgres-tuned,citus-tuned");
        assert!(out.status.success(), "ghbench {}: {}", command.join(" "), text(&out));
        text(&out)
    };
    let ingest = ["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", &quarantine];
    let on_shards = |per_shard: &str| format!("SELECT coalesce(sum(result::bigint), 0)::bigint FROM run_command_on_shards('{tuned}', $cmd${per_shard}$cmd$)");
    let loaded_at = format!("SELECT extract(epoch FROM loaded_at)::float8 FROM ghbench_ledger WHERE engine = 'citus-tuned' AND tbl = '{table}'");

    run(&[&ingest[..], &["--drop"]].concat());
    let events: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {tuned}"), &[]).await.unwrap().get(0);
    assert!(events > 7_000, "the real hour on postgres-tuned: {events}");
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM %s")).await, events, "the shards hold every row once");
    let layout: String = query_one(port, &format!("SELECT distribution_column || ' ' || access_method FROM citus_tables WHERE table_name = '{tuned}'::regclass")).await;
    assert_eq!(layout, "repo_name columnar");
    // The loader's name is the one the server reads, on every row; a row with another is refused on its shard.
    let differing = format!("SELECT count(*) FROM {tuned} WHERE repo_name IS DISTINCT FROM data->'repo'->>'name'");
    assert_eq!(query_one_i64(port, &differing).await, 0);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let forged = client.execute(&format!("INSERT INTO {tuned} (data, ghbench_hour, repo_name) VALUES ('{{\"repo\": {{\"name\": \"a/b\"}}}}', 1, 'c/d')"), &[]).await;
    assert!(forged.unwrap_err().as_db_error().is_some_and(|e| e.code().code() == "23514"), "a name not the document's fails the CHECK");

    // A reload is refused before anything is written: a columnar table cannot delete.
    let first_load: f64 = query_one(port, &loaded_at).await;
    let out = with_engines(&[&ingest[..], &["--reload", "2015-01-01T00"]].concat(), "citus-tuned");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("columnar") && text(&out).contains("--drop") && text(&out).contains("2015-01-01-0"), "{}", text(&out));
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM %s")).await, events, "nothing removed");
    assert_eq!(query_one::<f64>(port, &loaded_at).await, first_load, "the ledger entry is the first load's");

    // The tuned indexes on every shard, then A-D verified against postgres-tuned by the run itself.
    run(&["index"]);
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM pg_index WHERE indrelid = '%s'::regclass")).await, 32 * 4, "the four covering indexes on each of 32 shards");
    run(&["query", "--all", "--repeat", "1", "--output", &results]);
    let record = newest_record(results.as_ref(), "olap");
    let mut grouped_on_workers = Vec::new();
    for query in record["queries"].as_array().unwrap() {
        let citus = query["engines"].as_array().unwrap().iter().find(|e| e["engine"] == "citus-tuned").unwrap();
        assert_eq!(citus["verified"], true, "{} {}: {}", query["query"], query["variant"], query["verification"]);
        let merged = coordinator_nodes(&citus["plan"]).iter().any(|n| n == "Aggregate");
        if !merged {
            grouped_on_workers.push(format!("{} {}", query["query"].as_str().unwrap(), query["variant"].as_str().unwrap()));
        }
    }
    // A and D group by the distribution column; B and C (by type and actor) merge the workers' groups.
    assert_eq!(grouped_on_workers, ["A corrected", "D corrected", "A published", "D published"], "{record}");
    let engines = record["context"]["engines"].as_array().unwrap();
    let server = &engines.iter().find(|e| e["engine"] == "citus-tuned").unwrap()["server"];
    assert_eq!(server["settings"][format!("citus distribution column of {tuned}")], "repo_name", "{server}");
    assert_eq!(server["settings"][format!("access method of {tuned}")], "columnar", "{server}");

    // An event without a repository name fails its hour, naming its line; nothing of the hour is kept.
    let hours = work.path().join("no_name");
    std::fs::create_dir_all(&hours).unwrap();
    let lines = real_lines(&real);
    let mut nameless: serde_json::Value = serde_json::from_slice(&lines[1]).unwrap();
    nameless["repo"].as_object_mut().unwrap().remove("name");
    write_hour(&hours, "2015-01-02-0.json.gz", &[lines[0].clone(), serde_json::to_vec(&nameless).unwrap()]);
    let nameless_hour = ["ingest", "--source", hours.to_str().unwrap(), "--from", "2015-01-02T00", "--to", "2015-01-02T00", "--quarantine-dir", &quarantine, "--retries", "0"];
    let out = with_engines(&nameless_hour, "citus-tuned");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("line 2") && text(&out).contains("no repo.name"), "{}", text(&out));
    assert_eq!(query_one_i64(port, &format!("SELECT count(*) FROM {tuned} WHERE ghbench_hour = 2015010200")).await, 0, "none of the hour's rows kept");
}

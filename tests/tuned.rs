//! The tuned setups against the real servers, on the real hour: loaded by one
//! ingest beside the paper's setups, queried and verified in one run with
//! every engine; the tuned indexes exist where the setup says and nowhere
//! else; tuned PostgreSQL answers each corrected query with an index-only
//! scan (its EXPLAIN read); and the paper's plans are the same before and
//! after the tuned setups are loaded and indexed beside them.

use std::collections::BTreeMap;

use crate::util::ghbench_on_servers as ghbench;
use ghbench_testkit::*;
use mongodb::bson::{doc, Document};
use serde_json::Value;

const PAPER_SETUPS: &str = "postgres,mongo";
const TUNED_AND_THE_REST: &str = "postgres-tuned,mongo-tuned,normalized,polars";
const EVERY_ENGINE: &str = "postgres,postgres-tuned,mongo,mongo-tuned,normalized,polars";

fn engine<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|e| e["engine"] == name).unwrap_or_else(|| panic!("no {name} in {list}"))
}

/// Per query, variant and engine of `engines`: the indexes its plan uses and,
/// for a text plan, its nodes without costs and timings.
fn plans(record: &Value, engines: &[&str]) -> BTreeMap<String, Value> {
    let mut plans = BTreeMap::new();
    for q in record["queries"].as_array().unwrap() {
        for r in q["engines"].as_array().unwrap().iter().filter(|r| engines.contains(&r["engine"].as_str().unwrap())) {
            let plan = &r["plan"];
            let nodes: Vec<String> = plan["text"]
                .as_str()
                .unwrap_or("")
                .lines()
                .filter(|l| l.contains("(cost="))
                .map(|l| l.split("(cost=").next().unwrap().trim().to_string())
                .collect();
            let key = format!("{} {} {}", q["query"].as_str().unwrap(), q["variant"].as_str().unwrap(), r["engine"].as_str().unwrap());
            plans.insert(key, serde_json::json!({"indexes": plan["indexes"], "nodes": nodes}));
        }
    }
    plans
}

async fn pg_index_names(schema: &str, table: &str) -> Vec<String> {
    let sql = "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY 1";
    pg().await.query(sql, &[&schema, &table]).await.unwrap().iter().map(|r| r.get(0)).collect()
}

async fn mongo_index_names(collection: &str) -> Vec<String> {
    let mut names: Vec<String> = mongo().await.collection::<Document>(collection).list_index_names().await.unwrap();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn both_setups_answer_alike_and_the_tuned_one_leaves_the_papers_plans_as_they_were() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let table = table("tuned_real");
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let (quarantine, polars, before_dir, after_dir) = (path("q"), path("polars"), path("before"), path("after"));
    let on = |engines: &'static str| ["--engines", engines, "--table", &table, "--polars-dir", &polars].map(str::to_string);
    let run = |command: &[&str], engines: &'static str| {
        let mut args: Vec<String> = command.iter().map(|a| a.to_string()).collect();
        args.extend(on(engines));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ghbench(&args);
        assert!(out.status.success(), "ghbench {}: {}", args.join(" "), text(&out));
        text(&out)
    };
    let ingest = ["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", &quarantine, "--drop"];

    // The paper's setups alone: their plans.
    run(&ingest, PAPER_SETUPS);
    run(&["index"], PAPER_SETUPS);
    // Measured plans (text, with their nodes), as the comparison below reads them.
    run(&["query", "--all", "--repeat", "1", "--analyze-plans", "--output", &before_dir], PAPER_SETUPS);
    let before = plans(&newest_record(before_dir.as_ref(), "olap"), &["postgres", "mongo"]);

    // The tuned setups loaded and indexed beside them; everything queried at once.
    let loaded = run(&ingest, TUNED_AND_THE_REST);
    assert!(loaded.contains(&format!("postgres-tuned: VACUUM (ANALYZE) tuned.{table}")), "the tuned table is analysed in its load: {loaded}");
    run(&["index", "--output", &after_dir], EVERY_ENGINE);
    run(&["query", "--all", "--repeat", "1", "--analyze-plans", "--output", &after_dir], EVERY_ENGINE);
    let record = newest_record(after_dir.as_ref(), "olap");

    // Every answer agrees across every engine and both setups.
    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 8, "A-D, both variants");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
        assert_eq!(q["engines"].as_array().unwrap().len(), 6, "every engine ran {}", q["query"]);
    }
    // Every engine held the same hour: the tuned setups are not read from the paper's table.
    let engines = &record["context"]["engines"];
    for name in EVERY_ENGINE.split(',') {
        assert_eq!(engine(engines, name)["data"]["events"], 7702, "{name}");
        assert_eq!(engine(engines, name)["storage"]["rows"], 7702, "{name} counts its own rows");
    }

    // The paper's plans did not change with the tuned setups beside them.
    let after = plans(&record, &["postgres", "mongo"]);
    assert_eq!(after, before, "the paper's plans, before and after the tuned setups were loaded and indexed");

    // Tuned PostgreSQL: an index-only scan of its own index for every corrected query.
    for (query, index) in [("A", "type_action"), ("B", "type"), ("C", "actor_login"), ("D", "type_comments")] {
        let q = queries.iter().find(|q| q["query"] == query && q["variant"] == "corrected").unwrap();
        let plan = engine(&q["engines"], "postgres-tuned")["plan"]["text"].as_str().unwrap().to_string();
        assert!(plan.contains(&format!("Index Only Scan using {table}_{index} on {table}")), "{query}: {plan}");
    }

    // The tuned indexes exist where the setup says, and the paper's tables keep only their own.
    let tuned_pg = pg_index_names("tuned", &table).await;
    let expected: Vec<String> = ["actor_login", "type", "type_action", "type_comments"].iter().map(|i| format!("{table}_{i}")).collect();
    assert_eq!(tuned_pg, expected, "tuned.{table}'s indexes");
    assert_eq!(pg_index_names("public", &table).await.len(), 5, "the paper's table has its five indexes and no more");
    let tuned_mongo = mongo_index_names(&format!("tuned.{table}")).await;
    assert_eq!(tuned_mongo, ["_id_", "actor.login_1", "type_1", "type_1_payload.action_1_repo.name_1", "type_1_payload.issue.comments_1_repo.name_1"]);
    assert_eq!(mongo_index_names(&table).await.len(), 6, "the paper's collection: _id and its five");
    let index_record = newest_record(after_dir.as_ref(), "index");
    for name in ["postgres-tuned", "mongo-tuned"] {
        assert_eq!(engine(&index_record["engines"], name)["indexes"].as_array().unwrap().len(), 4, "{name} built one index per query");
    }

    // lz4 on the tuned jsonb column (the paper's keeps the server's default).
    let compression = "SELECT attcompression::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'data'";
    let tuned_method: String = pg().await.query_one(compression, &[&format!("tuned.{table}")]).await.unwrap().get(0);
    let paper_method: String = pg().await.query_one(compression, &[&table]).await.unwrap().get(0);
    assert_eq!((tuned_method.as_str(), paper_method.as_str()), ("l", ""), "lz4 on the tuned column only");
    // zstd asked of the tuned collection, as the server keeps it.
    let listed = mongo().await.run_command(doc! {"listCollections": 1, "filter": {"name": format!("tuned.{table}")}}).await.unwrap();
    assert!(format!("{listed:?}").contains("block_compressor=zstd"), "{listed:?}");

    // Every record says which setup produced each number, change by change.
    let tuned = &engine(engines, "postgres-tuned")["setup"];
    assert_eq!((tuned["name"].as_str(), tuned["tuned"].as_bool(), tuned["of"].as_str()), (Some("tuned"), Some(true), Some("postgres")));
    assert!(tuned["changes"].as_array().unwrap().iter().all(|c| c["source"].as_str().is_some_and(|s| !s.is_empty())), "{tuned}");
    assert_eq!(engine(engines, "postgres")["setup"]["name"], "paper");
    assert_eq!(engine(engines, "mongo-tuned")["setup"]["of"], "mongo");
    // The server parameter: set where the server allows it, else said why not.
    let settings = engine(engines, "mongo-tuned")["server"]["settings"].as_object().unwrap();
    let parameter = settings["setParameter internalQueryPlannerGenerateCoveredWholeIndexScans"].as_str().unwrap();
    assert!(parameter.contains("restored after each") || parameter.contains("not set") || parameter.contains("refused"), "{parameter}");
    assert!(!engine(engines, "mongo")["server"]["settings"].as_object().unwrap().keys().any(|k| k.starts_with("setParameter")), "the paper's setup sets nothing");
    let markdown = std::fs::read_dir(&after_dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "md")).unwrap();
    let markdown = std::fs::read_to_string(markdown).unwrap();
    assert!(markdown.contains("; tuned setup, 7 changes") && markdown.contains("; paper setup, 4 changes"), "every engine labelled with its setup");
    assert!(markdown.contains("change: stored generated columns"), "the changes are written out");
}

/// `ghbench index` before any load makes the tuned collection as its setup
/// does (zstd), not implicitly with the server's defaults; and a query whose
/// hinted index is gone (dropped with the data by `--drop`) says what to run.
#[tokio::test(flavor = "multi_thread")]
async fn indexes_before_the_load_keep_the_tuned_collection_and_a_missing_hinted_index_says_what_to_run() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let table = table("tuned_order");
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("results");
    let (quarantine, results) = (work.path().join("q"), out_dir.to_str().unwrap().to_string());
    let db = mongo().await;
    let _ = db.collection::<Document>(&format!("tuned.{table}")).drop().await;

    let out = ghbench(&["index", "--engines", "mongo-tuned", "--table", &table, "--output", &results]);
    assert!(out.status.success(), "{}", text(&out));
    let listed = db.run_command(doc! {"listCollections": 1, "filter": {"name": format!("tuned.{table}")}}).await.unwrap();
    assert!(format!("{listed:?}").contains("block_compressor=zstd"), "made with the setup's options: {listed:?}");

    let load = ["ingest", "--engines", "mongo-tuned", "--table", &table, "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00"];
    let mut load: Vec<&str> = load.to_vec();
    load.extend(["--drop", "--quarantine-dir", quarantine.to_str().unwrap()]);
    assert!(ghbench(&load).status.success());
    let out = ghbench(&["query", "B", "--variant", "corrected", "--repeat", "1", "--engines", "mongo-tuned", "--table", &table, "--output", &results]);
    let said = text(&out);
    assert!(!out.status.success(), "a query whose hinted index is missing fails: {said}");
    assert!(said.contains(&format!("the index this query's hint names is not on tuned.{table}: run `ghbench index --engines mongo-tuned`")), "{said}");
}

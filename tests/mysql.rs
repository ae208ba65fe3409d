//! The MySQL family's engine against MariaDB for real: the real hour beside
//! PostgreSQL and MongoDB with all eight answers agreeing; the paper setup's
//! generated columns and indexes, and the plans that use them; the tuned
//! setup's covering plans; an hour reloaded exactly once; a server restarted
//! in the middle of a load (a MariaDB of the test's own) leaving no hour
//! twice; a server that refuses `LOAD DATA LOCAL` loaded by inserts; and the
//! bad-input rules held here as for the others, MariaDB's nesting limit (31 levels)
//! quarantining a line for every engine.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::ghbench_on_servers as ghbench;
use ghbench_testkit::throwaway_mysql::ThrowawayMysql;
use ghbench_testkit::*;
use mysql_async::prelude::Queryable;
use serde_json::Value;

const ENGINES: &str = "postgres,mongo,mysql,mysql-tuned";

fn engine<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|e| e["engine"] == name).unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn run(args: &[&str]) -> String {
    let out = ghbench(args);
    assert!(out.status.success(), "ghbench {}: {}", args.join(" "), text(&out));
    text(&out)
}

async fn mysql_conn(url: &str) -> mysql_async::Conn {
    mysql_async::Conn::new(mysql_async::Opts::from_url(url).unwrap()).await.expect("MariaDB must be running")
}

/// Rows per hour (the key's high bits) and the ledger's hours of `table` on the server at `url`.
async fn stored(url: &str, table: &str) -> (Vec<(i64, i64)>, Vec<(String, i64)>) {
    let mut conn = mysql_conn(url).await;
    let rows: Vec<(i64, i64)> = conn.query(format!("SELECT id >> 32, COUNT(*) FROM {table} GROUP BY 1 ORDER BY 1")).await.unwrap();
    let ledger: Vec<(String, i64)> =
        conn.exec("SELECT hour, events FROM ghbench_ledger WHERE engine = 'mysql' AND tbl = ? ORDER BY hour", (table,)).await.unwrap();
    (rows, ledger)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_real_hour_agrees_with_every_engine_and_each_setup_uses_its_indexes() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let table = table("mysql_real");
    let work = tempfile::tempdir().unwrap();
    let (quarantine, results) = (work.path().join("q"), work.path().join("results"));
    let on = ["--engines", ENGINES, "--table", &table];
    let mut ingest = vec!["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--drop", "--quarantine-dir", quarantine.to_str().unwrap()];
    ingest.extend(on);
    let loaded = run(&ingest);
    assert!(loaded.contains(&format!("mysql: ANALYZE TABLE {table}")), "the table is analysed in its load: {loaded}");
    let mut index = vec!["index", "--output", results.to_str().unwrap()];
    index.extend(on);
    run(&index);
    let mut query = vec!["query", "--all", "--repeat", "1", "--output", results.to_str().unwrap()];
    query.extend(on);
    run(&query);
    let record = newest_record(&results, "olap");

    let queries = record["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 8, "A-D, both variants");
    for q in queries {
        assert_eq!(q["verification"]["status"], "agree", "{} {}: {}", q["query"], q["variant"], q["verification"]);
        assert_eq!(q["engines"].as_array().unwrap().len(), 4, "every engine ran {}", q["query"]);
    }
    let engines = &record["context"]["engines"];
    for name in ["mysql", "mysql-tuned"] {
        let e = engine(engines, name);
        assert_eq!((e["data"]["events"].as_u64(), e["storage"]["rows"].as_u64()), (Some(7702), Some(7702)), "{name}");
        assert_eq!(e["server"]["product"], "MariaDB", "product detection on the real server");
        assert!(e["server"]["caveat"].as_str().unwrap().contains("stores JSON as text"), "{}", e["server"]);
        assert!(e["server"]["settings"]["json storage"].as_str().unwrap().starts_with("text"), "{}", e["server"]);
        assert!(e["server"]["settings"]["innodb_buffer_pool_size"].as_str().is_some(), "the settings that shape the answer are recorded");
    }
    // The paper setup: five VIRTUAL generated columns, bytewise, and an index on each.
    let columns = engine(engines, "mysql")["server"]["settings"]["generated columns"].as_str().unwrap().to_string();
    for column in ["repo_name VIRTUAL utf8mb4_nopad_bin", "payload_action VIRTUAL utf8mb4_nopad_bin", "event_type VIRTUAL utf8mb4_nopad_bin", "actor_login VIRTUAL utf8mb4_nopad_bin"] {
        assert!(columns.contains(column), "{column} in {columns}");
    }
    let tuned_columns = engine(engines, "mysql-tuned")["server"]["settings"]["generated columns"].as_str().unwrap().to_string();
    assert!(tuned_columns.contains("STORED"), "the tuned setup stores its columns: {tuned_columns}");
    let mut conn = mysql_conn(&mysql_url()).await;
    let indexed: Vec<String> = conn
        .exec("SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY' ORDER BY 1", (&table,))
        .await
        .unwrap();
    assert_eq!(indexed.len(), 5, "the paper's five indexes: {indexed:?}");
    // Every corrected query's plan uses an index of its own setup; the tuned ones read the index alone.
    for q in queries.iter().filter(|q| q["variant"] == "corrected") {
        let paper = &engine(&q["engines"], "mysql")["plan"];
        assert_eq!(paper["index_used"], true, "{} on mysql: {paper}", q["query"]);
        assert!(paper["indexes"].as_array().unwrap().iter().all(|i| indexed.contains(&i.as_str().unwrap().to_string())), "{paper}");
        let tuned = &engine(&q["engines"], "mysql-tuned")["plan"];
        assert_eq!(tuned["covering"], true, "{} on mysql-tuned reads its index alone: {tuned}", q["query"]);
    }
    // Loaded by LOAD DATA LOCAL INFILE, and every key range holds its hour.
    let (rows, ledger) = stored(&mysql_url(), &table).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(ledger, [("2015-01-01-0".to_string(), 7702)]);
    assert_eq!(rows[0].1, 7702);

    // `--reload` of the hour: stored exactly once again, its rows replaced.
    let reload = ["ingest", "--source", &shared, "--reload", "2015-01-01T00", "--engines", "mysql", "--table", &table, "--quarantine-dir", quarantine.to_str().unwrap()];
    run(&reload);
    let (rows_after, ledger_after) = stored(&mysql_url(), &table).await;
    assert_eq!((rows_after, ledger_after), (rows, ledger), "the reloaded hour, once");
    drop_table(&table).await;
    for sql in [format!("DROP TABLE IF EXISTS {table}"), format!("DROP TABLE IF EXISTS tuned.{table}")] {
        conn.query_drop(sql).await.unwrap();
    }
    conn.exec_drop("DELETE FROM ghbench_ledger WHERE tbl = ?", (&table,)).await.unwrap();
}

/// A MariaDB restarted while an ingest of several hours runs: the run
/// retries the broken hours on new connections and ends whole; no hour is
/// stored twice or in part, and the ledger lists each hour once.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_restarted_mid_load_leaves_no_hour_twice() {
    let Some(real) = real_hour() else { return };
    let Some(mut server) = ThrowawayMysql::start("mysql_restart") else { return };
    let url = server.url();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    const HOURS: u64 = 6;
    for h in 0..HOURS {
        std::fs::copy(&real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let ingest = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command
            .args(["ingest", "--engines", "mysql", "--table", "restarted", "--mysql-url", &url, "--from", "2015-01-01T00", "--hours", &HOURS.to_string()])
            .arg("--source")
            .arg(&dir)
            .arg("--quarantine-dir")
            .arg(work.path().join("q"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut child = ingest().spawn().unwrap();
    // Once at least one hour is committed and the run goes on: restart.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "ingest never committed an hour");
        let mut conn = mysql_conn(&url).await;
        let done: Option<i64> = conn.query_first("SELECT COUNT(*) FROM ghbench_ledger").await.unwrap_or(None);
        if done.unwrap_or(0) >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = child.try_wait().unwrap().is_none();
    server.restart();
    let first_run = child.wait_with_output().unwrap();
    let first = text(&first_run);
    // The run retries the hours the restart broke on new connections and ends whole.
    assert!(first_run.status.success(), "the run the restart met: {first}");
    assert!(first.contains("retries:") && first.contains("6 loaded"), "the restart was met and retried: {first}");
    // A rerun finds every hour done, and nothing is twice.
    let again = output_within(&mut ingest(), Duration::from_secs(300));
    assert!(again.status.success(), "the rerun: {}", text(&again));
    let (rows, ledger) = stored(&url, "restarted").await;
    assert_eq!(ledger.len() as u64, HOURS, "every hour listed once: {ledger:?}\nfirst run: {first}");
    assert_eq!(rows.len() as u64, HOURS, "every hour's key range: {rows:?}");
    assert!(rows.iter().all(|(_, n)| *n == 7702) && ledger.iter().all(|(_, n)| *n == 7702), "each hour whole and once: {rows:?} {ledger:?}");
    assert!(running, "the restart came after the run ended: nothing was tested\n{first}");
}

/// A server whose `local_infile` is off (MySQL 8's default) is loaded with
/// batched inserts, said in the record, with the same rows.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_refuses_load_data_local_is_loaded_by_inserts() {
    let Some(real) = real_hour() else { return };
    let Some(server) = ThrowawayMysql::start("mysql_no_infile") else { return };
    mysql_conn(&server.url()).await.query_drop("SET GLOBAL local_infile = 0").await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let report = work.path().join("report.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["ingest", "--engines", "mysql", "--table", "inserted", "--mysql-url", &server.url(), "--from", "2015-01-01T00", "--to", "2015-01-01T00"])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--quarantine-dir")
        .arg(work.path().join("q"))
        .arg("--report")
        .arg(&report);
    let out = output_within(&mut command, Duration::from_secs(300));
    assert!(out.status.success(), "{}", text(&out));
    let (rows, ledger) = stored(&server.url(), "inserted").await;
    assert_eq!((rows.len(), rows[0].1), (1, 7702));
    assert_eq!(ledger, [("2015-01-01-0".to_string(), 7702)]);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(report.contains("multi-row INSERTs"), "the record says how it was loaded: {report}");
}

/// The bad-input rules hold here as for every engine: each defect
/// quarantined for all engines alike, and a line nested deeper than
/// MariaDB's 31 levels (valid JSON every other engine takes) too, so all
/// engines hold the same documents.
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_quarantined_for_every_engine_alike_the_nesting_limit_included() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("mysql_bad");
    let work = tempfile::tempdir().unwrap();
    let mut lines = real_lines(&real);
    lines.truncate(50);
    let nested = |levels: usize| format!("{{\"id\":\"x\",\"type\":\"PushEvent\",\"deep\":{}1{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1)).into_bytes();
    lines.push(nested(31)); // the document and 30 arrays: within MariaDB's limit
    lines.push(nested(32)); // one level past it: MariaDB's JSON_VALID refuses it
    lines.push(b"{\"type\":\"A\",\"type\":\"B\"}".to_vec());
    lines.push(b"{not json".to_vec());
    let source = work.path().join("src");
    std::fs::create_dir_all(&source).unwrap();
    write_hour(&source, "2015-01-01-0.json.gz", &lines);
    let quarantine = work.path().join("q");
    run(&["ingest", "--engines", "postgres,mysql", "--table", &table, "--source", source.to_str().unwrap(), "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--drop", "--quarantine-dir", quarantine.to_str().unwrap()]);
    let quarantined: String = walk(&quarantine).iter().map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect();
    assert!(quarantined.contains("too_deep") && quarantined.contains("31 levels"), "{quarantined}");
    assert!(quarantined.contains("duplicate_key") && quarantined.contains("invalid_json"), "{quarantined}");
    let pg: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
    let mut conn = mysql_conn(&mysql_url()).await;
    let mysql: Option<i64> = conn.query_first(format!("SELECT COUNT(*) FROM {table}")).await.unwrap();
    assert_eq!((pg, mysql), (51, Some(51)), "50 real lines and the 31-level one, in both");
    drop_table(&table).await;
    conn.query_drop(format!("DROP TABLE IF EXISTS {table}")).await.unwrap();
    conn.exec_drop("DELETE FROM ghbench_ledger WHERE tbl = ?", (&table,)).await.unwrap();
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A login the server refuses is said as such (not as a server to start),
/// with the engine's own option to correct, and the password never shown.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_login_says_so_and_hides_the_password() {
    let _servers = shared_servers();
    let port = mysql_url().rsplit_once(':').and_then(|(_, rest)| rest.split('/').next().map(str::to_string)).unwrap();
    let url = format!("mysql://nobody_here:s3cret-pw@127.0.0.1:{port}/ghbench");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(["doctor", "--engines", "mysql", "--mysql-url", &url]);
    let out = output_within(&mut command, Duration::from_secs(60));
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("refused the login") && said.contains("--mysql-url or MYSQL_URL"), "{said}");
    assert!(!said.contains("s3cret-pw"), "the password is never printed: {said}");
}

/// The query phase on a MariaDB restarted under it: the lost run is made
/// again on a new connection and recorded as a reconnect, never timed.
#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_is_reconnected_in_the_query_phase() {
    use ghbench_olap::runner::{run_queries, ClearCaches, QueryOptions, Silent};
    let Some(real) = real_hour() else { return };
    let Some(mut server) = ThrowawayMysql::start("mysql_reconnect") else { return };
    let work = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["ingest", "--engines", "mysql", "--table", "lost", "--mysql-url", &server.url(), "--from", "2015-01-01T00", "--to", "2015-01-01T00"])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--quarantine-dir")
        .arg(work.path().join("q"));
    let out = output_within(&mut command, Duration::from_secs(300));
    assert!(out.status.success(), "{}", text(&out));
    let config = ghbench_core::EngineConfig::default().with(ghbench_mysql::URL.long, server.url());
    let mut backends = vec![ghbench_mysql::plugin().backend(&config, &"lost".parse().unwrap()).await.unwrap()];
    // Every session of the backend's is ended by the restart.
    server.restart();
    let options = QueryOptions {
        variants: vec!["corrected".into()],
        queries: Vec::new(),
        repeat: 2,
        cold: false,
        cold_repeat: 1,
        rounds: false,
        reconnect_limit: Duration::from_secs(30),
        query_timeout: None,
        analyze_plans: false,
        server_memory: None,
        skip: Vec::new(),
    };
    let (records, _) = run_queries(&mut backends, &ghbench_olap::Catalog::embedded().unwrap(), &options, &Silent, &ClearCaches).await.unwrap();
    assert_eq!(records.len(), 4);
    for q in &records {
        let mysql = &q.engines[0];
        assert!(mysql.error.is_none(), "{} on mysql: {:?}", q.query, mysql.error);
        assert_eq!(mysql.iterations.len(), 2, "both runs timed, the lost one not among them");
    }
    assert_eq!(records[0].engines[0].reconnects.len(), 1, "the first query met the restart: {:?}", records[0].engines[0].reconnects);
    assert!(records[1..].iter().all(|q| q.engines[0].reconnects.is_empty()), "one reconnect serves the queries after it");
}

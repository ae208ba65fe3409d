//! The Citus cluster `scripts/setup.sh` starts (issue 54), in a folder and on
//! ports of the test's own: a coordinator and two workers that take a
//! distributed table, each node with its share of the single server's
//! memory settings, setup run again leaving them as they are, a cluster of
//! another shape refused, the cluster restarted as a cold run restarts it
//! (its rows kept), and `down.sh citus` stopping every node; with Citus off,
//! setup says so in one line. And the `citus` engine on such a cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ghbench_testkit::*;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

/// `bash scripts/NAME ARGS` for the setup of folder `home`, its coordinator
/// on `port` with `workers` workers, the single server's `shared_buffers`
/// 300MB and `work_mem` 30MB (each node's share: a third).
fn run_script_with(name: &str, args: &[&str], home: &Path, port: u16, workers: &str) -> Output {
    script_command(name, args, home, port, workers).env_remove("GHBENCH_MEMORY").output().unwrap()
}

/// [`run_script_with`]'s command, to be given more (a memory limit).
fn script_command(name: &str, args: &[&str], home: &Path, port: u16, workers: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(script(name))
        .args(args)
        .env("GHBENCH_HOME", home)
        .env("GHBENCH_CITUS_PORT", port.to_string())
        .env("GHBENCH_CITUS_WORKERS", workers)
        .env("GHBENCH_PG_SHARED_BUFFERS", "300MB")
        .env("GHBENCH_PG_WORK_MEM", "30MB")
        .env_remove("GHBENCH_DISK");
    command
}

pub(crate) fn run_script(name: &str, args: &[&str], home: &Path, port: u16) -> Output {
    run_script_with(name, args, home, port, "2")
}

/// Whether Citus is installed in the PostgreSQL setup runs, where setup
/// looks for it (`pg_config --pkglibdir`, Debian's servers).
fn citus_installed() -> bool {
    citus_bin().is_some()
}

/// The bin folder of the PostgreSQL Citus is installed in.
fn citus_bin() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib/postgresql").ok()?;
    dirs.flatten().map(|d| d.path().join("bin")).find(|bin| {
        let libdir = Command::new(bin.join("pg_config")).arg("--pkglibdir").output();
        libdir.is_ok_and(|o| o.status.success() && Path::new(String::from_utf8_lossy(&o.stdout).trim()).join("citus.so").is_file())
    })
}

/// Stops one node of the test's cluster (`worker2`) as `pg_ctl stop -m fast`
/// does, as the user its server runs as (postgres, when setup ran as root).
fn stop_node(cluster: &OwnCluster, node: &str) {
    stop_node_as(cluster, node, "fast");
}

/// [`stop_node`] in `pg_ctl`'s shutdown mode `mode` (`immediate`: as a
/// crash, every process of the node killed, recovered at the next start).
pub(crate) fn stop_node_as(cluster: &OwnCluster, node: &str, mode: &str) {
    let pg_ctl = citus_bin().unwrap().join("pg_ctl");
    let data = cluster.home.join("citus").join(node).join("data");
    let mut command = match is_root() {
        true => {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(pg_ctl);
            c
        }
        false => Command::new(pg_ctl),
    };
    // runuser lives in sbin, which a test's PATH can lack.
    let path = format!("{}:/usr/sbin:/sbin", std::env::var("PATH").unwrap_or_default());
    let out = command.arg("-D").arg(&data).args(["stop", "-m", mode]).env("PATH", path).output().unwrap();
    assert!(out.status.success(), "stopping {node}: {}", text(&out));
}

fn answers(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Stops the test's cluster and removes its folder however the test ends.
pub(crate) struct OwnCluster {
    pub(crate) home: PathBuf,
    pub(crate) port: u16,
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = run_script("down.sh", &["citus"], &self.home, self.port);
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// A cluster of the test's own, started by `setup.sh citus`; None (the test
/// skipped, said) where Citus is not installed, which CI never is.
pub(crate) fn own_cluster() -> Option<OwnCluster> {
    own_cluster_with(&[])
}

/// [`own_cluster`], setup run with `env` besides (`GHBENCH_MEMORY`: each
/// node under a memory limit; `GHBENCH_DISK`: a disk throttle).
fn own_cluster_with(env: &[(&str, &str)]) -> Option<OwnCluster> {
    let (cluster, out) = own_cluster_setup(env)?;
    assert!(out.status.success(), "setup.sh citus: {}", text(&out));
    assert!(text(&out).contains(&format!("ready: coordinator 127.0.0.1:{}, 2 workers", cluster.port)), "{}", text(&out));
    Some(cluster)
}

/// `setup.sh citus` for a cluster of the test's own, run with `env`, and what it said.
fn own_cluster_setup(env: &[(&str, &str)]) -> Option<(OwnCluster, Output)> {
    if !citus_installed() {
        // CI names the vendored source (GHBENCH_CITUS_SOURCE), so `just setup` built it there.
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "Citus is not installed: in CI, `just setup` builds it from GHBENCH_CITUS_SOURCE");
        eprintln!("SKIPPED: Citus is not installed (run `GHBENCH_CITUS_SOURCE=../shared/vendor/citus-13.2.2.tar.gz just setup`)");
        return None;
    }
    let port = free_ports_in_a_row(3);
    let cluster = OwnCluster { home: own_temp_dir("citus"), port };
    let mut setup = script_command("setup.sh", &["citus"], &cluster.home, port, "2");
    setup.env_remove("GHBENCH_MEMORY").env_remove("GHBENCH_CITUS_MEMORY").envs(env.iter().copied());
    let out = setup.output().unwrap();
    Some((cluster, out))
}

/// The memory limit of the cgroup node `node`'s server runs in (its postmaster's).
fn node_memory_limit(cluster: &OwnCluster, node: &str) -> u64 {
    let pid_file = std::fs::read_to_string(cluster.home.join("citus").join(node).join("data").join("postmaster.pid")).unwrap();
    let pid = pid_file.lines().next().unwrap();
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let limit_file = match cgroups.lines().find_map(|l| l.split_once(":memory:")) {
        Some((_, path)) => format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"),
        None => format!("/sys/fs/cgroup{}/memory.max", cgroups.lines().find_map(|l| l.strip_prefix("0::")).unwrap()),
    };
    std::fs::read_to_string(&limit_file).unwrap().trim().parse().unwrap_or_else(|e| panic!("{limit_file}: {e}"))
}

/// `GHBENCH_CITUS_MEMORY=total`: the memory limit is the cluster's, each node
/// under a third of it with a third of the single server's settings at that
/// limit; a limit that leaves a node less than a server needs is refused.
#[tokio::test]
async fn a_memory_limit_shared_by_the_cluster_gives_each_node_its_share() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: memory limits need root (cgroups)");
        return;
    }
    let Some(cluster) = own_cluster_with(&[("GHBENCH_MEMORY", "768MiB"), ("GHBENCH_CITUS_MEMORY", "total")]) else { return };
    for (i, node) in ["coordinator", "worker1", "worker2"].iter().enumerate() {
        assert_eq!(node_memory_limit(&cluster, node), 256 << 20, "{node}: a third of 768 MiB");
        // The single server's shared_buffers (300MB, as the tests' setup gives it), a third each.
        let buffers: String = query_one(cluster.port + i as u16, "SHOW shared_buffers").await;
        assert_eq!(buffers, "100MB", "{node}");
    }
    drop(cluster);
    let Some((cluster, out)) = own_cluster_setup(&[("GHBENCH_MEMORY", "180MiB"), ("GHBENCH_CITUS_MEMORY", "total"), ("GHBENCH_PG_SHARED_BUFFERS", "60MB")]) else { return };
    assert!(!out.status.success() && text(&out).contains("less than the 64MiB a server needs"), "{}", text(&out));
    drop(cluster);
}

/// `bench --memory` on a cluster whose nodes share the limit
/// (`GHBENCH_CITUS_MEMORY=total`), restarted by a servers file as
/// `scripts/bench-citus.sh` writes one: every cold restart is found back
/// inside the nodes' shares (not taken for a server out of its limit, as
/// when only the coordinator's cgroup was compared with the whole limit),
/// and the load's memory counts every node's cgroup, not the coordinator's alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_bench_under_a_limit_the_cluster_shares_checks_and_counts_every_nodes_cgroup() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: memory limits need root (cgroups)");
        return;
    }
    let Some(cluster) = own_cluster_with(&[("GHBENCH_CITUS_MEMORY", "total")]) else { return };
    let port = cluster.port;
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let home = cluster.home.to_str().unwrap();
    let restart = serde_json::json!(["env", format!("GHBENCH_HOME={home}"), format!("GHBENCH_CITUS_PORT={port}"), "GHBENCH_CITUS_WORKERS=2",
        "GHBENCH_SETUP_CITUS_MEMORY=total", "GHBENCH_SETUP_MEMORY=", "GHBENCH_SETUP_DISK=", "GHBENCH_SETUP_PG_PAPER2019=", "bash", script("restart.sh"), "citus"]);
    let data_dir = std::fs::canonicalize(cluster.home.join("citus/coordinator/data")).unwrap();
    let servers = serde_json::json!({"servers": [{"name": "citus", "address": format!("127.0.0.1:{port}"), "data_dir": data_dir, "restart": restart}]});
    std::fs::write(path("servers.json"), servers.to_string()).unwrap();
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let args = ["bench", "--gen", "1", "--events-per-hour", "2000", "--engines", "citus", "--citus-url", &url, "--memory", "768MiB", "--cold", "--repeat", "1", "--variant", "corrected"];
    let places = ["--servers", &path("servers.json"), "--data-dir", &path("data"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let out = crate::util::ghbench_on_servers(&[&args[..], &places[..]].concat());
    let said = text(&out);
    assert!(out.status.success(), "bench: {said}");

    let (_, record) = bench_record(Path::new(&path("results")));
    let run = &record["sizes"][0]["run"];
    let actions: Vec<&str> = run["context"]["cold"]["actions"].as_array().unwrap().iter().filter_map(serde_json::Value::as_str).collect();
    assert!(!actions.iter().any(|a| a.contains("NOT back")), "{actions:?}");
    let shared = format!("citus back inside memory cgroups sharing 768.0 MiB among its 3 nodes (127.0.0.1:{port} 256.0 MiB, ");
    assert!(actions.iter().any(|a| a.starts_with(&shared)), "'{shared}' in {actions:?}");
    assert!(run["context"]["cold"]["true_cold_engines"].as_array().unwrap().iter().any(|e| e == "citus"), "{}", run["context"]["cold"]);
    // The load's memory: every node's cgroup, each its share, their counts as one.
    let during_load = &record["sizes"][0]["memory_during_load"][0];
    let nodes = during_load["nodes"].as_array().unwrap_or_else(|| panic!("each node's limit: {during_load}"));
    let expected: Vec<serde_json::Value> = (0..3).map(|i| serde_json::json!([format!("127.0.0.1:{}", port + i), 256u64 << 20])).collect();
    assert_eq!(nodes, &expected, "{during_load}");
    assert_eq!(during_load["cgroup"].as_str().unwrap().matches("-citus-").count(), 3, "{during_load}");
    assert_eq!(during_load["counters"]["oom_kills"].as_u64(), Some(0), "{during_load}");
    assert!(during_load["counters"]["peak_bytes"].as_u64().unwrap() <= (256 << 20) + ghbench_olap::cgroup::FORCED_CHARGE_SLACK, "the fullest node's peak, within its share: {during_load}");
    assert!(said.contains("citus: during its load and index builds, on its 3 nodes (sharing 768.0 MiB: "), "{said}");
}

pub(crate) async fn query_one<T: for<'a> tokio_postgres::types::FromSql<'a>>(port: u16, sql: &str) -> T {
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e:?}")).get(0)
}

pub(crate) async fn query_one_i64(port: u16, sql: &str) -> i64 {
    query_one(port, sql).await
}

#[tokio::test]
async fn setup_starts_a_citus_cluster_that_distributes_a_table_and_down_stops_every_node() {
    let Some(cluster) = own_cluster() else { return };
    let port = cluster.port;

    assert_eq!(query_one_i64(port, "SELECT count(*) FROM citus_get_active_worker_nodes()").await, 2);
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("CREATE TABLE events (data jsonb)").await.unwrap();
    client.execute("SELECT create_distributed_table('events', 'data')", &[]).await.unwrap();
    client
        .execute("INSERT INTO events SELECT jsonb_build_object('id', i, 'type', 'PushEvent') FROM generate_series(1, 500) AS i", &[])
        .await
        .unwrap();
    drop(client);
    assert_eq!(query_one_i64(port, "SELECT count(*) FROM events").await, 500);
    // Both workers hold shards of it, and the coordinator none.
    let holders = "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'events'::regclass";
    assert_eq!(query_one_i64(port, holders).await, 2);

    // The OOM killer's last choice on each node is its postmaster, its backends before it
    // (-900 and 0 where the score can be lowered, else 0 and 500).
    let adj = |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap().trim().parse::<i32>().unwrap();
    let (session, connection) = tokio_postgres::connect(&format!("postgres://ghbench@127.0.0.1:{port}/ghbench"), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let backend: i32 = session.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let backend = adj(&backend.to_string());
    for node in ["coordinator", "worker2"] {
        let pid_file = std::fs::read_to_string(cluster.home.join("citus").join(node).join("data").join("postmaster.pid")).unwrap();
        let postmaster = adj(pid_file.lines().next().unwrap());
        assert!(backend - postmaster >= 500 && [(-900, 0), (0, 500)].contains(&(postmaster, backend)), "{node}: postmaster {postmaster}, a backend {backend}");
    }
    drop(session);

    // Each node, the workers too, has a third of the single server's memory settings.
    for node in [port, port + 2] {
        assert_eq!(query_one::<String>(node, "SHOW shared_buffers").await, "100MB");
        assert_eq!(query_one::<String>(node, "SHOW work_mem").await, "10MB");
    }

    // Setup again: every node kept as it runs, no worker added twice.
    let again = run_script("setup.sh", &["citus"], &cluster.home, port);
    assert!(again.status.success(), "setup.sh citus again: {}", text(&again));
    assert_eq!(text(&again).matches("already running").count(), 3, "{}", text(&again));
    assert_eq!(query_one_i64(port, "SELECT count(*) FROM pg_dist_node").await, 3);

    // A cluster of another shape is refused, saying how it was made; nothing is changed.
    let shrunk = run_script_with("setup.sh", &["citus"], &cluster.home, port, "1");
    assert!(!shrunk.status.success(), "setup.sh citus with 1 worker must refuse a cluster of 2: {}", text(&shrunk));
    assert!(text(&shrunk).contains(&format!("was made with port {port}, workers 2, not port {port}, workers 1")), "{}", text(&shrunk));
    assert_eq!(query_one_i64(port, "SELECT count(*) FROM citus_get_active_worker_nodes()").await, 2);
    // And so is the whole setup, before it touches any server: it fails, not
    // going on without the cluster (which runs on), unlisted from its env file.
    let whole = run_script_with("setup.sh", &[], &cluster.home, port, "1");
    assert!(!whole.status.success() && text(&whole).contains("was made with port"), "setup.sh with 1 worker: {}", text(&whole));
    assert!(!text(&whole).contains("starting PostgreSQL"), "refused before any server is touched: {}", text(&whole));

    // A cold run's restart: every node down and up again, the rows still there.
    let restart = run_script("restart.sh", &["citus"], &cluster.home, port);
    assert!(restart.status.success(), "restart.sh citus: {}", text(&restart));
    assert_eq!(text(&restart).matches("stopped").count(), 3, "{}", text(&restart));
    assert_eq!(query_one_i64(port, "SELECT count(*) FROM events").await, 500);

    let down = run_script("down.sh", &["citus"], &cluster.home, port);
    assert!(down.status.success(), "down.sh citus: {}", text(&down));
    for node in 0..3 {
        assert!(!answers(port + node), "port {} still answers after down.sh citus: {}", port + node, text(&down));
    }
}

#[test]
fn setup_with_citus_off_says_so_in_one_line() {
    let home = own_temp_dir("citus-off");
    let out = Command::new("bash")
        .arg(script("setup.sh"))
        .arg("citus")
        .env("GHBENCH_HOME", &home)
        .env("GHBENCH_CITUS", "off")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&home);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "setup.sh citus with Citus off must fail: {said}");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines, ["[setup] Citus skipped: GHBENCH_CITUS=off"], "{said}");
}

/// The `citus` engine on a cluster of the test's own, beside the shared
/// PostgreSQL: the real hour loaded exactly once, its rows counted on the
/// shards; loaded again, nothing written; reloaded, found by the hour each row
/// keeps and replaced; the paper's indexes made on every shard; A-D answered
/// as the single server answers them (the query's own verification); the
/// record's sizes and rows summed over the shards, as the workers hold them;
/// and the blocks a query reads counted on every shard, the kernel's counters on every node.
#[tokio::test(flavor = "multi_thread")]
async fn the_citus_engine_loads_an_hour_once_reloads_it_by_its_hour_and_answers_as_postgres() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let Some(cluster) = own_cluster() else { return };
    let port = cluster.port;
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_real");
    let work = tempfile::tempdir().unwrap();
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let results = work.path().join("results").to_str().unwrap().to_string();
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let run = |command: &[&str]| {
        let mut args = command.to_vec();
        args.extend(["--engines", "postgres,citus", "--table", &table, "--citus-url", &url]);
        let out = crate::util::ghbench_on_servers(&args);
        assert!(out.status.success(), "ghbench {}: {}", args.join(" "), text(&out));
        text(&out)
    };
    let ingest = ["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", &quarantine];
    let on_shards = |per_shard: &str| format!("SELECT coalesce(sum(result::bigint), 0)::bigint FROM run_command_on_shards('{table}', $cmd${per_shard}$cmd$)");
    let loaded_at = format!("SELECT extract(epoch FROM loaded_at)::float8 FROM ghbench_ledger WHERE engine = 'citus' AND tbl = '{table}'");

    let mut first = ingest.to_vec();
    first.push("--drop");
    run(&first);
    let events: i64 = pg().await.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
    assert!(events > 7_000, "the real hour on postgres: {events}");
    assert_eq!(query_one_i64(port, &format!("SELECT count(*) FROM {table}")).await, events, "the coordinator counts what postgres holds");
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM %s")).await, events, "the shards hold every row once");
    assert_eq!(query_one_i64(port, &format!("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = '{table}'::regclass")).await, 32);
    assert_eq!(query_one_i64(port, &format!("SELECT count(*) FROM {table} WHERE ghbench_hour = 2015010100")).await, events, "every row keeps its hour");
    let first_load: f64 = query_one(port, &loaded_at).await;

    // Again: the hour is done, nothing is written.
    run(&ingest);
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM %s")).await, events);
    assert_eq!(query_one::<f64>(port, &loaded_at).await, first_load, "the ledger entry is the first load's");

    // Reloaded: the hour's rows found by their hour and replaced, once.
    let mut reload = ingest.to_vec();
    reload.extend(["--reload", "2015-01-01T00"]);
    run(&reload);
    assert_eq!(query_one_i64(port, &on_shards("SELECT count(*) FROM %s")).await, events, "replaced, not added");
    assert!(query_one::<f64>(port, &loaded_at).await > first_load, "the ledger entry is the reload's");

    // The paper's five indexes and the hour's, on every shard.
    run(&["index"]);
    let per_shard = query_one_i64(port, &on_shards("SELECT count(*) FROM pg_index WHERE indrelid = '%s'::regclass")).await;
    assert_eq!(per_shard, 32 * 6, "six indexes on each of 32 shards");
    // The load's VACUUM (ANALYZE) and the index builds' ANALYZE reached every shard: each has its columns' statistics.
    let analysed = on_shards("SELECT count(*) FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename AND c.relnamespace::regnamespace::name = s.schemaname WHERE c.oid = '%s'::regclass");
    assert_eq!(query_one_i64(port, &analysed).await, 32 * 2, "data and ghbench_hour on each shard");

    // A-D, verified against postgres by the run itself (exit status 0).
    run(&["query", "--all", "--repeat", "1", "--output", &results]);
    let record = newest_record(results.as_ref(), "olap");
    let engines = record["context"]["engines"].as_array().unwrap();
    let citus = engines.iter().find(|e| e["engine"] == "citus").unwrap_or_else(|| panic!("no citus in {record}"));
    let storage = &citus["storage"];
    assert_eq!(storage["rows"].as_i64(), Some(events), "{storage}");
    let shard_bytes = query_one_i64(port, &on_shards("SELECT pg_total_relation_size('%s')")).await;
    let recorded = storage["table_bytes"].as_i64().unwrap() + storage["index_bytes"].as_i64().unwrap();
    assert_eq!(recorded, shard_bytes, "the sizes are the shards' summed: {storage}");
    let indexes = storage["indexes"].as_array().unwrap();
    assert_eq!(indexes.len(), 6, "{storage}");
    assert!(indexes.iter().all(|i| i["bytes"].as_u64().unwrap() > 0), "every index has its shards' bytes: {storage}");
    // Reads, counted over the shards on the workers: a query that reads the
    // whole table on postgres (its heap blocks, a run's, are all the
    // table's) reads every block of every shard on Citus, the last query's
    // too (which a worker's session holds up to 10 s unless ended first).
    let blocks = |engine: &serde_json::Value, name: &str| engine["read"]["counters"][name].as_u64().unwrap_or_else(|| panic!("{name} not counted: {engine}"));
    let heap = |engine: &serde_json::Value| (blocks(engine, "heap_blks_hit") + blocks(engine, "heap_blks_read")) / engine["read"]["runs"].as_u64().unwrap();
    let pg_blocks: i64 = pg().await.query_one(&format!("SELECT pg_relation_size('{table}') / 8192"), &[]).await.unwrap().get(0);
    let shard_blocks = query_one_i64(port, &on_shards("SELECT pg_relation_size('%s') / 8192")).await;
    let mut whole_scans = 0;
    for query in record["queries"].as_array().unwrap() {
        let of = |name: &str| query["engines"].as_array().unwrap().iter().find(|e| e["engine"] == name).unwrap().clone();
        let (postgres, citus) = (of("postgres"), of("citus"));
        let kernel = &citus["read"]["kernel"];
        assert!(kernel["unavailable"].is_null(), "the kernel's counters of every node: {kernel}");
        for node in [port, port + 1, port + 2] {
            assert!(kernel["counters"][format!("read_bytes of node 127.0.0.1:{node}")].is_u64(), "node {node} counted: {kernel}");
        }
        if heap(&postgres) == pg_blocks as u64 {
            whole_scans += 1;
            assert_eq!(heap(&citus), shard_blocks as u64, "{} {}: every shard's blocks, read once a run: {}", query["query"], query["variant"], citus["read"]);
        }
    }
    assert!(whole_scans > 0, "no query read the whole table on postgres (the paper's B and C do): {record}");
    let server = &citus["server"];
    assert!(server["label"].as_str().unwrap().starts_with("Citus "), "{server}");
    assert_eq!(server["settings"][format!("citus shards of {table}")], "32", "{server}");
}

/// Each node under a memory limit of its own (`GHBENCH_MEMORY`, as `bench
/// --memory` restarts them): the record names each node's limit and cgroup,
/// the table's bytes each holds (the workers all of it, the coordinator
/// none), data ÷ memory on the fullest node, and the limits in total.
#[tokio::test(flavor = "multi_thread")]
async fn each_node_under_a_memory_limit_of_its_own_is_recorded_with_the_data_it_holds() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: memory limits need root (cgroups)");
        return;
    }
    let Some(real) = real_hour() else { return };
    let Some(cluster) = own_cluster_with(&[("GHBENCH_MEMORY", "512MiB"), ("GHBENCH_DISK", "riops=100000")]) else { return };
    let port = cluster.port;
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_limited");
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("results").to_str().unwrap().to_string();
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let common = ["--engines", "citus", "--table", &table, "--citus-url", &url];
    let steps: [&[&str]; 2] = [
        &["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", &quarantine, "--drop"],
        &["query", "B", "--repeat", "1", "--output", &results],
    ];
    for step in steps {
        let args: Vec<&str> = step.iter().chain(common.iter()).copied().collect();
        let out = crate::util::ghbench_on_servers(&args);
        assert!(out.status.success(), "ghbench {}: {}", args.join(" "), text(&out));
    }
    let record = newest_record(results.as_ref(), "olap");
    let citus = &record["context"]["engines"][0];
    let memory = &citus["memory"];
    let nodes = memory["nodes"].as_array().unwrap_or_else(|| panic!("each node's memory: {memory}"));
    let addresses: Vec<String> = nodes.iter().map(|n| n["node"].as_str().unwrap().to_string()).collect();
    assert_eq!(addresses, (0..3).map(|i| format!("127.0.0.1:{}", port + i)).collect::<Vec<_>>(), "the coordinator, then the workers: {memory}");
    for node in nodes {
        assert_eq!(node["bytes"].as_u64(), Some(512 << 20), "{node}");
        assert!(node["limit"]["cgroup"].as_str().unwrap().contains("citus-"), "the node's own cgroup: {node}");
        assert!(node["limit"]["over_runs"]["peak_bytes"].as_u64().unwrap() > 0, "counted over the runs: {node}");
    }
    assert_eq!(memory["bytes"].as_u64(), Some(3 * (512 << 20)), "the limits in total: {memory}");
    let stored = citus["storage"]["table_bytes"].as_u64().unwrap() + citus["storage"]["index_bytes"].as_u64().unwrap();
    let held: Vec<u64> = nodes.iter().map(|n| n["data_bytes"].as_u64().unwrap()).collect();
    assert_eq!(held[0], 0, "the coordinator holds no shard: {memory}");
    assert!(held[1] > 0 && held[2] > 0, "{memory}");
    assert_eq!(held.iter().sum::<u64>(), stored, "the nodes hold the table's bytes between them: {memory} {}", citus["storage"]);
    let fullest = *held.iter().max().unwrap() as f64 / (512 << 20) as f64;
    let label = record["context"]["cold"]["label"].as_str().unwrap_or_default();
    let said = format!("citus data {} memory on its fullest node (3 nodes;", ghbench_record::run::ratio_text(fullest));
    assert!(label.contains(&said), "'{said}' in the label: {label}");
    // And each node's disk throttle, what each node's cgroup counted over the runs summed.
    let disk = &citus["disk_limit"];
    let throttled = disk["nodes"].as_array().unwrap_or_else(|| panic!("each node's disk throttle: {disk}"));
    assert_eq!(throttled.iter().map(|n| n["node"].as_str().unwrap().to_string()).collect::<Vec<_>>(), addresses, "{disk}");
    for node in throttled {
        assert_eq!(node["limit"]["rules"]["read_iops"].as_u64(), Some(100_000), "{node}");
        assert!(node["limit"]["cgroup"].as_str().unwrap().contains("citus-"), "the node's own cgroup: {node}");
    }
    let read = |limit: &serde_json::Value| limit["over_runs"]["reads"].as_u64().unwrap_or_else(|| panic!("reads counted: {limit}"));
    assert_eq!(read(disk), throttled.iter().map(|n| read(&n["limit"])).sum::<u64>(), "the nodes' counts summed: {disk}");
    assert!(label.contains("disk throttled: citus (each of its 3 nodes) to 100,000 read IOPS"), "{label}");
}

/// A worker stopped: a query through the coordinator fails naming it and is
/// made again once the worker is back (ghbench's new connection waits for
/// every worker to answer), with the same answer; a worker that stays down
/// fails the query with its address, and a load is refused naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_lost_to_a_stopped_worker_is_made_again_once_it_is_back_and_names_it_while_it_is_down() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let Some(cluster) = own_cluster() else { return };
    let (port, worker2) = (cluster.port, format!("127.0.0.1:{}", cluster.port + 2));
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_fault");
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("results").to_str().unwrap().to_string();
    let shared = real.parent().unwrap().to_str().unwrap().to_string();
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let ghbench = |step: &[&str]| {
        let args: Vec<&str> = step.iter().copied().chain(["--engines", "citus", "--table", &table, "--citus-url", &url]).collect();
        crate::util::ghbench_on_servers(&args)
    };
    let ingest = ["ingest", "--source", &shared, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", &quarantine];
    let query = ["query", "B", "--variant", "corrected", "--repeat", "1", "--output", &results];
    assert!(ghbench(&ingest).status.success());
    assert!(ghbench(&query).status.success());
    let digest = |record: &serde_json::Value| record["queries"][0]["engines"][0]["answer_digest"].as_str().unwrap().to_string();
    let answer = digest(&newest_record(results.as_ref(), "olap"));

    // Stopped, and started again by setup (which starts only what is down) while the query waits.
    stop_node(&cluster, "worker2");
    let (home, restarted) = (cluster.home.clone(), std::sync::Arc::new(std::sync::Mutex::new(None)));
    let restart = std::thread::spawn({
        let restarted = restarted.clone();
        move || {
            std::thread::sleep(std::time::Duration::from_secs(3));
            *restarted.lock().unwrap() = Some(run_script("setup.sh", &["citus"], &home, port));
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let out = ghbench(&query);
    restart.join().unwrap();
    let setup = restarted.lock().unwrap().take().unwrap();
    assert!(setup.status.success(), "{}", text(&setup));
    assert!(out.status.success(), "made again once the worker was back: {}", text(&out));
    let record = newest_record(results.as_ref(), "olap");
    let citus = &record["queries"][0]["engines"][0];
    let lost = citus["reconnects"][0]["error"].as_str().unwrap_or_else(|| panic!("the lost run recorded: {citus}"));
    assert!(lost.contains(&worker2), "the lost run names the worker: {lost}");
    assert_eq!(digest(&record), answer, "the same answer");

    // Stopped for good: the query fails naming it, once the wait for it ran out.
    stop_node(&cluster, "worker2");
    let out = ghbench(&query);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("FAILED B corrected on citus") && text(&out).contains(&worker2), "{}", text(&out));
    let out = ghbench(&[&ingest[..], &["--reload", "2015-01-01T00"]].concat());
    assert!(!out.status.success() && text(&out).contains(&worker2), "a load refused naming the worker: {}", text(&out));
    // And `doctor` fails on it, naming it, where it said "ok" with the worker's settings "not read".
    let out = ghbench(&["doctor"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("citus           FAILED") && text(&out).contains(&format!("Citus worker(s) not answering: {worker2}")), "{}", text(&out));
}

/// Both Citus engines loading at once, 8 hours at a time: each session's
/// COPY opens up to 16 sessions on each worker, which with Citus's default
/// shared pool (the coordinator's max_connections, 100: every slot a worker
/// has) were refused "too many clients" and retried; under setup's
/// `citus.max_shared_pool_size` of 80 Citus waits for a free one instead.
#[tokio::test(flavor = "multi_thread")]
async fn two_citus_engines_loading_at_once_stay_within_the_workers_connections() {
    let _servers = shared_servers();
    let Some(cluster) = own_cluster() else { return };
    let port = cluster.port;
    assert_eq!(query_one::<String>(port, "SHOW citus.max_shared_pool_size").await, "80");
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let gen = crate::util::ghbench_on_servers(&["gen", "--from", "2015-01-01T00", "--hours", "8", "--events", "3000", "--data-dir", &path("hours")]);
    assert!(gen.status.success(), "gen: {}", text(&gen));
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let ingest = ["ingest", "--engines", "citus,citus-tuned", "--table", "citus_both", "--citus-url", &url, "--source", &path("hours"), "--from", "2015-01-01T00", "--hours", "8",
        "--concurrency", "8", "--quarantine-dir", &path("q"), "--json", &path("load.json")];
    let out = crate::util::ghbench_on_servers(&ingest);
    assert!(out.status.success(), "ingest: {}", text(&out));
    assert!(!text(&out).contains("too many clients"), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(path("load.json")).unwrap()).unwrap();
    let attempts: Vec<u64> = report["hours"].as_array().unwrap().iter().map(|h| h["attempts"].as_u64().unwrap()).collect();
    assert_eq!(attempts, vec![1; 8], "every hour loaded at its first attempt: {report}");
}

/// `--citus-url` at a server that is not a Citus coordinator: a plain
/// PostgreSQL, or one of the cluster's workers (which Citus lets take
/// queries too): every command refuses it saying what it is, exit 2, where
/// ingest gave PostgreSQL's raw "function create_distributed_table does not
/// exist", doctor said "ok" and a query at a worker "holds no data"; and
/// `bench` left to its default engines goes on without the optional ones.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_is_not_a_citus_coordinator_is_refused_saying_what_it_is() {
    let _servers = shared_servers();
    let Some(cluster) = own_cluster() else { return };
    let worker = format!("postgres://ghbench@127.0.0.1:{}/ghbench", cluster.port + 1);
    let plain = pg_url();
    let Some(real) = real_hour() else { return };
    let quarantine = tempfile::tempdir().unwrap();
    let source = real.parent().unwrap().to_str().unwrap();
    for (url, said) in [(plain.as_str(), "is not a Citus coordinator: its database ghbench has no citus extension"), (worker.as_str(), "is a Citus worker (group ")] {
        for engine in ["citus", "citus-tuned"] {
            let common = ["--engines", engine, "--table", "citus_wrong_server", "--citus-url", url];
            let steps: [&[&str]; 3] = [
                &["doctor"],
                &["ingest", "--source", source, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--quarantine-dir", quarantine.path().to_str().unwrap()],
                &["query", "B", "--repeat", "1", "--output", quarantine.path().to_str().unwrap()],
            ];
            for step in steps {
                let args: Vec<&str> = step.iter().chain(common.iter()).copied().collect();
                let out = crate::util::ghbench_on_servers(&args);
                assert_eq!(out.status.code(), Some(2), "{}: {}", args.join(" "), text(&out));
                assert!(text(&out).contains(&format!("{engine} at ")) && text(&out).contains(said), "{}: {}", args.join(" "), text(&out));
            }
        }
    }
    // Nothing was made on either: no table, no ledger.
    assert_eq!(query_one_i64(cluster.port + 1, "SELECT count(*) FROM pg_class WHERE relname = 'citus_wrong_server'").await, 0);
}

/// A worker stopped in the middle of a load of several hours: the hours
/// whose transaction it broke fail after their retries, naming it, none of
/// their rows kept; once it is back, the rerun loads exactly those, each
/// hour's rows on the shards what its ledger entry says.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stopped_mid_load_fails_the_hours_it_broke_naming_it_and_the_rerun_loads_them_exactly_once() {
    let _servers = shared_servers();
    let Some(cluster) = own_cluster() else { return };
    let (port, worker2) = (cluster.port, format!("127.0.0.1:{}", cluster.port + 2));
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_midload");
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("hours");
    let hours = "10";
    let gen = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["gen", "--from", "2015-02-01T00", "--hours", hours, "--events", "10000", "--seed", "7", "--defects", "0", "--truncate-prob", "0", "--out", source.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(gen.status.success(), "{}", text(&gen));
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let ingest: Vec<String> = ["ingest", "--engines", "citus", "--table", &table, "--citus-url", &url, "--source", source.to_str().unwrap(), "--from", "2015-02-01T00", "--hours", hours, "--quarantine-dir", &quarantine]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let ledger = format!("SELECT count(*) FROM ghbench_ledger WHERE engine = 'citus' AND tbl = '{table}'");

    let loading = std::thread::spawn({
        // One retry (after 1 s) is enough to show the hour retried while the worker is down.
        let ingest: Vec<String> = ingest.iter().cloned().chain(["--retries".into(), "1".into()]).collect();
        move || crate::util::ghbench_on_servers(&ingest.iter().map(String::as_str).collect::<Vec<_>>())
    });
    // Stopped once the first hour is in: the hours after it break.
    let waited = std::time::Instant::now();
    loop {
        let done = match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                client.query_one(&ledger, &[]).await.map_or(0, |r| r.get::<_, i64>(0))
            }
            Err(_) => 0,
        };
        if done >= 1 {
            break;
        }
        assert!(waited.elapsed().as_secs() < 60 && !loading.is_finished(), "no hour loaded");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    stop_node(&cluster, "worker2");
    let out = loading.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("after 2 attempt(s): citus") && text(&out).contains(&worker2), "the broken hours fail after their retry, naming the worker: {}", text(&out));
    let loaded_before = query_one_i64(port, &ledger).await;
    assert!(loaded_before < 10, "some hours broke: {loaded_before}");

    let setup = run_script("setup.sh", &["citus"], &cluster.home, port);
    assert!(setup.status.success(), "{}", text(&setup));
    let out = crate::util::ghbench_on_servers(&ingest.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(query_one_i64(port, &ledger).await, 10, "every hour in the ledger once");
    // Each hour's rows on the shards are what its ledger entry says it stored.
    let mismatched = format!(
        "SELECT count(*) FROM ghbench_ledger l FULL JOIN (SELECT ghbench_hour, count(*) AS n FROM {table} GROUP BY 1) s
           ON s.ghbench_hour = to_char(to_timestamp(l.hour, 'YYYY-MM-DD-HH24'), 'YYYYMMDDHH24')::int
         WHERE (l.engine = 'citus' AND l.tbl = '{table}' AND s.n IS DISTINCT FROM l.events) OR l.hour IS NULL"
    );
    assert_eq!(query_one_i64(port, &mismatched).await, 0, "every hour exactly once");
}

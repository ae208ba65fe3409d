//! A Citus coordinator killed during a commit (issue 54), on a cluster of the
//! test's own: the hour committed on the coordinator (its ledger entry and
//! Citus's record of the commit) while a worker still holds its part only
//! prepared, by two-phase commit. The rerun recovers it and is exact: every
//! hour's rows on the shards what its ledger entry says, none twice.
//!
//! The window is made, not waited for: a deferred trigger on worker1's
//! shards (test-only) makes its PREPARE sleep, so worker2 has prepared and
//! waits; its sessions are stopped (SIGSTOP) so the coordinator's COMMIT
//! PREPARED to it waits too; once the coordinator has committed the hour,
//! it is killed (`pg_ctl stop -m immediate`, every process at once), and
//! worker2's stopped sessions are killed, their prepared part kept. Citus's
//! own recovery (its maintenance daemon's) is turned off on this cluster, so
//! the test fails unless the rerun recovers the hour before it checks it.

use std::process::Command;
use std::time::{Duration, Instant};

use ghbench_testkit::*;

use crate::citus::{own_cluster, query_one_i64, run_script, stop_node_as};

/// A session of the test's own on a node of the cluster.
async fn node(port: u16) -> tokio_postgres::Client {
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Polls `check` every 100 ms until it holds; panics naming `what` after `limit`.
async fn wait_for<F: std::future::Future<Output = bool>>(what: &str, limit: Duration, mut check: impl FnMut() -> F) {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "waited {} s for {what}", limit.as_secs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn signal(signal: &str, pids: &[i32]) {
    for pid in pids {
        let out = Command::new("kill").args([signal, &pid.to_string()]).output().unwrap();
        assert!(out.status.success(), "kill {signal} {pid}: {}", text(&out));
    }
}

/// Processes stopped (SIGSTOP), killed however the test ends: a stopped
/// worker session would hold the coordinator's COMMIT, the load, and the
/// cluster's fast shutdown, forever.
struct Stopped(Vec<i32>);

impl Drop for Stopped {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).output();
        }
    }
}

/// A worker's sessions opened by the coordinator (Citus names them by the
/// coordinator session's global id).
const COORDINATOR_SESSIONS: &str = "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'citus_internal gpid=%' AND backend_type = 'client backend'";

#[tokio::test(flavor = "multi_thread")]
async fn a_coordinator_killed_during_a_commit_leaves_the_hour_to_the_two_phase_commit_and_the_rerun_is_exact() {
    let _servers = shared_servers();
    if !is_root() {
        eprintln!("SKIPPED: stopping and killing the nodes' processes needs root");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let Some((hours, events)) = real_hour_copies(work.path(), 2) else { return };
    let Some(cluster) = own_cluster() else { return };
    let port = cluster.port;
    let (worker1, worker2) = (port + 1, port + 2);
    let url = format!("postgres://ghbench@127.0.0.1:{port}/ghbench");
    let table = table("citus_commit_kill");
    let quarantine = work.path().join("q").to_str().unwrap().to_string();
    let ingest = |to: &str| -> Vec<String> {
        ["ingest", "--engines", "citus", "--table", &table, "--citus-url", &url, "--source", hours.to_str().unwrap(), "--from", "2015-01-01T00", "--to", to, "--quarantine-dir", &quarantine, "--retries", "0"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>| crate::util::ghbench_on_servers(&args.iter().map(String::as_str).collect::<Vec<_>>());

    // The table, and the first hour, loaded as usual.
    let out = run(ingest("2015-01-01T00"));
    assert!(out.status.success(), "{}", text(&out));

    // Citus's maintenance daemon recovers prepared transactions on its own,
    // at its start and every minute: turned off, so what recovers the hour
    // below is the rerun itself (every Citus load first recovers them).
    let coordinator = node(port).await;
    coordinator.batch_execute("ALTER SYSTEM SET citus.recover_2pc_interval = -1").await.unwrap();
    coordinator.batch_execute("SELECT pg_reload_conf()").await.unwrap();

    // worker1's PREPARE of the next hour sleeps 8 s, once per transaction.
    let w1 = node(worker1).await;
    let shards = node(port).await.query(&format!("SELECT shard_name::text FROM citus_shards WHERE table_name = '{table}'::regclass AND nodeport = {worker1}"), &[]).await.unwrap();
    assert!(!shards.is_empty(), "worker1 holds shards of {table}");
    // (Citus sends DDL from the coordinator; on a worker its propagation is turned off to make one there.)
    w1.batch_execute("SET citus.enable_ddl_propagation = off; SET citus.enable_manual_changes_to_shards = on").await.unwrap();
    w1.batch_execute(
        "CREATE OR REPLACE FUNCTION ghbench_test_slow_prepare() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF current_setting('ghbench_test.slept', true) IS DISTINCT FROM 'y' THEN
                 PERFORM set_config('ghbench_test.slept', 'y', true);
                 PERFORM pg_sleep(8);
             END IF;
             RETURN NULL;
         END $$",
    )
    .await
    .unwrap();
    for shard in &shards {
        let shard: String = shard.get(0);
        w1.batch_execute(&format!(
            "CREATE CONSTRAINT TRIGGER ghbench_test_slow AFTER INSERT ON {shard} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ghbench_test_slow_prepare()"
        ))
        .await
        .unwrap_or_else(|e| panic!("the trigger on {shard}: {e:?}"));
    }

    // The second hour: worker2 prepares, worker1 sleeps in its PREPARE.
    let loading = std::thread::spawn({
        let args = ingest("2015-01-01T01");
        move || crate::util::ghbench_on_servers(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let w2 = node(worker2).await;
    let prepared = "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'citus\\_%'";
    let busy = format!("SELECT count(*) FROM ({COORDINATOR_SESSIONS} AND state <> 'idle') s");
    wait_for("worker2 to prepare its part of the hour", Duration::from_secs(60), || async {
        w2.query_one(prepared, &[]).await.unwrap().get::<_, i64>(0) > 0 && w2.query_one(&busy, &[]).await.unwrap().get::<_, i64>(0) == 0
    })
    .await;
    // Its sessions stopped: the coordinator's COMMIT PREPARED waits on them.
    let stopped = Stopped(w2.query(COORDINATOR_SESSIONS, &[]).await.unwrap().iter().map(|r| r.get(0)).collect());
    signal("-STOP", &stopped.0);

    // Once worker1 has prepared, the coordinator commits the hour (its
    // ledger entry shows), then waits on worker2: killed there.
    let ledger = format!("SELECT count(*) FROM ghbench_ledger WHERE engine = 'citus' AND tbl = '{table}'");
    wait_for("the coordinator to commit the second hour", Duration::from_secs(60), || async { coordinator.query_one(&ledger, &[]).await.map_or(0, |r| r.get::<_, i64>(0)) == 2 }).await;
    stop_node_as(&cluster, "coordinator", "immediate");
    // Killed, not let go on: they would read the COMMIT PREPARED the coordinator sent them.
    drop(stopped);
    let out = loading.join().unwrap();
    assert!(!out.status.success(), "the load lost its coordinator: {}", text(&out));

    // worker2 restarts after its killed sessions, its part of the hour still prepared.
    wait_for("worker2 to answer again", Duration::from_secs(60), || async {
        match tokio_postgres::connect(&format!("postgres://ghbench@127.0.0.1:{worker2}/ghbench"), tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                client.query_one("SELECT 1", &[]).await.is_ok()
            }
            Err(_) => false,
        }
    })
    .await;
    let w2 = node(worker2).await;
    let held: i64 = w2.query_one(prepared, &[]).await.unwrap().get(0);
    assert!(held > 0, "worker2 holds its part of the committed hour prepared");
    for shard in &shards {
        let shard: String = shard.get(0);
        w1.batch_execute(&format!("DROP TRIGGER ghbench_test_slow ON {shard}")).await.unwrap();
    }

    // The coordinator back (as setup restarts a node that is down), the rerun is exact.
    let setup = run_script("setup.sh", &["citus"], &cluster.home, port);
    assert!(setup.status.success(), "{}", text(&setup));
    let out = run(ingest("2015-01-01T01"));
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("2 skipped"), "both hours are done: {}", text(&out));
    assert_eq!(w2.query_one(prepared, &[]).await.unwrap().get::<_, i64>(0), 0, "recovered, committed as the coordinator decided");
    assert_eq!(query_one_i64(port, &ledger).await, 2);
    for key in [2015010100, 2015010101] {
        let rows = query_one_i64(port, &format!("SELECT count(*) FROM {table} WHERE ghbench_hour = {key}")).await;
        assert_eq!(rows as u64, events, "hour {key}: every row once");
    }
}

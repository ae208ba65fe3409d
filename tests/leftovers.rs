//! However ghbench ends, the servers end as setup left them (issue 49),
//! reproduced for real: a bench under `--memory` whose standard error goes
//! away, and one killed with SIGKILL (the next `ghbench doctor` puts the
//! server back, while a bench that still runs is left alone); a restart
//! whose PostgreSQL takes more than a minute to stop; a SIGKILLed query on
//! a MariaDB of the test's own, ended by the next ghbench.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ghbench_testkit::throwaway_mysql::ThrowawayMysql;
use ghbench_testkit::*;

use crate::bench::{limited_setup, OwnSetup};

/// `ghbench bench --memory 128MiB` on postgres alone, on `setup`'s servers.
fn limited_bench(setup: &OwnSetup, work: &Path) -> Command {
    let path = |name: &str| work.join(name).to_str().unwrap().to_string();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command
        .args(["bench", "--gen", "2", "--events-per-hour", "30000", "--engines", "postgres", "--memory", "128MiB"])
        .args(["--servers", setup.servers_file().to_str().unwrap(), "--data-dir", &path("data"), "--output", &path("results"), "--quarantine-dir", &path("q")])
        .env("DATABASE_URL", &setup.pg_url)
        .env("MONGODB_URI", &setup.mongo_url)
        .env("MYSQL_URL", &setup.mysql_url)
        .env_remove("GHBENCH_SERVERS")
        .stdout(Stdio::null());
    command
}

/// `ghbench doctor --engines postgres` on `setup`'s servers: its exit and what it said.
fn doctor(setup: &OwnSetup) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(["doctor", "--engines", "postgres", "--servers", setup.servers_file().to_str().unwrap()]).env("DATABASE_URL", &setup.pg_url).env_remove("GHBENCH_SERVERS");
    let out = output_within(&mut command, Duration::from_secs(300));
    let said = text(&out);
    eprintln!("ghbench doctor:\n{said}");
    (out.status.success(), said)
}

/// A servers file listing none, in `dir`: a test's own journal beside it,
/// so the test neither reads nor writes the checkout's.
fn no_servers(dir: &Path) -> PathBuf {
    let servers = dir.join("servers.json");
    std::fs::write(&servers, r#"{"servers": []}"#).unwrap();
    servers
}

/// Loads the real hour into `table` on `setup`'s PostgreSQL.
fn load_real_hour(setup: &OwnSetup, table: &str, work: &Path) {
    let real = real_hour().expect("checked by the caller");
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    ingest
        .args(["ingest", "--engines", "postgres", "--table", table, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--servers", setup.servers_file().to_str().unwrap()])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--quarantine-dir")
        .arg(work.join("q-ingest"))
        .env("DATABASE_URL", &setup.pg_url)
        .env_remove("GHBENCH_SERVERS");
    let out = output_within(&mut ingest, Duration::from_secs(300));
    assert!(out.status.success(), "{}", text(&out));
}

/// `ghbench query A --cold` of `table` on `setup`'s PostgreSQL.
fn cold_query(setup: &OwnSetup, table: &str, work: &Path) -> Command {
    let mut query = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    query
        .args(["query", "A", "--variant", "corrected", "--repeat", "1", "--cold", "--engines", "postgres", "--table", table])
        .args(["--servers", setup.servers_file().to_str().unwrap(), "--output"])
        .arg(work.join("cold"))
        .env("DATABASE_URL", &setup.pg_url)
        .env_remove("GHBENCH_SERVERS");
    query
}

/// The journal of server changes of `setup`'s servers.
fn journal(setup: &OwnSetup) -> Vec<PathBuf> {
    entries_in(&setup.home.join("changes"))
}

/// The entries of the journal in `dir` (not its lock files).
fn entries_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(dir) else { return Vec::new() };
    listing.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
}

fn json_files(dir: &Path) -> usize {
    entries_in(dir).len()
}

fn waits_for(file: &Path, mark: &str) {
    let started = Instant::now();
    while !std::fs::read_to_string(file).unwrap_or_default().contains(mark) {
        assert!(started.elapsed() < Duration::from_secs(300), "never said {mark:?}: {}", std::fs::read_to_string(file).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn kill(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child this test started and has not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

async fn shared_buffers(setup: &OwnSetup) -> String {
    let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &setup.pg_url).await.unwrap();
    client.query_one("SHOW shared_buffers", &[]).await.unwrap().get(0)
}

/// A bench whose standard error's reader goes once the server is under the
/// limit: its next line fails, and it puts the server back on its way out
/// (exit 141, as for SIGPIPE), leaving nothing in the journal.
#[tokio::test(flavor = "multi_thread")]
async fn a_bench_whose_stderr_closes_under_memory_puts_the_server_back() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--memory") else { return };
    let before = shared_buffers(&setup).await;
    let mut child = Owned::spawn(limited_bench(&setup, work.path()).stderr(Stdio::piped()));
    let mut said = String::new();
    {
        let mut lines = BufReader::new(child.take_stderr()).lines();
        for line in lines.by_ref() {
            let line = line.unwrap();
            said.push_str(&line);
            said.push('\n');
            if line.contains("] load into") {
                break;
            }
        }
        assert!(said.contains("] load into"), "no load began: {said}");
        assert!(setup.postgres_cgroup().await.contains("/ghbench/"), "under the limit during the load");
        // The reader goes: every later line of ghbench's fails.
    }
    let out = child.wait_within(Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(141), "ended as for a closed pipe, after putting the server back: {said}");
    let after = setup.postgres_cgroup().await;
    assert!(!after.contains("/ghbench/"), "the server runs outside the limit again: {after}");
    assert_eq!(shared_buffers(&setup).await, before, "settings as setup left them");
    assert!(journal(&setup).is_empty(), "nothing left in the journal: {:?}", journal(&setup));
    let (ok, said) = doctor(&setup);
    assert!(ok && !said.contains("restored"), "nothing left to restore: {said}");
}

/// A bench killed with SIGKILL under `--memory` cannot put anything back:
/// the server stays limited, the journal says so, and the next `ghbench
/// doctor` restarts it as setup left it and says so. While the bench still
/// runs, a query started beside it leaves its server alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_bench_s_limit_is_undone_by_the_next_doctor_and_a_running_one_s_is_not() {
    let _servers = disturbs_servers();
    if real_hour().is_none() {
        return;
    }
    let Some((setup, work)) = limited_setup("--memory") else { return };
    load_real_hour(&setup, "beside", work.path());
    let before = shared_buffers(&setup).await;
    let stderr = work.path().join("stderr");
    let child = Owned::spawn(limited_bench(&setup, work.path()).stderr(std::fs::File::create(&stderr).unwrap()));
    waits_for(&stderr, "] load into");
    let limited_since = setup.postmaster_started().await;
    assert!(setup.postgres_cgroup().await.contains("/ghbench/"));
    assert_eq!(journal(&setup).len(), 1, "the limit is written down while it holds");

    // A query started beside a bench that runs, even one asking for a true
    // cold run: the bench's change is said, not undone, and its server not
    // restarted (the run is labelled not truly cold).
    let said = text(&output_within(&mut cold_query(&setup, "beside", work.path()), Duration::from_secs(300)));
    assert!(said.contains(&format!("ghbench pid {}", child.id())) && said.contains("which still runs: left as it is"), "{said}");
    assert!(said.contains(&format!("not restarted (held by ghbench pid {}", child.id())) && said.contains("not a true cold run"), "{said}");
    assert!(!said.contains("restarted before each first run"), "no restart promised: {said}");
    assert_eq!(setup.postmaster_started().await, limited_since, "the running bench's server was not restarted");

    kill(child.child(), libc::SIGKILL);
    let _ = child.wait_within(Duration::from_secs(30));
    assert!(setup.postgres_cgroup().await.contains("/ghbench/"), "a SIGKILLed ghbench puts nothing back");
    assert_ne!(shared_buffers(&setup).await, before, "its settings are still scaled to the limit");

    let (ok, said) = doctor(&setup);
    assert!(ok, "{said}");
    assert!(said.contains("restored postgres at") && said.contains("restarted as `just setup` left it") && said.contains("which it ended"), "{said}");
    let after = setup.postgres_cgroup().await;
    assert!(!after.contains("/ghbench/"), "outside any ghbench cgroup: {after}");
    assert_eq!(shared_buffers(&setup).await, before, "settings as setup left them");
    assert!(journal(&setup).is_empty(), "{:?}", journal(&setup));
    // Said once: the next command finds nothing.
    let (_, again) = doctor(&setup);
    assert!(!again.contains("restored"), "{again}");
}

/// A restart whose PostgreSQL takes more than a minute to stop (its
/// checkpointer frozen for 70 s): ghbench waits while it stops, reports the
/// restart only once the server is back, and a server that makes no
/// progress for `GHBENCH_STUCK_AFTER` fails the restart, said as such.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_waits_for_a_slow_shutdown_and_reports_it_truthfully() {
    if !is_root() {
        eprintln!("SKIPPED: freezing the server's checkpointer needs root (its user is postgres)");
        return;
    }
    let Some(setup) = OwnSetup::start_with(Some("128MB")) else { return };
    // The restart, run here, writes to its setup's journal (no other test
    // of this process writes to one).
    ghbench_core::changes::set_dir(setup.home.join("changes"));
    let managed = ghbench::commands::servers::ManagedServers::load(&setup.servers_file(), true).unwrap().unwrap();
    let postgres = managed.servers.iter().find(|s| s.name == "postgres").unwrap().clone();

    let before = setup.postmaster_started().await;
    let checkpointer = checkpointer_of(&setup).await;
    kill_pid(checkpointer, libc::SIGSTOP);
    let thaw = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(70));
        kill_pid(checkpointer, libc::SIGCONT);
    });
    let started = Instant::now();
    let restarted = ghbench::commands::servers::restart(&postgres, None).await;
    let took = started.elapsed();
    thaw.join().unwrap();
    restarted.expect("the restart waited for the slow stop");
    assert!(took > Duration::from_secs(60), "it waited past the old 60 s: {took:?}");
    assert_ne!(setup.postmaster_started().await, before, "really restarted, and answering");

    // Frozen for good: no progress, so the restart fails, saying why.
    let checkpointer = checkpointer_of(&setup).await;
    kill_pid(checkpointer, libc::SIGSTOP);
    let mut stuck = postgres.clone();
    stuck.restart = [vec!["env".to_string(), "GHBENCH_STUCK_AFTER=20".to_string()], postgres.restart.clone()].concat();
    let failed = ghbench::commands::servers::restart(&stuck, None).await;
    kill_pid(checkpointer, libc::SIGCONT);
    let said = format!("{:#}", failed.expect_err("a server that makes no progress is not reported as restarted"));
    assert!(said.contains("PostgreSQL (pid") && said.contains("still runs") && said.contains("GHBENCH_STUCK_AFTER=20"), "{said}");
    // Its stop left for the next ghbench, which finds the server running.
    assert_eq!(journal(&setup).len(), 1, "the failed restart's stop is in the journal");
}

async fn checkpointer_of(setup: &OwnSetup) -> i32 {
    let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &setup.pg_url).await.unwrap();
    client.query_one("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'", &[]).await.unwrap().get(0)
}

fn kill_pid(pid: i32, signal: i32) {
    // SAFETY: kill(2) on the test's own server's checkpointer.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// A slow A for the MySQL family: a ten-minute SLEEP evaluated once.
const SLOW_A: &str = "SELECT 'slow' AS repo, COUNT(*) AS count FROM {table} CROSS JOIN (SELECT SLEEP(600) AS z) AS slow GROUP BY 1\n";

/// A SIGKILLed `ghbench query` leaves its statement running on MariaDB (a
/// closed socket does not stop it); the next ghbench on that server ends it.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_query_s_statement_on_mariadb_is_ended_by_the_next_ghbench() {
    let Some(real) = real_hour() else { return };
    let Some(server) = ThrowawayMysql::start("mysql_abandoned") else { return };
    let work = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command.args(args).args(["--engines", "mysql", "--mysql-url", &server.url()]).env_remove("GHBENCH_SERVERS");
        command
    };
    let mut ingest = run(&["ingest", "--table", "abandoned", "--from", "2015-01-01T00", "--to", "2015-01-01T00"]);
    ingest.arg("--source").arg(real.parent().unwrap()).arg("--quarantine-dir").arg(work.path().join("q"));
    let out = output_within(&mut ingest, Duration::from_secs(300));
    assert!(out.status.success(), "{}", text(&out));
    let catalog = work.path().join("queries");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &catalog);
    std::fs::write(catalog.join("mysql/corrected/A.sql"), SLOW_A).unwrap();

    let mut query = run(&["query", "A", "--variant", "corrected", "--repeat", "1", "--table", "abandoned"]);
    query.arg("--catalog").arg(&catalog).arg("--output").arg(work.path().join("results")).stdout(Stdio::null()).stderr(Stdio::null());
    let child = Owned::spawn(&mut query);
    let mut conn = mysql_async::Conn::from_url(server.url()).await.unwrap();
    let sleeping = || "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(600)%' AND ID <> CONNECTION_ID()";
    let started = Instant::now();
    loop {
        use mysql_async::prelude::Queryable;
        let n: Option<u64> = conn.query_first(sleeping()).await.unwrap();
        if n == Some(1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the slow query never showed in the process list");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kill(child.child(), libc::SIGKILL);
    let _ = child.wait_within(Duration::from_secs(30));
    tokio::time::sleep(Duration::from_secs(2)).await;
    {
        use mysql_async::prelude::Queryable;
        let n: Option<u64> = conn.query_first(sleeping()).await.unwrap();
        assert_eq!(n, Some(1), "MariaDB goes on with a killed client's statement");
    }
    let servers = no_servers(work.path());
    let mut doctor = run(&["doctor", "--servers", servers.to_str().unwrap()]);
    let out = output_within(&mut doctor, Duration::from_secs(120));
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("for a ghbench that ended") && said.contains("ended (KILL CONNECTION"), "{said}");
    use mysql_async::prelude::Queryable;
    let n: Option<u64> = conn.query_first(sleeping()).await.unwrap();
    assert_eq!(n, Some(0), "the abandoned statement was ended: {said}");
}

/// SIGHUP (its terminal or ssh session closed) under `--memory`: the bench
/// puts the server back on its way out, as for Ctrl-C, and exits 129.
#[tokio::test(flavor = "multi_thread")]
async fn a_hung_up_bench_puts_the_server_back_on_its_way_out() {
    let _servers = disturbs_servers();
    let Some((setup, work)) = limited_setup("--memory") else { return };
    let stderr = work.path().join("stderr");
    let child = Owned::spawn(limited_bench(&setup, work.path()).stderr(std::fs::File::create(&stderr).unwrap()));
    waits_for(&stderr, "] load into");
    assert!(setup.postgres_cgroup().await.contains("/ghbench/"));
    kill(child.child(), libc::SIGHUP);
    let out = child.wait_within(Duration::from_secs(300));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(out.status.code(), Some(129), "{said}");
    assert!(said.contains("hung up (SIGHUP") && said.contains("postgres restarted as `just setup` left it"), "{said}");
    assert!(!setup.postgres_cgroup().await.contains("/ghbench/"));
    assert!(journal(&setup).is_empty(), "{:?}", journal(&setup));
}

/// A busy PostgreSQL session named as a ghbench that ended names it (its
/// `application_name`), as a SIGKILLed ghbench's is on a server that does
/// not check its clients (before PostgreSQL 14): the next ghbench on that
/// server ends it and says so; a session of a ghbench that runs is left.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_of_a_ghbench_that_ended_is_ended_by_the_next_one() {
    let Some(server) = ghbench_testkit::throwaway_pg::ThrowawayPg::start("pg_abandoned") else { return };
    // A process that ran and ended: its name, as a ghbench's sessions carry it.
    let mut ended = Command::new("sleep").arg("30").spawn().unwrap();
    let ticks = ghbench_core::owner::start_ticks(ended.id()).unwrap();
    let _ = ended.kill();
    let _ = ended.wait();
    let me = ghbench_core::owner::me();
    let dead = ghbench_core::owner::Owner { pid: ended.id(), start_ticks: ticks, ..me.clone() }.label();
    let alive = me.label();
    let mut busy = Vec::new();
    for label in [&dead, &alive] {
        let url = format!("{}{}application_name={}", server.url(), if server.url().contains('?') { "&" } else { "?" }, label.replace(' ', "%20"));
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
        busy.push((pid, tokio::spawn(async move { client.batch_execute("SELECT pg_sleep(600)").await })));
    }
    let (pg_dead, pg_alive) = (busy[0].0, busy[1].0);
    let admin = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &server.url()).await.unwrap();
    let active = || async {
        let rows = admin.query("SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()", &[]).await.unwrap();
        rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>()
    };
    let started = Instant::now();
    while active().await.len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "the sessions never showed busy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let work = tempfile::tempdir().unwrap();
    let servers = no_servers(work.path());
    let mut doctor = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    doctor.args(["doctor", "--engines", "postgres", "--pg-url", &server.url(), "--servers", servers.to_str().unwrap()]).env_remove("GHBENCH_SERVERS");
    let out = output_within(&mut doctor, Duration::from_secs(120));
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("session {pg_dead} was running")) && said.contains("for a ghbench that ended") && said.contains("ended (pg_terminate_backend"), "{said}");
    let left = active().await;
    assert!(!left.contains(&pg_dead) && left.contains(&pg_alive), "the ended ghbench's session went, the running one's stayed: {left:?}");
    let _ = admin.execute("SELECT pg_terminate_backend($1)", &[&pg_alive]).await;
    for (_, task) in busy {
        task.abort();
    }
}

/// What the parameter test's child process does: sets a server parameter
/// through the MongoDB engine's own path (written to the journal first),
/// then waits to be killed. Run only as that child.
#[tokio::test]
#[ignore = "the child process of a_parameter_left_set_by_a_killed_ghbench_is_put_back"]
async fn parameter_setting_child() {
    let (Ok(url), Ok(journal)) = (std::env::var("GHBENCH_TEST_MONGO_URL"), std::env::var("GHBENCH_TEST_JOURNAL")) else { return };
    ghbench_core::changes::set_dir(PathBuf::from(journal));
    let db = ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, &url).await.unwrap();
    let address = ghbench_mongo::address(&url).unwrap();
    let wanted = mongodb::bson::doc! {"logLevel": 1};
    let parameters = ghbench_mongo::setup::ServerParameters::probe(&db, &wanted, (address, "mongo-tuned".into())).await;
    parameters.apply(&db).await.unwrap();
    println!("parameter set");
    tokio::time::sleep(Duration::from_secs(600)).await;
}

async fn log_level(db: &mongodb::Database) -> i64 {
    let reply = db.client().database("admin").run_command(mongodb::bson::doc! {"getParameter": 1, "logLevel": 1}).await.unwrap();
    reply.get("logLevel").and_then(|v| v.as_i32().map(i64::from).or_else(|| v.as_i64())).unwrap()
}

/// A ghbench killed while a setup's server parameter is set (mongo-tuned
/// sets one for its queries and puts it back after each): the next ghbench
/// command puts it back through the engine's connection and says so. Shown
/// with `logLevel`, which SecantusDB lets a client set (it has not the tuned
/// setup's own parameter).
#[tokio::test(flavor = "multi_thread")]
async fn a_parameter_left_set_by_a_killed_ghbench_is_put_back() {
    let Some(server) = ghbench_testkit::throwaway_mongo::ThrowawayMongo::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let journal_dir = work.path().join("changes");
    let servers = no_servers(work.path());
    let db = ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, &server.url()).await.unwrap();
    assert_eq!(log_level(&db).await, 0);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "leftovers::parameter_setting_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("GHBENCH_TEST_MONGO_URL", server.url())
        .env("GHBENCH_TEST_JOURNAL", &journal_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.is_ok_and(|l| l.contains("parameter set"))), "the child set no parameter");
    assert_eq!(log_level(&db).await, 1, "set by the child");
    assert_eq!(json_files(&journal_dir), 1, "and written down first");
    kill(&child, libc::SIGKILL);
    let _ = child.wait();
    assert_eq!(log_level(&db).await, 1, "a killed process puts nothing back");

    let mut doctor = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    doctor.args(["doctor", "--engines", "mongo-tuned", "--mongo-url", &server.url(), "--servers", servers.to_str().unwrap()]);
    let out = output_within(&mut doctor, Duration::from_secs(120));
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("restored the server at") && said.contains("setParameter logLevel put back to 0"), "{said}");
    assert_eq!(log_level(&db).await, 0, "put back");
    assert_eq!(json_files(&journal_dir), 0, "and the entry gone");
}

/// After a reboot the pid in a server's pid file may be another program's,
/// even one whose name matches (the distribution's own MariaDB): `down.sh`
/// stops the pid only when its start time is the one recorded beside it.
#[test]
fn a_stale_pid_file_naming_another_process_stops_nothing() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("mysql");
    std::fs::create_dir_all(&dir).unwrap();
    // Another process whose command line says mariadbd.
    let mut other = Command::new("bash").args(["-c", "exec -a mariadbd sleep 300"]).spawn().unwrap();
    let pid = other.id();
    let started = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default().starts_with("mariadbd") {
        assert!(started.elapsed() < Duration::from_secs(10), "the stand-in never showed as mariadbd");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ticks = ghbench_core::owner::start_ticks(pid).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    std::fs::write(dir.join("server.pid"), format!("{pid}\n")).unwrap();
    // Recorded for a server that started earlier under that pid.
    std::fs::write(dir.join("server.pid.start"), format!("{} {}\n", boot.trim(), ticks.saturating_sub(100))).unwrap();
    let down = Command::new("bash").arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/down.sh")).arg("mysql").env("GHBENCH_HOME", home.path()).output().unwrap();
    let said = text(&down);
    assert!(down.status.success(), "{said}");
    assert!(said.contains("now another process") && said.contains("left alone"), "{said}");
    assert!(ghbench_core::owner::start_ticks(pid) == Some(ticks), "the other process still runs: {said}");
    assert!(!dir.join("server.pid").exists(), "the stale pid file is gone");

    // The same process recorded as the server it is: stopped, as before.
    std::fs::write(dir.join("server.pid"), format!("{pid}\n")).unwrap();
    std::fs::write(dir.join("server.pid.start"), format!("{} {ticks}\n", boot.trim())).unwrap();
    let down = Command::new("bash").arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/down.sh")).arg("mysql").env("GHBENCH_HOME", home.path()).output().unwrap();
    let said = text(&down);
    assert!(down.status.success() && said.contains("stopped"), "{said}");
    let _ = other.wait();
    assert_eq!(ghbench_core::owner::start_ticks(pid), None, "{said}");
}

/// Ctrl-C while a cold run restarts its server (no memory limit): the
/// restart, in a process group of its own, is not cut half way; ghbench
/// waits for it, leaves the server running as setup left it, and exits 130.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_cold_restart_leaves_the_server_running() {
    if real_hour().is_none() {
        return;
    }
    let Some(setup) = OwnSetup::start_with(Some("128MB")) else { return };
    let work = tempfile::tempdir().unwrap();
    load_real_hour(&setup, "cold", work.path());
    let stderr = work.path().join("stderr");
    let child = Owned::spawn(cold_query(&setup, "cold", work.path()).stdout(Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()));
    // The restart is written down before it starts: the moment to interrupt.
    let started = Instant::now();
    while journal(&setup).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(120), "no restart began: {}", std::fs::read_to_string(&stderr).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(10));
    }
    kill(child.child(), libc::SIGINT);
    let out = child.wait_within(Duration::from_secs(300));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(journal(&setup).is_empty(), "nothing left changed: {:?}\n{said}", journal(&setup));
    // Running, and answering.
    let _ = setup.postmaster_started().await;
}

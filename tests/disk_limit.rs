//! `bench --disk`: the servers and polars' workers read through a throttle
//! the kernel enforces on the disk under their data (cgroup v1 blkio or v2
//! io.max), on servers of the test's own that `scripts/setup.sh` starts. A
//! cold scan is measurably slower under it than without, side by side in one
//! test; the record names the device, the rules and what the kernel counted;
//! no rule stays after the run, nor after a Ctrl-C; and where the throttle
//! cannot be made (no root, data on a tmpfs) nothing starts.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ghbench_olap::throttle::IoCgroup;
use ghbench_testkit::*;
use serde_json::Value;

use crate::bench::{limited_setup, OwnSetup};

/// The bytes a second the throttled runs may read: the 10,000-event table
/// (about 16 MiB of jsonb) takes seconds to read at it, a fraction of one free.
const RATE: u64 = 8_000_000;

fn engine<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|e| e["engine"] == name).unwrap_or_else(|| panic!("no {name} in {list}"))
}

/// Query `query`'s cold run on `name`, in seconds.
fn cold_seconds(run: &Value, query: &str, name: &str) -> f64 {
    let q = run["queries"].as_array().unwrap().iter().find(|q| q["query"] == query).unwrap();
    engine(&q["engines"], name)["cold_run"]["seconds"].as_f64().unwrap_or_else(|| panic!("no cold run of {query} on {name}: {q:.400}"))
}

/// The throttle rules the cgroup of PostgreSQL's backends holds now.
async fn postgres_rules(setup: &OwnSetup) -> Vec<(String, ghbench_olap::throttle::DiskRules)> {
    let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &setup.pg_url).await.unwrap();
    let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    IoCgroup::of_process(pid as u32).unwrap().rules()
}

/// The rules left in any cgroup made for this setup's servers or for the
/// polars workers of ghbench `pid`, by folder.
fn rules_left(setup: &OwnSetup, pid: u32) -> Vec<String> {
    let mut left = Vec::new();
    let checkout = Command::new("bash").args(["-c", "printf '%s' \"$1\" | md5sum | cut -c1-12", "-", setup.home.to_str().unwrap()]).output().unwrap();
    let prefixes = [String::from_utf8_lossy(&checkout.stdout).trim().to_string(), format!("polars-io-{pid}-"), format!("polars-{pid}-")];
    for root in ["/sys/fs/cgroup/blkio/ghbench", "/sys/fs/cgroup/ghbench", "/sys/fs/cgroup/unified/ghbench"] {
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !prefixes.iter().any(|p| name.starts_with(p.as_str())) {
                continue;
            }
            for file in ["blkio.throttle.read_bps_device", "blkio.throttle.read_iops_device", "blkio.throttle.write_bps_device", "blkio.throttle.write_iops_device", "io.max"] {
                let rules = std::fs::read_to_string(entry.path().join(file)).unwrap_or_default();
                // v2's io.max lists a device with every limit at max once it had a rule.
                left.extend(rules.lines().filter(|l| !l.trim().is_empty() && l.split_whitespace().skip(1).any(|f| !f.ends_with("=max"))).map(|l| format!("{}/{file}: {l}", entry.path().display())));
            }
        }
    }
    left
}

#[tokio::test(flavor = "multi_thread")]
async fn under_a_disk_throttle_a_cold_scan_is_slower_the_record_says_so_and_no_rule_stays() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--disk") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    let common = ["bench", "--gen", "1", "--events-per-hour", "10000", "--engines", "postgres,polars", "--cold", "--repeat", "1", "--variant", "corrected"];
    let places = ["--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--polars-dir", &path("polars"), "--quarantine-dir", &path("q")];
    // Free, then throttled, on the same tables (the second run reuses the load).
    let (ok, said) = setup.ghbench(&[&common[..], &places[..], &["--output", &path("free")]].concat());
    assert!(ok, "the free bench failed: {said}");
    let throttled = format!("rbps={RATE}");
    let mut command = setup.command(&[&common[..], &places[..], &["--output", &path("throttled"), "--disk", &throttled]].concat());
    let child = Owned::spawn(command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()));
    let pid = child.id();
    let out = child.wait_within(Duration::from_secs(600));
    let said = text(&out);
    assert!(out.status.success(), "the throttled bench failed: {said}");
    assert!(said.contains("inside a disk throttle of 8 MB/s read") && said.contains("restarted as `just setup` left it"), "{said}");

    let (_, free) = bench_record(&work.path().join("free"));
    let (_, record) = bench_record(&work.path().join("throttled"));
    let (free, run) = (&free["sizes"][0]["run"], &record["sizes"][0]["run"]);
    // The scan reads the whole table through the throttle: slower by far,
    // and no faster than the rate allows.
    let table = engine(&run["context"]["engines"], "postgres")["storage"]["table_bytes"].as_u64().unwrap();
    let (was, now) = (cold_seconds(free, "B", "postgres"), cold_seconds(run, "B", "postgres"));
    assert!(now > 3.0 * was && now > 0.5 * table as f64 / RATE as f64, "B cold: {was:.3} s free, {now:.3} s throttled ({table} bytes at {RATE} B/s)");
    // Every engine's record: the device, the rules, how, and what the kernel counted.
    for name in ["postgres", "polars"] {
        let limit = &engine(&run["context"]["engines"], name)["disk_limit"];
        assert_eq!(limit["rules"]["read_bytes_per_second"].as_u64(), Some(RATE), "{name}: {limit}");
        assert!(limit["device"].as_str().unwrap().contains(':'), "{name}: {limit}");
        let how = limit["enforced_by"].as_str().unwrap();
        assert!(how.contains("blkio.throttle.read_bps_device") || how.contains("io.max"), "{name}: {how}");
        assert!(limit["over_runs"]["read_bytes"].as_u64().unwrap() > 0, "{name} read through it: {limit}");
        assert!(engine(&free["context"]["engines"], name).get("disk_limit").is_none(), "{name} ran free in the first bench");
    }
    let postgres_read = engine(&run["context"]["engines"], "postgres")["disk_limit"]["over_runs"]["read_bytes"].as_u64().unwrap();
    assert!(postgres_read >= table, "the cold runs read the table through the throttle: {postgres_read} of {table} bytes");
    // polars' cold runs read its files through the throttle, not the code
    // each query takes (ghbench's own binary, warmed before the timed run):
    // unwarmed, C and D each read 14-27 MB on the real hour, its file 2.4 MB.
    let polars_table = engine(&run["context"]["engines"], "polars")["storage"]["table_bytes"].as_u64().unwrap();
    for q in run["queries"].as_array().unwrap() {
        let read = engine(&q["engines"], "polars")["read"]["kernel"]["counters"]["read_bytes"].as_u64().unwrap();
        assert!(read <= polars_table + (4 << 20), "polars' {} read {read} bytes through the throttle, its whole table {polars_table}", q["query"]);
    }
    let label = run["context"]["cold"]["label"].as_str().unwrap();
    assert!(label.contains("disk throttled: postgres, polars to 8 MB/s read"), "{label}");
    let actions: Vec<&str> = run["context"]["cold"]["actions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(actions.iter().any(|a| a.contains("postgres back inside its disk throttle of 8 MB/s read")), "{actions:?}");
    assert!(!actions.iter().any(|a| a.contains("NOT back under")), "{actions:?}");
    // Afterwards: no rule on the server, nor in any cgroup made for the run.
    assert_eq!(postgres_rules(&setup).await, Vec::new(), "the server reads free again");
    assert_eq!(rules_left(&setup, pid), Vec::<String>::new());
}

/// Ctrl-C while the servers read under `--disk`: ghbench exits 130 and
/// restarts them as setup left them on its way out, no rule left.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_under_a_disk_throttle_leaves_no_rule() {
    let _servers = disturbs_servers();
    let Some((setup, work)) = limited_setup("--disk") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    let stderr = work.path().join("stderr");
    let args = ["bench", "--gen", "2", "--events-per-hour", "30000", "--engines", "postgres,polars", "--disk", "riops=200,rbps=8MB", "--servers", servers.to_str().unwrap()];
    let places = ["--data-dir", &path("data"), "--polars-dir", &path("polars"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let child = Owned::spawn(setup.command(&[&args[..], &places[..]].concat()).stdout(std::process::Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()));
    let pid = child.id();
    let started = Instant::now();
    while !std::fs::read_to_string(&stderr).unwrap_or_default().contains("] load into") {
        assert!(started.elapsed() < Duration::from_secs(300), "no load began: {}", std::fs::read_to_string(&stderr).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(100));
    }
    let under = postgres_rules(&setup).await;
    assert!(under.iter().any(|(_, rules)| rules.read_iops == Some(200) && rules.read_bytes_per_second == Some(8_000_000)), "throttled during the load: {under:?}");
    // SAFETY: kill(2) on a child this test started and has not waited for.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let out = child.wait_within(Duration::from_secs(120));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(said.contains("postgres restarted as `just setup` left it (it ran under the bench's limits)"), "{said}");
    assert_eq!(postgres_rules(&setup).await, Vec::new(), "after Ctrl-C the server reads free");
    assert_eq!(rules_left(&setup, pid), Vec::<String>::new());
}

/// A server whose data is on a tmpfs has no block device to throttle: the
/// bench stops before any data is made, saying why.
#[test]
fn a_disk_limit_on_data_in_a_tmpfs_is_refused_before_anything_starts() {
    let shm = Path::new("/dev/shm");
    if !is_root() || !shm.is_dir() {
        eprintln!("SKIPPED: needs root and a tmpfs at /dev/shm");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let in_memory = tempfile::tempdir_in(shm).unwrap();
    // The shared PostgreSQL, as a servers file would list it were its data on the tmpfs.
    let address = pg_url().split('@').nth(1).unwrap().split('/').next().unwrap().to_string();
    let listed = serde_json::json!({"servers": [{"name": "postgres", "address": address, "data_dir": in_memory.path(), "restart": ["false"]}]});
    let servers = work.path().join("servers.json");
    std::fs::write(&servers, listed.to_string()).unwrap();
    let data = work.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["bench", "--gen", "1", "--engines", "postgres", "--disk", "riops=100", "--servers", servers.to_str().unwrap(), "--data-dir", data.to_str().unwrap()])
        .args(["--output", work.path().join("results").to_str().unwrap()])
        .env("DATABASE_URL", pg_url())
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--disk riops=100") && said.contains("is on tmpfs") && said.contains("no block device"), "{said}");
    assert!(!data.exists(), "nothing was generated before the check");
}

/// Without root, `--disk` stops before any data is made, saying what it needs.
#[test]
fn a_disk_limit_without_root_is_refused_saying_what_it_needs() {
    let Some((failed, said, made)) = crate::bench::bench_as_nobody(&["--disk", "riops=100"]) else { return };
    assert!(failed, "an error stopped it: {said}");
    assert!(said.contains("--disk riops=100") && said.contains("needs root"), "{said}");
    assert!(!made, "nothing was generated before the check");
}

/// `--regime-iops`: at one memory limit, a point with the disk free and one
/// throttled to 100 reads a second (of 512 KiB at most: `--iops-size`),
/// every answer verified, the throttled
/// point's cold runs slower, its record and chart saying so; then `query
/// --disk` on the same table, its record and label as bench's.
#[tokio::test(flavor = "multi_thread")]
async fn a_two_point_disk_sweep_and_a_throttled_query_verify_every_answer() {
    let _servers = disturbs_servers(); // as root it drops the OS page cache
    let Some((setup, work)) = limited_setup("--regime-iops") else { return };
    let path = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let servers = setup.servers_file();
    // About 48 MiB of jsonb: 0.5× memory is a limit above the 64 MiB floor.
    // The throttled point first: the free one after it must read free again.
    let args = ["bench", "--gen", "1", "--events-per-hour", "30000", "--engines", "postgres,polars", "--regime", "0.5", "--regime-iops", "100,free", "--iops-size", "512KiB", "--cold", "--repeat", "1", "--variant", "corrected"];
    let places = ["--servers", servers.to_str().unwrap(), "--data-dir", &path("data"), "--polars-dir", &path("polars"), "--output", &path("results"), "--quarantine-dir", &path("q")];
    let (ok, said) = setup.ghbench(&[&args[..], &places[..]].concat());
    assert!(ok, "bench --regime-iops failed: {said}");
    let (json, record) = bench_record(&work.path().join("results"));
    let points = record["regime"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "free and 100 IOPS at 0.5×");
    assert!(points[0].get("disk").is_none() && points[1]["disk"]["read_iops"].as_u64() == Some(100), "the free disk first in the record: {:?}", points.iter().map(|p| &p["disk"]).collect::<Vec<_>>());
    for point in points {
        for q in point["run"]["queries"].as_array().unwrap() {
            assert_eq!(q["verification"]["status"], "agree", "{q:.300}");
        }
    }
    let throttled = &points[1]["run"];
    for name in ["postgres", "polars"] {
        let limit = &engine(&throttled["context"]["engines"], name)["disk_limit"];
        assert_eq!(limit["rules"]["read_iops"].as_u64(), Some(100), "{name}: {limit}");
        // --iops-size: at most 100 reads of 512 KiB a second; the free point has no cap.
        assert_eq!(limit["rules"]["read_bytes_per_second"].as_u64(), Some(100 * 512 * 1024), "{name}: {limit}");
        assert!(engine(&points[0]["run"]["context"]["engines"], name).get("disk_limit").is_none(), "{name} read free at the first point");
    }
    let (free_b, slow_b) = (cold_seconds(&points[0]["run"], "B", "postgres"), cold_seconds(throttled, "B", "postgres"));
    assert!(slow_b > 2.0 * free_b, "B cold: {free_b:.3} s free, {slow_b:.3} s at 100 read IOPS");
    let charts = json.with_file_name(format!("{}-charts", json.file_stem().unwrap().to_str().unwrap()));
    let svg = std::fs::read_to_string(charts.join("regime-iops-postgres-0_5x.svg")).unwrap();
    assert!(svg.contains("time against read IOPS") && svg.contains("random reads/s measured"), "{svg:.300}");
    let md = std::fs::read_to_string(json.with_extension("md")).unwrap();
    assert!(md.contains("(0.5×), 100 read IOPS") && md.contains("through the disk throttle"), "{md:.800}");

    // The same table queried by `query --disk`.
    let table = record["sizes"][0]["table"].as_str().unwrap().to_string();
    let query = ["query", "B", "--variant", "corrected", "--repeat", "1", "--cold", "--engines", "postgres", "--disk", "riops=100", "--table", &table, "--servers", servers.to_str().unwrap(), "--output", &path("query")];
    let (ok, said) = setup.ghbench(&query);
    assert!(ok, "query --disk failed: {said}");
    let run = newest_record(&work.path().join("query"), "olap-");
    let limit = &engine(&run["context"]["engines"], "postgres")["disk_limit"];
    assert_eq!(limit["rules"]["read_iops"].as_u64(), Some(100), "{limit}");
    assert!(limit["over_runs"]["reads"].as_u64().unwrap() > 0, "{limit}");
    assert!(run["context"]["cold"]["label"].as_str().unwrap().contains("disk throttled: postgres to 100 read IOPS"), "{}", run["context"]["cold"]);
    assert_eq!(postgres_rules(&setup).await, Vec::new(), "the server reads free after the query");
}

/// `--preset paper2019`'s planner settings as every restart of a bench sets
/// them (`GHBENCH_PG_PAPER2019`), and gone once restarted as setup left it.
#[tokio::test(flavor = "multi_thread")]
async fn the_paper_s_planner_settings_hold_across_a_restart_and_go_with_the_next() {
    let _servers = disturbs_servers();
    let Some(setup) = OwnSetup::start_with(None) else { return };
    let servers: Value = serde_json::from_str(&std::fs::read_to_string(setup.servers_file()).unwrap()).unwrap();
    let restart: Vec<String> = servers["servers"][0]["restart"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let settings = |paper: bool| {
        let mut command = Command::new(&restart[0]);
        command.args(&restart[1..]);
        match paper {
            true => command.env("GHBENCH_PG_PAPER2019", "1"),
            false => command.env_remove("GHBENCH_PG_PAPER2019"),
        };
        let out = output_within(&mut command, Duration::from_secs(300));
        assert!(out.status.success(), "{}", text(&out));
    };
    let show = || async {
        let client = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &setup.pg_url).await.unwrap();
        let mut said = Vec::new();
        for name in ["random_page_cost", "default_statistics_target"] {
            said.push(client.query_one(&format!("SHOW {name}"), &[]).await.unwrap().get::<_, String>(0));
        }
        let cache: i64 = client.query_one("SELECT pg_size_bytes(current_setting('effective_cache_size')) / 1048576", &[]).await.unwrap().get(0);
        said.push(cache.to_string());
        said
    };
    settings(true);
    let paper = show().await;
    assert_eq!(&paper[..2], ["1.3", "200"], "{paper:?}");
    // 9/16 of this machine's memory (no limit here), as 36GB stood to 64 GiB.
    let machine_mb = ghbench_core::size::machine_memory().unwrap() / (1 << 20);
    let cache_mb: u64 = paper[2].parse().unwrap();
    assert!(cache_mb.abs_diff(machine_mb * 9 / 16) <= 1, "{paper:?} of {machine_mb} MB");
    settings(false);
    assert_eq!(&show().await[..2], ["4", "100"], "PostgreSQL's defaults again");
}

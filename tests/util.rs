//! What only the tests of the `ghbench` package can do: run the ghbench
//! program cargo built for them (`CARGO_BIN_EXE_ghbench`, which the kit,
//! another crate, cannot name). Everything else the tests share is in
//! `ghbench_testkit`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ghbench_testkit::throwaway_pg::ThrowawayPg;
use ghbench_testkit::{is_root, mongo_url, mysql_url, output_within, own_temp_dir, pg_url, real_hour, text};

/// Runs `ghbench ingest` for `table` on the shared servers with a
/// quarantine folder in `work`, plus `args`; its output shown.
pub fn ingest(table: &str, work: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .arg("ingest")
        .args(["--table", table, "--pg-url", &pg_url(), "--mongo-url", &mongo_url()])
        .arg("--quarantine-dir")
        .arg(work.join("quarantine"))
        .args(args)
        .output()
        .expect("run ghbench");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs ingest and returns its JSON report.
pub fn ingest_report(table: &str, work: &Path, args: &[&str]) -> serde_json::Value {
    let (out, report) = ingest_any(table, work, args);
    assert!(out.status.success(), "ghbench ingest failed: {}", String::from_utf8_lossy(&out.stderr));
    report.expect("a report")
}

/// Runs ingest, successful or not; its output and JSON report (if written).
pub fn ingest_any(table: &str, work: &Path, args: &[&str]) -> (Output, Option<serde_json::Value>) {
    let report = work.join(format!("report-{}.json", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--report", report.to_str().unwrap()]);
    let out = ingest(table, work, &all);
    let json = std::fs::read(&report).ok().filter(|b| !b.is_empty()).map(|b| serde_json::from_slice(&b).unwrap());
    (out, json)
}

/// Runs ghbench with the shared servers' URLs in the environment, bounded,
/// its output shown (for the test's log).
pub fn ghbench_on_servers(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.args(args).env("DATABASE_URL", pg_url()).env("MONGODB_URI", mongo_url()).env("MYSQL_URL", mysql_url());
    let out = output_within(&mut command, Duration::from_secs(600));
    eprintln!("ghbench {}:\n{}", args.join(" "), text(&out));
    out
}

/// The test's table loaded with the real hour into PostgreSQL (at `pg_url`) and polars.
pub fn load_postgres_and_polars(table: &str, pg_url: &str, polars: &Path, work: &Path) {
    let real = real_hour().expect("checked by the caller");
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", "postgres,polars", "--table", table, "--pg-url", pg_url, "--from", "2015-01-01T00"])
        .arg("--source")
        .arg(real.parent().unwrap())
        .arg("--polars-dir")
        .arg(polars)
        .arg("--quarantine-dir")
        .arg(work.join("q"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// A PostgreSQL of the test's own with the real hour loaded into `table`
/// there and into polars; the work folder lives as long as it.
/// (Bind `work` to a name, not `_`, to keep the folder.)
pub struct LoadedThrowaway {
    pub pg: ThrowawayPg,
    pub work: tempfile::TempDir,
    pub polars: PathBuf,
}

/// [`LoadedThrowaway`] named `name`; None (the test skips, said) without the
/// real hour or PostgreSQL's binaries.
pub fn throwaway_with_real_hour(name: &str, table: &str) -> Option<LoadedThrowaway> {
    real_hour()?;
    let pg = ThrowawayPg::start(name)?;
    let work = tempfile::tempdir().unwrap();
    let polars = work.path().join("polars");
    load_postgres_and_polars(table, &pg.url(), &polars, work.path());
    Some(LoadedThrowaway { pg, work, polars })
}

/// A small file system mounted for a test, unmounted when dropped.
pub struct SmallDisk {
    pub dir: std::path::PathBuf,
}

impl SmallDisk {
    /// A tmpfs of `megabytes` owned by user postgres; None (said) where
    /// this process may not mount (not root).
    pub fn mount(name: &str, megabytes: u32) -> Option<SmallDisk> {
        let dir = own_temp_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        let size = format!("size={megabytes}m,mode=0700");
        let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", &size, "tmpfs"]).arg(&dir).status().is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED: cannot mount a small tmpfs here (needs root)");
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        let disk = SmallDisk { dir };
        let owned = Command::new("chown").args(["postgres:postgres"]).arg(&disk.dir).status().is_ok_and(|s| s.success());
        assert!(owned || !is_root(), "chown of {}", disk.dir.display());
        Some(disk)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

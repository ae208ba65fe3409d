//! A PostgreSQL cluster of the test's own, on its own port and folder, so a
//! test can restart, stop, freeze or TLS-enable it without disturbing the
//! server other tests use (such a test needs no group guard). Uses the same
//! Debian binaries `just setup` installs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::host::{free_port, is_root, own_temp_dir};

pub struct ThrowawayPg {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    as_postgres: bool,
    /// The server options that turn TLS on, kept for restarts.
    tls_options: String,
}

impl ThrowawayPg {
    /// initdb and start; `None` (with a message) when no PostgreSQL binaries are installed.
    pub fn start(name: &str) -> Option<ThrowawayPg> {
        ThrowawayPg::start_tls(name, None)
    }

    /// As `start`, with `ssl=on` and this certificate and key (PEM) when given.
    pub fn start_tls(name: &str, tls: Option<(String, String)>) -> Option<ThrowawayPg> {
        let Some(bin) = bindir() else {
            eprintln!("SKIPPED: no PostgreSQL binaries (initdb) found; run `just setup`");
            return None;
        };
        let as_postgres = is_root();
        // Under /tmp: user postgres must be able to enter it when we are root.
        let dir = own_temp_dir(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut pg = ThrowawayPg { bin, dir, port: free_port(), as_postgres, tls_options: String::new() };
        if let Some((cert, key)) = tls {
            let (cert_file, key_file) = (pg.write("server.crt", &cert), pg.write("server.key", &key));
            // PostgreSQL refuses a key others can read.
            pg.must(Command::new("chmod").arg("600").arg(&key_file));
            pg.tls_options = format!(" -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}", cert_file.display(), key_file.display());
        }
        if as_postgres {
            pg.must(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&pg.dir));
        }
        pg.must(pg.tool("initdb").args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C"]).arg("-D").arg(pg.data()));
        pg.pg_ctl(&["start", "-w", "-t", "60"]);
        Some(pg)
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres?connect_timeout=3", self.port)
    }

    /// The URL with `query` (e.g. `sslmode=require`) appended.
    pub fn url_with(&self, query: &str) -> String {
        format!("{}&{query}", self.url())
    }

    /// A file in the cluster's folder (removed with it).
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Restarts the server the way an operator does: active sessions are ended.
    pub fn restart(&self) {
        self.pg_ctl(&["restart", "-m", "fast", "-w", "-t", "60"]);
    }

    /// Stops the server (fast shutdown: sessions are ended) and leaves it down.
    pub fn stop(&self) {
        self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"]);
    }

    /// Freezes (`STOP`) or thaws (`CONT`) every process of the cluster: the
    /// server then accepts connections (the kernel does) but answers nothing.
    pub fn signal_all(&self, signal: &str) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        let postmaster = pid_file.lines().next().unwrap().trim().to_string();
        self.must(Command::new("pkill").args([&format!("-{signal}"), "-P", &postmaster]));
        self.must(Command::new("kill").args([&format!("-{signal}"), &postmaster]));
    }

    fn pg_ctl(&self, args: &[&str]) {
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off{}", self.port, self.dir.display(), self.tls_options);
        let log = self.dir.join("log");
        self.must(self.tool("pg_ctl").arg("-D").arg(self.data()).arg("-l").arg(log).args(["-o", &options]).args(args));
    }

    fn tool(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_postgres {
            // runuser lives in sbin, which a non-login root shell's PATH can lack.
            let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].into_iter().find(|p| Path::new(p).is_file()).unwrap_or("runuser");
            let mut command = Command::new(runuser);
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn must(&self, command: &mut Command) {
        let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        assert!(out.status.success(), "{command:?} failed: {}{}\n{log}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for ThrowawayPg {
    fn drop(&mut self) {
        // Thaw first, in case the test froze it and failed before thawing.
        let _ = std::panic::catch_unwind(|| self.signal_all("CONT"));
        let _ = self.tool("pg_ctl").arg("-D").arg(self.data()).args(["stop", "-m", "immediate"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bindir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// Rows in `table` of the cluster at `url` (0 when the table does not exist yet).
#[cfg(feature = "postgres")]
pub async fn rows(url: &str, table: &str) -> u64 {
    let Ok(client) = ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, url).await else { return 0 };
    let exists: bool = client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).await.map(|r| r.get(0)).unwrap_or(false);
    if !exists {
        return 0;
    }
    client.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.map(|r| r.get::<_, i64>(0) as u64).unwrap_or(0)
}

//! A PostgreSQL cluster of the test's own (with TLS when asked), on its own
//! port, from the Debian binaries `just setup` installs; and certificates made
//! here with rcgen. The root crate's tests/common/throwaway_pg.rs does the same
//! for untouched clusters; this crate cannot use it (that crate links polars).

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};

/// A CA that signs server certificates.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        Ca { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses) and its key, as PEM.
    pub fn server_cert(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, "ghbench test server");
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// initdb and start, with `ssl=on` and this certificate and key when given;
    /// `None` (with a message) when no PostgreSQL binaries are installed.
    pub fn start(name: &str, tls: Option<(String, String)>) -> Option<Cluster> {
        let Some(bin) = bindir() else {
            eprintln!("SKIPPED: no PostgreSQL binaries (initdb) found under /usr/lib/postgresql; run `just setup`");
            return None;
        };
        let as_postgres = is_root();
        // Under /tmp: user postgres must be able to enter it when we are root.
        let dir = std::env::temp_dir().join(format!("ghbench-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster { bin, dir, port: free_port(), as_postgres };
        let mut options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", cluster.port, cluster.dir.display());
        if let Some((cert, key)) = tls {
            let (cert_file, key_file) = (cluster.dir.join("server.crt"), cluster.dir.join("server.key"));
            std::fs::write(&cert_file, cert).unwrap();
            std::fs::write(&key_file, key).unwrap();
            // PostgreSQL refuses a key others can read.
            cluster.must(Command::new("chmod").arg("600").arg(&key_file));
            options += &format!(" -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}", cert_file.display(), key_file.display());
        }
        if as_postgres {
            cluster.must(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&cluster.dir));
        }
        cluster.must(cluster.tool("initdb").args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C"]).arg("-D").arg(cluster.data()));
        let log = cluster.dir.join("log");
        cluster.must(cluster.tool("pg_ctl").arg("-D").arg(cluster.data()).arg("-l").arg(log).args(["-o", &options, "start", "-w", "-t", "60"]));
        Some(cluster)
    }

    /// A URL to this cluster with `query` (e.g. `sslmode=require`) appended.
    pub fn url(&self, query: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres?connect_timeout=5&{query}", self.port)
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

    fn tool(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_postgres {
            let mut command = Command::new("runuser");
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

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.tool("pg_ctl").arg("-D").arg(self.data()).args(["stop", "-m", "immediate"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bindir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| Path::new(bin).join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// initdb refuses to run as root; then the cluster belongs to user postgres.
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

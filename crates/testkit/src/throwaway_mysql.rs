//! A MariaDB server of the test's own, on its own port and folder, so a test
//! can restart, stop or kill it without disturbing the server other tests
//! use (such a test needs no group guard). Uses the same Debian binaries
//! `just setup` installs (`mariadbd`, `mariadb-install-db`), with the
//! settings scripts/setup.sh writes but a small buffer pool and redo log.
//! No MySQL client: the database and user are made by the server itself at
//! every start (`init-file`), and it is ready once it sends its greeting.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::host::{free_port, is_root, own_temp_dir};

pub struct ThrowawayMysql {
    program: PathBuf,
    dir: PathBuf,
    pub port: u16,
    /// We are root: the server runs as user mysql, and its folder is that user's.
    as_mysql: bool,
    server: Option<Child>,
}

/// Made at every start, so a data folder of any age has them.
const INIT_SQL: &str = "\
CREATE DATABASE IF NOT EXISTS ghbench CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'ghbench'@'127.0.0.1', 'ghbench'@'localhost', 'ghbench'@'%';
GRANT ALL PRIVILEGES ON *.* TO 'ghbench'@'127.0.0.1', 'ghbench'@'localhost', 'ghbench'@'%';
";

impl ThrowawayMysql {
    /// mariadb-install-db and start; `None` (with a message) when MariaDB is not installed.
    pub fn start(name: &str) -> Option<ThrowawayMysql> {
        let (Some(program), Some(install_db)) = (which("mariadbd"), which("mariadb-install-db")) else {
            eprintln!("SKIPPED: no MariaDB (mariadbd, mariadb-install-db) found; run `just setup`");
            return None;
        };
        // Under /tmp: user mysql must be able to enter it when we are root.
        let dir = own_temp_dir(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = ThrowawayMysql { program, dir, port: free_port(), as_mysql: is_root(), server: None };
        std::fs::write(server.config(), server.settings()).unwrap();
        std::fs::write(server.dir.join("init.sql"), INIT_SQL).unwrap();
        std::fs::File::create(server.log()).unwrap();
        std::fs::create_dir_all(server.dir.join("tmp")).unwrap();
        // mariadbd refuses to run as root: it changes to user mysql (`user`
        // in the settings), whose folder this then is.
        if server.as_mysql {
            server.must(Command::new("chown").args(["-R", "mysql:mysql"]).arg(&server.dir));
        }
        let mut install = Command::new(install_db);
        install.arg(format!("--defaults-file={}", server.config().display()));
        install.args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if server.as_mysql {
            install.arg("--user=mysql");
        }
        server.must(&mut install);
        server.launch();
        Some(server)
    }

    /// As `scripts/setup.sh`'s MYSQL_URL: user ghbench, no password, database ghbench.
    pub fn url(&self) -> String {
        format!("mysql://ghbench@127.0.0.1:{}/ghbench", self.port)
    }

    /// Stops the server as an operator does (SIGTERM: a clean shutdown) and
    /// starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Stops the server cleanly (SIGTERM, then waits: InnoDB writes its pages
    /// out) and leaves it down; `start_again` brings it back.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(120);
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the throwaway MariaDB did not stop within 120 s (killed):\n{}", self.log_text());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Kills the server (SIGKILL) as a crash does and leaves it down:
    /// `start_again` then recovers from its redo log.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped or killed server again, on the same port and data.
    /// (`start` is the constructor, as `ThrowawayPg::start`.)
    pub fn start_again(&mut self) {
        assert!(self.server.is_none(), "the throwaway MariaDB still runs: stop or kill it first");
        self.launch();
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new().append(true).open(self.log()).unwrap();
        let child = Command::new(&self.program)
            // First, or mariadbd does not take it.
            .arg(format!("--defaults-file={}", self.config().display()))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.program.display()));
        self.server = Some(child);
        // Ready once it greets a client: the listening socket takes
        // connections before the init file has run, the greeting comes after.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.greets() {
            if let Some(status) = self.server.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.server = None;
                panic!("the throwaway MariaDB ended at start ({status}):\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "the throwaway MariaDB did not start within 60 s:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the server sends its handshake (protocol version 10) on a new connection.
    fn greets(&self) -> bool {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let Ok(mut stream) = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        // 3 bytes of length, 1 of sequence, then the payload's first byte.
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).is_ok() && head[4] == 10
    }

    fn config(&self) -> PathBuf {
        self.dir.join("my.cnf")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    /// scripts/setup.sh's settings for MariaDB (a `tmpdir` of its own, too:
    /// bootstraps side by side in one /tmp removed each other's temporary
    /// tables, "Could not remove temporary table", and an install failed),
    /// but 64M of buffer pool and a
    /// small redo log; commits reach the OS, not the disk (as the throwaway
    /// PostgreSQL's fsync=off): a killed server loses nothing, a crashed machine would.
    fn settings(&self) -> String {
        let dir = self.dir.display();
        let user = if self.as_mysql { "user = mysql" } else { "# runs as the user the tests run as" };
        format!(
            "[mysqld]
datadir = {dir}/data
port = {port}
bind-address = 127.0.0.1
socket = {dir}/mysqld.sock
pid-file = {dir}/mysqld.pid
log-error = {dir}/server.log
tmpdir = {dir}/tmp
init-file = {dir}/init.sql
{user}
innodb_buffer_pool_size = 64M
innodb_log_file_size = 48M
innodb_flush_log_at_trx_commit = 2
innodb_buffer_pool_dump_at_shutdown = OFF
innodb_buffer_pool_load_at_startup = OFF
query_cache_type = 0
query_cache_size = 0
local_infile = ON
max_allowed_packet = 64M
character-set-server = utf8mb4
collation-server = utf8mb4_bin
skip-name-resolve
",
            port = self.port
        )
    }

    fn must(&self, command: &mut Command) {
        let out = command.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
        assert!(out.status.success(), "{command:?} failed: {}{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr), self.log_text());
    }
}

impl Drop for ThrowawayMysql {
    fn drop(&mut self) {
        // As the throwaway PostgreSQL's immediate stop: its data goes anyway.
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `program` on PATH, or in sbin (a non-login root shell's PATH can lack it,
/// and Debian keeps mariadbd there).
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

//! A MongoDB-wire server of the test's own, on its own port and data folder,
//! so a test can restart it without disturbing the server other tests use
//! (such a test needs no group guard): `mongod` when on PATH, else the
//! SecantusDB `just setup` installed in the checkout.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::data::repo;
use crate::host::free_port;

pub struct ThrowawayMongo {
    program: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    server: Option<Child>,
}

impl ThrowawayMongo {
    /// Starts it; `None` (with a message) when no server program is installed.
    pub fn start() -> Option<ThrowawayMongo> {
        let secantus = repo().join(".ghbench/venv/bin/secantusd-py");
        let program = which("mongod").or_else(|| secantus.is_file().then_some(secantus))?;
        let mut server = ThrowawayMongo {
            program,
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            server: None,
        };
        server.launch();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("mongodb://127.0.0.1:{}/ghbench?directConnection=true&serverSelectionTimeoutMS=3000", self.port)
    }

    /// Stops the server as an operator does (SIGTERM, then waits) and starts it
    /// again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    fn launch(&mut self) {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let port = self.port.to_string();
        let mut command = Command::new(&self.program);
        if self.program.ends_with("mongod") {
            command.arg("--dbpath").arg(&data).args(["--port", &port, "--bind_ip", "127.0.0.1"]);
        } else {
            command.args(["--host", "127.0.0.1", "--port", &port, "--standalone"]).arg("--storage-path").arg(&data);
        }
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = command.current_dir(self.dir.path()).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        self.server = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            assert!(Instant::now() < deadline, "the throwaway MongoDB-wire server did not start:\n{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ThrowawayMongo {
    fn drop(&mut self) {
        self.stop();
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(program)).find(|p| p.is_file())
}

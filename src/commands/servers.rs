//! The servers `just setup` started, as it lists them in `servers.json`
//! (their addresses, data folders and restart commands), and their restart:
//! what cold runs (`super::cold`) and memory limits (`super::bench::memory`)
//! both start from.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};
use ghbench_core::place::same_address;
use ghbench_engine::Loader;
use serde::Deserialize;

/// A restart that takes longer than this has failed.
const RESTART_TIMEOUT: Duration = Duration::from_secs(180);

/// `servers.json`, as `scripts/setup.sh` writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct ManagedServers {
    pub servers: Vec<ManagedServer>,
}

/// Where `just setup` writes the servers it started (`--servers`' default).
pub const DEFAULT_SERVERS_FILE: &str = ".ghbench/servers.json";

#[derive(Debug, Clone, Deserialize)]
pub struct ManagedServer {
    pub name: String,
    /// `host:port`, matched against the address an engine says its server
    /// has (`Loader::address`).
    pub address: String,
    pub data_dir: String,
    /// The program and its arguments (run directly, never through a shell).
    pub restart: Vec<String>,
}

/// `--servers FILE`, for every command that starts from the servers `just setup` started.
#[derive(Debug, Clone, clap::Args)]
pub struct ServersArg {
    /// The servers `just setup` started, their data folders and how to restart
    /// them (it writes this file).
    #[arg(long, value_name = "FILE", env = "GHBENCH_SERVERS", default_value = DEFAULT_SERVERS_FILE)]
    pub servers: PathBuf,
}

impl ServersArg {
    /// See [`ManagedServers::load`]: a file named by the user must exist.
    pub fn load(&self) -> Result<Option<ManagedServers>> {
        ManagedServers::load(&self.servers, self.servers != Path::new(DEFAULT_SERVERS_FILE))
    }

    /// Each listed server's address and data folder, for the free-space check of a load.
    pub fn data_folders(&self) -> Result<Vec<(String, PathBuf)>> {
        let servers = self.load()?.map_or_else(Vec::new, |m| m.servers);
        Ok(servers.into_iter().map(|s| (s.address, PathBuf::from(s.data_dir))).collect())
    }
}

impl ManagedServers {
    /// None when the file is absent and was not asked for (`asked`: given by
    /// the user, not the default): then no server is managed. A file the user
    /// named must exist, or a typo would silently make every run not truly cold.
    pub fn load(path: &Path, asked: bool) -> Result<Option<ManagedServers>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !asked => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
                "--servers {} does not exist: name the file `just setup` writes ({DEFAULT_SERVERS_FILE}), or one listing no servers ({{\"servers\": []}}) to restart none",
                path.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("reading --servers {}", path.display())),
        };
        let servers: ManagedServers = serde_json::from_str(&text)
            .with_context(|| format!("--servers {} is not a servers file as `just setup` writes it", path.display()))?;
        if let Some(bad) = servers.servers.iter().find(|s| s.restart.is_empty()) {
            anyhow::bail!("--servers {}: server {} has no restart command", path.display(), bad.name);
        }
        Ok(Some(servers))
    }

    /// The managed server of the engine `loader` connects to, if any: the
    /// one at the address the engine says its server has.
    pub fn serving(&self, loader: &dyn Loader) -> Option<&ManagedServer> {
        let address = loader.address()?;
        self.servers.iter().find(|s| same_address(&s.address, &address))
    }
}

/// Runs the server's restart command, bounded in time; its output is kept
/// for the error only. `memory`: the limit it starts under (`GHBENCH_MEMORY`,
/// see `bench --memory`); None: the one `just setup` ran with.
pub async fn restart(server: &ManagedServer, memory: Option<&str>) -> Result<()> {
    let (program, args) = server.restart.split_first().context("no restart command")?;
    let mut command = tokio::process::Command::new(program);
    match memory {
        Some(size) => command.env("GHBENCH_MEMORY", size),
        None => command.env_remove("GHBENCH_MEMORY"),
    };
    let child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let output = tokio::time::timeout(RESTART_TIMEOUT, child.wait_with_output())
        .await
        .with_context(|| format!("the restart took over {} s", RESTART_TIMEOUT.as_secs()))??;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let last = said.lines().last().unwrap_or("").trim();
        anyhow::bail!("the restart command failed ({}): {last}", output.status);
    }
    Ok(())
}


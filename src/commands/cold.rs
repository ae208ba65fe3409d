//! True cold runs, for `query --cold` and `bench --cold` alike. The servers
//! `just setup` started are listed, with their
//! addresses, data folders and restart commands, in `servers.json`; an engine
//! whose server is listed there (matched by the address the engine says its
//! server has, `Loader::address`: no engine is named here) is restarted (and
//! the OS page cache dropped) before each query's first run, and an engine
//! with no server starts afresh.
//! Any other server gets what can be done without owning it (the page cache
//! dropped, the caches it clears itself), labelled as not truly cold.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use async_trait::async_trait;
use ghbench_core::place::same_address;
use ghbench_core::{Place, TableName};
use ghbench_engine::Loader;
use ghbench_olap::environment::drop_os_page_cache;
use ghbench_olap::runner::{ClearCaches, ColdStep, Cooler};
use ghbench_olap::Backend;
use serde::Deserialize;

use crate::commands::olap::ColdHow;
use crate::options::Selected;

/// A restart that takes longer than this has failed.
const RESTART_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a restarted server may take to accept ghbench again.
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(60);

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

/// What makes each engine cold, in the run's order of engines.
pub struct BenchCooler {
    plans: Vec<Plan>,
    table: TableName,
    /// `bench --memory`: every restart goes back under the limit.
    memory: Option<super::bench::memory::MemorySize>,
}

enum Plan {
    Restart(ManagedServer, Selected),
    /// An engine with no server: a new backend is fresh state.
    Fresh(Selected),
    /// Only cleared, for the reason given.
    ClearOnly(Selected, WhyNotRestarted),
}

/// Why a server's first runs are only cleared, not truly cold.
#[derive(Clone, Copy)]
enum WhyNotRestarted {
    /// `--servers` does not list it: `just setup` did not start it.
    NotListed,
    /// `--cold=clear` asked for no restart.
    AskedClear,
}

impl BenchCooler {
    /// `how`: `--cold=clear` restarts no server.
    pub fn new(engines: &[Selected], managed: Option<&ManagedServers>, how: ColdHow, table: &TableName, memory: Option<super::bench::memory::MemorySize>) -> BenchCooler {
        let plans = engines
            .iter()
            .map(|engine| {
                if !engine.plugin.spec().capabilities.server {
                    return Plan::Fresh(engine.clone());
                }
                match managed.and_then(|m| m.serving(engine.loader().as_ref())) {
                    _ if how == ColdHow::Clear => Plan::ClearOnly(engine.clone(), WhyNotRestarted::AskedClear),
                    Some(server) => Plan::Restart(server.clone(), engine.clone()),
                    None => Plan::ClearOnly(engine.clone(), WhyNotRestarted::NotListed),
                }
            })
            .collect();
        BenchCooler { plans, table: table.clone(), memory }
    }

    /// For people: which engines get a true cold run and how.
    pub fn describe(&self) -> Vec<String> {
        self.plans
            .iter()
            .map(|plan| match plan {
                Plan::Restart(server, engine) => {
                    format!("{}: server {} at {} (data {}) restarted before each first run (other sessions on it are cut off)", engine.engine(), server.name, server.address, server.data_dir)
                }
                Plan::Fresh(engine) => format!("{}: started afresh (no server) before each first run", engine.engine()),
                Plan::ClearOnly(engine, why) => {
                    let location = engine.loader().location();
                    let why = match why {
                        WhyNotRestarted::AskedClear => "--cold=clear",
                        WhyNotRestarted::NotListed => "not in --servers",
                    };
                    match Place::of(&location) {
                        Place::ThisMachine => format!(
                            "{}: server at {location} not restarted ({why}): this machine's page cache dropped and the server's own caches cleared, not truly cold",
                            engine.engine()
                        ),
                        Place::Elsewhere(hosts) => format!(
                            "{}: server on {}, another machine (not restarted): its page cache is out of ghbench's reach, only the server's own caches cleared, not truly cold",
                            engine.engine(),
                            hosts.join(", ")
                        ),
                    }
                }
            })
            .collect()
    }

    async fn reconnect(&self, engine: &Selected) -> Result<Box<dyn Backend>> {
        let started = Instant::now();
        loop {
            match engine.backend(&self.table).await {
                Ok(backend) => return Ok(backend),
                Err(e) if started.elapsed() > RECONNECT_TIMEOUT => {
                    return Err(e.context(format!("{} did not accept a connection within {} s of its restart", engine.engine(), RECONNECT_TIMEOUT.as_secs())))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}

#[async_trait]
impl Cooler for BenchCooler {
    fn how(&self, index: usize) -> &'static str {
        match self.plans.get(index) {
            Some(Plan::Restart(..)) => "server restart and page cache",
            Some(Plan::Fresh(_)) => "a fresh start and page cache",
            Some(Plan::ClearOnly(..)) | None => ghbench_olap::runner::CLEAR_ONLY,
        }
    }

    async fn make_cold(&self, index: usize, backend: &mut Box<dyn Backend>) -> ColdStep {
        // A listed server is restarted; an embedded engine only starts afresh.
        let (engine, server) = match self.plans.get(index) {
            Some(Plan::Restart(server, engine)) => (engine, Some(server)),
            Some(Plan::Fresh(engine)) => (engine, None),
            Some(Plan::ClearOnly(..)) | None => return ClearCaches.make_cold(index, backend).await,
        };
        let mut actions = Vec::new();
        let restarted = match server {
            None => true,
            Some(server) => match restart(server, self.memory.as_ref().map(|m| m.text.as_str())).await {
                Ok(()) => {
                    actions.push(format!("server {} at {} restarted", server.name, server.address));
                    true
                }
                Err(e) => {
                    actions.push(format!("{} NOT restarted: {e:#}", server.name));
                    false
                }
            },
        };
        let page_cache = drop_os_page_cache();
        actions.push(page_cache.action);
        let renewed = match server {
            Some(_) => self.reconnect(engine).await,
            None => engine.backend(&self.table).await.map_err(|e| e.context(format!("{} could not start afresh", engine.engine()))),
        };
        // Under --memory a restarted server must be back inside its limit, or
        // the run is not what it is labelled.
        let mut limited = true;
        if let (Some(size), Some((url, address))) = (&self.memory, server.and(renewed.as_ref().ok()).and_then(|b| Some((b.server_url()?.to_string(), b.server_address())))) {
            let said = tokio::task::spawn_blocking({
                let bytes = size.bytes;
                move || super::bench::memory::inside_limit(&url, address.as_deref(), bytes)
            });
            match said.await.unwrap_or_else(|e| Err(e.to_string())) {
                Ok(inside) => actions.push(format!("{} {inside}", engine.engine())),
                Err(why) => {
                    actions.push(format!("{} {why}", engine.engine()));
                    limited = false;
                }
            }
        }
        let renewed = match renewed {
            Ok(fresh) => {
                *backend = fresh;
                if server.is_none() {
                    actions.push(format!("{} started afresh (a new engine state)", engine.engine()));
                }
                true
            }
            Err(e) => {
                actions.push(format!("{e:#}"));
                false
            }
        };
        // A restarted server is one `just setup` started: on this machine.
        ColdStep { actions, true_cold: restarted && page_cache.dropped && renewed && limited, started_afresh: server.is_none(), elsewhere: None }
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


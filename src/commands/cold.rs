//! True cold runs, for `query --cold` and `bench --cold` alike. The servers
//! `just setup` started are listed, with their
//! addresses, data folders and restart commands, in `servers.json`; an engine
//! whose server is listed there (matched by the address the engine says its
//! server has, `Loader::address`: no engine is named here) is restarted (and
//! the OS page cache dropped) before each query's first run, and an engine
//! with no server starts afresh.
//! Any other server gets what can be done without owning it (the page cache
//! dropped, the caches it clears itself), labelled as not truly cold.
//! The servers file and the restart itself are [`super::servers`].

use std::time::{Duration, Instant};

use anyhow::Result;
use async_trait::async_trait;
use ghbench_core::{Place, TableName};
use ghbench_olap::environment::drop_os_page_cache;
use ghbench_olap::runner::{ClearCaches, ColdStep, Cooler};
use ghbench_olap::Backend;

use super::bench::limits::Limits;
use super::servers::{restart, ManagedServer, ManagedServers};
use crate::options::Selected;

/// How long a restarted server may take to accept ghbench again.
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// How `--cold` makes a query's first run cold.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdHow {
    /// Restart the servers `just setup` started, drop the page cache.
    Restart,
    /// Drop the page cache and the servers' own caches, no restart.
    Clear,
}

/// What makes each engine cold, in the run's order of engines.
pub struct BenchCooler {
    plans: Vec<Plan>,
    table: TableName,
    /// `bench --memory`, `--disk`: every restart goes back under the limits.
    limits: Option<Limits>,
}

enum Plan {
    Restart(ManagedServer, Selected),
    /// An engine with no server: a new backend is fresh state.
    Fresh(Selected),
    /// Only cleared, for the reason given.
    ClearOnly(Selected, WhyNotRestarted),
}

/// Why a server's first runs are only cleared, not truly cold.
#[derive(Clone)]
enum WhyNotRestarted {
    /// `--servers` does not list it: `just setup` did not start it.
    NotListed,
    /// `--cold=clear` asked for no restart.
    AskedClear,
    /// Another ghbench that still runs holds a change to it (said how).
    Held(String),
}

impl BenchCooler {
    /// `how`: `--cold=clear` restarts no server.
    pub fn new(engines: &[Selected], managed: Option<&ManagedServers>, how: ColdHow, table: &TableName, limits: Option<Limits>) -> BenchCooler {
        let plans = engines
            .iter()
            .map(|engine| {
                if !engine.plugin.spec().capabilities.server {
                    return Plan::Fresh(engine.clone());
                }
                match managed.and_then(|m| m.serving(engine.loader().as_ref())) {
                    _ if how == ColdHow::Clear => Plan::ClearOnly(engine.clone(), WhyNotRestarted::AskedClear),
                    // Another ghbench that runs has changed it (a bench's
                    // memory limit): a restart would undo that under it.
                    Some(server) if let Some(held) = ghbench_core::changes::held_by_others(&server.server_ref()).first() => {
                        Plan::ClearOnly(engine.clone(), WhyNotRestarted::Held(format!("held by {}: {}", held.by_whom(), held.said)))
                    }
                    Some(server) => Plan::Restart(server.clone(), engine.clone()),
                    None => Plan::ClearOnly(engine.clone(), WhyNotRestarted::NotListed),
                }
            })
            .collect();
        BenchCooler { plans, table: table.clone(), limits }
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
                        WhyNotRestarted::Held(by) => by.as_str(),
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
            Some(server) => match restart(server, self.limits.as_ref()).await {
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
        // Under --memory or --disk a restarted server must be back inside its
        // limits, or the run is not what it is labelled.
        let mut limited = true;
        if let (Some(limits), Some((url, address, renewed))) = (&self.limits, server.and(renewed.as_ref().ok()).and_then(|b| Some((b.server_url()?.to_string(), b.server_address(), b)))) {
            // A cluster's every node (a Citus coordinator and its workers), each under limits of its own.
            let nodes = match renewed.reading_nodes().await {
                Some(Ok(nodes)) => Some(nodes),
                Some(Err(why)) => {
                    actions.push(format!("{} its nodes could not be listed ({why}): only the server it connects to is checked", engine.engine()));
                    None
                }
                None => None,
            };
            let said = tokio::task::spawn_blocking({
                let limits = limits.clone();
                move || {
                    let memory = limits.memory.map(|size| super::bench::memory::inside_limit(&url, address.as_deref(), nodes.as_deref(), size.bytes));
                    let disk = limits.disk.map(|disk| super::bench::disk::inside_throttle(&url, address.as_deref(), nodes.as_deref(), &disk.rules));
                    [memory, disk].into_iter().flatten().collect::<Vec<_>>()
                }
            });
            for inside in said.await.unwrap_or_else(|e| vec![Err(e.to_string())]) {
                match inside {
                    Ok(inside) => actions.push(format!("{} {inside}", engine.engine())),
                    Err(why) => {
                        actions.push(format!("{} {why}", engine.engine()));
                        limited = false;
                    }
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

//! The servers and workers of a bench under its limits (`--memory`,
//! `--disk`): each server `just setup` started is restarted inside them
//! (`scripts/setup.sh` with `GHBENCH_MEMORY` and `GHBENCH_DISK`), the
//! processes an engine starts of its own (polars' workers) start inside
//! limits of their own, and at the end, or after a signal, the servers go
//! back as setup left them. Each restart into a limit is written to the
//! journal of server changes first, so a ghbench that dies without a word
//! leaves it for the next one to put back.

use std::sync::Arc;

use anyhow::{bail, Result};
use ghbench_core::changes::{self, Kind, Made};
use ghbench_core::EngineConfig;
use ghbench_engine::EnginePlugin;

use super::disk::DiskArg;
use super::memory::MemorySize;
use crate::commands::servers::{restart, ManagedServer, ManagedServers};
use crate::interrupt::note;
use crate::options::Selected;

/// What a bench runs its servers under; at least one is given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Limits {
    pub memory: Option<MemorySize>,
    pub disk: Option<DiskArg>,
    /// `--preset paper2019`: PostgreSQL with the paper's planner settings
    /// (`GHBENCH_PG_PAPER2019`: random_page_cost 1.3, default_statistics_target
    /// 200, effective_cache_size 9/16 of its memory).
    pub paper_planner: bool,
    /// The disk read free whatever setup ran with (`GHBENCH_SETUP_DISK`): a
    /// `--regime-iops free` point. Otherwise no `disk` leaves the disk as
    /// setup left it.
    pub free_disk: bool,
}

/// Said where the servers run with the paper's planner settings.
const PAPER_PLANNER: &str = "the paper's PostgreSQL planner settings";

impl Limits {
    /// None when nothing is asked for.
    pub fn of(memory: Option<&MemorySize>, disk: Option<&DiskArg>, paper_planner: bool) -> Option<Limits> {
        (memory.is_some() || disk.is_some() || paper_planner).then(|| Limits { memory: memory.cloned(), disk: disk.cloned(), paper_planner, free_disk: false })
    }

    /// `a 96.0 MiB memory cgroup and a disk throttle of 1,000 read IOPS`.
    pub fn said(&self) -> String {
        let memory = self.memory.as_ref().map(|m| format!("a {} memory cgroup", ghbench_core::size::said(m.bytes)));
        let disk = self.disk.as_ref().map(|d| format!("a disk throttle of {}", d.rules.said()));
        let planner = self.paper_planner.then(|| PAPER_PLANNER.to_string());
        [memory, disk, planner].into_iter().flatten().collect::<Vec<_>>().join(" and ")
    }

    /// The options that asked for them, as errors name them.
    pub fn asked(&self) -> String {
        let planner = self.paper_planner.then(|| "--preset paper2019".to_string());
        [self.memory.as_ref().map(|m| m.asked.clone()), self.disk.as_ref().map(|d| d.asked.clone()), planner].into_iter().flatten().collect::<Vec<_>>().join(" ")
    }

    /// The journal's kind of change: a memory limit also scales the settings.
    fn kind(&self) -> Kind {
        match self.memory {
            Some(_) => Kind::MemoryLimit,
            None => Kind::DiskLimit,
        }
    }
}

/// The servers a bench has restarted under its limits and not yet back,
/// each with its entry in the journal of server changes
/// (`ghbench_core::changes`): a signal that stops ghbench restores them
/// ([`restore_after_signal`]); a ghbench that dies without a word leaves the
/// entries for the next one.
static LIMITED: std::sync::Mutex<Vec<(ManagedServer, Made)>> = std::sync::Mutex::new(Vec::new());

fn limited() -> std::sync::MutexGuard<'static, Vec<(ManagedServer, Made)>> {
    LIMITED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The engines whose own processes (polars' workers) start under a bench's
/// limits: a signal takes their limits away too, so no throttle rule stays.
type OwnProcesses = Vec<(Arc<dyn EnginePlugin>, EngineConfig)>;
static OWN_LIMITED: std::sync::Mutex<OwnProcesses> = std::sync::Mutex::new(Vec::new());

fn own_limited() -> std::sync::MutexGuard<'static, OwnProcesses> {
    OWN_LIMITED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Their workers' limits taken away (the cgroups made for them removed once empty).
fn unlimit(engines: &OwnProcesses) {
    for (engine, config) in engines {
        let _ = engine.limit_memory(None);
        let _ = engine.limit_disk(config, None);
    }
}

/// Restarts `server` as `just setup` left it and, once it is, drops its
/// entry from the list and the journal.
async fn put_back(server: &ManagedServer) -> Result<()> {
    restart(server, None).await?;
    let mut list = limited();
    if let Some(at) = list.iter().position(|(s, _)| s.name == server.name) {
        list.remove(at).1.undone();
    }
    Ok(())
}

/// After a signal, a closed output or a panic: every server a bench left
/// under its limits restarted as `just setup` left it, each said as it goes
/// (a restart takes seconds). Said with [`note`]: stderr may be closed.
/// The servers restarted, for what else is put back on the way out.
pub async fn restore_after_signal() -> Vec<String> {
    // A restart under way (into or out of the limits) ends first.
    crate::commands::servers::wait_for_restarts().await;
    unlimit(&std::mem::take(&mut *own_limited()));
    let servers: Vec<ManagedServer> = limited().iter().map(|(s, _)| s.clone()).collect();
    let mut restarted = Vec::new();
    if !servers.is_empty() {
        note("putting the servers under a bench's limits back as `just setup` left them:");
    }
    for server in servers {
        match put_back(&server).await {
            Ok(()) => {
                note(&format!("  {} restarted as `just setup` left it (it ran under the bench's limits)", server.name));
                restarted.push(server.name.clone());
            }
            Err(e) => note(&format!(
                "  {} still runs under the bench's limits ({e:#}): the next ghbench command, `ghbench doctor` or `just setup` restarts it",
                server.name
            )),
        }
    }
    restarted
}

/// Before queries under `limits`: the OS page cache dropped, so what they
/// read is charged to the memory limit and goes through the disk throttle,
/// not found cached from before; said with `say` and returned for the
/// runs' label.
pub fn drop_page_cache_under(limits: Option<&Limits>, say: &dyn Fn(&str)) -> Vec<String> {
    let Some(limits) = limits else { return Vec::new() };
    let dropped = format!("{} under {}", ghbench_olap::environment::drop_os_page_cache().action, limits.said());
    say(&format!("limits: {dropped}"));
    vec![dropped]
}

/// The servers `engines` use, each one `just setup` started (listed in
/// `managed`): a server it did not start is refused, since a running server
/// cannot be moved under a limit. Checked before any data is made too.
pub fn servers_to_limit(limits: &Limits, engines: &[Selected], managed: Option<&ManagedServers>) -> Result<Vec<ManagedServer>> {
    let mut servers: Vec<ManagedServer> = Vec::new();
    for engine in engines.iter().filter(|e| e.plugin.spec().capabilities.server) {
        let loader = engine.loader();
        match managed.and_then(|m| m.serving(loader.as_ref())) {
            Some(server) if !servers.iter().any(|s| s.name == server.name) => servers.push(server.clone()),
            Some(_) => {}
            None => bail!(
                "{}: {} is served by {}, which `just setup` did not start (not in --servers): a running server cannot be moved under a limit. Use the servers `just setup` starts (or start yours inside a memory limit and give --server-memory SIZE instead)",
                limits.asked(),
                engine.engine(),
                ghbench_core::redact_url(&loader.location())
            ),
        }
    }
    Ok(servers)
}

/// The servers and workers of one bench, under the limits until [`UnderLimit::end`].
pub struct UnderLimit {
    servers: Vec<ManagedServer>,
    /// The engines whose own processes start under the limits, with their configuration.
    engines: OwnProcesses,
}

impl UnderLimit {
    /// Restarts each server `engines` use inside `limits` (see
    /// [`servers_to_limit`]) and limits the processes the engines start of
    /// their own (polars' workers). The checks first (`memory::check_can_limit`,
    /// `disk::check_can_throttle`): this touches the servers.
    pub async fn start(limits: &Limits, engines: &[Selected], managed: Option<&ManagedServers>, say: &dyn Fn(&str)) -> Result<UnderLimit> {
        let own_processes = engines.iter().filter(|e| !e.plugin.spec().capabilities.server).map(|e| (e.plugin.clone(), e.config.clone())).collect();
        let under = UnderLimit { servers: servers_to_limit(limits, engines, managed)?, engines: own_processes };
        let inside = limits.said();
        for server in under.servers.clone() {
            say(&format!("limits: restarting {} at {} inside {inside}", server.name, server.address));
            // Listed, and written down, before the restart: a signal during
            // it, or a ghbench killed, must put the server back.
            if !limited().iter().any(|(s, _)| s.name == server.name) {
                let scaled = if limits.memory.is_some() { ", its memory settings scaled to it" } else { "" };
                let said = format!("restarted inside {inside} ({}){scaled}", limits.asked());
                let made = match changes::record(&server.entry(limits.kind(), said)) {
                    Ok(made) => made,
                    Err(e) => {
                        under.end(say).await;
                        bail!("{}: {e}: no server was put under the limits, since nothing could put it back if ghbench died", limits.asked());
                    }
                };
                limited().push((server.clone(), made));
            }
            if let Err(e) = restart(&server, Some(limits)).await {
                under.end(say).await;
                bail!("{}: {} did not start under the limits: {e:#}", limits.asked(), server.name);
            }
        }
        own_limited().extend(under.engines.iter().cloned());
        // Each set, or cleared, as this run asks: one left from the run before
        // (a sweep's earlier point) must not hold here. Memory first: the
        // disk throttle goes on the memory cgroup where there is one.
        for (engine, config) in &under.engines {
            let memory = engine.limit_memory(limits.memory.as_ref().map(|size| size.bytes));
            let disk = memory.and_then(|()| engine.limit_disk(config, limits.disk.as_ref().map(|d| &d.rules)));
            if let Err(e) = disk {
                under.end(say).await;
                bail!("{}: {e}", limits.asked());
            }
        }
        Ok(under)
    }

    /// The servers restarted as `just setup` left them (its own limits, if
    /// it had any), the engines' own processes (polars' workers) unlimited again.
    pub async fn end(self, say: &dyn Fn(&str)) {
        unlimit(&self.engines);
        own_limited().retain(|(engine, _)| !self.engines.iter().any(|(mine, _)| Arc::ptr_eq(mine, engine)));
        for server in &self.servers {
            // Off the list only once back: a signal during the restart
            // leaves it for `restore_after_signal`.
            match put_back(server).await {
                Ok(()) => say(&format!("limits: {} restarted as `just setup` left it", server.name)),
                Err(e) => note(&format!(
                    "warning: {} was not restarted after its limits ({e:#}); it still runs under them: the next ghbench command, `ghbench doctor` or `just setup` restarts it",
                    server.name
                )),
            }
        }
    }
}

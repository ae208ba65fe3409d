//! `bench --memory SIZE`: the benchmark on a machine that small. The servers
//! `just setup` started are restarted inside a memory cgroup of that size
//! (`scripts/setup.sh` with `GHBENCH_MEMORY`, which also scales their memory
//! settings as the paper's stood to its RAM), the processes an engine starts
//! of its own (polars' workers) start inside one of their own
//! (`EnginePlugin::limit_memory`), and the page cache is dropped before the queries so what
//! they read is charged to the limit. A running server cannot be moved under
//! a limit: a server ghbench did not start is refused, never measured as if
//! it were limited. At the end the servers go back as setup left them.

use std::str::FromStr;
use std::sync::Arc;

use anyhow::{bail, Result};
use ghbench_core::changes::{self, Made};
use ghbench_engine::EnginePlugin;
use ghbench_olap::bench::LoadMemory;
use ghbench_olap::cgroup::MemoryCgroup;

use crate::commands::servers::{restart, ManagedServer, ManagedServers};
use crate::interrupt::note;
use crate::options::Selected;

/// A memory limit: as passed on to `scripts/setup.sh`, in bytes, and the
/// option that asked for it, as errors name it (`--memory 768MiB`,
/// `--regime 5× (a 325.0 MiB limit)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySize {
    pub text: String,
    pub bytes: u64,
    pub asked: String,
}

impl MemorySize {
    /// A limit `--regime` chose, in whole KiB as setup reads it.
    pub fn chosen(bytes: u64, asked: String) -> MemorySize {
        MemorySize { text: format!("{}KiB", bytes / 1024), bytes, asked }
    }
}

impl FromStr for MemorySize {
    type Err = String;
    fn from_str(text: &str) -> Result<MemorySize, String> {
        let text = text.trim().to_string();
        Ok(MemorySize { bytes: ghbench_core::size::parse_memory(&text)?, asked: format!("--memory {text}"), text })
    }
}

/// Whether this machine and user can put a limit of `size` (root, a memory
/// controller): a cgroup made and removed at once, so the error comes before
/// any data is made or server touched.
pub fn check_can_limit(size: &MemorySize) -> Result<()> {
    let probe = MemoryCgroup::create(&format!("probe-{}", std::process::id()), size.bytes).map_err(|e| anyhow::anyhow!("{}: {e}", size.asked))?;
    probe.remove();
    Ok(())
}

/// The memory cgroup of the server `url` points at (its top process,
/// listening on `address`, as its engine says), when it runs here.
fn server_cgroup(url: &str, address: Option<&str>) -> Result<(u32, MemoryCgroup), String> {
    let pid = ghbench_olap::kernel_io::server_pid(url, address)?;
    Ok((pid, MemoryCgroup::of_process(pid)?))
}

/// Whether the server `url` points at (at `address`) runs inside a cgroup
/// limited to `bytes` (after a restart for a cold run): said for the record.
pub fn inside_limit(url: &str, address: Option<&str>, bytes: u64) -> Result<String, String> {
    let (pid, cgroup) = server_cgroup(url, address)?;
    match cgroup.limit() {
        Some(limit) if limit == bytes => Ok(format!("back inside its {} memory cgroup ({})", ghbench_core::size::said(bytes), cgroup.path)),
        other => Err(format!(
            "NOT back under the {} limit: its process {pid} runs in {} with {}",
            ghbench_core::size::said(bytes),
            cgroup.path,
            other.map_or("no limit".to_string(), |l| format!("a limit of {}", ghbench_core::size::said(l)))
        )),
    }
}

/// Per engine, what its server's cgroup has counted: taken before the load
/// and again after the index builds ([`during_load`]).
pub fn cgroup_counters(size: &MemorySize, engines: &[Selected]) -> Vec<LoadMemory> {
    engines
        .iter()
        .map(|engine| {
            let base = LoadMemory { engine: engine.engine().clone(), limit_bytes: size.bytes, cgroup: None, counters: None, outside: None };
            if !engine.plugin.spec().capabilities.server {
                return LoadMemory { outside: Some("it loads inside ghbench's own process; only its query workers run inside the limit".into()), ..base };
            }
            let loader = engine.loader();
            match server_cgroup(&loader.location(), loader.address().as_deref()).map(|(_, cgroup)| cgroup) {
                Ok(cgroup) if cgroup.limit() == Some(size.bytes) => LoadMemory { cgroup: Some(cgroup.path.clone()), counters: Some(cgroup.counters()), ..base },
                Ok(cgroup) => LoadMemory { outside: Some(format!("its server runs in {} without this limit", cgroup.path)), ..base },
                Err(e) => LoadMemory { outside: Some(format!("its server's cgroup could not be read: {e}")), ..base },
            }
        })
        .collect()
}

/// Whether the limit held during the load and the index builds: what each
/// engine's cgroup counted since `before` (peak: since the cgroup was made,
/// at the restart into the limit).
pub fn during_load(size: &MemorySize, engines: &[Selected], before: &[LoadMemory]) -> Vec<LoadMemory> {
    let mut after = cgroup_counters(size, engines);
    for now in &mut after {
        let then = before.iter().find(|b| b.engine == now.engine && b.cgroup == now.cgroup).and_then(|b| b.counters.as_ref());
        now.counters = match (now.counters.take(), then) {
            (Some(now), Some(then)) => Some(now.since(then)),
            // Not counted before the load: not said as if it were.
            _ => None,
        };
    }
    after
}

/// The servers a bench has restarted under a limit and not yet back, each
/// with its entry in the journal of server changes (`ghbench_core::changes`):
/// a signal that stops ghbench restores them ([`restore_after_signal`]); a
/// ghbench that dies without a word leaves the entries for the next one.
static LIMITED: std::sync::Mutex<Vec<(ManagedServer, Made)>> = std::sync::Mutex::new(Vec::new());

fn limited() -> std::sync::MutexGuard<'static, Vec<(ManagedServer, Made)>> {
    LIMITED.lock().unwrap_or_else(|e| e.into_inner())
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
/// under its limit restarted as `just setup` left it, each said as it goes
/// (a restart takes seconds). Said with [`note`]: stderr may be closed.
/// The servers restarted, for what else is put back on the way out.
pub async fn restore_after_signal() -> Vec<String> {
    // A restart under way (into or out of the limit) ends first.
    crate::commands::servers::wait_for_restarts().await;
    let servers: Vec<ManagedServer> = limited().iter().map(|(s, _)| s.clone()).collect();
    let mut restarted = Vec::new();
    if !servers.is_empty() {
        note("putting the servers under a bench's memory limit back as `just setup` left them:");
    }
    for server in servers {
        match put_back(&server).await {
            Ok(()) => {
                note(&format!("  {} restarted as `just setup` left it (it ran under the bench's memory limit)", server.name));
                restarted.push(server.name.clone());
            }
            Err(e) => note(&format!(
                "  {} still runs under the bench's memory limit ({e:#}): the next ghbench command, `ghbench doctor` or `just setup` restarts it",
                server.name
            )),
        }
    }
    restarted
}

/// The servers and workers of one bench, under the limit until [`UnderLimit::end`].
pub struct UnderLimit {
    servers: Vec<ManagedServer>,
    /// The engines whose own processes start under the limit.
    engines: Vec<Arc<dyn EnginePlugin>>,
}

/// The servers `engines` use, each one `just setup` started (listed in
/// `managed`): a server it did not start is refused, since a running server
/// cannot be moved under a limit. Checked before any data is made too.
pub fn servers_to_limit(size: &MemorySize, engines: &[Selected], managed: Option<&ManagedServers>) -> Result<Vec<ManagedServer>> {
    let mut servers: Vec<ManagedServer> = Vec::new();
    for engine in engines.iter().filter(|e| e.plugin.spec().capabilities.server) {
        let loader = engine.loader();
        match managed.and_then(|m| m.serving(loader.as_ref())) {
            Some(server) if !servers.iter().any(|s| s.name == server.name) => servers.push(server.clone()),
            Some(_) => {}
            None => bail!(
                "{}: {} is served by {}, which `just setup` did not start (not in --servers): a running server cannot be moved under a limit. Use the servers `just setup` starts (or start yours inside a memory limit and give --server-memory SIZE instead)",
                size.asked,
                engine.engine(),
                ghbench_core::redact_url(&loader.location())
            ),
        }
    }
    Ok(servers)
}

impl UnderLimit {
    /// Restarts each server `engines` use inside its cgroup of `size` (see
    /// [`servers_to_limit`]) and limits the processes the engines start of
    /// their own (polars' workers). [`check_can_limit`] first: this touches
    /// the servers.
    pub async fn start(size: &MemorySize, engines: &[Selected], managed: Option<&ManagedServers>, say: &dyn Fn(&str)) -> Result<UnderLimit> {
        let own_processes = engines.iter().filter(|e| !e.plugin.spec().capabilities.server).map(|e| e.plugin.clone()).collect();
        let under = UnderLimit { servers: servers_to_limit(size, engines, managed)?, engines: own_processes };
        let limit = ghbench_core::size::said(size.bytes);
        for server in under.servers.clone() {
            say(&format!("memory: restarting {} at {} inside a {limit} memory cgroup", server.name, server.address));
            // Listed, and written down, before the restart: a signal during
            // it, or a ghbench killed, must put the server back.
            if !limited().iter().any(|(s, _)| s.name == server.name) {
                let said = format!("restarted inside a {limit} memory cgroup ({}), its memory settings scaled to it", size.asked);
                let made = match changes::record(&server.entry(changes::Kind::MemoryLimit, said)) {
                    Ok(made) => made,
                    Err(e) => {
                        under.end(say).await;
                        bail!("{}: {e}: no server was put under the limit, since nothing could put it back if ghbench died", size.asked);
                    }
                };
                limited().push((server.clone(), made));
            }
            if let Err(e) = restart(&server, Some(&size.text)).await {
                under.end(say).await;
                bail!("{}: {} did not start under the limit: {e:#}", size.asked, server.name);
            }
        }
        let limited = under.engines.iter().map(|engine| engine.limit_memory(Some(size.bytes))).collect::<Result<Vec<()>, String>>();
        if let Err(e) = limited {
            under.end(say).await;
            bail!("{}: {e}", size.asked);
        }
        Ok(under)
    }

    /// The servers restarted as `just setup` left them (its own limit, if
    /// it had one), the engines' own processes (polars' workers) unlimited again.
    pub async fn end(self, say: &dyn Fn(&str)) {
        for engine in &self.engines {
            let _ = engine.limit_memory(None);
        }
        for server in &self.servers {
            // Off the list only once back: a signal during the restart
            // leaves it for `restore_after_signal`.
            match put_back(server).await {
                Ok(()) => say(&format!("memory: {} restarted as `just setup` left it", server.name)),
                Err(e) => note(&format!(
                    "warning: {} was not restarted after its memory limit ({e:#}); it still runs under the limit: the next ghbench command, `ghbench doctor` or `just setup` restarts it",
                    server.name
                )),
            }
        }
    }
}

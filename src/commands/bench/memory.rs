//! `bench --memory SIZE`: the benchmark on a machine that small. The servers
//! `just setup` started are restarted inside a memory cgroup of that size
//! (`scripts/setup.sh` with `GHBENCH_MEMORY`, which also scales their memory
//! settings as the paper's stood to its RAM), the processes an engine starts
//! of its own (polars' workers) start inside one of their own
//! (`EnginePlugin::limit_memory`), and the page cache is dropped before the queries so what
//! they read is charged to the limit. A running server cannot be moved under
//! a limit: a server ghbench did not start is refused, never measured as if
//! it were limited. At the end the servers go back as setup left them
//! (`super::limits`, which restarts them under memory and disk limits alike).

use std::str::FromStr;

use anyhow::Result;
use ghbench_olap::bench::LoadMemory;
use ghbench_olap::cgroup::MemoryCgroup;

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

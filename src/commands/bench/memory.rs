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

/// The top process of each node of the server `url` points at (at
/// `address`), when it runs here: of a server of several (`nodes`, each
/// `host:port`: a Citus coordinator and its workers) one per node, else the
/// one server's, named by its address. Reads /proc: call it off the runtime.
pub fn server_processes(url: &str, address: Option<&str>, nodes: Option<&[String]>) -> Result<Vec<(String, u32)>, String> {
    let Some(nodes) = nodes else {
        let pid = ghbench_olap::kernel_io::server_pid(url, address)?;
        return Ok(vec![(address.unwrap_or("its server").to_string(), pid)]);
    };
    let pids = ghbench_olap::backend::local_node_pids(nodes.to_vec()).ok_or("one of its nodes runs on another machine")?;
    pids.into_iter().map(|(node, pid)| Ok((node.clone(), pid.ok_or_else(|| format!("no server process found listening at {node}"))?))).collect()
}

/// Each node's memory cgroup (see [`server_processes`]).
fn server_cgroups(url: &str, address: Option<&str>, nodes: Option<&[String]>) -> Result<Vec<(String, u32, MemoryCgroup)>, String> {
    server_processes(url, address, nodes)?.into_iter().map(|(node, pid)| Ok((node, pid, MemoryCgroup::of_process(pid)?))).collect()
}

/// How the cgroups of a server's nodes hold the limit asked (`bytes`): the
/// one server's under it, each node under all of it, or the nodes under
/// shares that add up to it (`GHBENCH_CITUS_MEMORY=total`; each share whole
/// pages, so up to a page a node short). Err: which node runs under what.
fn held(cgroups: &[(String, u32, MemoryCgroup)], bytes: u64) -> Result<String, String> {
    let said = ghbench_core::size::said;
    let limits: Vec<Option<u64>> = cgroups.iter().map(|(_, _, c)| c.limit()).collect();
    let nodes = cgroups.len() as u64;
    let every = |limit: u64| limits.iter().all(|l| *l == Some(limit));
    let summed: Option<u64> = limits.iter().copied().sum();
    match (nodes, summed) {
        (1, _) if every(bytes) => Ok(format!("its {} memory cgroup ({})", said(bytes), cgroups[0].2.path)),
        (_, _) if every(bytes) => Ok(format!("a {} memory cgroup on each of its {nodes} nodes", said(bytes))),
        (_, Some(sum)) if nodes > 1 && sum <= bytes && bytes - sum < nodes * 4096 => {
            let each: Vec<String> = cgroups.iter().zip(&limits).map(|((node, ..), l)| format!("{node} {}", said(l.unwrap_or(0)))).collect();
            Ok(format!("memory cgroups sharing {} among its {nodes} nodes ({})", said(bytes), each.join(", ")))
        }
        _ => Err(cgroups
            .iter()
            .zip(&limits)
            .filter(|(_, l)| nodes == 1 || **l != Some(bytes))
            .map(|((node, pid, cgroup), l)| format!("{node}: its process {pid} runs in {} with {}", cgroup.path, l.map_or("no limit".to_string(), |l| format!("a limit of {}", said(l)))))
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

/// Whether the server `url` points at (at `address`; of several `nodes`,
/// every node) runs inside cgroups holding the limit of `bytes` (after a
/// restart for a cold run): said for the record.
pub fn inside_limit(url: &str, address: Option<&str>, nodes: Option<&[String]>, bytes: u64) -> Result<String, String> {
    let not_back = |why: String| format!("NOT back under the {} limit: {why}", ghbench_core::size::said(bytes));
    let cgroups = server_cgroups(url, address, nodes).map_err(not_back)?;
    held(&cgroups, bytes).map(|how| format!("back inside {how}")).map_err(not_back)
}

/// The nodes of each engine whose server is several (a Citus coordinator
/// and its workers), as its backend lists them: whose cgroups hold a limit.
/// An engine that cannot say is taken for one server.
pub async fn engines_nodes(engines: &[Selected], table: &ghbench_core::TableName) -> Vec<Option<Vec<String>>> {
    let mut nodes = Vec::new();
    for engine in engines {
        let listed = match engine.plugin.spec().capabilities.server {
            false => None,
            true => match tokio::time::timeout(std::time::Duration::from_secs(30), engine.backend(table)).await {
                Ok(Ok(backend)) => backend.reading_nodes().await.and_then(Result::ok),
                _ => None,
            },
        };
        nodes.push(listed);
    }
    nodes
}

/// Per engine, what its server's cgroups have counted (a server of several
/// nodes: theirs as one, see `MemoryCounters::of_nodes`): taken before the
/// load and again after the index builds ([`during_load`]).
pub fn cgroup_counters(size: &MemorySize, engines: &[Selected], nodes: &[Option<Vec<String>>]) -> Vec<LoadMemory> {
    engines
        .iter()
        .zip(nodes.iter().chain(std::iter::repeat(&None)))
        .map(|(engine, nodes)| {
            let base = LoadMemory { engine: engine.engine().clone(), limit_bytes: size.bytes, cgroup: None, counters: None, outside: None, nodes: Vec::new() };
            if !engine.plugin.spec().capabilities.server {
                return LoadMemory { outside: Some("it loads inside ghbench's own process; only its query workers run inside the limit".into()), ..base };
            }
            let loader = engine.loader();
            let cgroups = match server_cgroups(&loader.location(), loader.address().as_deref(), nodes.as_deref()) {
                Ok(cgroups) => cgroups,
                Err(e) => return LoadMemory { outside: Some(format!("its server's cgroup could not be read: {e}")), ..base },
            };
            if let Err(why) = held(&cgroups, size.bytes) {
                return LoadMemory { outside: Some(format!("not under this limit: {why}")), ..base };
            }
            let counters: Vec<_> = cgroups.iter().map(|(_, _, c)| c.counters()).collect();
            let paths: Vec<&str> = cgroups.iter().map(|(_, _, c)| c.path.as_str()).collect();
            LoadMemory {
                cgroup: Some(paths.join(", ")),
                counters: ghbench_olap::record::MemoryCounters::of_nodes(&counters.iter().collect::<Vec<_>>()),
                nodes: match nodes {
                    Some(_) => cgroups.iter().map(|(node, _, c)| (node.clone(), c.limit().unwrap_or(0))).collect(),
                    None => Vec::new(),
                },
                ..base
            }
        })
        .collect()
}

/// Whether the limit held during the load and the index builds: what each
/// engine's cgroup counted since `before` (peak: since the cgroup was made,
/// at the restart into the limit).
pub fn during_load(size: &MemorySize, engines: &[Selected], nodes: &[Option<Vec<String>>], before: &[LoadMemory]) -> Vec<LoadMemory> {
    let mut after = cgroup_counters(size, engines, nodes);
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

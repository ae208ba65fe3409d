//! `bench --disk riops=1000,rbps=437MB`: the benchmark on a slower disk.
//! The servers `just setup` started are restarted inside a block I/O cgroup
//! whose throttle holds their reads (and writes, where the kernel enforces
//! it) on the disk under their data to that (`scripts/setup.sh` with
//! `GHBENCH_DISK`), polars' workers start inside one of their own
//! (`EnginePlugin::limit_disk`), and the page cache is dropped before the
//! queries so what they read goes through the throttle. Every record names
//! the device, the rules, how the kernel enforced them and what it counted
//! (`ghbench_olap::throttle`). At the end the servers go back as setup left
//! them (`super::limits`).

use std::str::FromStr;

use anyhow::Result;
use ghbench_olap::throttle::{BlockDevice, DiskRules, IoCgroup};

use crate::commands::servers::ManagedServers;
use crate::options::Selected;

/// A disk limit as asked for, and the option that asked (`--disk riops=1000`),
/// as errors name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskArg {
    pub rules: DiskRules,
    pub asked: String,
}

impl DiskArg {
    /// The rules as `scripts/setup.sh` takes them (`GHBENCH_DISK`).
    pub fn setup_text(&self) -> String {
        ghbench_olap::throttle::setup_text(&self.rules)
    }
}

impl FromStr for DiskArg {
    type Err = String;
    fn from_str(text: &str) -> Result<DiskArg, String> {
        Ok(DiskArg { rules: ghbench_olap::throttle::parse_rules(text)?, asked: format!("--disk {}", text.trim()) })
    }
}

/// Whether this machine and user can throttle the disk under every server
/// `engines` use (root, a block I/O controller, a block device under each
/// data folder): a cgroup made and removed at once, each device found, so
/// the error comes before any data is made or server touched.
pub fn check_can_throttle(disk: &DiskArg, engines: &[Selected], managed: Option<&ManagedServers>) -> Result<()> {
    let probe = IoCgroup::create(&format!("probe-io-{}", std::process::id())).map_err(|e| anyhow::anyhow!("{}: {e}", disk.asked))?;
    probe.remove();
    for engine in engines {
        let loader = engine.loader();
        if let Some(server) = managed.and_then(|m| m.serving(loader.as_ref())) {
            BlockDevice::under(std::path::Path::new(&server.data_dir)).map_err(|e| anyhow::anyhow!("{}: {}'s data: {e}", disk.asked, server.name))?;
        } else if !engine.plugin.spec().capabilities.server {
            // Its workers' throttle made and taken away again: the same checks.
            engine.plugin.limit_disk(&engine.config, Some(&disk.rules)).map_err(|e| anyhow::anyhow!("{}: {e}", disk.asked))?;
            engine.plugin.limit_disk(&engine.config, None).map_err(|e| anyhow::anyhow!("{}: {e}", disk.asked))?;
        }
    }
    Ok(())
}

/// Whether the server `url` points at (at `address`) reads under `rules`
/// (after a restart for a cold run): said for the record.
pub fn inside_throttle(url: &str, address: Option<&str>, nodes: Option<&[String]>, rules: &DiskRules) -> Result<String, String> {
    let not_back = |why: String| format!("NOT back under the disk throttle of {}: {why}", rules.said());
    let processes = super::memory::server_processes(url, address, nodes).map_err(not_back)?;
    let mut held = Vec::new();
    for (node, pid) in &processes {
        let cgroup = IoCgroup::of_process(*pid).map_err(not_back)?;
        match cgroup.limit() {
            Some(limit) if limit.rules == *rules => held.push(format!("on {} ({})", limit.device, cgroup.path)),
            other => return Err(not_back(format!("{node}: its process {pid} runs in {} with {}", cgroup.path, other.map_or("no throttle".to_string(), |l| l.rules.said())))),
        }
    }
    let whose = match processes.len() {
        1 => "its".to_string(),
        n => format!("each of its {n} nodes'"),
    };
    Ok(format!("back inside {whose} disk throttle of {} {}", rules.said(), held.join(", ")))
}

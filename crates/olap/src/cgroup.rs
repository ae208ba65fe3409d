//! Memory limits the kernel enforces: the memory cgroup a process runs in
//! (v1 or v2), the limit in force over it, the counters that show whether it
//! held, and making one for a process ghbench starts (polars' worker).
//!
//! Why cgroups: a limit on a server's memory is how a small machine reproduces
//! data several times larger than memory, the regime an OLAP verdict turns on.
//! The kernel charges the page cache a process fills to its cgroup, so a
//! server under a limit reads from disk what does not fit, as it would on a
//! machine that small. `scripts/setup.sh` starts the servers under one the
//! same way (`GHBENCH_MEMORY`); this module reads them back.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};


pub use ghbench_record::run::{CgroupVersion as Version, MemoryCounters};

/// A limit at or above this means none (cgroup v1 writes "no limit" as the
/// largest page-aligned i64).
const UNLIMITED: u64 = 1 << 62;

/// How far past a limit the kernel's peak may go while the limit holds: a
/// charge that may not fail (kernel memory, `__GFP_NOFAIL`) is forced through,
/// and charges are made in batches of 64 pages (`MEMCG_CHARGE_BATCH`). Seen
/// here: a peak one page past a 96 MiB limit, with no OOM kill.
pub const FORCED_CHARGE_SLACK: u64 = 64 * 4096;


/// A process's memory cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCgroup {
    pub version: Version,
    /// The cgroup's path below its hierarchy's root (`/ghbench/1a2b-postgres`).
    pub path: String,
    /// Its folder of the memory controller.
    dir: PathBuf,
    /// Where its block I/O is counted: the same folder in v2 (`io.stat`), the
    /// blkio hierarchy's in v1 (None when the process is not in one of that name).
    io_dir: Option<PathBuf>,
}

/// Where this machine's cgroup hierarchies are mounted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mounts {
    /// A cgroup v1 hierarchy with the memory controller.
    v1_memory: Option<PathBuf>,
    v1_blkio: Option<PathBuf>,
    /// The cgroup v2 hierarchy, when its root offers the memory controller.
    v2_memory: Option<PathBuf>,
    /// The cgroup v2 hierarchy, when its root offers the io controller.
    v2_io: Option<PathBuf>,
}

impl Mounts {
    pub(crate) fn read() -> Mounts {
        let mut mounts = Mounts::default();
        let Ok(infos) = procfs::process::Process::myself().and_then(|p| p.mountinfo()) else { return mounts };
        for info in infos {
            match info.fs_type.as_str() {
                "cgroup" if info.super_options.contains_key("memory") => mounts.v1_memory = Some(info.mount_point),
                "cgroup" if info.super_options.contains_key("blkio") => mounts.v1_blkio = Some(info.mount_point),
                "cgroup2" => {
                    let controllers = fs::read_to_string(info.mount_point.join("cgroup.controllers")).unwrap_or_default();
                    if controllers.split_whitespace().any(|c| c == "io") {
                        mounts.v2_io = Some(info.mount_point.clone());
                    }
                    if controllers.split_whitespace().any(|c| c == "memory") {
                        mounts.v2_memory = Some(info.mount_point);
                    }
                }
                _ => {}
            }
        }
        mounts
    }

    /// The hierarchy block I/O is throttled in: v1's blkio controller where
    /// it is mounted, else v2's where it offers io.
    pub(crate) fn io(&self) -> Option<(Version, PathBuf)> {
        match (&self.v1_blkio, &self.v2_io) {
            (Some(v1), _) => Some((Version::V1, v1.clone())),
            (None, Some(v2)) => Some((Version::V2, v2.clone())),
            (None, None) => None,
        }
    }

    /// The hierarchy limits are made in: v1's memory controller where it is
    /// mounted (v2 then lacks it), else v2's.
    fn memory(&self) -> Option<(Version, &Path)> {
        match (&self.v1_memory, &self.v2_memory) {
            (Some(v1), _) => Some((Version::V1, v1)),
            (None, Some(v2)) => Some((Version::V2, v2)),
            (None, None) => None,
        }
    }

    /// The cgroup at `path` (memory) and `io_path` (v1's blkio hierarchy,
    /// where a process may sit elsewhere; v2 counts I/O in the same folder).
    fn cgroup(&self, version: Version, root: &Path, path: &str, io_path: Option<&str>) -> MemoryCgroup {
        let below = |base: &Path, path: &str| base.join(path.trim_start_matches('/'));
        let dir = below(root, path);
        let io_dir = match version {
            Version::V1 => self.v1_blkio.as_deref().zip(io_path).map(|(blkio, io_path)| below(blkio, io_path)),
            Version::V2 => Some(dir.clone()),
        };
        MemoryCgroup { version, path: path.to_string(), dir, io_dir }
    }
}

/// Why no limit could be made: each says what is missing and what to do.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("this machine has no cgroup memory controller mounted (no cgroup v1 'memory' hierarchy, no cgroup v2 offering 'memory' in /proc/self/mountinfo): a memory limit needs one; on Linux mount it, or in a container run with the host's cgroups")]
    NoController,
    #[error("cannot make the memory cgroup {path}: {source}; a memory limit needs root (run ghbench or `just setup` as root, e.g. with sudo) or a cgroup delegated to this user")]
    NotPermitted { path: String, source: std::io::Error },
    #[error("cannot set up the memory cgroup {path}: {what}: {source}")]
    Setup { path: String, what: String, source: std::io::Error },
}

impl MemoryCgroup {
    /// The memory cgroup process `pid` runs in; Err says why it cannot be read.
    pub fn of_process(pid: u32) -> Result<MemoryCgroup, String> {
        let mounts = Mounts::read();
        let (version, root) = mounts.memory().ok_or_else(|| CgroupError::NoController.to_string())?;
        let cgroups = procfs::process::Process::new(pid as i32).and_then(|p| p.cgroups()).map_err(|e| format!("/proc/{pid}/cgroup: {e}"))?;
        let line_of = |controller: &str| match version {
            Version::V1 => cgroups.0.iter().find(|c| c.controllers.iter().any(|n| n == controller)).map(|c| c.pathname.clone()),
            Version::V2 => cgroups.0.iter().find(|c| c.hierarchy == 0).map(|c| c.pathname.clone()),
        };
        let path = line_of("memory").ok_or_else(|| format!("process {pid} is in no memory cgroup"))?;
        Ok(mounts.cgroup(version, root, &path, line_of("blkio").as_deref()))
    }

    /// The cgroup a record names (`MemoryLimit`'s version and path), to read it again.
    pub fn at(version: Version, path: &str) -> Option<MemoryCgroup> {
        let mounts = Mounts::read();
        let (mounted, root) = mounts.memory()?;
        let mut cgroup = mounts.cgroup(version, root, path, Some(path));
        cgroup.io_dir = cgroup.io_dir.filter(|d| d.is_dir());
        (mounted == version && cgroup.dir.is_dir()).then_some(cgroup)
    }

    /// Makes (or takes again) the cgroup `ghbench/<name>` with `limit` bytes
    /// of memory and no swap, for a process ghbench starts.
    pub fn create(name: &str, limit: u64) -> Result<MemoryCgroup, CgroupError> {
        let mounts = Mounts::read();
        let (version, root) = mounts.memory().ok_or(CgroupError::NoController)?;
        let path = format!("/ghbench/{name}");
        let mut cgroup = mounts.cgroup(version, root, &path, Some(&path));
        let setup = |what: &str, source| CgroupError::Setup { path: path.clone(), what: what.into(), source };
        if version == Version::V2 {
            // A v2 child gets a controller only when every parent hands it down.
            for parent in [root.to_path_buf(), root.join("ghbench")] {
                fs::create_dir_all(&parent).map_err(|source| CgroupError::NotPermitted { path: path.clone(), source })?;
                write(&parent.join("cgroup.subtree_control"), "+memory +io").or_else(|_| write(&parent.join("cgroup.subtree_control"), "+memory")).map_err(|e| setup("handing the memory controller down", e))?;
            }
        }
        fs::create_dir_all(&cgroup.dir).map_err(|source| CgroupError::NotPermitted { path: path.clone(), source })?;
        if version == Version::V1 {
            // Block I/O counted where a blkio hierarchy lets it be made.
            cgroup.io_dir = cgroup.io_dir.filter(|d| fs::create_dir_all(d).is_ok());
        }
        cgroup.set_limit(limit).map_err(|e| setup("setting the limit", e))?;
        Ok(cgroup)
    }

    /// Sets the limit, swap included (none): what does not fit is dropped and
    /// read again, as on a machine that small, never swapped out.
    fn set_limit(&self, limit: u64) -> std::io::Result<()> {
        match self.version {
            Version::V1 => {
                // memsw (memory and swap) may never be below the memory limit:
                // raise it first, lower it last.
                let memsw = self.dir.join("memory.memsw.limit_in_bytes");
                let _ = write(&memsw, &limit.to_string());
                write(&self.dir.join("memory.limit_in_bytes"), &limit.to_string())?;
                if memsw.exists() {
                    write(&memsw, &limit.to_string())?;
                }
                let _ = write(&self.dir.join("memory.swappiness"), "0");
                Ok(())
            }
            Version::V2 => {
                write(&self.dir.join("memory.max"), &limit.to_string())?;
                let swap = self.dir.join("memory.swap.max");
                if swap.exists() {
                    write(&swap, "0")?;
                }
                Ok(())
            }
        }
    }

    /// Makes `command`'s process start inside this cgroup: it moves itself in
    /// between fork and exec, so everything it starts is charged here too.
    pub fn enter_on_spawn(&self, command: &mut std::process::Command) -> std::io::Result<()> {
        let mut folders = vec![self.dir.clone()];
        if let (Version::V1, Some(io)) = (self.version, &self.io_dir) {
            folders.push(io.clone());
        }
        enter_on_spawn(&folders, command)
    }

    /// Removes the cgroup once nothing runs in it (best effort: one still in
    /// use stays, and is taken again next time).
    pub fn remove(&self) {
        let _ = fs::remove_dir(&self.dir);
        if let (Version::V1, Some(io)) = (self.version, &self.io_dir) {
            let _ = fs::remove_dir(io);
        }
    }

    /// The limit in force: the smallest along the path to the root (None: no limit).
    pub fn limit(&self) -> Option<u64> {
        let limit = match self.version {
            Version::V1 => stat_field(&self.dir.join("memory.stat"), "hierarchical_memory_limit"),
            Version::V2 => {
                let mut smallest: Option<u64> = None;
                let mut dir = Some(self.dir.as_path());
                while let Some(here) = dir {
                    if let Some(max) = fs::read_to_string(here.join("memory.max")).ok().and_then(|s| s.trim().parse::<u64>().ok()) {
                        smallest = Some(smallest.map_or(max, |s| s.min(max)));
                    }
                    dir = here.parent().filter(|p| p.join("memory.max").exists());
                }
                smallest
            }
        };
        limit.filter(|&l| l < UNLIMITED)
    }

    /// How the limit is enforced, for the record.
    pub fn enforced_by(&self) -> String {
        match self.version {
            Version::V1 => {
                let swap = match number(&self.dir.join("memory.memsw.limit_in_bytes")) {
                    Some(memsw) if Some(memsw) == number(&self.dir.join("memory.limit_in_bytes")) => "swap off (memory.memsw.limit_in_bytes equal to it)",
                    _ if machine_has_no_swap() => "no swap on this machine",
                    _ => "swap NOT limited",
                };
                format!("cgroup v1 memory.limit_in_bytes of {}, page cache charged to it; {swap}", self.path)
            }
            Version::V2 => {
                let swap = match fs::read_to_string(self.dir.join("memory.swap.max")).map(|s| s.trim().to_string()) {
                    Ok(max) if max == "0" => "swap off (memory.swap.max 0)",
                    _ if machine_has_no_swap() => "no swap on this machine",
                    _ => "swap NOT limited",
                };
                format!("cgroup v2 memory.max of {}, page cache charged to it; {swap}", self.path)
            }
        }
    }

    /// The counters as of now; whatever the kernel does not offer is None.
    pub fn counters(&self) -> MemoryCounters {
        let stat = self.dir.join("memory.stat");
        match self.version {
            Version::V1 => MemoryCounters {
                usage_bytes: number(&self.dir.join("memory.usage_in_bytes")),
                peak_bytes: number(&self.dir.join("memory.max_usage_in_bytes")),
                limit_hits: number(&self.dir.join("memory.failcnt")),
                oom_kills: stat_field(&self.dir.join("memory.oom_control"), "oom_kill"),
                refaults: sum(&[stat_field(&stat, "total_workingset_refault_file"), stat_field(&stat, "total_workingset_refault_anon")])
                    .or_else(|| stat_field(&stat, "total_workingset_refault")),
                major_faults: stat_field(&stat, "total_pgmajfault"),
                read_bytes: self.io_dir.as_deref().and_then(|io| blkio_read_bytes(&io.join("blkio.throttle.io_service_bytes_recursive"))),
            },
            Version::V2 => {
                let events = self.dir.join("memory.events");
                MemoryCounters {
                    usage_bytes: number(&self.dir.join("memory.current")),
                    peak_bytes: number(&self.dir.join("memory.peak")),
                    limit_hits: stat_field(&events, "max"),
                    oom_kills: stat_field(&events, "oom_kill"),
                    refaults: sum(&[stat_field(&stat, "workingset_refault_file"), stat_field(&stat, "workingset_refault_anon")]),
                    major_faults: stat_field(&stat, "pgmajfault"),
                    read_bytes: self.io_dir.as_deref().and_then(|io| io_stat_read_bytes(&io.join("io.stat"))),
                }
            }
        }
    }
}

/// Fills what the kernel counted over the runs into `limit` (read again from
/// the cgroup it names; left None when that is gone).
pub fn count_over_runs(limit: &mut crate::record::MemoryLimit) {
    limit.over_runs = MemoryCgroup::at(limit.cgroup_version, &limit.cgroup).map(|c| c.counters().since(&limit.before_runs));
}

/// Makes `command`'s process move itself into the cgroups `folders` between
/// fork and exec, so everything it starts runs there too.
pub(crate) fn enter_on_spawn(folders: &[PathBuf], command: &mut std::process::Command) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::process::CommandExt as _;
    let files = folders.iter().map(|f| fs::OpenOptions::new().write(true).open(f.join("cgroup.procs"))).collect::<std::io::Result<Vec<_>>>()?;
    // SAFETY: between fork and exec only write(2), async-signal-safe, is
    // called, on files opened before the fork; "0" names the writer itself.
    unsafe {
        command.pre_exec(move || {
            for file in &files {
                if libc::write(file.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

/// The process that made the cgroup `<prefix>-<pid>-<n>` (`polars-4242-0`).
pub(crate) fn owner_pid(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?.strip_prefix('-')?.split('-').next()?.parse().ok()
}

/// Removes the memory cgroups `ghbench/<prefix>-<pid>-<n>` a process that
/// has ended left (a ghbench killed while its polars workers ran under a
/// limit): empty, but their limits would be taken for a live run's. One
/// still holding a process stays (the kernel refuses to remove it).
pub fn remove_abandoned(prefix: &str) {
    let mounts = Mounts::read();
    let Some((_, root)) = mounts.memory() else { return };
    let Ok(entries) = fs::read_dir(root.join("ghbench")) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if owner_pid(&name, prefix).is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

pub(crate) fn write(path: &Path, value: &str) -> std::io::Result<()> {
    fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

fn number(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `key value` lines (memory.stat, memory.events, memory.oom_control).
fn stat_field(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

fn sum(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().flatten().copied().reduce(|a, b| a + b)
}

/// v1 `8:0 Read 4096` lines, summed over devices (not the `Total` line).
/// None when no device is listed: kernels that count only throttled groups
/// write `Total 0` alone, which is not "nothing read".
fn blkio_read_bytes(path: &Path) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    let reads: Vec<u64> = text.lines().filter_map(|l| l.split_whitespace().collect::<Vec<_>>().get(1..3).filter(|kv| kv[0] == "Read").and_then(|kv| kv[1].parse().ok())).collect();
    (!reads.is_empty()).then(|| reads.iter().sum())
}

/// v2 `8:0 rbytes=4096 wbytes=0 …` lines, summed over devices.
fn io_stat_read_bytes(path: &Path) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    Some(text.split_whitespace().filter_map(|field| field.strip_prefix("rbytes=")?.parse::<u64>().ok()).sum())
}

fn machine_has_no_swap() -> bool {
    fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As root: the memory cgroup a process that has ended left is removed,
    /// one of a live process kept, another prefix's left alone.
    #[test]
    fn a_cgroup_whose_maker_has_ended_is_removed_and_a_live_one_kept() {
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let gone = ended.id();
        ended.wait().unwrap();
        let prefix = format!("unit{}", std::process::id());
        let (Ok(dead), Ok(live)) = (MemoryCgroup::create(&format!("{prefix}-{gone}-0"), 64 << 20), MemoryCgroup::create(&format!("{prefix}-{}-0", std::process::id()), 64 << 20)) else {
            eprintln!("SKIPPED: no memory cgroup can be made here (root and a memory controller)");
            return;
        };
        assert!(dead.dir.is_dir() && live.dir.is_dir());
        remove_abandoned("other");
        assert!(dead.dir.is_dir(), "another prefix's left alone");
        remove_abandoned(&prefix);
        assert!(!dead.dir.exists(), "its maker ended: removed");
        assert!(live.dir.is_dir(), "its maker runs: kept");
        live.remove();
        dead.remove();
        assert_eq!(owner_pid("polars-io-12-0", "polars"), None, "polars-io's are not polars'");
        assert_eq!(owner_pid("polars-12-3", "polars"), Some(12));
    }

    #[test]
    fn this_process_s_cgroup_is_found_and_read() {
        let Ok(mine) = MemoryCgroup::of_process(std::process::id()) else {
            eprintln!("SKIPPED: no memory cgroup here");
            return;
        };
        let counters = mine.counters();
        assert!(counters.usage_bytes.is_some_and(|u| u > 0), "{mine:?}: {counters:?}");
        assert!(mine.path.starts_with('/'), "{}", mine.path);
    }
}

//! Disk limits the kernel enforces (`--disk`): the block device under a
//! server's data, the throttle rules of the cgroup a process's block I/O is
//! counted in (v1 `blkio.throttle.*`, v2 `io.max`), and what it counted.
//!
//! Why: beyond memory the disk sets the pace, and the paper's disk was not
//! this machine's. Its data sat on EBS io1 volumes of 1,000 or 5,000
//! provisioned IOPS, where a bitmap heap scan's scattered reads (Query A)
//! cost what the IOPS allow; this machine's disk reads about 8,000 random
//! pages a second. A throttle on the cgroup the server runs in makes the
//! kernel hold its reads to the paper's rate, as a memory limit holds its cache.
//!
//! `scripts/setup.sh` sets the rules when it starts a server (`GHBENCH_DISK`,
//! the text [`setup_text`] writes); this module parses `--disk`, finds the
//! device and reads the rules and counters back for the record.

use std::fs;
use std::path::{Path, PathBuf};

pub use ghbench_record::run::{CgroupVersion as Version, DiskLimit, DiskRules, IoCounters};

use crate::cgroup::write;

/// The most operations a second a throttle takes: cgroup v1 stores them in
/// 32 bits, so a larger number would wrap to a small one.
pub const MOST_IOPS: u64 = u32::MAX as u64;

/// `--disk riops=1000,rbps=437MB`: each key as the kernel's v2 `io.max`
/// names it (riops, rbps, wiops, wbps), a count of operations or a size a
/// second (`437MB`, `437MB/s`), comma- or space-separated.
/// The least bandwidth a throttle may leave (read or write): a server
/// restarted under it reads its own program through it (PostgreSQL's is
/// 9 MB), so less would stall its start for minutes; a trial's 512 B/s
/// never let it start at all.
pub const LEAST_RATE: u64 = 1_000_000;

/// Why a rate under [`LEAST_RATE`] is refused.
pub fn too_slow() -> String {
    "under 1 MB a second a server restarted under the throttle reads its own program for minutes (PostgreSQL's is 9 MB), and may never start".into()
}

pub fn parse_rules(text: &str) -> Result<DiskRules, String> {
    let mut rules = DiskRules::default();
    let example = "write the limits as riops=N, rbps=SIZE, wiops=N, wbps=SIZE, e.g. --disk riops=1000,rbps=437MB";
    for part in text.split([',', ' ']).map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').ok_or_else(|| format!("'{part}' is not a disk limit: {example}"))?;
        if value.contains('=') {
            return Err(format!("'{part}': separate the limits with commas, e.g. --disk riops=1000,rbps=437MB"));
        }
        let count = || -> Result<u64, String> {
            match value.trim().parse::<u64>() {
                // cgroup v1 keeps them in 32 bits: more would wrap, not free the disk.
                Ok(n) if n > 0 && n <= MOST_IOPS => Ok(n),
                _ => Err(format!("{key}={value}: operations a second are a whole number from 1 to {MOST_IOPS}")),
            }
        };
        let rate = || -> Result<u64, String> {
            let size = value.trim().trim_end_matches("/s");
            match ghbench_core::size::parse_size(size) {
                Ok(bytes) if bytes >= LEAST_RATE => Ok(bytes),
                Ok(_) => Err(format!("{key}={value}: {}; give a size with its unit, e.g. 437MB", too_slow())),
                Err(e) => Err(format!("{key}={value}: {e}")),
            }
        };
        let slot = match key.trim() {
            "riops" => (&mut rules.read_iops, count()?),
            "rbps" => (&mut rules.read_bytes_per_second, rate()?),
            "wiops" => (&mut rules.write_iops, count()?),
            "wbps" => (&mut rules.write_bytes_per_second, rate()?),
            other => return Err(format!("'{other}' is not a disk limit: {example}")),
        };
        if slot.0.replace(slot.1).is_some() {
            return Err(format!("{key} is given twice"));
        }
    }
    if rules.is_empty() {
        return Err(format!("no disk limit given: {example}"));
    }
    Ok(rules)
}

/// The rules as `scripts/setup.sh` takes them in `GHBENCH_DISK`: `riops=1000 rbps=437000000`.
pub fn setup_text(rules: &DiskRules) -> String {
    keyed(rules).iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>().join(" ")
}

fn keyed(rules: &DiskRules) -> Vec<(&'static str, u64)> {
    [("riops", rules.read_iops), ("rbps", rules.read_bytes_per_second), ("wiops", rules.write_iops), ("wbps", rules.write_bytes_per_second)]
        .into_iter()
        .filter_map(|(key, value)| Some((key, value?)))
        .collect()
}

/// A whole block device (a throttle is set on a disk, not a partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    pub major: u32,
    pub minor: u32,
    /// As the kernel names it (`vda`, `nvme0n1`, `dm-0`).
    pub name: String,
}

impl BlockDevice {
    /// The disk `path` is stored on; Err says why there is none to throttle
    /// (a tmpfs, an overlay or a network filesystem has no block device of its own).
    pub fn under(path: &Path) -> Result<BlockDevice, String> {
        use std::os::unix::fs::MetadataExt as _;
        let (mut major, mut minor) = device_numbers(fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.dev());
        if major == 0 {
            // btrfs (and other filesystems on a device of their own numbering)
            // reports an anonymous device: its mount's source names the disk.
            let mount = mount_of(major, minor);
            match mount.as_ref().and_then(|m| block_source(&m.source)) {
                Some(numbers) => (major, minor) = numbers,
                None => {
                    let (fs_type, mounted_at) = mount.map_or_else(|| ("an unknown filesystem".into(), "?".into()), |m| (m.fs_type, m.mounted_at));
                    return Err(format!(
                        "{} is on {fs_type} (mounted at {mounted_at}), which no block device holds: a disk limit throttles the reads of a block device; keep the servers' data on a disk (GHBENCH_HOME on one)",
                        path.display()
                    ));
                }
            }
        }
        let sys = fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).map_err(|e| format!("{}: the block device {major}:{minor} is not in /sys/dev/block: {e}", path.display()))?;
        // A partition's folder sits in its disk's.
        let disk = match sys.join("partition").exists() {
            true => sys.parent().map(Path::to_path_buf).unwrap_or(sys),
            false => sys,
        };
        let numbers = fs::read_to_string(disk.join("dev")).map_err(|e| format!("{}: {e}", disk.join("dev").display()))?;
        let (major, minor) = numbers.trim().split_once(':').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))).ok_or_else(|| format!("{}: '{}' is no device number", disk.display(), numbers.trim()))?;
        let name = disk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(BlockDevice { major, minor, name })
    }

    pub fn number(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }

    /// `254:0 (vda)`.
    pub fn said(&self) -> String {
        format!("{} ({})", self.number(), self.name)
    }
}

/// A device number's major and minor, as glibc's major(3) and minor(3).
fn device_numbers(dev: u64) -> (u32, u32) {
    ((((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32, ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32)
}

/// A mount, from `/proc/self/mountinfo`.
struct Mount {
    fs_type: String,
    mounted_at: String,
    /// What was mounted: `/dev/sda2`, `tmpfs`, `server:/export`.
    source: String,
}

/// The mount of device `major:minor`.
fn mount_of(major: u32, minor: u32) -> Option<Mount> {
    let infos = procfs::process::Process::myself().ok()?.mountinfo().ok()?;
    let info = infos.into_iter().find(|i| i.majmin == format!("{major}:{minor}"))?;
    Some(Mount { fs_type: info.fs_type, mounted_at: info.mount_point.display().to_string(), source: info.mount_source.unwrap_or_default() })
}

/// The device numbers of a mount's source when it is a block device node
/// (`/dev/sda2`); None for `tmpfs`, `overlay`, a network share.
fn block_source(source: &str) -> Option<(u32, u32)> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let node = fs::metadata(source).ok().filter(|m| m.file_type().is_block_device())?;
    Some(device_numbers(node.rdev()))
}

/// The cgroup a process's block I/O is throttled and counted in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoCgroup {
    pub version: Version,
    /// Its path below its hierarchy's root (`/ghbench/1a2b-postgres`).
    pub path: String,
    dir: PathBuf,
}

/// Where block I/O is controlled on this machine: v1's blkio hierarchy,
/// else v2's where it offers `io`.
fn io_hierarchy() -> Option<(Version, PathBuf)> {
    crate::cgroup::Mounts::read().io()
}

/// Why a disk limit cannot be made or read here; each says what to do.
pub const NO_CONTROLLER: &str = "this machine has no cgroup block I/O controller mounted (no cgroup v1 'blkio' hierarchy, no cgroup v2 offering 'io' in /proc/self/mountinfo): a disk limit needs one; on Linux mount it, or in a container run with the host's cgroups";

impl IoCgroup {
    /// The cgroup process `pid`'s block I/O is counted in.
    pub fn of_process(pid: u32) -> Result<IoCgroup, String> {
        let (version, root) = io_hierarchy().ok_or(NO_CONTROLLER)?;
        let cgroups = procfs::process::Process::new(pid as i32).and_then(|p| p.cgroups()).map_err(|e| format!("/proc/{pid}/cgroup: {e}"))?;
        let path = match version {
            Version::V1 => cgroups.0.iter().find(|c| c.controllers.iter().any(|n| n == "blkio")).map(|c| c.pathname.clone()),
            Version::V2 => cgroups.0.iter().find(|c| c.hierarchy == 0).map(|c| c.pathname.clone()),
        }
        .ok_or_else(|| format!("process {pid} is in no block I/O cgroup"))?;
        Ok(IoCgroup { version, dir: root.join(path.trim_start_matches('/')), path })
    }

    /// The cgroup a record names, to read it again (None: gone).
    pub fn at(version: Version, path: &str) -> Option<IoCgroup> {
        let (mounted, root) = io_hierarchy()?;
        let dir = root.join(path.trim_start_matches('/'));
        (mounted == version && dir.is_dir()).then(|| IoCgroup { version, path: path.to_string(), dir })
    }

    /// Makes (or takes again) `ghbench/<name>` for processes ghbench starts
    /// (polars' workers), with no rules yet.
    pub fn create(name: &str) -> Result<IoCgroup, String> {
        let (version, root) = io_hierarchy().ok_or(NO_CONTROLLER)?;
        let path = format!("/ghbench/{name}");
        let dir = root.join(path.trim_start_matches('/'));
        let refused = |e: std::io::Error| format!("cannot make the block I/O cgroup {path}: {e}; a disk limit needs root (run ghbench as root, e.g. with sudo) or a cgroup delegated to this user");
        if version == Version::V2 {
            // A v2 child gets a controller only when every parent hands it down.
            for parent in [root.clone(), root.join("ghbench")] {
                fs::create_dir_all(&parent).map_err(refused)?;
                write(&parent.join("cgroup.subtree_control"), "+io").map_err(|e| match e.kind() {
                    std::io::ErrorKind::PermissionDenied => refused(e),
                    _ => format!("cannot hand the io controller down to {}: {e}", parent.display()),
                })?;
            }
        }
        fs::create_dir_all(&dir).map_err(refused)?;
        let cgroup = IoCgroup { version, path, dir };
        cgroup.clear();
        Ok(cgroup)
    }

    /// Sets `rules` on `device`, every other rule of this cgroup cleared.
    pub fn set(&self, device: &BlockDevice, rules: &DiskRules) -> Result<(), String> {
        self.clear();
        let failed = |e: std::io::Error| format!("cannot set the disk limit {} on {} in {}: {e}", rules.said(), device.said(), self.path);
        match self.version {
            Version::V1 => {
                for (key, value) in keyed(rules) {
                    write(&self.dir.join(v1_file(key)), &format!("{} {value}", device.number())).map_err(failed)?;
                }
            }
            Version::V2 => write(&self.dir.join("io.max"), &format!("{} {}", device.number(), setup_text(rules))).map_err(failed)?,
        }
        Ok(())
    }

    /// Every rule of this cgroup removed (best effort: the next read says what stayed).
    pub fn clear(&self) {
        for (device, _) in self.rules() {
            match self.version {
                Version::V1 => {
                    for key in ["riops", "rbps", "wiops", "wbps"] {
                        let _ = write(&self.dir.join(v1_file(key)), &format!("{device} 0"));
                    }
                }
                Version::V2 => {
                    let _ = write(&self.dir.join("io.max"), &format!("{device} riops=max rbps=max wiops=max wbps=max"));
                }
            }
        }
    }

    /// Removes the cgroup once nothing runs in it (best effort).
    pub fn remove(&self) {
        self.clear();
        let _ = fs::remove_dir(&self.dir);
    }

    /// Makes `command`'s process start inside this cgroup (see
    /// `MemoryCgroup::enter_on_spawn`, which this mirrors).
    pub fn enter_on_spawn(&self, command: &mut std::process::Command) -> std::io::Result<()> {
        crate::cgroup::enter_on_spawn(std::slice::from_ref(&self.dir), command)
    }

    /// The rules in force, by device (`254:0`).
    pub fn rules(&self) -> Vec<(String, DiskRules)> {
        let mut by_device: Vec<(String, DiskRules)> = Vec::new();
        fn of<'a>(by_device: &'a mut Vec<(String, DiskRules)>, device: &str) -> &'a mut DiskRules {
            let at = match by_device.iter().position(|(d, _)| d == device) {
                Some(at) => at,
                None => {
                    by_device.push((device.to_string(), DiskRules::default()));
                    by_device.len() - 1
                }
            };
            &mut by_device[at].1
        }
        match self.version {
            Version::V1 => {
                for key in ["riops", "rbps", "wiops", "wbps"] {
                    let text = fs::read_to_string(self.dir.join(v1_file(key))).unwrap_or_default();
                    for line in text.lines() {
                        let mut fields = line.split_whitespace();
                        if let (Some(device), Some(Ok(value))) = (fields.next(), fields.next().map(str::parse::<u64>)) {
                            set_key(of(&mut by_device, device), key, value);
                        }
                    }
                }
            }
            Version::V2 => {
                let text = fs::read_to_string(self.dir.join("io.max")).unwrap_or_default();
                for line in text.lines() {
                    let mut fields = line.split_whitespace();
                    let Some(device) = fields.next() else { continue };
                    for field in fields {
                        if let Some((key, Ok(value))) = field.split_once('=').map(|(k, v)| (k, v.parse::<u64>())) {
                            set_key(of(&mut by_device, device), key, value);
                        }
                    }
                }
            }
        }
        by_device.retain(|(_, rules)| !rules.is_empty());
        by_device
    }

    /// The limit in force on this cgroup, with the counters as of now, for
    /// the record (None: no rule).
    pub fn limit(&self) -> Option<DiskLimit> {
        let (device, rules) = self.rules().into_iter().next()?;
        let named = fs::canonicalize(format!("/sys/dev/block/{device}")).ok().and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
        Some(DiskLimit {
            cgroup_version: self.version,
            cgroup: self.path.clone(),
            device: named.map_or(device.clone(), |name| format!("{device} ({name})")),
            enforced_by: self.enforced_by(&rules),
            before_runs: self.counters(&device),
            rules,
            over_runs: None,
            nodes: Vec::new(),
        })
    }

    /// The kernel files that hold `rules`, and what they leave free.
    fn enforced_by(&self, rules: &DiskRules) -> String {
        match self.version {
            Version::V1 => {
                let files: Vec<&str> = keyed(rules).iter().map(|(key, _)| v1_file(key)).collect();
                let writes = match rules.write_iops.is_some() || rules.write_bytes_per_second.is_some() {
                    true => "; v1 throttles only writes its processes issue themselves (direct I/O, fsync), not the kernel's writeback of their buffered writes",
                    false => "; writes not limited",
                };
                format!("cgroup v1 {} of {}{writes}", files.join(" and "), self.path)
            }
            Version::V2 => format!("cgroup v2 io.max of {}", self.path),
        }
    }

    /// What the kernel counted on `device` (`254:0`).
    pub fn counters(&self, device: &str) -> IoCounters {
        match self.version {
            Version::V1 => {
                let of = |file: &str, op: &str| {
                    let text = fs::read_to_string(self.dir.join(file)).ok()?;
                    text.lines().find_map(|line| {
                        let fields: Vec<&str> = line.split_whitespace().collect();
                        (fields.len() == 3 && fields[0] == device && fields[1] == op).then(|| fields[2].parse().ok()).flatten()
                    })
                };
                IoCounters {
                    read_bytes: of("blkio.throttle.io_service_bytes_recursive", "Read"),
                    reads: of("blkio.throttle.io_serviced_recursive", "Read"),
                    written_bytes: of("blkio.throttle.io_service_bytes_recursive", "Write"),
                    writes: of("blkio.throttle.io_serviced_recursive", "Write"),
                }
            }
            Version::V2 => {
                let text = fs::read_to_string(self.dir.join("io.stat")).unwrap_or_default();
                let line = text.lines().find(|l| l.split_whitespace().next() == Some(device));
                let of = |key: &str| line?.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('=')?.parse().ok());
                // A device with no I/O yet has no line: nothing counted is 0.
                let zero = |n: Option<u64>| n.or(line.is_none().then_some(0));
                IoCounters { read_bytes: zero(of("rbytes")), reads: zero(of("rios")), written_bytes: zero(of("wbytes")), writes: zero(of("wios")) }
            }
        }
    }
}

/// Removes the cgroups `ghbench/<prefix>-<pid>-<n>` a process that has
/// ended left (a ghbench killed under `--disk`): their rules would outlive it.
pub fn remove_abandoned(prefix: &str) {
    let Some((version, root)) = io_hierarchy() else { return };
    let Ok(entries) = fs::read_dir(root.join("ghbench")) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = crate::cgroup::owner_pid(&name, prefix) else { continue };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            IoCgroup { version, path: format!("/ghbench/{name}"), dir: entry.path() }.remove();
        }
    }
}

/// Fills what the kernel counted over the runs into `limit` (read again from
/// the cgroup it names; left None when that is gone). Of a server of several
/// nodes, each node's, and their sum.
pub fn count_over_runs(limit: &mut DiskLimit) {
    if !limit.nodes.is_empty() {
        for node in limit.nodes.iter_mut().filter_map(|n| n.limit.as_mut()) {
            count_over_runs(node);
        }
        return limit.sum_nodes_over_runs();
    }
    let device = limit.device.split_whitespace().next().unwrap_or_default().to_string();
    limit.over_runs = IoCgroup::at(limit.cgroup_version, &limit.cgroup).map(|c| c.counters(&device).since(&limit.before_runs));
}

fn v1_file(key: &str) -> &'static str {
    match key {
        "riops" => "blkio.throttle.read_iops_device",
        "rbps" => "blkio.throttle.read_bps_device",
        "wiops" => "blkio.throttle.write_iops_device",
        _ => "blkio.throttle.write_bps_device",
    }
}

fn set_key(rules: &mut DiskRules, key: &str, value: u64) {
    let slot = match key {
        "riops" => &mut rules.read_iops,
        "rbps" => &mut rules.read_bytes_per_second,
        "wiops" => &mut rules.write_iops,
        "wbps" => &mut rules.write_bytes_per_second,
        _ => return,
    };
    *slot = Some(value);
}


#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback btrfs takes (its files report an anonymous device):
    /// a mount's source resolved to the device numbers its files report on
    /// a filesystem that reports its own, here the root's.
    #[test]
    fn a_mount_source_resolves_to_its_block_device_and_a_tmpfs_to_none() {
        use std::os::unix::fs::MetadataExt as _;
        let infos = procfs::process::Process::myself().unwrap().mountinfo().unwrap();
        let (major, minor) = device_numbers(fs::metadata("/").unwrap().dev());
        let root = infos.iter().find(|i| i.mount_point == Path::new("/")).unwrap();
        match root.mount_source.as_deref().and_then(block_source) {
            Some(numbers) => assert_eq!(numbers, (major, minor), "{:?}", root.mount_source),
            // A root on overlay (a container) has no device node to resolve.
            None => assert_eq!(major, 0, "a root on a block device resolves: {:?}", root.mount_source),
        }
        assert_eq!(block_source("tmpfs"), None);
        assert_eq!(block_source("/dev/null"), None, "a character device is not a disk");
    }

    #[test]
    fn disk_limits_are_read_with_their_units_and_written_for_setup() {
        let rules = parse_rules("riops=1000, rbps=437MB/s").unwrap();
        assert_eq!((rules.read_iops, rules.read_bytes_per_second, rules.write_iops), (Some(1000), Some(437_000_000), None));
        assert_eq!(setup_text(&rules), "riops=1000 rbps=437000000");
        assert_eq!(rules.said(), "1,000 read IOPS, 437 MB/s read");
        for bad in ["riops=4294967296", "", "riops", "riops=0", "riops=1k", "rbps=12", "rbps=512KB", "iops=5", "riops=5,riops=6"] {
            assert!(parse_rules(bad).is_err(), "{bad}");
        }
        assert!(parse_rules("rbps=512KB").unwrap_err().contains("may never start"));
        assert!(parse_rules("riops=1000;rbps=20MB").unwrap_err().contains("separate the limits with commas"));
    }

    /// As root: rules set on a cgroup of its own are read back as set, then cleared.
    #[test]
    fn rules_set_on_a_cgroup_are_read_back_and_cleared() {
        let Ok(cgroup) = IoCgroup::create(&format!("unit-{}", std::process::id())) else {
            eprintln!("SKIPPED: no block I/O cgroup can be made here (root and a blkio or io controller)");
            return;
        };
        let Ok(device) = BlockDevice::under(Path::new(env!("CARGO_MANIFEST_DIR"))) else {
            cgroup.remove();
            eprintln!("SKIPPED: the checkout is on no block device");
            return;
        };
        let rules = parse_rules("riops=1000,rbps=437MB").unwrap();
        cgroup.set(&device, &rules).unwrap();
        assert_eq!(cgroup.rules(), vec![(device.number(), rules.clone())]);
        let limit = cgroup.limit().unwrap();
        assert_eq!((limit.rules, limit.device.starts_with(&device.number())), (rules, true), "{}", limit.enforced_by);
        cgroup.clear();
        assert_eq!(cgroup.rules(), Vec::new());
        cgroup.remove();
        assert!(IoCgroup::at(cgroup.version, &cgroup.path).is_none(), "removed");
    }

    /// cgroup v2, which this machine's kernel (v1) cannot show: rules and
    /// counters read from `io.max` and `io.stat` shaped as the kernel's
    /// documentation shows them (Documentation/admin-guide/cgroup-v2.rst,
    /// "IO Interface Files"), and the line `set` writes there.
    #[test]
    fn v2_rules_and_counters_read_as_the_kernel_documents_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let cgroup = IoCgroup { version: Version::V2, path: "/ghbench/unit".into(), dir: dir.path().to_path_buf() };
        // `max` is no limit; a device appears once a rule was set on it.
        fs::write(dir.path().join("io.max"), "8:16 rbps=2097152 wbps=max riops=max wiops=120\n").unwrap();
        let stat = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n";
        fs::write(dir.path().join("io.stat"), stat).unwrap();
        let expected = DiskRules { read_bytes_per_second: Some(2_097_152), write_iops: Some(120), ..DiskRules::default() };
        assert_eq!(cgroup.rules(), vec![("8:16".to_string(), expected)]);
        let counted = cgroup.counters("8:16");
        assert_eq!((counted.read_bytes, counted.reads, counted.written_bytes, counted.writes), (Some(1_459_200), Some(192), Some(314_773_504), Some(353)));
        // A device with no line has had no I/O: nothing counted is 0, not unknown.
        let none = cgroup.counters("8:32");
        assert_eq!((none.read_bytes, none.reads), (Some(0), Some(0)));
        assert!(cgroup.enforced_by(&DiskRules::default()).starts_with("cgroup v2 io.max"));
        // What `set` writes: one line, the device and its keys, as the kernel
        // takes it (a plain file, emptied first: the kernel's replaces a rule
        // where a file's write overwrites its start).
        fs::write(dir.path().join("io.max"), "").unwrap();
        let device = BlockDevice { major: 8, minor: 16, name: "sdb".into() };
        cgroup.set(&device, &parse_rules("riops=1000,rbps=437MB").unwrap()).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("io.max")).unwrap().trim_end(), "8:16 riops=1000 rbps=437000000");
        assert_eq!(cgroup.rules()[0].1.read_iops, Some(1000));
        // `clear` sets every key of the device back to `max`: no rule left.
        cgroup.clear();
        assert_eq!(fs::read_to_string(dir.path().join("io.max")).unwrap(), "8:16 riops=max rbps=max wiops=max wbps=max");
        assert_eq!(cgroup.rules(), Vec::new());
    }

    #[test]
    fn a_tmpfs_has_no_block_device_to_throttle() {
        if !Path::new("/dev/shm").is_dir() {
            eprintln!("SKIPPED: no /dev/shm");
            return;
        }
        let error = BlockDevice::under(Path::new("/dev/shm")).unwrap_err();
        assert!(error.contains("tmpfs") && error.contains("no block device"), "{error}");
    }
}

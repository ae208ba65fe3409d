//! The disk under a folder, and how fast it reads in sequence: beyond memory
//! a query's time follows the disk (the paper ran on provisioned EBS), so a
//! run whose data outgrows memory records which disk and a measured speed.
//!
//! The speed is measured, not looked up: a file of [`PROBE_BYTES`] written in
//! the folder, synced, dropped from the page cache (`posix_fadvise
//! DONTNEED`, which needs no root) and read back in 1 MiB blocks, timed. One
//! sequential read of one file: the best case of the scans Queries B–D make,
//! not a benchmark of the disk.

use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::time::Instant;


/// The probe's size: more than a disk's own cache, little enough to take
/// seconds on a slow disk.
pub const PROBE_BYTES: u64 = 256 << 20;
const BLOCK: usize = 1 << 20;

pub use ghbench_record::run::Disk;

/// The disk under `folder`, its speed measured there.
pub fn measure(folder: &Path) -> Disk {
    let (device, block) = mounted_from(folder).unwrap_or((None, None));
    let (model, rotational) = block.as_deref().map(block_device).unwrap_or((None, None));
    let (rate, error) = match read_speed(folder) {
        Ok(rate) => (Some(rate), None),
        Err(e) => (None, Some(e)),
    };
    Disk {
        folder: folder.display().to_string(),
        device,
        model,
        rotational,
        sequential_read_bytes_per_second: rate,
        measured_with: format!(
            "a {} file written there, synced, dropped from the page cache (posix_fadvise DONTNEED) and read back in 1 MiB blocks",
            ghbench_core::size::said(PROBE_BYTES)
        ),
        error,
    }
}

/// The mount holding `folder`: its source and filesystem, and its block
/// device's `major:minor`.
fn mounted_from(folder: &Path) -> Option<(Option<String>, Option<String>)> {
    let folder = folder.canonicalize().ok()?;
    let mounts = procfs::process::Process::myself().ok()?.mountinfo().ok()?;
    let mount = mounts.into_iter().filter(|m| folder.starts_with(&m.mount_point)).max_by_key(|m| m.mount_point.as_os_str().len())?;
    let source = mount.mount_source.clone().unwrap_or_else(|| "?".into());
    Some((Some(format!("{source} ({})", mount.fs_type)), Some(mount.majmin.clone())))
}

/// A block device's model and whether it spins, from `/sys/dev/block/<major:minor>`
/// (a partition's are its disk's).
fn block_device(majmin: &str) -> (Option<String>, Option<bool>) {
    let Ok(path) = std::fs::canonicalize(format!("/sys/dev/block/{majmin}")) else { return (None, None) };
    let disk = if path.join("partition").exists() { path.parent().map(Path::to_path_buf).unwrap_or(path) } else { path };
    let read = |file: &str| std::fs::read_to_string(disk.join(file)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let model = read("device/model").or_else(|| {
        // A virtio disk names no model: its driver says what it is.
        let driver = std::fs::read_link(disk.join("device/driver")).ok()?;
        Some(driver.file_name()?.to_string_lossy().into_owned())
    });
    (model, read("queue/rotational").map(|r| r == "1"))
}

fn read_speed(folder: &Path) -> Result<f64, String> {
    // Removed when dropped, however the measurement ends.
    let mut probe = tempfile::Builder::new().prefix(".ghbench-disk-probe-").tempfile_in(folder).map_err(|e| format!("making a file in {}: {e}", folder.display()))?;
    let path = probe.path().to_path_buf();
    let block = vec![0x5au8; BLOCK];
    for _ in 0..PROBE_BYTES / BLOCK as u64 {
        probe.write_all(&block).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    probe.as_file().sync_all().map_err(|e| format!("syncing {}: {e}", path.display()))?;
    // SAFETY: a plain call on an open descriptor of ours.
    let dropped = unsafe { libc::posix_fadvise(probe.as_file().as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if dropped != 0 {
        return Err(format!("posix_fadvise DONTNEED on {}: error {dropped}", path.display()));
    }
    let mut file = probe.reopen().map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut buffer = vec![0u8; BLOCK];
    let started = Instant::now();
    let mut read = 0u64;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => read += n as u64,
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if read != PROBE_BYTES || seconds <= 0.0 {
        return Err(format!("read {read} of {PROBE_BYTES} bytes back"));
    }
    Ok(read as f64 / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_under_a_folder_is_found_and_read_back_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let disk = measure(dir.path());
        assert_eq!(disk.error, None, "{disk:?}");
        assert!(disk.sequential_read_bytes_per_second.unwrap() > 0.0, "{disk:?}");
        assert!(disk.device.as_deref().is_some_and(|d| d.contains('(')), "the mount's source and filesystem: {disk:?}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "the probe is removed");
        assert!(disk.said().contains("MB/s sequential read, measured"), "{}", disk.said());
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_said_not_measured() {
        let disk = measure(Path::new("/proc"));
        assert!(disk.sequential_read_bytes_per_second.is_none() && disk.error.as_deref().is_some_and(|e| e.contains("making")), "{disk:?}");
        assert!(disk.said().contains("read speed not measured"), "{}", disk.said());
    }
}

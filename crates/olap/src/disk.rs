//! The disk under a folder, and how fast it reads in sequence: beyond memory
//! a query's time follows the disk (the paper ran on provisioned EBS), so a
//! run whose data outgrows memory records which disk and a measured speed.
//!
//! The speed is measured, not looked up: a file of [`PROBE_BYTES`] of
//! random bytes (a device that compresses or skips zeros reads no faster)
//! written in the folder, synced, dropped from the page cache
//! (`posix_fadvise DONTNEED`, which needs no root) and read back in 1 MiB
//! blocks, timed, [`SEQUENTIAL_READS`] times: the median is the speed, and
//! every read is kept. On a virtual disk the host's own cache serves the
//! later reads (here the first read after the write was 300–370 MB/s, the
//! next ones 1.7–1.9 GB/s): the spread says so where one figure would hide
//! it. Sequential reads of one file: the best case of the scans Queries B–D
//! make, not a benchmark of the disk.

use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::time::Instant;


/// The probe's size: more than a disk's own cache, little enough to take
/// seconds on a slow disk.
pub const PROBE_BYTES: u64 = 256 << 20;
const BLOCK: usize = 1 << 20;
/// How many times the probe is read in sequence (the median is the speed).
pub const SEQUENTIAL_READS: usize = 3;

pub use ghbench_record::run::Disk;

/// The disk under `folder`, its speed measured there.
pub fn measure(folder: &Path) -> Disk {
    let (device, block) = mounted_from(folder).unwrap_or((None, None));
    let (model, rotational) = block.as_deref().map(block_device).unwrap_or((None, None));
    let (rates, random, error) = match read_speed(folder) {
        Ok((rates, random)) => (rates, random, None),
        Err(e) => (Vec::new(), None, Some(e)),
    };
    Disk {
        folder: folder.display().to_string(),
        device,
        model,
        rotational,
        sequential_read_bytes_per_second: median(&rates),
        sequential_reads: rates,
        random_reads_per_second: random,
        measured_with: format!(
            "a {} file of random bytes written there, synced, then {SEQUENTIAL_READS} times dropped from the page cache (posix_fadvise DONTNEED) and read back in 1 MiB blocks (the median is the speed); \
             then dropped again and read {RANDOM_READS} pages of 8 KiB at random places, one at a time, read-ahead off (POSIX_FADV_RANDOM), \
             for at most {} s",
            ghbench_core::size::said(PROBE_BYTES),
            RANDOM_FOR.as_secs()
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

/// How many random page reads the probe makes at most, and for how long:
/// enough to average out a device's queue, little enough on a throttled or
/// spinning disk (100 reads a second: 2 s).
const RANDOM_READS: u64 = 4096;
const RANDOM_FOR: std::time::Duration = std::time::Duration::from_secs(2);
/// PostgreSQL's page.
const PAGE: u64 = 8192;

/// Drops `file`'s pages from the page cache (no root needed).
fn drop_cached(file: &std::fs::File, path: &Path) -> Result<(), String> {
    // SAFETY: a plain call on an open descriptor of ours.
    let dropped = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match dropped {
        0 => Ok(()),
        error => Err(format!("posix_fadvise DONTNEED on {}: error {error}", path.display())),
    }
}

/// Pages read a second at random places of `file` ([`PROBE_BYTES`] long,
/// not cached), one read at a time and no read-ahead: each read waits for
/// the device, as a bitmap heap scan's scattered pages do. The places are
/// distinct pages, drawn by a fixed xorshift (nothing here needs more).
fn random_reads(file: &std::fs::File, path: &Path) -> Result<f64, String> {
    use std::os::unix::fs::FileExt as _;
    // SAFETY: a plain call on an open descriptor of ours.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    if advised != 0 {
        return Err(format!("posix_fadvise RANDOM on {}: error {advised}", path.display()));
    }
    let pages = PROBE_BYTES / PAGE;
    let mut seen = std::collections::HashSet::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut page = vec![0u8; PAGE as usize];
    let started = Instant::now();
    while (seen.len() as u64) < RANDOM_READS && started.elapsed() < RANDOM_FOR {
        let at = xorshift(&mut state) % pages;
        if seen.insert(at) {
            file.read_exact_at(&mut page, at * PAGE).map_err(|e| format!("reading {} at page {at}: {e}", path.display()))?;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(seen.len() as f64 / seconds.max(f64::MIN_POSITIVE))
}

/// The middle of `rates` (the lower middle of an even count); None when empty.
fn median(rates: &[f64]) -> Option<f64> {
    let mut sorted = rates.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len().saturating_sub(1) / 2).copied()
}

/// Fills `block` with bytes of a fixed xorshift: nothing a device could
/// compress, and the same file every time.
fn fill(block: &mut [u8], state: &mut u64) {
    for chunk in block.chunks_mut(8) {
        chunk.copy_from_slice(&xorshift(state).to_le_bytes()[..chunk.len()]);
    }
}

/// The next number of a xorshift64 (nothing here needs more).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Bytes a second of each sequential read, and pages a second read at random.
fn read_speed(folder: &Path) -> Result<(Vec<f64>, Option<f64>), String> {
    // Removed when dropped, however the measurement ends.
    let mut probe = tempfile::Builder::new().prefix(".ghbench-disk-probe-").tempfile_in(folder).map_err(|e| format!("making a file in {}: {e}", folder.display()))?;
    let path = probe.path().to_path_buf();
    let mut block = vec![0u8; BLOCK];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..PROBE_BYTES / BLOCK as u64 {
        fill(&mut block, &mut state);
        probe.write_all(&block).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    probe.as_file().sync_all().map_err(|e| format!("syncing {}: {e}", path.display()))?;
    let mut rates = Vec::with_capacity(SEQUENTIAL_READS);
    for _ in 0..SEQUENTIAL_READS {
        drop_cached(probe.as_file(), &path)?;
        let mut file = probe.reopen().map_err(|e| format!("opening {}: {e}", path.display()))?;
        let started = Instant::now();
        let mut read = 0u64;
        loop {
            match file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => read += n as u64,
                Err(e) => return Err(format!("reading {}: {e}", path.display())),
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        if read != PROBE_BYTES || seconds <= 0.0 {
            return Err(format!("read {read} of {PROBE_BYTES} bytes back"));
        }
        rates.push(read as f64 / seconds);
    }
    let file = probe.as_file();
    drop_cached(file, &path)?;
    // A random-read rate that cannot be had leaves the sequential one standing.
    Ok((rates, random_reads(file, &path).ok()))
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
        assert!(disk.random_reads_per_second.unwrap() > 0.0, "{disk:?}");
        assert_eq!(disk.sequential_reads.len(), SEQUENTIAL_READS, "every read kept: {disk:?}");
        assert!(disk.sequential_reads.contains(&disk.sequential_read_bytes_per_second.unwrap()), "the speed is one of the reads: {disk:?}");
        assert!(disk.device.as_deref().is_some_and(|d| d.contains('(')), "the mount's source and filesystem: {disk:?}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "the probe is removed");
        assert!(disk.said().contains("; measured ") && disk.said().contains("MB/s sequential read (median of 3 reads: ") && disk.said().ends_with(" random 8 KiB reads/s one at a time"), "{}", disk.said());
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_said_not_measured() {
        let disk = measure(Path::new("/proc"));
        assert!(disk.sequential_read_bytes_per_second.is_none() && disk.error.as_deref().is_some_and(|e| e.contains("making")), "{disk:?}");
        assert!(disk.said().contains("read speed not measured"), "{}", disk.said());
    }
}

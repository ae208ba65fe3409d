//! Memory limits made and read through the kernel's cgroups, for real: a
//! process inside one is held under it, what it reads past it comes from disk,
//! and one that wants more is killed by the kernel, counted as an OOM kill.
//! Needs root and a memory controller (as `ghbench bench --memory` does);
//! elsewhere the error must say what is missing.

use std::io::Write as _;
use std::process::Command;

use ghbench_olap::cgroup::{CgroupError, MemoryCgroup};
use ghbench_testkit::host::is_root;

const LIMIT: u64 = 64 << 20;

/// A cgroup of the test's own, or None (said) where this machine cannot make one.
fn limited(test: &str) -> Option<MemoryCgroup> {
    match MemoryCgroup::create(&format!("test-{test}-{}", std::process::id()), LIMIT) {
        Ok(cgroup) => Some(cgroup),
        Err(e @ CgroupError::NoController) => {
            eprintln!("SKIPPED: {e}");
            None
        }
        Err(e) if !is_root() => {
            assert!(e.to_string().contains("needs root"), "without root the error says so: {e}");
            None
        }
        Err(e) => panic!("root could not make a cgroup: {e}"),
    }
}

fn run_inside(cgroup: &MemoryCgroup, program: &str, args: &[&str]) -> std::process::ExitStatus {
    let mut command = Command::new(program);
    command.args(args).stdout(std::process::Stdio::null());
    cgroup.enter_on_spawn(&mut command).unwrap();
    command.status().unwrap()
}

#[test]
fn a_process_inside_is_held_under_the_limit_and_reads_the_rest_from_disk() {
    let Some(cgroup) = limited("reads") else { return };
    assert_eq!(cgroup.limit(), Some(LIMIT), "{}", cgroup.enforced_by());
    assert!(cgroup.enforced_by().contains("page cache charged to it"), "{}", cgroup.enforced_by());
    // A file twice the limit, not in the page cache: reading it twice inside
    // the limit cannot keep it, so both reads come from disk.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("big");
    let mut out = std::fs::File::create(&file).unwrap();
    let block = vec![7u8; 1 << 20];
    for _ in 0..((2 * LIMIT) >> 20) {
        out.write_all(&block).unwrap();
    }
    out.sync_all().unwrap();
    drop(out);
    let _ = Command::new("sync").status();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3\n");
    let before = cgroup.counters();
    for _ in 0..2 {
        assert!(run_inside(&cgroup, "cat", &[file.to_str().unwrap()]).success());
    }
    let grew = cgroup.counters().since(&before);
    cgroup.remove();
    let peak = grew.peak_bytes.expect("the kernel keeps a peak");
    assert!(peak <= LIMIT + ghbench_olap::cgroup::FORCED_CHARGE_SLACK, "the peak {peak} stayed under the limit {LIMIT}");
    assert!(grew.limit_hits.unwrap_or(0) > 0 || grew.refaults.unwrap_or(0) > 0, "the limit was reached: {grew:?}");
    // Pages read again after the limit pushed them out; bytes from disk
    // where this kernel counts them per cgroup (v1 counts only throttled ones).
    assert!(grew.major_faults.is_some() && grew.refaults.is_some(), "{grew:?}");
    if let Some(read) = grew.read_bytes {
        assert!(read >= 2 * LIMIT, "both reads of {} bytes came from disk: {read}", 2 * LIMIT);
    }
}

#[test]
fn a_process_that_wants_more_is_killed_and_counted_as_an_oom_kill() {
    let Some(cgroup) = limited("oom") else { return };
    let before = cgroup.counters();
    // Four times the limit, touched page by page: no page cache to drop, no swap.
    let status = run_inside(&cgroup, "python3", &["-c", "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1"]);
    let grew = cgroup.counters().since(&before);
    cgroup.remove();
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "the kernel killed it: {status:?}");
    assert_eq!(grew.oom_kills, Some(1), "counted as one OOM kill: {grew:?}");
}

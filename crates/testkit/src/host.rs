//! This machine, as tests that start servers of their own see it.

use std::collections::HashSet;
use std::process::Command;
use std::sync::Mutex;

/// A loopback port nothing listens on right now, and one no other test of
/// this process was given: every test runs in one process, and the kernel
/// may hand a port it just freed to the next test asking before the first
/// test's server binds it.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut given = GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let given = given.get_or_insert_with(HashSet::new);
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if given.insert(port) {
            return port;
        }
    }
}

/// Whether the tests run as root (initdb refuses to: clusters then belong
/// to user postgres; mounting, cgroups and dropping the page cache need it).
pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A folder name under the temporary folder no other test of this process
/// uses: `ghbench-<name>-<pid>-<n>`.
pub fn own_temp_dir(name: &str) -> std::path::PathBuf {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("ghbench-{name}-{}-{nth}", std::process::id()))
}

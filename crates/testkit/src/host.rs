//! This machine, as tests that start servers of their own see it.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The ports given to the tests of this process so far.
static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

fn given_ports() -> MutexGuard<'static, BTreeSet<u16>> {
    GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A loopback port nothing listens on right now, and one no other test of
/// this process was given: every test runs in one process, and the kernel
/// may hand a port it just freed to the next test asking before the first
/// test's server binds it.
pub fn free_port() -> u16 {
    let mut given = given_ports();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if given.insert(port) {
            return port;
        }
    }
}

/// The first of `n` loopback ports in a row that nothing listens on and no
/// other test of this process was given (a server and the nodes of its own
/// cluster, on the ports after it).
pub fn free_ports_in_a_row(n: u16) -> u16 {
    loop {
        let first = free_port();
        if first > u16::MAX - n {
            continue;
        }
        let mut given = given_ports();
        let rest = (first + 1)..(first + n);
        if rest.clone().all(|p| !given.contains(&p) && std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            given.extend(rest);
            return first;
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

//! What the kernel counted for the processes that serve an engine on this
//! machine, read from `/proc/<pid>/io` of the server (found by the TCP port
//! it listens on) or of ghbench's own worker, summed over it and every
//! process below it.
//!
//! Why the kernel: `read_bytes` is what came from storage, the page cache's
//! misses, which no server's own counter tells (PostgreSQL's `heap_blks_read`
//! counts blocks found in the page cache too). Beyond memory that is the
//! number that decides a verdict. The sum over the process tree only grows:
//! when a child ends (a PostgreSQL backend, a parallel worker) the kernel
//! adds its counts to its parent's as the parent reaps it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ghbench_core::Place;
use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};

use crate::record::{growth, KernelReads};

/// Whose counters to read.
#[derive(Debug, Clone, Copy)]
pub enum Whose<'a> {
    /// A process ghbench started (polars' worker) or ghbench itself.
    Process(u32),
    /// The server a connection string points at, when it runs here, and
    /// the `host:port` it listens on as its engine reads the URL
    /// (`Backend::server_address`).
    Server { url: &'a str, address: Option<&'a str> },
    /// A server of several nodes that all read for its queries (a Citus
    /// coordinator and its workers), each by its `host:port`, all on this
    /// machine: their counters are summed, and each node's `read_bytes` kept.
    Nodes(&'a [String]),
}

/// The counters of a process tree at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The tree's top process (of several nodes, the first's): counters of
    /// two snapshots of different tops (a server restarted in between)
    /// cannot be subtracted.
    pub top: i32,
    /// Each tree's top process and when it started (a pid used again is
    /// another process): one, or one per node.
    pub tops: Vec<(i32, u64)>,
    /// For people: `postgres (pid 812) and the processes under it`.
    pub processes: String,
    /// `read_bytes` (from storage), `rchar` (asked of read calls, the page
    /// cache's hits included), `syscr` (read calls).
    pub counters: BTreeMap<String, u64>,
}

/// Reads the counters of `whose` now; Err says why they cannot be read.
pub fn snapshot(whose: Whose<'_>) -> Result<Snapshot, String> {
    let tree = ProcessTree::read()?;
    let top = match whose {
        Whose::Process(pid) => pid as i32,
        Whose::Server { url, address } => tree.server_listening(url, address)?,
        Whose::Nodes(nodes) => return nodes_snapshot(tree, nodes),
    };
    tree_snapshot(tree, top)
}

/// The counters of the processes of every node in `nodes`, summed, with
/// each node's `read_bytes` under `read_bytes of node <host:port>`.
fn nodes_snapshot(tree: ProcessTree, nodes: &[String]) -> Result<Snapshot, String> {
    let mut summed: Option<Snapshot> = None;
    let mut each = BTreeMap::new();
    for node in nodes {
        // The node's address as a connection string names it, for Place.
        let top = tree.server_listening(&format!("postgres://{node}"), Some(node)).map_err(|e| format!("node {node}: {e}"))?;
        let counted = tree_snapshot(ProcessTree::read()?, top).map_err(|e| format!("node {node}: {e}"))?;
        each.insert(format!("read_bytes of node {node}"), counted.counters.get("read_bytes").copied().unwrap_or(0));
        summed = Some(match summed {
            None => Snapshot { processes: format!("{node}: {}", counted.processes), ..counted },
            Some(mut so_far) => {
                so_far.tops.extend(counted.tops);
                so_far.processes = format!("{}; {node}: {}", so_far.processes, counted.processes);
                for (name, value) in counted.counters {
                    *so_far.counters.entry(name).or_default() += value;
                }
                so_far
            }
        });
    }
    let mut summed = summed.ok_or("no node to count")?;
    summed.counters.extend(each);
    Ok(summed)
}

/// The counters of `top` and the processes below it, read from `tree` and again.
fn tree_snapshot(mut tree: ProcessTree, top: i32) -> Result<Snapshot, String> {
    // A process that ends while the tree is read gives its counts to its
    // parent, perhaps after the parent was read: read again until no
    // process came or went meanwhile.
    for _ in 0..ATTEMPTS {
        let counted = tree.counters_below(top)?;
        let again = ProcessTree::read()?;
        if let Some(counted) = counted.filter(|c| again.same_processes_below(&tree, top, c)) {
            return Ok(counted);
        }
        tree = again;
    }
    Err(format!("the server's processes kept starting and ending while they were counted ({ATTEMPTS} tries)"))
}

/// The top process of the server `url` points at, when it runs here,
/// listening on `address` (see [`Whose::Server`]).
pub fn server_pid(url: &str, address: Option<&str>) -> Result<u32, String> {
    Ok(ProcessTree::read()?.server_listening(url, address)? as u32)
}

/// What was read between two snapshots of the same top process.
pub fn reads_between(before: Result<Snapshot, String>, after: Result<Snapshot, String>) -> KernelReads {
    let not_counted = |processes: String, why: String| KernelReads { processes, counters: BTreeMap::new(), unavailable: Some(why) };
    match (before, after) {
        (Ok(before), Ok(after)) if before.tops != after.tops => {
            let pids = |s: &Snapshot| s.tops.iter().map(|(pid, _)| pid.to_string()).collect::<Vec<_>>().join(", ");
            let why = format!("the server's top process changed during the runs (pid {} then {}): it restarted", pids(&before), pids(&after));
            not_counted(after.processes, why)
        }
        (Ok(before), Ok(after)) => match growth(&before.counters, &after.counters) {
            Ok(counters) => KernelReads { processes: after.processes, counters, unavailable: None },
            Err(why) => not_counted(after.processes, why),
        },
        (Err(why), _) | (_, Err(why)) => not_counted(String::new(), why),
    }
}

/// Tries at a snapshot in which no process came or went.
const ATTEMPTS: usize = 10;

/// What forwards a port to a server elsewhere (a container, another
/// machine): its own counters say nothing of the server's reads.
const FORWARDERS: &[&str] = &["docker-proxy", "rootlessport", "slirp4netns", "ssh", "sshd", "socat", "kubectl", "systemd", "conmon", "pasta"];

/// A process as this machine shows it.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    parent: i32,
    name: String,
    /// When it started (clock ticks after boot): a pid used again is another process.
    started: u64,
}

/// Every process this machine shows, by pid.
struct ProcessTree {
    processes: HashMap<i32, Entry>,
}

impl ProcessTree {
    fn read() -> Result<ProcessTree, String> {
        let all = procfs::process::all_processes().map_err(|e| format!("cannot list this machine's processes: {e}"))?;
        let processes = all
            .flatten()
            .filter_map(|p| p.stat().ok())
            .map(|stat| (stat.pid, Entry { parent: stat.ppid, name: stat.comm, started: stat.starttime }))
            .collect();
        Ok(ProcessTree { processes })
    }

    /// The one top process of those that hold a socket listening where
    /// `url` points, at `address` (a server's children may have inherited it).
    fn server_listening(&self, url: &str, address: Option<&str>) -> Result<i32, String> {
        if let Place::Elsewhere(hosts) = Place::of(url) {
            return Err(format!("the server runs on another machine ({}): its kernel counters are out of ghbench's reach", hosts.join(", ")));
        }
        let address = address.ok_or_else(|| "the engine gives no single TCP address for its server (a Unix socket, several hosts, or an engine whose Backend::server_address says none): its process is not looked up".to_string())?;
        let port = address.rsplit_once(':').and_then(|(_, port)| port.parse::<u16>().ok()).ok_or_else(|| format!("no TCP port in {address}"))?;
        // The URL names this machine: a listener on a loopback or every address answers it.
        let answers = |ip: std::net::IpAddr| ip.is_loopback() || ip.is_unspecified() || address.starts_with(&format!("{ip}:"));
        let tables = [procfs::net::tcp(), procfs::net::tcp6()];
        let sockets: BTreeSet<u64> = tables
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.state == TcpState::Listen && e.local_address.port() == port && answers(e.local_address.ip()))
            .map(|e| e.inode)
            .collect();
        if sockets.is_empty() {
            return Err(format!("no process here listens on port {port} (a server in another network namespace is out of reach)"));
        }
        let mut holders = BTreeSet::new();
        let mut unreadable = 0;
        for &pid in self.processes.keys() {
            match Process::new(pid).and_then(|p| p.fd()) {
                Ok(fds) => {
                    if fds.flatten().any(|fd| matches!(fd.target, FDTarget::Socket(inode) if sockets.contains(&inode))) {
                        holders.insert(pid);
                    }
                }
                Err(_) => unreadable += 1,
            }
        }
        let tops: Vec<i32> = holders.iter().copied().filter(|pid| !self.processes.get(pid).is_some_and(|e| holders.contains(&e.parent))).collect();
        match tops.as_slice() {
            [] => Err(format!(
                "cannot tell which process listens on port {port}: {unreadable} processes' descriptors were not readable (run ghbench as root or as the server's user)"
            )),
            [top] => match self.processes.get(top).map(|e| e.name.as_str()) {
                Some(name) if FORWARDERS.contains(&name) => {
                    Err(format!("port {port} is forwarded by {name} (pid {top}) to a server elsewhere (a container, another machine): its processes are out of reach"))
                }
                _ => Ok(*top),
            },
            several => Err(format!("several processes listen on port {port} ({several:?}): which one is the server cannot be told")),
        }
    }

    /// The counters of `top` and every process below it, summed; None when
    /// one of them ended while they were read (try again).
    fn counters_below(&self, top: i32) -> Result<Option<Snapshot>, String> {
        let ended = |e: &procfs::ProcError| matches!(e, procfs::ProcError::NotFound(_));
        let mut totals = [0u64; 3];
        let mut below = 0;
        for pid in self.below(top).into_iter().chain([top]) {
            let io = match Process::new(pid).and_then(|p| p.io()) {
                Ok(io) => io,
                Err(e) if ended(&e) => return Ok(None),
                Err(e) => return Err(format!("cannot read /proc/{pid}/io: {e} (run ghbench as root or as the server's user)")),
            };
            below += usize::from(pid != top);
            for (total, value) in totals.iter_mut().zip([io.read_bytes, io.rchar, io.syscr]) {
                *total += value;
            }
        }
        let Some(entry) = self.processes.get(&top) else { return Err(format!("no process {top} on this machine")) };
        let processes = match below {
            0 => format!("{} (pid {top})", entry.name),
            n => format!("{} (pid {top}) and the {n} processes under it", entry.name),
        };
        let counters = ["read_bytes", "rchar", "syscr"].into_iter().map(String::from).zip(totals).collect();
        Ok(Some(Snapshot { top, tops: vec![(top, entry.started)], processes, counters }))
    }

    /// The same processes (pid and start) below `top` as in `before`, and
    /// `top` still the one counted.
    fn same_processes_below(&self, before: &ProcessTree, top: i32, counted: &Snapshot) -> bool {
        let members = |tree: &ProcessTree| -> Vec<(i32, u64)> {
            let mut all: Vec<(i32, u64)> = tree.below(top).into_iter().filter_map(|pid| Some((pid, tree.processes.get(&pid)?.started))).collect();
            all.sort_unstable();
            all
        };
        self.processes.get(&top).is_some_and(|e| counted.tops == [(top, e.started)]) && members(self) == members(before)
    }

    /// Every process below `top`, children first.
    fn below(&self, top: i32) -> Vec<i32> {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for (&pid, entry) in &self.processes {
            children.entry(entry.parent).or_default().push(pid);
        }
        let mut found = Vec::new();
        let mut next = vec![top];
        while let Some(pid) = next.pop() {
            for &child in children.get(&pid).into_iter().flatten() {
                if child != top && !found.contains(&child) {
                    found.push(child);
                    next.push(child);
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_child_that_reads_and_ends_is_counted_in_its_parent() {
        let me = std::process::id();
        let before = snapshot(Whose::Process(me)).expect("this process's own counters");
        let path = std::env::temp_dir().join(format!("ghbench-kernel-io-{me}"));
        std::fs::File::create(&path).and_then(|mut f| f.write_all(&vec![7u8; 1 << 20])).unwrap();
        // A child reads the file through read calls and ends; it is reaped by `status()`.
        let status = std::process::Command::new("cat").arg(&path).stdout(std::process::Stdio::null()).status().unwrap();
        assert!(status.success());
        let mut own = Vec::new();
        std::fs::File::open(&path).and_then(|mut f| f.read_to_end(&mut own)).unwrap();
        std::fs::remove_file(&path).ok();
        let after = snapshot(Whose::Process(me)).unwrap();
        let grew = after.counters["rchar"] - before.counters["rchar"];
        assert!(grew >= 2 << 20, "the child's and this process's reads of 1 MiB each: {grew}");
        assert_eq!(after.top, me as i32);
        assert_eq!(after.tops, before.tops, "the same process, counted before and after");
    }

    #[test]
    fn the_process_listening_on_a_port_is_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (url, address) = (format!("postgres://u@127.0.0.1:{port}/db"), format!("127.0.0.1:{port}"));
        let here = Whose::Server { url: &url, address: Some(&address) };
        let found = snapshot(here).expect("this process listens");
        assert_eq!(found.top, std::process::id() as i32, "{found:?}");
        drop(listener);
        let gone = snapshot(here).unwrap_err();
        assert!(gone.contains(&format!("no process here listens on port {port}")), "{gone}");
        let away = snapshot(Whose::Server { url: "postgres://u@db.example:5432/db", address: Some("db.example:5432") }).unwrap_err();
        assert!(away.contains("another machine (db.example)"), "{away}");
        let socket = snapshot(Whose::Server { url: "postgresql:///db?host=/var/run/postgresql", address: None }).unwrap_err();
        assert!(socket.contains("no single TCP address"), "{socket}");
    }

    #[test]
    fn the_nodes_of_a_server_are_each_found_and_summed() {
        let (one, two) = (std::net::TcpListener::bind("127.0.0.1:0").unwrap(), std::net::TcpListener::bind("127.0.0.1:0").unwrap());
        let nodes = [one.local_addr().unwrap().to_string(), two.local_addr().unwrap().to_string()];
        let me = std::process::id() as i32;
        let single = snapshot(Whose::Process(me as u32)).unwrap();
        let both = snapshot(Whose::Nodes(&nodes)).expect("this process listens for both");
        assert_eq!(both.tops.iter().map(|(pid, _)| *pid).collect::<Vec<_>>(), [me, me], "{both:?}");
        assert!(both.processes.starts_with(&format!("{}: ", nodes[0])) && both.processes.contains(&format!("; {}: ", nodes[1])), "{}", both.processes);
        for node in &nodes {
            assert!(both.counters.contains_key(&format!("read_bytes of node {node}")), "{:?}", both.counters);
        }
        // Summed: this process, counted once per node, had read at least twice what it had before.
        assert!(both.counters["syscr"] >= 2 * single.counters["syscr"], "{both:?} {single:?}");
        drop(two);
        let gone = snapshot(Whose::Nodes(&nodes)).unwrap_err();
        assert!(gone.starts_with(&format!("node {}: no process here listens", nodes[1])), "{gone}");
        let away = snapshot(Whose::Nodes(&[nodes[0].clone(), "worker.example:5432".into()])).unwrap_err();
        assert!(away.starts_with("node worker.example:5432: ") && away.contains("another machine"), "{away}");
    }
}

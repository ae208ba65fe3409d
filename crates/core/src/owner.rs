//! Which ghbench made a change to a server or started work on it, named so
//! that a later ghbench can tell whether that one still runs: its pid alone
//! is not enough (pids are reused, and every container has a pid 1), so a
//! process is its pid, its start time (clock ticks since boot, field 22 of
//! `/proc/PID/stat`), the machine's boot (`/proc/sys/kernel/random/boot_id`,
//! new at every boot, different on every machine) and its pid namespace
//! (one per container). Two ghbench on different machines or containers
//! never share a name, and a reused pid is never taken for its old owner.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A process, named as above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Field 22 of `/proc/PID/stat`: when it started, in clock ticks since boot.
    pub start_ticks: u64,
    pub boot_id: String,
    /// `readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`.
    pub pid_ns: String,
    /// For people: where it ran.
    pub host: String,
    /// For people: what it was running (`ghbench bench --memory 512MiB`).
    #[serde(default)]
    pub command: String,
}

/// Whether an owner still runs, as far as this process can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// Ended: its work and changes are nobody's now.
    Gone(String),
    /// Another machine or container: not for this process to judge.
    Unknown(String),
}

/// This process.
pub fn me() -> &'static Owner {
    static ME: OnceLock<Owner> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id();
        let command = said_command(std::env::args_os().map(|a| a.to_string_lossy().into_owned()));
        Owner {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            boot_id: boot_id(),
            pid_ns: pid_namespace(),
            host: host_name(),
            command,
        }
    })
}

impl Owner {
    /// Whether it still runs: same boot and pid namespace as this process,
    /// and its pid held by a process that started when it did.
    pub fn liveness(&self) -> Liveness {
        let here = me();
        if self.boot_id != here.boot_id {
            return if self.host == here.host {
                Liveness::Gone(format!("the machine restarted since (boot {} then, {} now)", short(&self.boot_id), short(&here.boot_id)))
            } else {
                Liveness::Unknown(format!("it ran on another machine ({})", self.host))
            };
        }
        if self.pid_ns != here.pid_ns {
            return Liveness::Unknown(format!("it ran in another container (pid namespace {})", self.pid_ns));
        }
        match started(self.pid) {
            Ok(Some(ticks)) if ticks == self.start_ticks => Liveness::Alive,
            Ok(Some(_)) => Liveness::Gone(format!("it ended (pid {} is another process now)", self.pid)),
            Ok(None) => Liveness::Gone(format!("it ended (no process {} runs)", self.pid)),
            Err(why) => Liveness::Unknown(why),
        }
    }

    /// The label ghbench's server work carries (a MongoDB command's
    /// `comment`, a PostgreSQL session's `application_name`, a comment at
    /// the head of a MySQL statement): `ghbench` and the owner, short enough
    /// for PostgreSQL's 63 bytes.
    pub fn label(&self) -> String {
        format!("ghbench {}", self.tag())
    }

    /// `boot.ns.pid.start`: the owner in one word.
    pub fn tag(&self) -> String {
        format!("{}.{}.{}.{}", short(&self.boot_id), ns_number(&self.pid_ns), self.pid, self.start_ticks)
    }
}

/// What a label names: enough to tell, from this process, whether its owner runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labelled {
    pub boot: String,
    pub ns: String,
    pub pid: u32,
    pub start_ticks: u64,
}

impl Labelled {
    /// The owner in a label (`ghbench boot.ns.pid.start`, anything after it
    /// ignored), or None for a label of another program or an older ghbench.
    pub fn parse(label: &str) -> Option<Labelled> {
        let tag = label.trim().strip_prefix("ghbench ")?.split_whitespace().next()?;
        let mut parts = tag.split('.');
        let (boot, ns, pid, start) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || boot.len() != 8 || !boot.bytes().all(|b| b.is_ascii_hexdigit()) || ns.parse::<u64>().is_err() {
            return None;
        }
        Some(Labelled { boot: boot.to_string(), ns: ns.to_string(), pid: pid.parse().ok()?, start_ticks: start.parse().ok()? })
    }

    /// As [`Owner::liveness`], from what a label holds.
    pub fn liveness(&self) -> Liveness {
        let here = me();
        if self.boot != short(&here.boot_id) {
            return Liveness::Unknown("a ghbench on another machine (or before this machine restarted)".into());
        }
        if self.ns != ns_number(&here.pid_ns) {
            return Liveness::Unknown("a ghbench in another container".into());
        }
        if self.pid == here.pid && self.start_ticks == here.start_ticks {
            return Liveness::Alive;
        }
        match started(self.pid) {
            Ok(Some(ticks)) if ticks == self.start_ticks => Liveness::Alive,
            Ok(_) => Liveness::Gone(format!("ghbench pid {} ended", self.pid)),
            Err(why) => Liveness::Unknown(why),
        }
    }
}

/// Whether server work labelled `label` (see [`Owner::label`]) was left
/// by a ghbench that ended: Some(why) to cancel it; None for work of this
/// process, of a ghbench that runs, of another program, or of a ghbench this
/// process cannot check (another machine or container: never cancelled).
pub fn abandoned(label: &str) -> Option<String> {
    match Labelled::parse(label)?.liveness() {
        Liveness::Gone(why) => Some(why),
        Liveness::Alive | Liveness::Unknown(_) => None,
    }
}

/// True the first time this process asks about `server` (its address):
/// abandoned work is looked for once per server and run, not per connection.
pub fn first_look_at(server: &str) -> bool {
    static LOOKED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut looked = LOOKED.lock().unwrap_or_else(|e| e.into_inner());
    if looked.iter().any(|s| s == server) {
        return false;
    }
    looked.push(server.to_string());
    true
}

/// When process `pid` started (field 22 of `/proc/PID/stat`), if it runs.
pub fn start_ticks(pid: u32) -> Option<u64> {
    started(pid).ok().flatten()
}

/// As [`start_ticks`], telling "no such process" (None) from "cannot see it"
/// (Err: `/proc` mounted with `hidepid`, another user's process): a process
/// this one cannot see is never taken for ended.
fn started(pid: u32) -> Result<Option<u64>, String> {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("process {pid} cannot be looked at ({e})")),
    };
    Ok(stat_start_ticks(&stat))
}

fn stat_start_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    // Field 3, the state: a zombie has ended (only its exit status is left).
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    // Fields 4.. follow; field 22 is the 19th of them.
    fields.nth(18)?.parse().ok()
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}

/// The first 8 hex digits of a boot id (`0` when unknown).
fn short(boot_id: &str) -> String {
    let hex: String = boot_id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    format!("{hex:0>8}")
}

/// `pid:[4026531836]` -> `4026531836`.
fn ns_number(ns: &str) -> String {
    let digits: String = ns.chars().filter(char::is_ascii_digit).collect();
    if digits.is_empty() { "0".into() } else { digits }
}

/// A command line as it may be written to disk and said: a URL's password
/// hidden, and any other value that may hold a secret (a connection string
/// of `key=value` words, the value of a `--…-url` or `--…-uri` option, a
/// word naming a password, secret or token) replaced whole.
fn said_command(args: impl Iterator<Item = String>) -> String {
    let mut said = Vec::new();
    let mut after_connection_option = false;
    for arg in args {
        let lower = arg.to_ascii_lowercase();
        let secret_word = ["password", "secret", "token", "passwd"].iter().any(|s| lower.contains(s));
        let option_name = arg.starts_with("--") && !arg.contains('=');
        let word = if after_connection_option || (secret_word && !option_name) || (arg.contains(' ') && arg.contains('=')) {
            "<hidden>".to_string()
        } else if let (Some((name, value)), true) = (arg.split_once('='), arg.starts_with("--")) {
            // `--pg-url=…`: the value as a word of its own would be.
            if value.contains("://") || lower.ends_with("-url") || lower.contains("-url=") || lower.contains("-uri=") {
                format!("{name}=<hidden>")
            } else {
                arg.clone()
            }
        } else if arg.contains("://") {
            crate::redact_url(&arg)
        } else if arg.contains(' ') {
            format!("{arg:?}")
        } else {
            arg.clone()
        };
        // The next word is this option's value: hidden if it may hold a secret.
        after_connection_option = option_name && (secret_word || lower.ends_with("-url") || lower.ends_with("-uri"));
        said.push(word);
    }
    said.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_its_label_names_it() {
        let me = me();
        assert!(me.start_ticks > 0 && !me.boot_id.is_empty(), "{me:?}");
        assert_eq!(me.liveness(), Liveness::Alive);
        let label = me.label();
        assert!(label.len() <= 63, "{label}");
        let parsed = Labelled::parse(&format!("{label} 7")).unwrap();
        assert_eq!(parsed.pid, me.pid);
        assert_eq!(parsed.liveness(), Liveness::Alive);
    }

    #[test]
    fn a_process_that_ended_is_gone_and_a_reused_pid_is_not_its_owner() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let ticks = start_ticks(pid);
        child.wait().unwrap();
        let ended = Owner { pid, start_ticks: ticks.unwrap_or(1), ..me().clone() };
        assert!(matches!(ended.liveness(), Liveness::Gone(_)), "{:?}", ended.liveness());
        // This very pid, started at another time: another process.
        let reused = Owner { start_ticks: me().start_ticks + 1, ..me().clone() };
        assert!(matches!(reused.liveness(), Liveness::Gone(_)));
        let elsewhere = Owner { boot_id: "ffffffff-0000".into(), host: "another".into(), ..me().clone() };
        assert!(matches!(elsewhere.liveness(), Liveness::Unknown(_)));
        let other_container = Labelled { ns: "1".into(), ..Labelled::parse(&me().label()).unwrap() };
        assert!(matches!(other_container.liveness(), Liveness::Unknown(_)));
    }

    #[test]
    fn a_command_line_is_said_without_its_secrets() {
        let args = ["ghbench", "query", "--pg-url", "host=db password=se:cret", "--mongo-url", "mongodb://u:hunter2@h/x", "--mysql-url=mysql://u:pw9@h/d", "--tls-password", "--memory", "512MiB"];
        // (`--tls-password` takes the next word, here `--memory`, as its value.)
        let said = said_command(args.iter().map(|s| s.to_string()));
        for secret in ["se:cret", "hunter2", "pw9"] {
            assert!(!said.contains(secret), "{said}");
        }
        assert!(said.starts_with("ghbench query --pg-url <hidden> --mongo-url <hidden> ") && said.ends_with("--tls-password <hidden> 512MiB"), "{said}");
    }

    #[test]
    fn labels_of_other_programs_and_older_ghbench_are_not_read_as_owners() {
        for label in ["ghbench", "ghbench 1234 5", "psql", "ghbench zzzzzzzz.1.2.3", ""] {
            assert_eq!(Labelled::parse(label), None, "{label}");
        }
    }
}

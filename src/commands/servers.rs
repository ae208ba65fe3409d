//! The servers `just setup` started, as it lists them in `servers.json`
//! (their addresses, data folders and restart commands), and their restart:
//! what cold runs (`super::cold`) and limits (`super::bench::limits`) both
//! start from.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};
use ghbench_core::place::same_address;
use ghbench_engine::Loader;
use serde::Deserialize;

use super::bench::limits::Limits;

/// A restart script that says nothing for this long has hung. It waits as
/// long as the server makes progress (a shutdown checkpoint, a recovery at
/// start can take many minutes at scale), saying so every 15 s, and fails by
/// itself when the server stops making progress (`GHBENCH_STUCK_AFTER`).
const RESTART_SILENCE: Duration = Duration::from_secs(120);

/// `servers.json`, as `scripts/setup.sh` writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct ManagedServers {
    pub servers: Vec<ManagedServer>,
}

/// Where `just setup` writes the servers it started (`--servers`' default).
pub const DEFAULT_SERVERS_FILE: &str = ".ghbench/servers.json";

#[derive(Debug, Clone, Deserialize)]
pub struct ManagedServer {
    pub name: String,
    /// `host:port`, matched against the address an engine says its server
    /// has (`Loader::address`).
    pub address: String,
    pub data_dir: String,
    /// The program and its arguments (run directly, never through a shell).
    pub restart: Vec<String>,
}

/// `--servers FILE`, for every command that starts from the servers `just setup` started.
#[derive(Debug, Clone, clap::Args)]
pub struct ServersArg {
    /// The servers `just setup` started, their data folders and how to restart
    /// them (it writes this file).
    #[arg(long, value_name = "FILE", env = "GHBENCH_SERVERS", default_value = DEFAULT_SERVERS_FILE)]
    pub servers: PathBuf,
}

impl ServersArg {
    /// See [`ManagedServers::load`]: a file named by the user must exist.
    pub fn load(&self) -> Result<Option<ManagedServers>> {
        ManagedServers::load(&self.servers, self.servers != Path::new(DEFAULT_SERVERS_FILE))
    }

    /// Each listed server's address and data folder, for the free-space check of a load.
    pub fn data_folders(&self) -> Result<Vec<(String, PathBuf)>> {
        let servers = self.load()?.map_or_else(Vec::new, |m| m.servers);
        Ok(servers.into_iter().map(|s| (s.address, PathBuf::from(s.data_dir))).collect())
    }
}

impl ManagedServers {
    /// None when the file is absent and was not asked for (`asked`: given by
    /// the user, not the default): then no server is managed. A file the user
    /// named must exist, or a typo would silently make every run not truly cold.
    pub fn load(path: &Path, asked: bool) -> Result<Option<ManagedServers>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !asked => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
                "--servers {} does not exist: name the file `just setup` writes ({DEFAULT_SERVERS_FILE}), or one listing no servers ({{\"servers\": []}}) to restart none",
                path.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("reading --servers {}", path.display())),
        };
        let servers: ManagedServers = serde_json::from_str(&text)
            .with_context(|| format!("--servers {} is not a servers file as `just setup` writes it", path.display()))?;
        if let Some(bad) = servers.servers.iter().find(|s| s.restart.is_empty()) {
            anyhow::bail!("--servers {}: server {} has no restart command", path.display(), bad.name);
        }
        Ok(Some(servers))
    }

    /// The managed server of the engine `loader` connects to, if any: the
    /// one at the address the engine says its server has.
    pub fn serving(&self, loader: &dyn Loader) -> Option<&ManagedServer> {
        let address = loader.address()?;
        self.servers.iter().find(|s| same_address(&s.address, &address))
    }
}

/// Runs the server's restart command; it is written to the journal of
/// server changes first (the server is stopped meanwhile: a ghbench killed
/// during the restart leaves it for the next one to start). A server another
/// ghbench that still runs has changed (a bench's memory limit) is not
/// restarted: that would undo its change under it. The script's progress
/// lines (a slow stop or start) are passed on as they come; its other output
/// is kept for the error. `limits`: what it starts under (`GHBENCH_MEMORY`
/// and `GHBENCH_DISK`, see `bench --memory` and `--disk`; one not given is
/// the one `just setup` ran with); None: as `just setup` left it.
pub async fn restart(server: &ManagedServer, limits: Option<&Limits>) -> Result<()> {
    use ghbench_core::changes::{self, Kind};
    if let Some(held) = changes::held_by_others(&server.server_ref()).first() {
        anyhow::bail!(
            "{} is held by {}: {}; not restarted, which would undo that (run this again once it has ended)",
            server.name,
            held.by_whom(),
            held.said
        );
    }
    let said = match limits {
        Some(limits) => format!("stopped, to start again inside {}", limits.said()),
        None => "stopped, to start again as `just setup` left it".to_string(),
    };
    let made = changes::record(&server.entry(Kind::Stopped, said)).map_err(anyhow::Error::msg)?;
    let restarted = run_restart(server, limits).await;
    if restarted.is_ok() {
        made.undone();
        // Restarted whole: any stop of this ghbench's own that a restart
        // left unfinished before (one that failed) is undone too.
        changes::forget_own(&server.server_ref(), Kind::Stopped);
    }
    restarted
}

/// Restart scripts under way, by server name and pid: one whose ghbench
/// stopped waiting (a signal) goes on in its own process group, and the
/// way out waits for it ([`wait_for_restarts`]) before putting anything back.
static UNDER_WAY: std::sync::Mutex<Vec<(String, u32)>> = std::sync::Mutex::new(Vec::new());

fn under_way() -> std::sync::MutexGuard<'static, Vec<(String, u32)>> {
    UNDER_WAY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Off the list once the script ended, not when its waiter was dropped.
struct Listed {
    pid: u32,
    ended: bool,
}

impl Drop for Listed {
    fn drop(&mut self) {
        if self.ended {
            under_way().retain(|(_, pid)| *pid != self.pid);
        }
    }
}

/// Waits for the restarts ghbench stopped waiting for to end by themselves,
/// each said (a restart killed half way could leave its server stopped, and
/// one started beside it would race it).
pub async fn wait_for_restarts() {
    let pending: Vec<(String, u32)> = under_way().clone();
    for (name, pid) in pending {
        if ghbench_core::owner::start_ticks(pid).is_none() {
            continue;
        }
        crate::interrupt::note(&format!("waiting for the restart of {name} under way (pid {pid}) to end"));
        while ghbench_core::owner::start_ticks(pid).is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    under_way().clear();
}

async fn run_restart(server: &ManagedServer, limits: Option<&Limits>) -> Result<()> {
    let (program, args) = server.restart.split_first().context("no restart command")?;
    let mut command = tokio::process::Command::new(program);
    match limits.and_then(|l| l.memory.as_ref()) {
        Some(size) => command.env("GHBENCH_MEMORY", &size.text),
        None => command.env_remove("GHBENCH_MEMORY"),
    };
    match limits.map(|l| (l.disk.as_ref(), l.free_disk)) {
        Some((Some(disk), _)) => command.env("GHBENCH_DISK", disk.setup_text()),
        // Set and empty: restart.sh then does not fall back to setup's throttle.
        Some((None, true)) => command.env("GHBENCH_DISK", ""),
        _ => command.env_remove("GHBENCH_DISK"),
    };
    match limits.is_some_and(|l| l.paper_planner) {
        true => command.env("GHBENCH_PG_PAPER2019", "1"),
        false => command.env_remove("GHBENCH_PG_PAPER2019"),
    };
    // Its standard error goes to a file, not a pipe: a restart whose ghbench
    // stopped reading (a signal) must not die of SIGPIPE half way.
    let said_to = tempfile_for(&server.name);
    let said_file = std::fs::File::create(&said_to).with_context(|| format!("creating {}", said_to.display()))?;
    // A process group of its own: Ctrl-C in the terminal reaches ghbench,
    // not a restart half done; ghbench waits for it on its way out.
    command.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(said_file).process_group(0);
    // The restart holds this ghbench's lock in the journal as its fd 9 (the
    // scripts start no server with it): killed with SIGKILL, ghbench leaves a
    // restart that goes on, and the next ghbench must not take the change
    // for abandoned and restart the server beside it.
    if let Some(lock) = ghbench_core::changes::owner_lock_fd() {
        // SAFETY: between fork and exec only dup2(2) runs, which is
        // async-signal-safe and touches no memory of the parent's.
        unsafe {
            command.pre_exec(move || if libc::dup2(lock, OWNER_LOCK_FD) == -1 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
        }
    }
    let spawned = command.spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_file(&said_to);
            return Err(e).with_context(|| format!("starting {program}"));
        }
    };
    let pid = child.id().context("the restart ended at once")?;
    under_way().push((server.name.clone(), pid));
    let mut listed = Listed { pid, ended: false };
    // Read as it grows: what it said so far, and how much of it is taken.
    let mut said_from = std::fs::File::open(&said_to).with_context(|| format!("reading {}", said_to.display()))?;
    let mut text = Vec::new();
    let mut read = 0;
    let mut kept: Vec<String> = Vec::new();
    let mut last_word = std::time::Instant::now();
    let status = loop {
        let ended = child.try_wait()?;
        // What it said since the last look, whole lines (a server's log may hold bytes that are not UTF-8).
        let _ = std::io::Read::read_to_end(&mut said_from, &mut text);
        if let Some(end) = text[read.min(text.len())..].iter().rposition(|&b| b == b'\n').map(|at| read + at + 1).or(ended.map(|_| text.len())) {
            for line in String::from_utf8_lossy(&text[read..end]).lines() {
                if is_progress(line) {
                    crate::interrupt::note(&format!("  {}: {}", server.name, line.trim()));
                }
                kept.push(line.to_string());
            }
            if end > read {
                last_word = std::time::Instant::now();
            }
            read = end;
        }
        if let Some(status) = ended {
            break status;
        }
        if last_word.elapsed() > RESTART_SILENCE {
            // SAFETY: kill(2) of the process group the restart leads.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
            let _ = child.wait().await;
            listed.ended = true;
            let _ = std::fs::remove_file(&said_to);
            anyhow::bail!(
                "the restart of {} said nothing for {} s (it says a line every 15 s while the server makes progress): it was stopped; the server may be stopped too: the next ghbench command, `ghbench doctor` or `just setup` starts it",
                server.name,
                RESTART_SILENCE.as_secs()
            )
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    listed.ended = true;
    let _ = std::fs::remove_file(&said_to);
    if !status.success() {
        let last = kept.iter().rev().find(|l| !l.trim().is_empty()).map_or("", |l| l.trim());
        anyhow::bail!("the restart command failed ({status}): {last}");
    }
    Ok(())
}

/// The descriptor a restart script holds ghbench's journal lock on
/// (`scripts/setup.sh` closes it, `9>&-`, for every server it starts).
const OWNER_LOCK_FD: i32 = 9;

/// Where a restart's standard error goes while it runs.
fn tempfile_for(server: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("ghbench-restart-{}-{server}-{n}.log", std::process::id()))
}

/// A line of the scripts saying a server is still stopping or starting, or why it failed.
fn is_progress(line: &str) -> bool {
    line.contains(" still ") || line.contains("error")
}

impl ManagedServer {
    /// This server as the journal names it.
    pub fn server_ref(&self) -> ghbench_core::changes::ServerRef {
        ghbench_core::changes::ServerRef { name: Some(self.name.clone()), address: self.address.clone() }
    }

    /// A change about to be made to this server, for the journal.
    pub fn entry(&self, kind: ghbench_core::changes::Kind, said: String) -> ghbench_core::changes::Entry {
        ghbench_core::changes::Entry::new(self.server_ref(), None, kind, said)
    }
}

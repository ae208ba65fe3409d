//! The changes ghbench makes to a server, written down before they are made
//! and removed once undone, so that however ghbench ends (SIGKILL, the
//! kernel's OOM killer, a closed terminal) the next ghbench, `just setup`
//! or `ghbench doctor` finds what it left changed and puts it back.
//!
//! One JSON file per change in the journal folder (`changes/` beside the
//! servers file `just setup` writes, so `scripts/setup.sh` reads the same
//! files), written whole or not at all (a temporary file renamed). Each names
//! its owner ([`crate::owner::Owner`]): a change whose owner still runs (a
//! bench in another terminal) is never undone by anyone else.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::owner::{me, Liveness, Owner};

/// The schema of one entry, as `scripts/setup.sh` checks it.
pub const SCHEMA: &str = "ghbench-server-change/1";

/// What was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Restarted inside a memory cgroup, its memory settings scaled to it.
    MemoryLimit,
    /// Restarted inside a block I/O cgroup throttling its disk (`--disk`).
    DiskLimit,
    /// Stopped, to be started again (a cold run's restart).
    Stopped,
    /// A server parameter set (MongoDB's `setParameter`).
    Parameter,
}

/// The server changed: `name` when `just setup` started it (postgres,
/// mongo, mysql: what restarts it as setup left it), and its address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerRef {
    pub name: Option<String>,
    pub address: String,
}

/// A parameter and the value to put back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub value: serde_json::Value,
    pub had: serde_json::Value,
}

/// One change, as written to disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub schema: String,
    pub owner: Owner,
    pub made_at: String,
    pub server: ServerRef,
    /// The engine that made it (`mongo-tuned`), for people and for the engine that undoes it.
    pub engine: Option<String>,
    pub change: Kind,
    /// What was done, for people: "restarted inside a 512.0 MiB memory cgroup".
    pub said: String,
    /// How it is undone: `restart` (as setup left it) or `parameter`.
    pub undo: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<Parameter>,
    /// The owner's lock file in the journal folder, held while it runs (see [`liveness`]).
    #[serde(default)]
    pub lock: Option<String>,
}

impl Entry {
    /// A change this process is about to make.
    pub fn new(server: ServerRef, engine: Option<&str>, change: Kind, said: impl Into<String>) -> Entry {
        Entry {
            schema: SCHEMA.into(),
            owner: me().clone(),
            made_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            server,
            engine: engine.map(str::to_string),
            undo: match change {
                Kind::Parameter => "parameter".into(),
                Kind::MemoryLimit | Kind::DiskLimit | Kind::Stopped => "restart".into(),
            },
            change,
            said: said.into(),
            parameter: None,
            lock: Some(owner_lock_name()),
        }
    }

    /// Whether it names `server` (its name where both have one, and its address).
    pub fn is_on(&self, server: &ServerRef) -> bool {
        let names_agree = match (&self.server.name, &server.name) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        names_agree && crate::place::same_address(&self.server.address, &server.address)
    }

    /// "ghbench pid 1234 (ghbench bench --memory 512MiB, from 2026-11-29T05:00:00Z)".
    pub fn by_whom(&self) -> String {
        format!("ghbench pid {} ({}, from {})", self.owner.pid, self.owner.command, self.made_at)
    }
}

/// Where the journal is: set once by the binary from the servers file; a
/// library user that sets none writes to `.ghbench/changes`.
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The journal folder beside the servers file `servers`.
pub fn dir_beside(servers: &Path) -> PathBuf {
    servers.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join("changes")
}

pub fn set_dir(dir: PathBuf) {
    *DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
}

pub fn dir() -> PathBuf {
    DIR.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(|| PathBuf::from(".ghbench/changes"))
}

/// A change written down and (to be) made; [`Made::undone`] once put back.
/// Dropped without it, the entry stays for the next ghbench.
#[derive(Debug)]
#[must_use = "call undone() once the change is put back, or the next ghbench undoes it again"]
pub struct Made {
    path: PathBuf,
}

impl Made {
    /// The change is put back: its entry goes.
    pub fn undone(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn owner_lock_name() -> String {
    format!("{}.lock", me().tag())
}

/// This process's lock in the journal folder: held (an exclusive `flock`)
/// from its first change to its end. The kernel lets it go however the
/// process ends (SIGKILL, the OOM killer), so a free lock says its owner
/// ended, across pid namespaces and whatever `/proc` shows.
static OWNER_LOCK: Mutex<Option<(PathBuf, std::fs::File)>> = Mutex::new(None);

fn hold_owner_lock(dir: &Path) -> Result<(), String> {
    let mut held = OWNER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if held.as_ref().is_some_and(|(at, _)| at == dir) {
        return Ok(());
    }
    let path = dir.join(owner_lock_name());
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| format!("cannot make {}: {e}", path.display()))?;
    flock(&file, libc::LOCK_EX | libc::LOCK_NB).map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    *held = Some((dir.to_path_buf(), file));
    Ok(())
}

/// This process's lock in the journal, as a descriptor a child may inherit
/// (None before its first change): a restart script that outlives a killed
/// ghbench holds it until it ends, so no other process takes the change
/// for abandoned while the restart still runs.
pub fn owner_lock_fd() -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd as _;
    OWNER_LOCK.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(_, file)| file.as_raw_fd())
}

fn flock(file: &std::fs::File, operation: i32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: flock(2) on a descriptor this function borrows for the call.
    if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the owner of `entry` still runs: its lock in the journal held
/// (or free: it ended), else as [`Owner::liveness`] tells from `/proc`.
pub fn liveness(entry: &Entry) -> Liveness {
    if entry.owner == *me() {
        return Liveness::Alive;
    }
    let Some(name) = entry.lock.as_deref().filter(|n| !n.contains('/')) else { return entry.owner.liveness() };
    let Ok(file) = std::fs::File::open(dir().join(name)) else { return entry.owner.liveness() };
    match flock(&file, libc::LOCK_SH | libc::LOCK_NB) {
        Ok(()) => Liveness::Gone(format!("it ended (pid {}; its lock in the journal is free)", entry.owner.pid)),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Liveness::Alive,
        Err(_) => entry.owner.liveness(),
    }
}

/// The journal itself, for one process at a time while it undoes changes
/// (ghbench or `just setup`: two undoing the same change would restart a
/// server twice at once). None: another holds it now.
pub fn try_exclusive() -> Result<Option<Exclusive>, String> {
    let dir = dir();
    if !dir.is_dir() {
        // No journal: nothing to undo, nothing to exclude.
        return Ok(Some(Exclusive(None)));
    }
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(Some(Exclusive(Some(file)))),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(None),
        Err(e) => Err(format!("cannot lock {}: {e}", path.display())),
    }
}

/// The journal held by this process until dropped (see [`try_exclusive`]).
#[must_use]
pub struct Exclusive(#[allow(dead_code)] Option<std::fs::File>);

/// Lock files of owners that ended and left no entry: removed.
pub fn sweep_free_locks() {
    let dir = dir();
    let Ok(listing) = std::fs::read_dir(&dir) else { return };
    let entries = entries();
    for path in listing.filter_map(Result::ok).map(|e| e.path()) {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).filter(|n| n.ends_with(".lock") && !n.starts_with('.')) else { continue };
        if name == owner_lock_name() || entries.iter().any(|f| f.entry.as_ref().is_ok_and(|e| e.lock.as_deref() == Some(name))) {
            continue;
        }
        if let Ok(file) = std::fs::File::open(&path) {
            if flock(&file, libc::LOCK_EX | libc::LOCK_NB).is_ok() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// The changes of other ghbench processes that still run (or that this one
/// cannot check) on `server`: a server so held is neither restarted nor put
/// back by anyone else.
pub fn held_by_others(server: &ServerRef) -> Vec<Entry> {
    left_by_others()
        .into_iter()
        .filter(|(_, liveness)| !matches!(liveness, Liveness::Gone(_)))
        .filter_map(|(found, _)| found.entry.ok())
        .filter(|entry| entry.is_on(server))
        .collect()
}

/// This process's own changes on `server` of kind `kind`, removed: the
/// server was just restarted as setup left it, which undoes them.
pub fn forget_own(server: &ServerRef, kind: Kind) {
    for found in entries() {
        if found.entry.as_ref().is_ok_and(|e| e.owner == *me() && e.change == kind && e.is_on(server)) {
            found.remove();
        }
    }
}

/// Writes `entry` to the journal before the change is made: an error means
/// the change must not be made (nothing would put it back).
pub fn record(entry: &Entry) -> Result<Made, String> {
    let dir = dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make the journal of server changes {}: {e}", dir.display()))?;
    hold_owner_lock(&dir).map_err(|e| format!("the journal of server changes: {e}"))?;
    let name = format!("{}-{}.json", entry.owner.tag(), NEXT.fetch_add(1, Ordering::Relaxed));
    let path = dir.join(&name);
    let temporary = dir.join(format!(".{name}.tmp"));
    let text = serde_json::to_string_pretty(entry).map_err(|e| e.to_string())?;
    let written = (|| {
        use std::io::Write as _;
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        // The change may outlive a crash of the machine too (a limit is in
        // the servers' setup files): the entry must reach the disk first.
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("cannot write the journal of server changes {}: {e}", path.display())
    })?;
    Ok(Made { path })
}

/// An entry found in the journal.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub entry: Result<Entry, String>,
}

impl Found {
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Every entry in the journal, oldest first (unreadable ones with why).
pub fn entries() -> Vec<Found> {
    let Ok(listing) = std::fs::read_dir(dir()) else { return Vec::new() };
    let mut found: Vec<Found> = listing
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .map(|path| {
            let entry = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Entry>(&text).map_err(|e| format!("not an entry as ghbench writes them: {e}")));
            Found { path, entry }
        })
        .collect();
    found.sort_by(|a, b| {
        let made = |f: &Found| f.entry.as_ref().map(|e| e.made_at.clone()).unwrap_or_default();
        made(a).cmp(&made(b)).then_with(|| a.path.cmp(&b.path))
    });
    found
}

/// Entries whose owner is not this process, with whether it still runs.
pub fn left_by_others() -> Vec<(Found, Liveness)> {
    entries()
        .into_iter()
        .filter_map(|found| {
            let liveness = match &found.entry {
                Ok(entry) if entry.owner == *me() => return None,
                Ok(entry) => liveness(entry),
                Err(why) => Liveness::Unknown(why.clone()),
            };
            Some((found, liveness))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_on_disk_until_undone_and_a_dead_owner_s_is_found_as_gone() {
        let dir = tempfile_dir();
        set_dir(dir.clone());
        let server = ServerRef { name: Some("postgres".into()), address: "127.0.0.1:1".into() };
        let made = record(&Entry::new(server.clone(), Some("postgres"), Kind::MemoryLimit, "restarted inside a limit")).unwrap();
        let on_disk: Entry = serde_json::from_str(&std::fs::read_to_string(made.path()).unwrap()).unwrap();
        assert_eq!(on_disk.change, Kind::MemoryLimit);
        assert_eq!(on_disk.undo, "restart");
        // Its own entries are not left by others.
        assert!(left_by_others().is_empty());
        // One of a process that ended.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let ticks = crate::owner::start_ticks(pid).unwrap_or(1);
        child.wait().unwrap();
        let mut dead = Entry::new(server, None, Kind::Stopped, "stopped");
        dead.owner.pid = pid;
        dead.owner.start_ticks = ticks;
        dead.lock = Some(format!("{}.lock", dead.owner.tag()));
        std::fs::write(dir.join("dead.json"), serde_json::to_string(&dead).unwrap()).unwrap();
        std::fs::write(dir.join("broken.json"), "{").unwrap();
        let left = left_by_others();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.iter().any(|(f, l)| f.entry.is_ok() && matches!(l, Liveness::Gone(_))), "{left:?}");
        assert!(left.iter().any(|(f, l)| f.entry.is_err() && matches!(l, Liveness::Unknown(_))), "{left:?}");
        made.undone();
        assert_eq!(entries().len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ghbench-changes-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}

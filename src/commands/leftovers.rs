//! What a ghbench that ended left changed on the servers, put back by the
//! next command before it does anything else; what a ghbench that still runs
//! holds (a bench in another terminal), said and left alone.
//!
//! The changes are those of the journal (`ghbench_core::changes`), written
//! before each was made. A change on a server `just setup` started is undone
//! by restarting it as setup left it (which also ends a memory limit and
//! resets runtime parameters); a parameter is first put back through its
//! engine's own connection, which disturbs nothing else. One process undoes
//! at a time (the journal's lock, which `scripts/setup.sh` takes too), and a
//! server another ghbench still holds is never touched.

use std::time::{Duration, Instant};

use ghbench_core::changes::{self, Entry, Found};
use ghbench_core::owner::{me, Liveness};

use super::servers::{restart, ManagedServer, ManagedServers};
use crate::interrupt::note;
use crate::options::Engines;

/// What one pass put back, and what it could not.
#[derive(Default)]
struct PutBack {
    /// Servers restarted as setup left them in this pass.
    restarted: Vec<String>,
    /// Servers whose restart failed in this pass (not tried again).
    failed: Vec<String>,
    /// Changes of a ghbench that ended still in place: what each is.
    not_undone: Vec<String>,
}

/// How long to wait for another process that is putting servers back.
const WAIT_FOR_ANOTHER: Duration = Duration::from_secs(600);

/// Before a command that reaches servers: [`put_back`] with the servers
/// `just setup` started (`managed`). A server whose restart failed would be
/// measured as what it is not: an error; `strict` (doctor) makes any change
/// not undone one.
pub async fn before_command(managed: Option<&ManagedServers>, engines: &Engines, strict: bool) -> anyhow::Result<()> {
    let pass = put_back(managed, engines).await;
    if !pass.not_undone.is_empty() && (strict || !pass.failed.is_empty()) {
        anyhow::bail!("what a ghbench that ended left changed could not all be put back (said above): {}", pass.not_undone.join("; "));
    }
    Ok(())
}

/// Undoes every change left by a ghbench that ended, saying each.
async fn put_back(managed: Option<&ManagedServers>, engines: &Engines) -> PutBack {
    let mut pass = PutBack::default();
    let Some(_exclusive) = exclusive().await else { return pass };
    for (found, liveness) in changes::left_by_others() {
        let entry = match &found.entry {
            Ok(entry) => entry,
            Err(why) => {
                note(&format!("note: {} is not a change ghbench can read ({why}): left as it is; remove it once its server is as you want it", found.path.display()));
                continue;
            }
        };
        let server = server_named(entry);
        match liveness {
            Liveness::Alive => note(&format!("note: {server}: {} by {}, which still runs: left as it is (it puts it back when it ends)", entry.said, entry.by_whom())),
            Liveness::Unknown(why) => note(&format!(
                "note: {server}: {} by {}, which this ghbench cannot check ({why}): left as it is; remove {} once that ghbench has ended and the server is put back",
                entry.said,
                entry.by_whom(),
                found.path.display()
            )),
            Liveness::Gone(why) => undo(&found, entry, &format!("which {why}"), managed, engines, &mut pass).await,
        }
    }
    changes::sweep_free_locks();
    pass
}

/// This ghbench stopped part way (a signal, a closed output, a panic, an
/// error): what it still has changed (a server stopped by a cold run's
/// restart, a parameter) is put back as for a ghbench that ended, each
/// said. `restarted`: servers already put back on the way out.
pub async fn put_back_own(managed: Option<&ManagedServers>, engines: &Engines, restarted: Vec<String>) {
    super::servers::wait_for_restarts().await;
    let mut pass = PutBack { restarted, ..PutBack::default() };
    for found in changes::entries() {
        let Ok(entry) = &found.entry else { continue };
        if entry.owner != *me() {
            continue;
        }
        undo(&found, entry, "as this ghbench stops", managed, engines, &mut pass).await;
    }
}

/// The journal to this process alone, waiting (said) while another process
/// puts servers back; None when it cannot be had (said).
async fn exclusive() -> Option<changes::Exclusive> {
    let started = Instant::now();
    let mut said = false;
    loop {
        match changes::try_exclusive() {
            Ok(Some(held)) => return Some(held),
            Ok(None) if started.elapsed() < WAIT_FOR_ANOTHER => {
                if !said {
                    note(&format!("waiting for another ghbench or `just setup` that is putting servers back ({})", changes::dir().display()));
                    said = true;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(None) => {
                note(&format!("warning: another process held the journal of server changes for {} s: nothing put back now", WAIT_FOR_ANOTHER.as_secs()));
                return None;
            }
            Err(e) => {
                note(&format!("warning: {e}: nothing put back now"));
                return None;
            }
        }
    }
}

/// Undoes one change whose owner ended (`whose`: why it is this ghbench's to
/// undo), saying what was done.
async fn undo(found: &Found, entry: &Entry, whose: &str, managed: Option<&ManagedServers>, engines: &Engines, pass: &mut PutBack) {
    let whose = format!("left {} by {}, {whose}", entry.said, entry.by_whom());
    let server = server_named(entry);
    if let Some(holder) = changes::held_by_others(&entry.server).first() {
        note(&format!("note: {server}: not put back yet ({whose}): {} holds it now ({}); put back once that one has ended", holder.by_whom(), holder.said));
        pass.not_undone.push(format!("{server}: {}", entry.said));
        return;
    }
    let mut engine_failed = None;
    for engine in engines.every() {
        match engine.plugin.undo_change(&engine.config, entry).await {
            Some(Ok(done)) => {
                found.remove();
                note(&format!("restored {server}: {done} ({whose})"));
                return;
            }
            Some(Err(e)) => {
                engine_failed = Some(e);
                break;
            }
            None => {}
        }
    }
    let Some(setup_s) = managed.and_then(|m| managing(m, entry)) else {
        let how = match (&entry.parameter, engine_failed) {
            (Some(p), failed) => format!(
                "{}connect to it with the {} engine (`ghbench doctor --engines {}` with its URL), or run `db.adminCommand({{setParameter: 1, {}: {}}})` there",
                failed.map_or(String::new(), |e| format!("putting it back failed ({e}); ")),
                entry.engine.as_deref().unwrap_or("same"),
                entry.engine.as_deref().unwrap_or("ENGINE"),
                p.name,
                p.had
            ),
            (None, _) => "restart it as you started it".to_string(),
        };
        note(&format!("warning: {server} NOT restored: {whose}; ghbench does not manage it: {how}, then remove {}", found.path.display()));
        pass.not_undone.push(format!("{server}: {}", entry.said));
        return;
    };
    if pass.restarted.contains(&setup_s.name) {
        found.remove();
        note(&format!("restored {server}: already restarted as `just setup` left it ({whose})"));
        return;
    }
    if pass.failed.contains(&setup_s.name) {
        pass.not_undone.push(format!("{server}: {}", entry.said));
        return;
    }
    match restart(setup_s, None).await {
        Ok(()) => {
            pass.restarted.push(setup_s.name.clone());
            found.remove();
            note(&format!("restored {server}: restarted as `just setup` left it ({whose})"));
        }
        Err(e) => {
            pass.failed.push(setup_s.name.clone());
            pass.not_undone.push(format!("{server}: {}", entry.said));
            note(&format!("warning: {server} NOT restored ({e:#}): {whose}; run `just setup`, which restarts it"));
        }
    }
}

/// The server `just setup` started that an entry names (an engine's own
/// change, a parameter, names only the address).
fn managing<'a>(managed: &'a ManagedServers, entry: &Entry) -> Option<&'a ManagedServer> {
    managed.servers.iter().find(|s| entry.is_on(&s.server_ref()))
}

fn server_named(entry: &Entry) -> String {
    match &entry.server.name {
        Some(name) => format!("{name} at {}", entry.server.address),
        None => format!("the server at {}", entry.server.address),
    }
}

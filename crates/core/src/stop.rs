//! Server work ghbench started and may stop waiting for: a query cut by a
//! limit, a client abandoned, a step that failed or timed out, or ghbench
//! interrupted (Ctrl-C). Stopping to wait does not stop a server: each such
//! piece of work is registered while it runs ([`Running`]) with what cancels
//! it there (PostgreSQL's cancel request, MongoDB's `killOp`, killing a
//! child process), and is cancelled when it is dropped unfinished, or by
//! [`cancel_all`] when ghbench is interrupted.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

/// What cancels one piece of server work: its outcome said for people
/// (`Ok`: what was done, `Err`: why it could not be).
pub type Cancel = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync>;

struct Registered {
    what: String,
    cancel: Cancel,
}

static NEXT: AtomicU64 = AtomicU64::new(0);
static RUNNING: Mutex<BTreeMap<u64, Registered>> = Mutex::new(BTreeMap::new());
/// Cancels sent for work dropped unfinished, still on their way.
static SENT: Mutex<Vec<JoinHandle<String>>> = Mutex::new(Vec::new());

/// How long one cancel may take (it opens a connection of its own).
pub const CANCEL_LIMIT: Duration = Duration::from_secs(15);

/// A piece of server work while it runs. Dropped before [`Running::finished`]
/// (its future dropped by a timeout, an abort or an interruption), it sends
/// its cancel on the runtime.
#[must_use = "dropping it at once would cancel the work it guards"]
pub struct Running {
    id: u64,
    armed: bool,
}

impl Running {
    /// Registers `what` (e.g. `postgres: query A corrected`) with its cancel.
    pub fn start(what: impl Into<String>, cancel: Cancel) -> Running {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        lock(&RUNNING).insert(id, Registered { what: what.into(), cancel });
        Running { id, armed: true }
    }

    /// The work ended by itself (answered or failed): nothing to cancel.
    pub fn finished(mut self) {
        self.armed = false;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(registered) = lock(&RUNNING).remove(&self.id) else { return };
        if !self.armed {
            return;
        }
        // Outside a runtime (it is shutting down) nothing can be sent.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            lock(&SENT).push(runtime.spawn(cancel_one(registered)));
        }
    }
}

async fn cancel_one(registered: Registered) -> String {
    let Registered { what, cancel } = registered;
    match tokio::time::timeout(CANCEL_LIMIT, cancel()).await {
        Ok(Ok(done)) => format!("{what}: {done}"),
        Ok(Err(why)) => format!("{what}: NOT cancelled: {why}"),
        Err(_) => format!("{what}: NOT cancelled: no answer to the cancel within {} s", CANCEL_LIMIT.as_secs()),
    }
}

/// Cancels every piece of work still running and waits for the cancels sent
/// before (for work dropped unfinished): what each did, for people. For an
/// interrupted ghbench, before it exits. Work that starts meanwhile (a client
/// task that goes on to its next query once its query was cancelled) is
/// cancelled in a further round, a moment later.
pub async fn cancel_all() -> Vec<String> {
    let mut said = settle().await;
    for _ in 0..ROUNDS {
        let running: Vec<Registered> = std::mem::take(&mut *lock(&RUNNING)).into_values().collect();
        if running.is_empty() {
            break;
        }
        let cancels: Vec<_> = running.into_iter().map(|r| tokio::spawn(cancel_one(r))).collect();
        for handle in cancels {
            said.push(handle.await.unwrap_or_else(|e| format!("a cancel did not finish: {e}")));
        }
        tokio::time::sleep(BETWEEN_ROUNDS).await;
        said.extend(settle().await);
    }
    said
}

/// Rounds of [`cancel_all`], and the moment between them.
const ROUNDS: usize = 3;
const BETWEEN_ROUNDS: Duration = Duration::from_millis(200);

/// Waits for the cancels already sent (work dropped unfinished), so a
/// command that ends does not exit before its server work is stopped.
pub async fn settle() -> Vec<String> {
    let sent: Vec<JoinHandle<String>> = std::mem::take(&mut *lock(&SENT));
    let mut said = Vec::new();
    for handle in sent {
        said.push(handle.await.unwrap_or_else(|e| format!("a cancel did not finish: {e}")));
    }
    said
}

/// A poisoned lock still holds good data here (maps of handles).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counting(count: &Arc<AtomicUsize>) -> Cancel {
        let count = count.clone();
        Arc::new(move || {
            let count = count.clone();
            Box::pin(async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok("cancelled".to_string())
            })
        })
    }

    #[tokio::test]
    async fn work_dropped_unfinished_is_cancelled_and_finished_work_is_not() {
        let count = Arc::new(AtomicUsize::new(0));
        Running::start("done", counting(&count)).finished();
        drop(Running::start("dropped", counting(&count)));
        let said = settle().await;
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert!(said.iter().any(|s| s == "dropped: cancelled"), "{said:?}");
        assert!(!said.iter().any(|s| s.starts_with("done")), "{said:?}");
        let still = Running::start("running", counting(&count));
        let said = cancel_all().await;
        assert!(said.iter().any(|s| s == "running: cancelled"), "{said:?}");
        assert_eq!(count.load(Ordering::SeqCst), 2);
        // Cancelled by cancel_all: dropping it sends nothing more.
        drop(still);
        assert!(settle().await.is_empty());
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }
}

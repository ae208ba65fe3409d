//! One ingest run per table and engine at a time. Two runs loading the same
//! table race for the same hours: each would report the other's hours as
//! failed and leave hours half-marked. So a run takes a lock per engine before
//! it changes anything, and a second run is refused at start, told who holds it.
//! Each engine says how it locks (`EngineSink::lock`), e.g. with a session
//! lock that dies with its connection, or a lease document renewed in time.
//!
//! A keeper task watches each lock. Should it be lost (a PostgreSQL restart
//! ends the session; a lease expires while the server was away) it is taken
//! again, and if another run got it first the run is told to stop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::task::JoinHandle;

/// How often a keeper checks (and renews) a lock, and how long one check may take.
pub const KEEP_EVERY: Duration = Duration::from_secs(10);
/// How long a run waits for a lock still held by a session that is ending
/// (a run killed a moment ago) before it calls the table taken.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Why a lock was lost, once it was; shared by the keeper and the run.
pub type Lost = Arc<Mutex<Option<String>>>;

/// This run's hold on one engine's table, until [`TableLock::release`] (or drop).
pub struct TableLock {
    keeper: JoinHandle<()>,
    lost: Lost,
    /// What giving the lock up takes besides stopping the keeper (deleting a lease).
    release: Option<BoxFuture<'static, ()>>,
}

impl TableLock {
    /// A lock watched by `keeper`, which notes in `lost` why it was lost.
    pub fn kept(keeper: JoinHandle<()>, lost: Lost, release: Option<BoxFuture<'static, ()>>) -> TableLock {
        TableLock { keeper, lost, release }
    }

    /// Tells, from any task, whether the lock was lost to another run.
    pub fn watch(&self) -> LockWatch {
        LockWatch(self.lost.clone())
    }

    /// Gives the lock up, the keeper ended before this returns: what it holds
    /// (polars' locked file) is let go by then, so the same run may take the
    /// lock again at once (a bench's disk check, then its load).
    pub async fn release(mut self) {
        self.keeper.abort();
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.keeper).await;
        if let Some(release) = self.release.take() {
            // Best effort: an undeleted lease expires by itself.
            let _ = tokio::time::timeout(Duration::from_secs(5), release).await;
        }
    }
}

impl Drop for TableLock {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

/// Whether a [`TableLock`] is still this run's.
#[derive(Clone)]
pub struct LockWatch(Lost);

impl LockWatch {
    /// Why the lock was lost to another run, if it was.
    pub fn lost(&self) -> Option<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}

pub fn set(lost: &Mutex<Option<String>>, reason: String) {
    let mut state = lost.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *state = Some(reason);
}


//! One ingest run per table and engine at a time. Two runs loading the same
//! table race for the same hours: each would report the other's hours as
//! failed and leave hours half-marked. So a run takes a lock per engine before
//! it changes anything, and a second run is refused at start, told who holds it.
//!
//! - PostgreSQL: a session advisory lock on a connection of its own; it goes
//!   away with the session, so a killed run never leaves it behind.
//! - MongoDB: a lease document in `ghbench_locks`, renewed while the run lives
//!   and free once it expires; a lease whose holder died on this same host is
//!   taken over at once.
//!
//! A keeper task watches each lock. Should it be lost (a PostgreSQL restart
//! ends the session; a lease expires while the server was away) it is taken
//! again, and if another run got it first the run is told to stop.

use std::sync::{Arc, Mutex};
use std::time::Duration;


use ghbench_core::{Engine, Servers, TableName};
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Database;
use tokio::task::JoinHandle;
use tokio_postgres::Client;

use super::SinkError;

/// The MongoDB collection of leases, one document per table.
pub const LOCKS: &str = "ghbench_locks";
/// First key of ghbench's advisory locks on tables (the second is the name's hash).
const PG_LOCK_SPACE: i32 = 4714;
/// A MongoDB lease lasts this long unless renewed.
const LEASE: Duration = Duration::from_secs(60);
/// How often the keeper checks (and renews) a lock, and how long one check may take.
const KEEP_EVERY: Duration = Duration::from_secs(10);
/// How long a run waits for a lock still held by a session that is ending
/// (a run killed a moment ago) before it calls the table taken.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// This run's hold on one engine's table, until [`TableLock::release`] (or drop).
pub struct TableLock {
    keeper: JoinHandle<()>,
    lost: Arc<Mutex<Option<String>>>,
    /// MongoDB: the lease to delete on release.
    lease: Option<(Database, String, ObjectId)>,
}

impl TableLock {
    /// Takes the lock on `table` for `engine`, or fails with [`SinkError::Locked`]
    /// naming the holder. Each server call waits at most `limit`.
    pub async fn take(engine: Engine, servers: &Servers, table: &TableName, limit: Duration) -> Result<TableLock, SinkError> {
        let lost = Arc::new(Mutex::new(None));
        let url = match engine {
            Engine::Postgres => &servers.pg_url,
            Engine::Mongo => &servers.mongo_url,
        };
        let step = async {
            Ok::<_, SinkError>(match engine {
                Engine::Postgres => {
                    let client = pg_lock(servers, table).await?;
                    let keeper = tokio::spawn(keep_postgres(client, servers.clone(), table.clone(), lost.clone()));
                    TableLock { keeper, lost: lost.clone(), lease: None }
                }
                Engine::Mongo => {
                    let db = servers.mongo().await?;
                    let owner = ObjectId::new();
                    take_lease(&db, table, owner).await?;
                    let keeper = tokio::spawn(keep_lease(db.clone(), table.clone(), owner, limit, lost.clone()));
                    TableLock { keeper, lost: lost.clone(), lease: Some((db, table.to_string(), owner)) }
                }
            })
        };
        super::bounded(engine, &ghbench_core::redact_url(url), "taking the table's lock", limit + LOCK_WAIT, step).await
    }

    /// Tells, from any task, whether the lock was lost to another run.
    pub fn watch(&self) -> LockWatch {
        LockWatch(self.lost.clone())
    }

    /// Gives the lock up: ends the PostgreSQL session, deletes the lease.
    pub async fn release(mut self) {
        self.keeper.abort();
        if let Some((db, table, owner)) = self.lease.take() {
            let leases = db.collection::<Document>(LOCKS);
            // Best effort: an undeleted lease expires by itself.
            let _ = tokio::time::timeout(Duration::from_secs(5), leases.delete_one(doc! {"_id": table, "owner": owner})).await;
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
pub struct LockWatch(Arc<Mutex<Option<String>>>);

impl LockWatch {
    /// Why the lock was lost to another run, if it was.
    pub fn lost(&self) -> Option<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}

/// A new session holding the table's advisory lock.
async fn pg_lock(servers: &Servers, table: &TableName) -> Result<Client, SinkError> {
    let client = servers.postgres().await?;
    client.batch_execute(&format!("SET lock_timeout = {}", LOCK_WAIT.as_millis())).await?;
    match client.execute("SELECT pg_advisory_lock($1, hashtext($2))", &[&PG_LOCK_SPACE, &table.as_str()]).await {
        Ok(_) => return Ok(client),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {}
        Err(e) => return Err(e.into()),
    }
    // Who holds it, for the message; the lock itself is what counts.
    let holder = client
        .query_opt(
            "SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'a local socket'),
                    to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ')
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
               AND l.classid = $1::int4::oid AND l.objid = hashtext($2)::oid",
            &[&PG_LOCK_SPACE, &table.as_str()],
        )
        .await
        .ok()
        .flatten()
        .map(|r| {
            let (pid, app, from, since): (i32, String, String, String) = (r.get(0), r.get(1), r.get(2), r.get(3));
            format!(" (PostgreSQL session {pid} '{app}' from {from}, since {since})")
        })
        .unwrap_or_default();
    Err(SinkError::Locked(format!(
        "another ghbench run is loading table '{table}' into postgres{holder}: wait for it to finish (or stop it), then rerun"
    )))
}

/// Takes the lock again whenever its session ends (e.g. a server restart).
async fn keep_postgres(mut client: Client, servers: Servers, table: TableName, lost: Arc<Mutex<Option<String>>>) {
    loop {
        tokio::time::sleep(KEEP_EVERY).await;
        if !client.is_closed() {
            continue;
        }
        match tokio::time::timeout(KEEP_EVERY + LOCK_WAIT, pg_lock(&servers, &table)).await {
            Ok(Ok(fresh)) => client = fresh,
            Ok(Err(SinkError::Locked(holder))) => {
                set(&lost, format!("lost the lock while PostgreSQL was away: {holder}"));
                return;
            }
            // The server is still away: try again on the next round.
            _ => {}
        }
    }
}

fn set(lost: &Mutex<Option<String>>, reason: String) {
    let mut state = lost.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *state = Some(reason);
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// True when `pid` is known not to run on this host (Linux's /proc tells).
fn dead_here(host: &str, pid: i64) -> bool {
    let proc_fs = std::path::Path::new("/proc/self").exists();
    proc_fs && !host.is_empty() && host == hostname() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn lease_fields(owner: ObjectId) -> Document {
    let now = DateTime::now();
    doc! {
        "owner": owner,
        "host": hostname(),
        "pid": i64::from(std::process::id()),
        "started_at": now,
        "expires_at": expires(),
    }
}

fn expires() -> DateTime {
    DateTime::from_millis(DateTime::now().timestamp_millis() + LEASE.as_millis() as i64)
}

/// Takes the table's lease when it is free, expired, ours, or its holder died here.
async fn take_lease(db: &Database, table: &TableName, owner: ObjectId) -> Result<(), SinkError> {
    let leases = db.collection::<Document>(LOCKS);
    let free = doc! {"_id": table.as_str(), "$or": [{"expires_at": {"$lt": DateTime::now()}}, {"owner": owner}]};
    match leases.find_one_and_update(free, doc! {"$set": lease_fields(owner)}).upsert(true).await {
        Ok(_) => return Ok(()),
        // The upsert met a live lease: someone holds it.
        Err(e) if super::mongo::is_duplicate_key(&e) => {}
        Err(e) => return Err(e.into()),
    }
    let Some(holder) = leases.find_one(doc! {"_id": table.as_str()}).await? else {
        return Err(SinkError::Other(format!("the lease on '{table}' vanished while taking it; rerun")));
    };
    let host = holder.get_str("host").unwrap_or("").to_string();
    let pid = holder.get_i64("pid").unwrap_or(0);
    if dead_here(&host, pid) {
        let theirs = doc! {"_id": table.as_str(), "owner": holder.get("owner").cloned().unwrap_or(mongodb::bson::Bson::Null)};
        if leases.update_one(theirs, doc! {"$set": lease_fields(owner)}).await?.modified_count == 1 {
            return Ok(());
        }
    }
    let until = holder.get_datetime("expires_at").map(|d| d.try_to_rfc3339_string().unwrap_or_default()).unwrap_or_default();
    Err(SinkError::Locked(format!(
        "another ghbench run is loading table '{table}' into mongo (process {pid} on host '{host}'; its lease runs until {until} \
         unless renewed): wait for it to finish (or stop it), then rerun"
    )))
}

/// How one renewal of a lease went.
enum Renewal {
    Held,
    TakenBy(String),
    /// No answer (the server is away): try again on the next round.
    Unanswered,
}

/// Renews the lease; notes when another run took it over, or when it could
/// not be renewed for so long that another run may take it any moment.
async fn keep_lease(db: Database, table: TableName, owner: ObjectId, limit: Duration, lost: Arc<Mutex<Option<String>>>) {
    let check = limit.min(KEEP_EVERY);
    let mut renewed = std::time::Instant::now();
    loop {
        tokio::time::sleep(KEEP_EVERY).await;
        match tokio::time::timeout(check, renew(&db, &table, owner)).await.unwrap_or(Renewal::Unanswered) {
            Renewal::Held => renewed = std::time::Instant::now(),
            Renewal::TakenBy(holder) => return set(&lost, format!("lost the lease: {holder}")),
            Renewal::Unanswered if renewed.elapsed() + 2 * KEEP_EVERY > LEASE => {
                let silent = renewed.elapsed().as_secs();
                return set(&lost, format!("could not renew the lease on '{table}' for {silent} s: another run may take the table"));
            }
            Renewal::Unanswered => {}
        }
    }
}

async fn renew(db: &Database, table: &TableName, owner: ObjectId) -> Renewal {
    let leases = db.collection::<Document>(LOCKS);
    match leases.update_one(doc! {"_id": table.as_str(), "owner": owner}, doc! {"$set": {"expires_at": expires()}}).await {
        Ok(result) if result.matched_count == 1 => Renewal::Held,
        // Ours is gone (it expired while the server was away): take it again,
        // unless another run has meanwhile.
        Ok(_) => match take_lease(db, table, owner).await {
            Ok(()) => Renewal::Held,
            Err(SinkError::Locked(holder)) => Renewal::TakenBy(holder),
            Err(_) => Renewal::Unanswered,
        },
        Err(_) => Renewal::Unanswered,
    }
}

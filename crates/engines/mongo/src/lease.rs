//! MongoDB's table lock: a lease document in `ghbench_locks`, renewed while
//! the run lives and free once it expires; a lease whose holder died on this
//! same host is taken over at once.

use std::time::Duration;

use ghbench_core::TableName;
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Database;

use ghbench_ingest::sink::lock::{set, Lost, TableLock, KEEP_EVERY};
use ghbench_ingest::sink::SinkError;

use crate::error::OrSink;

/// The MongoDB collection of leases, one document per table.
pub const LOCKS: &str = "ghbench_locks";
/// A lease lasts this long unless renewed.
const LEASE: Duration = Duration::from_secs(60);

/// Takes the table's lease, renewed by a task until released; each renewal
/// waits at most `limit`.
pub async fn lock(db: &Database, table: &TableName, limit: Duration) -> Result<TableLock, SinkError> {
    let owner = ObjectId::new();
    take_lease(db, table, owner).await?;
    let lost = Lost::default();
    let keeper = tokio::spawn(keep_lease(db.clone(), table.clone(), owner, limit, lost.clone()));
    let (db, table) = (db.clone(), table.to_string());
    let release = Box::pin(async move {
        let _ = db.collection::<Document>(LOCKS).delete_one(doc! {"_id": table, "owner": owner}).await;
    });
    Ok(TableLock::kept(keeper, lost, Some(release)))
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
        Err(e) if crate::sink::is_duplicate_key(&e) => {}
        Err(e) => return Err(crate::error::to_sink_error(&e)),
    }
    let Some(holder) = leases.find_one(doc! {"_id": table.as_str()}).await.sink()? else {
        return Err(SinkError::Other(format!("the lease on '{table}' vanished while taking it; rerun")));
    };
    let host = holder.get_str("host").unwrap_or("").to_string();
    let pid = holder.get_i64("pid").unwrap_or(0);
    if dead_here(&host, pid) {
        let theirs = doc! {"_id": table.as_str(), "owner": holder.get("owner").cloned().unwrap_or(mongodb::bson::Bson::Null)};
        if leases.update_one(theirs, doc! {"$set": lease_fields(owner)}).await.sink()?.modified_count == 1 {
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
async fn keep_lease(db: Database, table: TableName, owner: ObjectId, limit: Duration, lost: Lost) {
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

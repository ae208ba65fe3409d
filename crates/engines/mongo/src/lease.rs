//! MongoDB's table lock: a lease document in `ghbench_locks`, renewed while
//! the run lives and free once it expires; a lease whose holder died on this
//! same host is taken over at once.
//!
//! Times are the server's (`$$NOW` in an update pipeline), so clients whose
//! clocks disagree still agree on when a lease expires. "This same host" means
//! the same host name, boot and process id namespace: two containers may
//! share a host name, and neither can see the other's processes.

use std::time::Duration;

use ghbench_core::Engine;
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database};

use ghbench_engine::load::lock::{set, Lost, TableLock, KEEP_EVERY};
use ghbench_engine::load::SinkError;

use crate::error::OrSink;

/// The MongoDB collection of leases, one document per collection loaded.
pub const LOCKS: &str = "ghbench_locks";
/// A lease lasts this long unless renewed.
const LEASE: Duration = Duration::from_secs(60);

fn leases(db: &Database) -> Collection<Document> {
    db.collection_with_options(LOCKS, crate::ledger::durable())
}

/// The server's time `LEASE` from now, in an update pipeline.
fn expires() -> Document {
    doc! {"$add": ["$$NOW", LEASE.as_millis() as i64]}
}

/// Takes the lease on the collection called `table` (the table's own name, or
/// a setup's `tuned.<table>`), renewed by a task until released; each renewal
/// waits at most `limit`.
pub async fn lock(db: &Database, engine: &Engine, table: &str, limit: Duration) -> Result<TableLock, SinkError> {
    let owner = ObjectId::new();
    take_lease(db, engine, table, owner).await?;
    let lost = Lost::default();
    let keeper = tokio::spawn(keep_lease(db.clone(), engine.clone(), table.to_string(), owner, limit, lost.clone()));
    let (db, table) = (db.clone(), table.to_string());
    let release = Box::pin(async move {
        let _ = leases(&db).delete_one(doc! {"_id": table, "owner": owner}).await;
    });
    Ok(TableLock::kept(keeper, lost, Some(release)))
}

/// Where this process runs, as far as another process can tell: the host
/// name, the kernel's boot, and the process id namespace (a container's own).
#[derive(Debug, Clone, PartialEq)]
struct Place {
    host: String,
    boot: String,
    pid_namespace: String,
}

impl Place {
    fn here() -> Place {
        let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
        let pid_namespace = std::fs::read_link("/proc/self/ns/pid").map(|p| p.display().to_string()).unwrap_or_default();
        Place { host: read("/proc/sys/kernel/hostname"), boot: read("/proc/sys/kernel/random/boot_id"), pid_namespace }
    }

    fn of(holder: &Document) -> Place {
        let field = |name: &str| holder.get_str(name).unwrap_or("").to_string();
        Place { host: field("host"), boot: field("boot_id"), pid_namespace: field("pid_namespace") }
    }

    /// This process can see whether `pid` of `holder` lives: the same host,
    /// boot and namespace, each known (a lease from before these were
    /// recorded, or another container with the same host name, is not).
    fn can_see(&self, holder: &Place) -> bool {
        let known = !self.host.is_empty() && !self.boot.is_empty() && !self.pid_namespace.is_empty();
        known && self == holder
    }
}

/// True when `pid` is known not to run: its holder ran where this process
/// can see its processes (Linux's /proc tells), and it is gone.
fn dead_here(holder: &Place, pid: i64) -> bool {
    Place::here().can_see(holder) && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The lease's fields, its times the server's.
fn lease_fields(owner: ObjectId) -> Document {
    let here = Place::here();
    doc! {
        "owner": owner,
        // Literal: in an update pipeline a string beginning with `$` would be a field path.
        "host": {"$literal": here.host},
        "boot_id": {"$literal": here.boot},
        "pid_namespace": {"$literal": here.pid_namespace},
        "pid": i64::from(std::process::id()),
        "started_at": "$$NOW",
        "expires_at": expires(),
    }
}

/// Takes the table's lease when it is free, expired, ours, or its holder died here.
async fn take_lease(db: &Database, engine: &Engine, table: &str, owner: ObjectId) -> Result<(), SinkError> {
    let leases = leases(db);
    let free = doc! {"_id": table, "$or": [{"$expr": {"$lt": ["$expires_at", "$$NOW"]}}, {"owner": owner}]};
    match leases.find_one_and_update(free, vec![doc! {"$set": lease_fields(owner)}]).upsert(true).await {
        Ok(_) => return Ok(()),
        // The upsert met a live lease: someone holds it.
        Err(e) if crate::sink::is_duplicate_key(&e) => {}
        Err(e) => return Err(crate::error::to_sink_error(&e)),
    }
    let Some(holder) = leases.find_one(doc! {"_id": table}).await.sink()? else {
        return Err(SinkError::Other(format!("the lease on '{table}' vanished while taking it; rerun")));
    };
    let place = Place::of(&holder);
    let pid = holder.get_i64("pid").unwrap_or(0);
    if dead_here(&place, pid) {
        let theirs = doc! {"_id": table, "owner": holder.get("owner").cloned().unwrap_or(mongodb::bson::Bson::Null)};
        if leases.update_one(theirs, vec![doc! {"$set": lease_fields(owner)}]).await.sink()?.modified_count == 1 {
            return Ok(());
        }
    }
    let host = place.host;
    let until = holder.get_datetime("expires_at").map(|d| d.try_to_rfc3339_string().unwrap_or_default()).unwrap_or_default();
    Err(SinkError::Locked(format!(
        "another ghbench run is loading table '{table}' into {engine} (process {pid} on host '{host}'; its lease runs until {until} \
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
async fn keep_lease(db: Database, engine: Engine, table: String, owner: ObjectId, limit: Duration, lost: Lost) {
    let check = limit.min(KEEP_EVERY);
    let mut renewed = std::time::Instant::now();
    loop {
        tokio::time::sleep(KEEP_EVERY).await;
        match tokio::time::timeout(check, renew(&db, &engine, &table, owner)).await.unwrap_or(Renewal::Unanswered) {
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

async fn renew(db: &Database, engine: &Engine, table: &str, owner: ObjectId) -> Renewal {
    let renewal = vec![doc! {"$set": {"expires_at": expires()}}];
    match leases(db).update_one(doc! {"_id": table, "owner": owner}, renewal).await {
        Ok(result) if result.matched_count == 1 => Renewal::Held,
        // Ours is gone (it expired while the server was away): take it again,
        // unless another run has meanwhile.
        Ok(_) => match take_lease(db, engine, table, owner).await {
            Ok(()) => Renewal::Held,
            Err(SinkError::Locked(holder)) => Renewal::TakenBy(holder),
            Err(_) => Renewal::Unanswered,
        },
        Err(_) => Renewal::Unanswered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_is_seen_only_from_the_same_host_boot_and_pid_namespace() {
        let here = Place::here();
        assert!(here.can_see(&here.clone()), "{here:?}");
        let other_container = Place { pid_namespace: "pid:[4026532999]".into(), ..here.clone() };
        assert!(!here.can_see(&other_container), "same host name, another container");
        let rebooted = Place { boot: "00000000-0000-0000-0000-000000000000".into(), ..here.clone() };
        assert!(!here.can_see(&rebooted));
        let old_lease = Place { boot: String::new(), pid_namespace: String::new(), ..here.clone() };
        assert!(!here.can_see(&old_lease), "a lease that recorded only a host name");
        // A process that surely does not run here (pid_max is below 2^22).
        assert!(dead_here(&here, 1 << 23));
        assert!(!dead_here(&other_container, 1 << 23));
        assert!(!dead_here(&here, i64::from(std::process::id())));
    }
}

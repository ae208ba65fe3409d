//! The table's loading lock: a named lock (`GET_LOCK`) on a connection of
//! its own. It goes away with the connection, so a killed run never leaves
//! it behind; a keeper takes it again when the server comes back.

use ghbench_core::{EngineSpec, TableName};
use ghbench_engine::load::lock::{set, Lost, TableLock, KEEP_EVERY, LOCK_WAIT};
use ghbench_engine::load::SinkError;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

use crate::error::{to_sink_error, OrSink};

/// The lock's name for `key`: the family allows 64 characters, so a longer
/// key is cut and its hash added (keys are validated names, at most ~80).
pub fn lock_name(key: &str) -> String {
    let name = format!("ghbench:{key}");
    if name.len() <= 64 {
        return name;
    }
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{}:{hash:016x}", &name[..64 - 17])
}

/// Takes the lock named `key` for loading `table`, kept by a task until released.
pub async fn lock(spec: &'static EngineSpec, url: &str, key: &str, table: &TableName) -> Result<TableLock, SinkError> {
    let conn = take(spec, url, key, table).await?;
    let lost = Lost::default();
    let keeper = tokio::spawn(keep(conn, spec, url.to_string(), key.to_string(), table.clone(), lost.clone()));
    Ok(TableLock::kept(keeper, lost, None))
}

/// A new connection holding the named lock, or [`SinkError::Locked`] naming its holder.
async fn take(spec: &'static EngineSpec, url: &str, key: &str, table: &TableName) -> Result<Conn, SinkError> {
    let mut conn = crate::connect::connect(spec, url).await?;
    let name = lock_name(key);
    let got: Option<Option<i64>> = conn.exec_first("SELECT GET_LOCK(?, ?)", (&name, LOCK_WAIT.as_secs_f64())).await.sink()?;
    if got.flatten() == Some(1) {
        return Ok(conn);
    }
    // Who holds it, for the message; the lock itself is what counts.
    let holder: Option<(u64, String, u64)> = conn
        .exec_first("SELECT ID, HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = IS_USED_LOCK(?)", (&name,))
        .await
        .map_err(|e| to_sink_error(&e))
        .ok()
        .flatten();
    let holder = holder.map(|(id, host, seconds)| format!(" (connection {id} from {host}, {seconds} s in its current state)")).unwrap_or_default();
    Err(SinkError::Locked(format!(
        "another ghbench run is loading table '{table}' into {engine}{holder}: wait for it to finish (or stop it), then rerun",
        engine = spec.engine
    )))
}

/// Takes the lock again whenever its connection ends (e.g. a server restart).
async fn keep(mut conn: Conn, spec: &'static EngineSpec, url: String, key: String, table: TableName, lost: Lost) {
    loop {
        tokio::time::sleep(KEEP_EVERY).await;
        // Taken again only when the connection says it failed (a restart
        // resets it at once; TCP keepalive finds a vanished server): a slow
        // ping (a server stalled in reclaim) is no loss, and is not cut
        // short, since a new connection would wait on the lock the old one
        // still holds, and a ping dropped half way leaves its connection
        // out of step.
        if conn.ping().await.is_ok() {
            continue;
        }
        match tokio::time::timeout(KEEP_EVERY + LOCK_WAIT, take(spec, &url, &key, &table)).await {
            Ok(Ok(fresh)) => conn = fresh,
            Ok(Err(SinkError::Locked(holder))) => {
                set(&lost, format!("lost the lock while {} was away: {holder}", spec.engine));
                return;
            }
            // The server is still away: try again on the next round.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_names_fit_the_servers_limit_and_stay_apart() {
        assert_eq!(lock_name("github2015"), "ghbench:github2015");
        let long = format!("mysql-tuned:{}", "t".repeat(63));
        let other = format!("mysql-tuned:{}u", "t".repeat(62));
        assert_eq!(lock_name(&long).len(), 64);
        assert_ne!(lock_name(&long), lock_name(&other));
    }
}

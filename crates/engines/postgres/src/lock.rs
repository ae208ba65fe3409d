//! PostgreSQL's table lock: a session advisory lock on a connection of its
//! own. It goes away with the session, so a killed run never leaves it behind.

use ghbench_core::{Engine, TableName};
use ghbench_engine::load::lock::{set, Lost, TableLock, KEEP_EVERY, LOCK_WAIT};
use ghbench_engine::load::SinkError;
use tokio_postgres::Client;

use crate::error::{to_sink_error, OrSink};
use crate::SPEC;

/// First key of ghbench's advisory locks on tables (the second is the name's hash).
const PG_LOCK_SPACE: i32 = 4714;

/// Takes the lock named `key` for loading `table`, kept by a task until
/// released. The key names what is written: the `jsonb` engine's is the table's
/// name (the key older ghbench used), another engine's says whose it is.
pub async fn lock(url: &str, engine: &Engine, key: &str, table: &TableName) -> Result<TableLock, SinkError> {
    let client = pg_lock(url, engine, key, table).await?;
    let lost = Lost::default();
    let keeper = tokio::spawn(keep_postgres(client, url.to_string(), engine.clone(), key.to_string(), table.clone(), lost.clone()));
    Ok(TableLock::kept(keeper, lost, None))
}

/// A new session holding the advisory lock `key`.
async fn pg_lock(url: &str, engine: &Engine, key: &str, table: &TableName) -> Result<Client, SinkError> {
    let client = crate::connect::connect(&SPEC, url).await?;
    client.batch_execute(&format!("SET lock_timeout = {}", LOCK_WAIT.as_millis())).await.sink()?;
    match client.execute("SELECT pg_advisory_lock($1, hashtext($2))", &[&PG_LOCK_SPACE, &key]).await {
        Ok(_) => return Ok(client),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {}
        Err(e) => return Err(to_sink_error(&e)),
    }
    // Who holds it, for the message; the lock itself is what counts.
    let holder = client
        .query_opt(
            "SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'a local socket'),
                    to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ')
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
               AND l.classid = $1::int4::oid AND l.objid = hashtext($2)::oid",
            &[&PG_LOCK_SPACE, &key],
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
        "another ghbench run is loading table '{table}' into {engine}{holder}: wait for it to finish (or stop it), then rerun"
    )))
}

/// Takes the lock again whenever its session ends (e.g. a server restart).
async fn keep_postgres(mut client: Client, url: String, engine: Engine, key: String, table: TableName, lost: Lost) {
    loop {
        tokio::time::sleep(KEEP_EVERY).await;
        if !client.is_closed() {
            continue;
        }
        match tokio::time::timeout(KEEP_EVERY + LOCK_WAIT, pg_lock(&url, &engine, &key, &table)).await {
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


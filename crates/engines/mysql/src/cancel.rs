//! Stopping server work ghbench no longer waits for (Ctrl-C, a step's
//! timeout, `--query-timeout` where the server did not keep it): `KILL QUERY
//! <id>` (the statement; the connection stays usable) or `KILL CONNECTION
//! <id>` (a loading connection: its hour's transaction rolls back) from a
//! connection of its own. Each piece of work is registered with
//! `ghbench_core::stop::Running`, so an interrupted run sends and waits for
//! its cancels before it exits: closing a socket does not stop a statement
//! the family's servers are running.

use std::future::Future;
use std::sync::Arc;

use ghbench_core::stop::{Cancel, Running};
use ghbench_core::EngineSpec;
use mysql_async::prelude::Queryable;

/// What a cancel kills.
#[derive(Debug, Clone, Copy)]
pub enum Kill {
    /// The running statement; the connection goes on.
    Query,
    /// The connection: its open transaction rolls back.
    Connection,
}

/// The cancel of work on connection `id` of the server at `url`.
pub fn kill(spec: &'static EngineSpec, url: &str, id: u32, kill: Kill) -> Cancel {
    let url = url.to_string();
    Arc::new(move || {
        let url = url.clone();
        Box::pin(async move {
            let what = match kill {
                Kill::Query => "QUERY",
                Kill::Connection => "CONNECTION",
            };
            let mut conn = crate::connect::connect(spec, &url).await.map_err(|e| e.to_string())?;
            let killed = conn.query_drop(format!("KILL {what} {id}")).await;
            let _ = conn.disconnect().await;
            match killed {
                Ok(()) => Ok(format!("KILL {what} {id} sent (the server stops it)")),
                // 1094: no such thread, it ended by itself meanwhile.
                Err(mysql_async::Error::Server(e)) if e.code == 1094 => Ok(format!("connection {id} had already ended")),
                Err(e) => Err(ghbench_core::error_chain(&e)),
            }
        })
    })
}

/// Registers `what` on connection `id` while it runs (see [`Running`]).
pub fn running(spec: &'static EngineSpec, url: &str, id: u32, what: &str, how: Kill) -> Running {
    Running::start(format!("{} at {}: {what}", spec.engine, ghbench_core::redact_url(url)), kill(spec, url, id, how))
}

/// Runs `work` (a statement on connection `id`); if it is dropped before it
/// ends, the statement is killed on the server.
pub async fn cancellable<T>(spec: &'static EngineSpec, url: &str, id: u32, what: &str, work: impl Future<Output = T>) -> T {
    let guard = running(spec, url, id, what, Kill::Query);
    let done = work.await;
    guard.finished();
    done
}

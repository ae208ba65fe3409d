//! Stopping a statement ghbench no longer waits for (Ctrl-C, `--query-timeout`
//! where the server did not keep it): `KILL QUERY <connection id>` from
//! another connection, so it does not go on taking the server's cores and
//! disks for hours. The connection itself stays usable.

use std::future::Future;

use ghbench_core::EngineSpec;
use mysql_async::prelude::Queryable;

/// Kills the statement running on connection `id` when dropped armed.
pub struct KillOnDrop {
    spec: &'static EngineSpec,
    url: String,
    id: u32,
    armed: bool,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (spec, url, id) = (self.spec, self.url.clone(), self.id);
        // Best effort, bounded: a server that does not answer cannot be told.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let kill = async {
                    let mut conn = crate::connect::connect(spec, &url).await.ok()?;
                    conn.query_drop(format!("KILL QUERY {id}")).await.ok()?;
                    conn.disconnect().await.ok()
                };
                let _ = tokio::time::timeout(ghbench_core::CONNECT_TIMEOUT * 2, kill).await;
            });
        }
    }
}

/// Runs `work` (a statement on connection `id`); if it is dropped before it
/// ends, the statement is killed on the server.
pub async fn cancellable<T>(spec: &'static EngineSpec, url: &str, id: u32, work: impl Future<Output = T>) -> T {
    let mut guard = KillOnDrop { spec, url: url.to_string(), id, armed: true };
    let done = work.await;
    guard.armed = false;
    done
}

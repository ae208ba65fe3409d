//! Reaching PostgreSQL and saying exactly what it is.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{error_chain, ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};

/// A new connection, with the server's whole handshake bounded by the URL's
/// `connect_timeout` (or [`CONNECT_TIMEOUT`]): tokio-postgres bounds only the
/// TCP connect, so a listener that never answers would hang it forever.
/// `spec` names the engine in errors.
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<tokio_postgres::Client, ConnectError> {
    let err = |e: &dyn std::error::Error| ConnectError::new(spec, url, error_chain(e));
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| err(&e))?;
    let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
    config.connect_timeout(limit);
    if config.get_application_name().is_none() {
        // Names ghbench's sessions in pg_stat_activity (and in lock conflicts).
        config.application_name("ghbench");
    }
    // A server that dies without closing the socket is noticed, not waited on.
    config.keepalives(true).keepalives_idle(Duration::from_secs(30));
    let connecting = config.connect(tokio_postgres::NoTls);
    let (client, connection) = match tokio::time::timeout(limit, connecting).await {
        Ok(result) => result.map_err(|e| err(&e))?,
        Err(_) => return Err(ConnectError::silent(spec, url, limit, "the PostgreSQL handshake")),
    };
    tokio::spawn(async move {
        // Errors here surface on the client's next call; nothing to add.
        let _ = connection.await;
    });
    Ok(client)
}

/// PostgreSQL's version and the settings the paper reported (and that move its timings).
pub async fn describe(spec: &EngineSpec, client: &tokio_postgres::Client, url: &str) -> Result<ServerInfo, tokio_postgres::Error> {
    let build: String = client.query_one("SELECT version()", &[]).await?.get(0);
    let version: String = client.query_one("SHOW server_version", &[]).await?.get(0);
    let mut settings = BTreeMap::new();
    for name in ["shared_buffers", "work_mem", "max_parallel_workers_per_gather", "jit", "server_encoding", "lc_collate"] {
        let value: String = client.query_one(&format!("SHOW {name}"), &[]).await?.get(0);
        settings.insert(name.to_string(), value);
    }
    let version = version.split_whitespace().next().unwrap_or(&version).to_string();
    let mut info = ServerInfo::new(spec.engine.clone(), "PostgreSQL", &version, build, url);
    info.settings = settings;
    Ok(info)
}

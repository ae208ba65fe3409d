//! Reaching PostgreSQL and saying exactly what it is.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{error_chain, ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};

use crate::ssl_params::{self, SslMode};
use crate::tls::Tls;

/// A new connection, with the server's whole handshake (TLS included) bounded
/// by the URL's `connect_timeout` (or [`CONNECT_TIMEOUT`]): tokio-postgres
/// bounds only the TCP connect, so a listener that never answers would hang it
/// forever. TLS follows the URL's `sslmode` and `sslrootcert` as libpq does
/// (see [`crate::tls`]). `spec` names the engine in errors.
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<tokio_postgres::Client, ConnectError> {
    let said = |reason: String| ConnectError::new(spec, url, reason);
    let (rest, ssl) = ssl_params::take(url).map_err(said)?;
    let tls = Tls::plan(&ssl).map_err(said)?;
    let err = |e: &tokio_postgres::Error| ConnectError::new(spec, url, tls.explain(e).unwrap_or_else(|| error_chain(e)));
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e| err(&e))?;
    config.ssl_mode(match tls.mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
    });
    let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
    config.connect_timeout(limit);
    if config.get_application_name().is_none() {
        // Names ghbench's sessions in pg_stat_activity (and in lock conflicts).
        config.application_name("ghbench");
    }
    // A server that dies without closing the socket is noticed, not waited on.
    config.keepalives(true).keepalives_idle(Duration::from_secs(30));
    // sslmode=disable never reads the CA file, as in libpq.
    let connector = tls.connector().map_err(said)?;
    let connecting = config.connect(connector);
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
    settings.insert("ssl".to_string(), ssl(client).await);
    let version = version.split_whitespace().next().unwrap_or(&version).to_string();
    let mut info = ServerInfo::new(spec.engine.clone(), "PostgreSQL", &version, build, url);
    info.settings = settings;
    Ok(info)
}

/// Whether this connection is encrypted, e.g. `on (TLSv1.3)` or `off`, so a
/// report says how its timings were taken. A server without `pg_stat_ssl`
/// (one that only speaks PostgreSQL's protocol) says `unknown`.
async fn ssl(client: &tokio_postgres::Client) -> String {
    let sql = "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()";
    match client.query_opt(sql, &[]).await {
        Ok(Some(row)) => match (row.get::<_, bool>(0), row.get::<_, Option<String>>(1)) {
            (true, Some(version)) => format!("on ({version})"),
            (true, None) => "on".to_string(),
            (false, _) => "off".to_string(),
        },
        Ok(None) => "unknown (pg_stat_ssl has no row for this session)".to_string(),
        Err(_) => "unknown (pg_stat_ssl cannot be read)".to_string(),
    }
}

//! Reaching PostgreSQL and saying exactly what it is.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{error_chain, ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};

use crate::ssl_params::{self, SslMode};
use crate::tls::Tls;

/// The session limits a role, a database or a managed service may set by
/// default, which would cut ghbench's long work: a query of hours, an index
/// build or DDL waiting for a table another session holds (`lock_timeout`),
/// VACUUM, an hour's load in one transaction, the idle connection that holds
/// the table's lock. Every session of ghbench starts with them off (0), so no
/// limit applies that nobody asked for; `--query-timeout` sets
/// `statement_timeout` on the query sessions alone, and the loading lock's
/// session bounds its own wait (see `lock`).
///
/// The ones every supported server has go in the startup packet, so they hold
/// from the first statement (a role's `statement_timeout = '1ms'` would cut a
/// `SET`); the newer ones are set just after, where the server has them.
const STARTUP_LIMITS: &str = "-c statement_timeout=0 -c lock_timeout=0 -c idle_in_transaction_session_timeout=0";
/// `idle_session_timeout` (PostgreSQL 14), `transaction_timeout` (17).
const LATER_LIMITS: [&str; 2] = ["idle_session_timeout", "transaction_timeout"];
/// Every limit above, as recorded (`describe`).
pub const SESSION_LIMITS: [&str; 5] = ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "idle_session_timeout", "transaction_timeout"];

/// How often the server checks, during a long query, that ghbench is still
/// connected (PostgreSQL 14, Linux and a few other systems): a ghbench that is
/// killed does not leave its query running for hours.
pub const CONNECTION_CHECK: &str = "client_connection_check_interval";
const CONNECTION_CHECK_EVERY: &str = "5s";

/// What a pooler in front of PostgreSQL (PgBouncer) says when it will not pass
/// startup options on; the limits are then set with `SET` after connecting.
const POOLER_REFUSES_OPTIONS: &str = "unsupported startup parameter";

/// A new connection, with the server's whole handshake (TLS included) bounded
/// by the URL's `connect_timeout` (or [`CONNECT_TIMEOUT`]): tokio-postgres
/// bounds only the TCP connect, so a listener that never answers would hang it
/// forever. TLS follows the URL's `sslmode` and `sslrootcert` as libpq does
/// (see [`crate::tls`]). `spec` names the engine in errors. The session starts
/// with no time limit of the server's (see [`STARTUP_LIMITS`]).
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<tokio_postgres::Client, ConnectError> {
    Ok(connect_cancellable(spec, url).await?.0)
}

/// As [`connect`], with what cancels the session's running statement.
pub async fn connect_cancellable(spec: &EngineSpec, url: &str) -> Result<(tokio_postgres::Client, Canceller), ConnectError> {
    let said = |reason: String| ConnectError::new(spec, url, reason);
    let (rest, ssl) = ssl_params::take(url).map_err(said)?;
    let tls = Tls::plan(&ssl).map_err(said)?;
    let err = |e: &tokio_postgres::Error| ConnectError::new(spec, url, tls.explain(e).unwrap_or_else(|| error_chain(e)));
    let config = base_config(&rest, &tls).map_err(|e| err(&e))?;
    let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
    // The URL's own options come after ghbench's, so what a user wrote there wins.
    let mut with_limits = config.clone();
    with_limits.options(match config.get_options() {
        Some(theirs) => format!("{STARTUP_LIMITS} {theirs}"),
        None => STARTUP_LIMITS.to_string(),
    });
    // sslmode=disable never reads the CA file, as in libpq.
    let connector = tls.connector().map_err(said)?;
    let handshake = |config: tokio_postgres::Config| {
        let connector = connector.clone();
        async move {
            match tokio::time::timeout(limit, config.connect(connector)).await {
                Ok(result) => Ok(result),
                Err(_) => Err(ConnectError::silent(spec, url, limit, "the PostgreSQL handshake")),
            }
        }
    };
    let (client, connection, in_startup) = match handshake(with_limits).await? {
        Ok((client, connection)) => (client, connection, true),
        Err(e) if e.to_string().contains(POOLER_REFUSES_OPTIONS) => {
            // A pooler: the limits are set by statements instead (below).
            let (client, connection) = handshake(config).await?.map_err(|e| err(&e))?;
            (client, connection, false)
        }
        Err(e) => return Err(err(&e)),
    };
    tokio::spawn(async move {
        // Errors here surface on the client's next call; nothing to add.
        let _ = connection.await;
    });
    lift_limits(&client, in_startup).await.map_err(|e| said(format!("setting the session's time limits to none: {}", error_chain(&e))))?;
    let canceller = Canceller { token: client.cancel_token(), tls: connector };
    Ok((client, canceller))
}

/// The URL's settings as tokio-postgres takes them, with ghbench's own:
/// TLS as planned, the handshake bounded, the sessions named, keepalives.
fn base_config(url: &str, tls: &Tls) -> Result<tokio_postgres::Config, tokio_postgres::Error> {
    let mut config: tokio_postgres::Config = url.parse()?;
    config.ssl_mode(match tls.mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
    });
    let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
    config.connect_timeout(limit);
    if config.get_application_name().is_none() {
        // Names ghbench's sessions in pg_stat_activity (and in lock conflicts).
        config.application_name(&ghbench_core::owner::me().label());
    }
    // A server that dies without closing the socket is noticed, not waited on.
    config.keepalives(true).keepalives_idle(Duration::from_secs(30));
    Ok(config)
}

/// Turns off the limits the startup packet could not (see [`STARTUP_LIMITS`]),
/// each only where the server has it, and asks the server to watch the
/// connection during long queries where it can (not an error where the
/// platform cannot: `describe` records the setting as it is).
pub(crate) async fn lift_limits(client: &tokio_postgres::Client, in_startup: bool) -> Result<(), tokio_postgres::Error> {
    let names: Vec<&str> = match in_startup {
        true => LATER_LIMITS.to_vec(),
        false => SESSION_LIMITS.to_vec(),
    };
    let set = "SELECT set_config(name, '0', false) FROM pg_settings WHERE name = ANY($1)";
    client.query(set, &[&names]).await?;
    let check = format!("SELECT set_config(name, '{CONNECTION_CHECK_EVERY}', false) FROM pg_settings WHERE name = $1");
    let _ = client.query(&check, &[&CONNECTION_CHECK]).await;
    Ok(())
}

/// Cancels what a session is running, from another connection (PostgreSQL's
/// cancel request): a statement ghbench stops waiting for must not go on
/// taking the server's cores and disks.
#[derive(Clone)]
pub struct Canceller {
    token: tokio_postgres::CancelToken,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

impl Canceller {
    /// Sends the cancel request, bounded by [`CONNECT_TIMEOUT`].
    pub async fn cancel(&self) -> Result<(), String> {
        match tokio::time::timeout(CONNECT_TIMEOUT, self.token.cancel_query(self.tls.clone())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(error_chain(&e)),
            Err(_) => Err(format!("the server took no cancel request within {} s", CONNECT_TIMEOUT.as_secs())),
        }
    }
}

/// PostgreSQL's version and the settings the paper reported (and that move its timings).
pub async fn describe(spec: &EngineSpec, client: &tokio_postgres::Client, url: &str) -> Result<ServerInfo, tokio_postgres::Error> {
    let build: String = client.query_one("SELECT version()", &[]).await?.get(0);
    let version: String = client.query_one("SHOW server_version", &[]).await?.get(0);
    let mut settings = BTreeMap::new();
    // The index builds' too: `ghbench index` times them.
    // The planner's too: what a plan rests on (`bench --preset paper2019` sets the paper's).
    let named = [
        "shared_buffers",
        "work_mem",
        "effective_cache_size",
        "random_page_cost",
        "default_statistics_target",
        "max_parallel_workers_per_gather",
        "maintenance_work_mem",
        "max_parallel_maintenance_workers",
        "max_wal_size",
        "jit",
        "server_encoding",
        "lc_collate",
    ];
    for name in named {
        let value: String = client.query_one(&format!("SHOW {name}"), &[]).await?.get(0);
        settings.insert(name.to_string(), value);
    }
    settings.insert("ssl".to_string(), ssl(client).await);
    settings.extend(session_limits(client).await);
    settings.insert(LIMITS_LIFTED.to_string(), role_and_database_limits(client).await);
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

/// The record's name for [`role_and_database_limits`].
pub const LIMITS_LIFTED: &str = "limits lifted (the role's and database's)";

/// The [`SESSION_LIMITS`] this session's role and database set by default
/// (`ALTER ROLE` / `ALTER DATABASE ... SET`), e.g. `lock_timeout=1s`, which
/// every ghbench session starts without: the record says what was lifted.
/// A limit in the server's configuration file is not readable without its
/// rights; the [`session_limits`] show it lifted all the same.
async fn role_and_database_limits(client: &tokio_postgres::Client) -> String {
    let sql = "SELECT string_agg(c, ', ' ORDER BY c) FROM pg_db_role_setting s, unnest(s.setconfig) c
               WHERE s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = session_user))
                 AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
                 AND split_part(c, '=', 1) = ANY($1)";
    match client.query_one(sql, &[&SESSION_LIMITS.as_slice()]).await {
        Ok(row) => row.get::<_, Option<String>>(0).unwrap_or_else(|| "none".into()),
        Err(e) => format!("not read: {}", error_chain(&e)),
    }
}

/// The session limits and the connection check as this session has them
/// (`current_setting`, what `SHOW` says), so a report shows that nothing cut
/// the run; one the server does not have is said so.
pub async fn session_limits(client: &tokio_postgres::Client) -> BTreeMap<String, String> {
    let mut said = BTreeMap::new();
    for name in SESSION_LIMITS.iter().chain([&CONNECTION_CHECK]) {
        let sql = "SELECT current_setting($1, true)";
        let value = match client.query_one(sql, &[name]).await {
            Ok(row) => row.get::<_, Option<String>>(0).unwrap_or_else(|| "(not in this server)".into()),
            Err(e) => format!("unknown: {}", error_chain(&e)),
        };
        said.insert(name.to_string(), value);
    }
    said
}

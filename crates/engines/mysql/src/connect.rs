//! Reaching a server of the MySQL family: the URL read by the driver, every
//! handshake bounded, and what the server is (its product and the settings
//! that shape loading) read once per connection.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{error_chain, ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use crate::product::{identify, Identity, Product};

/// A connection with what its server is.
pub struct Server {
    pub conn: Conn,
    pub identity: Identity,
    /// The live `max_allowed_packet`: the largest statement the server takes.
    pub max_allowed_packet: usize,
}

/// The driver's options for `url`: TCP as the URL says (the driver would
/// otherwise move to the server's Unix socket on this machine), and the
/// operating system told to watch the connection.
pub fn options(url: &str) -> Result<Opts, mysql_async::UrlError> {
    let opts = Opts::from_url(url)?;
    let mut builder = OptsBuilder::from_opts(opts).tcp_keepalive(Some(Duration::from_secs(30)));
    if !url.contains("prefer_socket=") {
        builder = builder.prefer_socket(false);
    }
    Ok(builder.into())
}

/// A new connection, its handshake bounded by [`CONNECT_TIMEOUT`].
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<Conn, ConnectError> {
    let opts = options(url).map_err(|e| ConnectError::new(spec, url, format!("the URL does not read: {e}")))?;
    match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(opts)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(ConnectError::new(spec, url, crate::error::said(&e))),
        Err(_) => Err(ConnectError::silent(spec, url, CONNECT_TIMEOUT, "the MySQL handshake")),
    }
}

impl Server {
    /// A new connection and what its server is.
    pub async fn connect(spec: &EngineSpec, url: &str) -> Result<Server, ConnectError> {
        let mut conn = connect(spec, url).await?;
        let read = tokio::time::timeout(CONNECT_TIMEOUT, read_identity(&mut conn)).await;
        let (identity, max_allowed_packet) = match read {
            Ok(Ok(read)) => read,
            Ok(Err(e)) => return Err(ConnectError::new(spec, url, format!("reading what the server is: {}", error_chain(&e)))),
            Err(_) => return Err(ConnectError::silent(spec, url, CONNECT_TIMEOUT, "reading what the server is")),
        };
        Ok(Server { conn, identity, max_allowed_packet })
    }

    pub fn product(&self) -> Product {
        self.identity.product
    }
}

/// The product and `max_allowed_packet`. `TIDB_VERSION()` is
/// asked only of a server whose `VERSION()` says TiDB: elsewhere it does not exist.
async fn read_identity(conn: &mut Conn) -> Result<(Identity, usize), mysql_async::Error> {
    let row: Option<(String, Option<String>, u64)> = conn.query_first("SELECT VERSION(), @@version_comment, @@max_allowed_packet").await?;
    let (version, comment, packet) = row.unwrap_or_default();
    let tidb: Option<String> = match version.contains("TiDB") {
        true => conn.query_first("SELECT TIDB_VERSION()").await?,
        false => None,
    };
    let identity = identify(&version, comment.as_deref().unwrap_or(""), tidb.as_deref());
    Ok((identity, usize::try_from(packet).unwrap_or(usize::MAX)))
}

/// The settings that shape this engine's numbers, as the server says them
/// (one it does not have is said so): its caches, temporary tables, packet,
/// how a cold start begins, the JSON columns' collation.
pub const SETTINGS: [&str; 13] = [
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_dump_at_shutdown",
    "innodb_buffer_pool_load_at_startup",
    "innodb_flush_method",
    "innodb_page_size",
    "tmp_table_size",
    "max_heap_table_size",
    "max_allowed_packet",
    "query_cache_type",
    "local_infile",
    "sql_mode",
    "character_set_server",
    "collation_server",
];

/// The server described for every report: product, version, build, the
/// [`SETTINGS`], how it stores JSON, and the caveat its numbers carry.
pub async fn describe(spec: &EngineSpec, server: &mut Server, url: &str) -> Result<ServerInfo, mysql_async::Error> {
    let identity = server.identity.clone();
    let mut info = ServerInfo::new(spec.engine.clone(), identity.product.name(), &identity.version, identity.build.clone(), url);
    info.settings = settings(&mut server.conn, &SETTINGS).await;
    info.settings.insert("json storage".into(), identity.product.json_storage().into());
    info.caveat = Some(identity.product.caveat());
    Ok(info)
}

/// `names` as the server says them (`SHOW GLOBAL VARIABLES`); a name it
/// does not have is said so.
pub async fn settings(conn: &mut Conn, names: &[&str]) -> BTreeMap<String, String> {
    match variables(conn, "GLOBAL", names).await {
        Ok(said) => said,
        Err(e) => {
            let mut said = variables_absent(names);
            said.insert("settings".into(), format!("not read: {}", error_chain(&e)));
            said
        }
    }
}

/// `names` as `SHOW <scope> VARIABLES` says them; a name the server does not
/// have is said so.
async fn variables(conn: &mut Conn, scope: &str, names: &[&str]) -> Result<BTreeMap<String, String>, mysql_async::Error> {
    let list = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    let rows = conn.query::<(String, String), _>(format!("SHOW {scope} VARIABLES WHERE Variable_name IN ({list})")).await?;
    let mut said = variables_absent(names);
    said.extend(rows.into_iter().map(|(name, value)| (name.to_ascii_lowercase(), value)));
    Ok(said)
}

fn variables_absent(names: &[&str]) -> BTreeMap<String, String> {
    names.iter().map(|n| (n.to_string(), "(not in this server)".to_string())).collect()
}

/// How long a loading step waits for a server that holds a lock: long
/// enough for another session's short DDL, short of a load's own timeouts.
pub const LOCK_WAIT_SECONDS: u64 = 50;

/// The session's lock waits, each with its longest value in seconds:
/// `lock_wait_timeout` (metadata locks: an online index build waits on one
/// for its last step, as long as any session has the table open in a
/// transaction) a year, the maximum of MariaDB and MySQL alike;
/// `innodb_lock_wait_timeout` (row locks) over three years, MariaDB's
/// maximum and within MySQL's (a higher value is cut to it with a warning).
const LOCK_WAITS: [(&str, u64); 2] = [("lock_wait_timeout", 31_536_000), ("innodb_lock_wait_timeout", 100_000_000)];

/// How long a loading connection's server waits for the next piece of an
/// hour before it gives up on the client (`net_read_timeout`, 30 s by
/// default): the stream idles while the other engines commit the same hour,
/// or a download pauses; ghbench bounds each step itself (`--timeout`).
pub const LOAD_IDLE_SECONDS: u64 = 3600;

/// A connection for loading: lock waits bounded (each step has its
/// `--timeout` besides), idle reads not.
pub async fn for_loading(conn: &mut Conn) -> Result<(), mysql_async::Error> {
    set_lock_waits(conn, Some(LOCK_WAIT_SECONDS)).await?;
    conn.query_drop(format!("SET SESSION net_read_timeout = {LOAD_IDLE_SECONDS}, SESSION net_write_timeout = {LOAD_IDLE_SECONDS}")).await
}

/// Sets the session's [`LOCK_WAITS`] to `bound` seconds each, or (None) to
/// their longest.
pub async fn set_lock_waits(conn: &mut Conn, bound: Option<u64>) -> Result<(), mysql_async::Error> {
    let each: Vec<String> = LOCK_WAITS.iter().map(|(name, longest)| format!("SESSION {name} = {}", bound.unwrap_or(*longest))).collect();
    conn.query_drop(format!("SET {}", each.join(", "))).await
}

/// A connection that builds indexes (and runs queries): no limit of
/// ghbench's own on its lock waits or statements, and none the server, the
/// account (MariaDB's `MAX_STATEMENT_TIME`) or `init_connect` set, so an
/// index build of hours never ends waiting for its last lock. Gives each
/// limit as the session has it now and, where that changed, as it had it,
/// for the record (the backend's `describe`). `--query-timeout` sets the
/// statement limit again for each query.
pub async fn without_limits(conn: &mut Conn, product: Product) -> Result<BTreeMap<String, String>, mysql_async::Error> {
    let names: Vec<&str> = LOCK_WAITS.iter().map(|(name, _)| *name).chain([product.statement_limit_variable()]).collect();
    let had = variables(conn, "SESSION", &names).await?;
    set_lock_waits(conn, None).await?;
    conn.query_drop(product.statement_limit(None)).await?;
    let has = variables(conn, "SESSION", &names).await?;
    Ok(has.iter().map(|(name, now)| (name.clone(), lifted(had.get(name), now))).collect())
}

/// A limit as recorded: its value now, and the one it was lifted from.
fn lifted(before: Option<&String>, now: &str) -> String {
    match before.filter(|before| *before != now) {
        Some(before) => format!("{now} (lifted from {before}, the server's or the account's, for index builds and queries)"),
        None => now.to_string(),
    }
}

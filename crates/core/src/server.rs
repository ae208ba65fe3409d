//! Reaching the two servers, and saying exactly what they are: every number
//! ghbench prints names the server build that produced it.

use std::collections::BTreeMap;
use std::time::Duration;

use mongodb::bson::{doc, Document};

use crate::{redact_url, Engine};

/// Defaults match what `just setup` starts (see scripts/setup.sh).
pub const DEFAULT_PG_URL: &str = "postgres://ghbench@127.0.0.1:54320/ghbench";
pub const DEFAULT_MONGO_URL: &str = "mongodb://127.0.0.1:27017/ghbench?directConnection=true";
/// Used when the MongoDB URL names no database.
pub const DEFAULT_MONGO_DB: &str = "ghbench";
/// How long reaching a server may take, handshake included, unless the URL says
/// otherwise (`connect_timeout=` for PostgreSQL, `serverSelectionTimeoutMS=` for
/// MongoDB). A server that accepts the connection and then stays silent must not
/// hang ghbench.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
#[error("cannot reach {engine} at {url}: {reason}\n  hint: start the project's servers with `just setup` and `source .ghbench/env`, or point ghbench at yours with {hint}")]
pub struct ConnectError {
    pub engine: Engine,
    pub url: String,
    pub reason: String,
    hint: &'static str,
}

impl ConnectError {
    pub fn new(engine: Engine, url: &str, reason: impl std::fmt::Display) -> Self {
        let hint = match engine {
            Engine::Postgres => "--pg-url or DATABASE_URL",
            Engine::Mongo => "--mongo-url or MONGODB_URI",
        };
        ConnectError { engine, url: redact_url(url), reason: reason.to_string(), hint }
    }
}

/// Where the servers are. Holds the raw URLs; only ever display them redacted.
#[derive(Debug, Clone)]
pub struct Servers {
    pub pg_url: String,
    pub mongo_url: String,
}

/// What a server is: product, version and the settings that shape its timings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerInfo {
    pub engine: Engine,
    /// `PostgreSQL`, `MongoDB` or `SecantusDB`: never a MongoDB label on something else.
    pub product: String,
    pub version: String,
    /// The server's own full version line.
    pub build: String,
    /// The connection string with any password hidden.
    pub url: String,
    pub settings: BTreeMap<String, String>,
}

impl ServerInfo {
    /// `PostgreSQL 15.18`, `SecantusDB 0.7.0b3 (MongoDB-wire, reports 8.2.11)`.
    pub fn label(&self) -> String {
        match self.settings.get("reported_mongodb_version") {
            Some(v) => format!("{} {} (MongoDB-wire, reports {v})", self.product, self.version),
            None => format!("{} {}", self.product, self.version),
        }
    }
}

impl Servers {
    /// A new connection, with the server's whole handshake bounded by the URL's
    /// `connect_timeout` (or [`CONNECT_TIMEOUT`]): tokio-postgres bounds only the
    /// TCP connect, so a listener that never answers would hang it forever.
    pub async fn postgres(&self) -> Result<tokio_postgres::Client, ConnectError> {
        let err = |e: &dyn std::error::Error| ConnectError::new(Engine::Postgres, &self.pg_url, error_chain(e));
        let mut config: tokio_postgres::Config = self.pg_url.parse().map_err(|e| err(&e))?;
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
            Err(_) => return Err(ConnectError::silent(Engine::Postgres, &self.pg_url, limit, "the PostgreSQL handshake")),
        };
        tokio::spawn(async move {
            // Errors here surface on the client's next call; nothing to add.
            let _ = connection.await;
        });
        Ok(client)
    }

    /// The database named in the URL (or `ghbench`), after a successful ping.
    /// Server selection and the ping are bounded like [`Servers::postgres`].
    pub async fn mongo(&self) -> Result<mongodb::Database, ConnectError> {
        let err = |e: mongodb::error::Error| ConnectError::new(Engine::Mongo, &self.mongo_url, short_mongo_error(&e));
        let mut options = mongodb::options::ClientOptions::parse(&self.mongo_url).await.map_err(err)?;
        let limit = *options.server_selection_timeout.get_or_insert(CONNECT_TIMEOUT);
        options.connect_timeout.get_or_insert(limit);
        if options.app_name.is_none() {
            options.app_name = Some("ghbench".into());
        }
        let db_name = options.default_database.clone().unwrap_or_else(|| DEFAULT_MONGO_DB.into());
        let client = mongodb::Client::with_options(options).map_err(err)?;
        let db = client.database(&db_name);
        // The driver has no socket timeout of its own: bound the first command here.
        match tokio::time::timeout(limit + Duration::from_secs(1), db.run_command(doc! {"ping": 1})).await {
            Ok(pinged) => pinged.map_err(err)?,
            Err(_) => return Err(ConnectError::silent(Engine::Mongo, &self.mongo_url, limit, "the MongoDB handshake (ping)")),
        };
        Ok(db)
    }
}

impl ConnectError {
    fn silent(engine: Engine, url: &str, limit: Duration, step: &str) -> Self {
        let reason = format!("no answer within {} s during {step}: something accepts connections there but does not answer", limit.as_secs_f64());
        ConnectError::new(engine, url, reason)
    }
}

/// An error and its causes in one line: tokio-postgres hides the reason (e.g.
/// "Connection refused", the server's own message) in its source.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The MongoDB driver's error without its dump of the topology: the kind's
/// message, the part a person can act on.
pub fn short_mongo_error(error: &mongodb::error::Error) -> String {
    match &*error.kind {
        mongodb::error::ErrorKind::ServerSelection { message, .. } => {
            // "Server selection timeout: No available servers. Topology: { ... }"
            message.split(". Topology:").next().unwrap_or(message).to_string()
        }
        _ => error.to_string(),
    }
}

/// PostgreSQL's version and the settings the paper reported (and that move its timings).
pub async fn describe_postgres(client: &tokio_postgres::Client, url: &str) -> Result<ServerInfo, tokio_postgres::Error> {
    let build: String = client.query_one("SELECT version()", &[]).await?.get(0);
    let version: String = client.query_one("SHOW server_version", &[]).await?.get(0);
    let mut settings = BTreeMap::new();
    for name in ["shared_buffers", "work_mem", "max_parallel_workers_per_gather", "jit", "server_encoding", "lc_collate"] {
        let value: String = client.query_one(&format!("SHOW {name}"), &[]).await?.get(0);
        settings.insert(name.to_string(), value);
    }
    Ok(ServerInfo {
        engine: Engine::Postgres,
        product: "PostgreSQL".into(),
        version: version.split_whitespace().next().unwrap_or(&version).to_string(),
        build,
        url: redact_url(url),
        settings,
    })
}

/// What answers on the MongoDB wire: real MongoDB, or SecantusDB (which reports a
/// MongoDB version for driver compatibility but must never be labelled MongoDB).
pub async fn describe_mongo(db: &mongodb::Database, url: &str) -> Result<ServerInfo, mongodb::error::Error> {
    let info: Document = db.run_command(doc! {"buildInfo": 1}).await?;
    let reported = info.get_str("version").unwrap_or("unknown").to_string();
    let mut settings = BTreeMap::new();
    let (product, version) = match info.get_str("secantusVersion") {
        Ok(secantus) => {
            settings.insert("reported_mongodb_version".into(), reported.clone());
            ("SecantusDB".to_string(), secantus.to_string())
        }
        Err(_) => ("MongoDB".to_string(), reported.clone()),
    };
    if let Ok(git) = info.get_str("gitVersion") {
        settings.insert("git_version".into(), git.to_string());
    }
    if let Ok(status) = db.client().database("admin").run_command(doc! {"serverStatus": 1}).await {
        if let Ok(engine) = status.get_document("storageEngine").and_then(|s| s.get_str("name")) {
            settings.insert("storage_engine".into(), engine.to_string());
        }
    }
    let build = format!("{product} {version}; buildInfo.version {reported}");
    Ok(ServerInfo { engine: Engine::Mongo, product, version, build, url: redact_url(url), settings })
}

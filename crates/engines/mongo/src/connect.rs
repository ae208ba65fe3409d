//! Reaching a MongoDB-wire server and saying exactly what it is: real MongoDB,
//! or something else speaking its protocol (SecantusDB), never mislabelled.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};
use mongodb::bson::{doc, Document};

/// Used when the URL names no database.
pub const DEFAULT_DB: &str = "ghbench";

/// The database named in the URL (or `ghbench`), after a successful ping.
/// Server selection and the ping are bounded by the URL's `serverSelectionTimeoutMS`
/// (or [`CONNECT_TIMEOUT`]): the driver has no socket timeout of its own.
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<mongodb::Database, ConnectError> {
    let err = |e: mongodb::error::Error| ConnectError::new(spec, url, short_error(&e));
    let mut options = mongodb::options::ClientOptions::parse(url).await.map_err(err)?;
    let limit = *options.server_selection_timeout.get_or_insert(CONNECT_TIMEOUT);
    options.connect_timeout.get_or_insert(limit);
    if options.app_name.is_none() {
        options.app_name = Some("ghbench".into());
    }
    let db_name = options.default_database.clone().unwrap_or_else(|| DEFAULT_DB.into());
    let client = mongodb::Client::with_options(options).map_err(err)?;
    let db = client.database(&db_name);
    // The driver has no socket timeout of its own: bound the first command here.
    match tokio::time::timeout(limit + Duration::from_secs(1), db.run_command(doc! {"ping": 1})).await {
        Ok(pinged) => pinged.map_err(err)?,
        Err(_) => return Err(ConnectError::silent(spec, url, limit, "the MongoDB handshake (ping)")),
    };
    Ok(db)
}

/// The MongoDB driver's error without its dump of the topology: the kind's
/// message, the part a person can act on.
pub fn short_error(error: &mongodb::error::Error) -> String {
    match &*error.kind {
        mongodb::error::ErrorKind::ServerSelection { message, .. } => {
            // "Server selection timeout: No available servers. Topology: { ... }"
            message.split(". Topology:").next().unwrap_or(message).to_string()
        }
        _ => error.to_string(),
    }
}

/// What answers on the MongoDB wire: real MongoDB, or SecantusDB (which reports a
/// MongoDB version for driver compatibility but must never be labelled MongoDB).
pub async fn describe(spec: &EngineSpec, db: &mongodb::Database, url: &str) -> Result<ServerInfo, mongodb::error::Error> {
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
    let mut info = ServerInfo::new(spec.engine.clone(), &product, &version, build, url);
    if let Some(reported) = settings.get("reported_mongodb_version") {
        info.label = format!("{product} {version} (MongoDB-wire, reports {reported})");
        info.caveat = Some(format!(
            "{} is a MongoDB-wire server, not MongoDB: its timings say nothing about MongoDB's speed; they only show this setup",
            info.label
        ));
    }
    info.settings = settings;
    Ok(info)
}

//! Reaching a MongoDB-wire server and saying exactly what it is: real MongoDB,
//! or something else speaking its protocol (SecantusDB), never mislabelled.

use std::collections::BTreeMap;
use std::time::Duration;

use ghbench_core::{ConnectError, EngineSpec, ServerInfo, CONNECT_TIMEOUT};
use mongodb::bson::{doc, Document};

/// Used when the URL names no database.
pub const DEFAULT_DB: &str = "ghbench";

/// The database named in the URL (or `ghbench`), after a successful ping.
/// A `mongodb+srv://` lookup, server selection (TLS included) and the ping are
/// each bounded by the URL's `serverSelectionTimeoutMS` (or [`CONNECT_TIMEOUT`]):
/// the driver has no socket timeout of its own.
pub async fn connect(spec: &EngineSpec, url: &str) -> Result<mongodb::Database, ConnectError> {
    let err = |e: mongodb::error::Error| ConnectError::new(spec, url, short_error(&e));
    let parsed = mongodb::options::ConnectionString::parse(url).map_err(err)?;
    let limit = parsed.server_selection_timeout.unwrap_or(CONNECT_TIMEOUT);
    // A mongodb+srv:// URI's SRV and TXT records are looked up here, before
    // any server is selected: bound it too (a resolver may retry for long).
    let srv = match &parsed.host_info {
        mongodb::options::HostInfo::DnsRecord(name) => Some(name.clone()),
        _ => None,
    };
    let mut options = match tokio::time::timeout(limit, mongodb::options::ClientOptions::parse(parsed)).await {
        Ok(options) => options.map_err(err)?,
        Err(_) => {
            let name = srv.unwrap_or_default();
            let reason = format!(
                "the DNS lookup of mongodb+srv://{name} (SRV record _mongodb._tcp.{name}) gave no answer within {} s; check this machine's DNS, or list the servers in a mongodb:// URI",
                limit.as_secs_f64()
            );
            return Err(ConnectError::new(spec, url, reason));
        }
    };
    options.server_selection_timeout = Some(limit);
    options.connect_timeout.get_or_insert(limit);
    if options.app_name.is_none() {
        options.app_name = Some("ghbench".into());
    }
    let db_name = options.default_database.clone().unwrap_or_else(|| DEFAULT_DB.into());
    let tls = matches!(options.tls, Some(mongodb::options::Tls::Enabled(_)));
    let client = mongodb::Client::with_options(options).map_err(err)?;
    let db = client.database(&db_name);
    // A server without TLS may not answer a TLS hello at all (SecantusDB
    // waits): then the driver knows no reason or only a timeout, and TLS is
    // the likely one.
    let unanswered = |e: mongodb::error::Error| {
        let mut reason = short_error(&e);
        if tls && (reason.ends_with("No available servers") || reason.ends_with("timed out")) {
            reason.push_str("; TLS is on (tls=true, or a mongodb+srv:// URI): check that the server speaks TLS on that port, as one without it may not answer at all");
        }
        ConnectError::new(spec, url, reason)
    };
    // The driver has no socket timeout of its own: bound the first command here.
    match tokio::time::timeout(limit + Duration::from_secs(1), db.run_command(doc! {"ping": 1})).await {
        Ok(pinged) => pinged.map_err(unanswered)?,
        Err(_) => return Err(ConnectError::silent(spec, url, limit, "the MongoDB handshake (ping)")),
    };
    Ok(db)
}

/// The MongoDB driver's error without its dump of the topology: the kind's
/// message, the part a person can act on, and the servers' own errors in
/// words when they are about TLS.
pub fn short_error(error: &mongodb::error::Error) -> String {
    match &*error.kind {
        mongodb::error::ErrorKind::ServerSelection { message, .. } => {
            // "Server selection timeout: No available servers. Topology: { ...
            // Error: Kind: I/O error: invalid peer certificate: UnknownIssuer, labels: ... }"
            let (head, topology) = message.split_once(". Topology:").unwrap_or((message, ""));
            let mut said = head.to_string();
            let mut seen = Vec::new();
            for server_error in topology.split("Error: Kind: ").skip(1) {
                let server_error = server_error.split(", labels:").next().unwrap_or(server_error);
                let words = tls_words(server_error).unwrap_or_else(|| server_error.to_string());
                if !seen.contains(&words) {
                    said = format!("{said}; {words}");
                    seen.push(words);
                }
            }
            said
        }
        mongodb::error::ErrorKind::DnsResolve { message, .. } => srv_words(message),
        mongodb::error::ErrorKind::InvalidTlsConfig { message, .. } => format!("the URI's TLS settings (tlsCAFile, tlsCertificateKeyFile): {message}"),
        _ => error.to_string(),
    }
}

/// A TLS failure the driver reports as rustls's words, said so a user can act on it.
fn tls_words(error: &str) -> Option<String> {
    let words = if error.contains("UnknownIssuer") {
        "the server's certificate is not trusted: it is not signed by the CA in tlsCAFile (without tlsCAFile: by a CA of the driver's built-in Mozilla list); give the CA that signed it with tlsCAFile=FILE"
    } else if error.contains("NotValidForName") || error.contains("not valid for name") {
        "the server's certificate is not valid for the host name in the URI; connect by a name it lists"
    } else if error.contains("Expired") || error.contains("expired") {
        "the server's certificate has expired"
    } else if error.contains("InvalidContentType") || error.contains("corrupt message") {
        "the server does not answer in TLS (tls=true); drop tls=true, or turn TLS on in the server"
    } else {
        return None;
    };
    Some(words.to_string())
}

/// A `mongodb+srv://` lookup that found nothing names the record it asked for.
fn srv_words(message: &str) -> String {
    let record = message.split_once("Name(\"").and_then(|(_, rest)| rest.split_once("\")")).map(|(name, _)| name.trim_end_matches('.'));
    match record {
        Some(record) if message.contains("no records found") => format!(
            "DNS has no {} record {record} (a mongodb+srv:// URI looks its servers up there); check the host name and this machine's DNS, or list the servers in a mongodb:// URI",
            if message.contains("query_type: TXT") { "TXT" } else { "SRV" }
        ),
        _ => format!("the DNS lookup (SRV, TXT) of the mongodb+srv:// URI's host failed: {message}; check this machine's DNS, or list the servers in a mongodb:// URI"),
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

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
        mongodb::error::ErrorKind::InvalidArgument { message, .. } if message.contains("MONGODB-AWS") => AWS_NOT_BUILT.to_string(),
        mongodb::error::ErrorKind::Authentication { message, .. } if message.contains("MONGODB-AWS") || message.contains("AWS") => format!(
            "MONGODB-AWS authentication failed: {message}; the credentials come from the URI, else from the environment \
             (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), a web identity, an ECS task or an EC2 instance role, \
             as AWS's SDK finds them, and the server must map that AWS identity to a database user"
        ),
        _ => error.to_string(),
    }
}

/// Said when a URI asks for `authMechanism=MONGODB-AWS` of a ghbench built without it.
pub const AWS_NOT_BUILT: &str = "this ghbench was built without MONGODB-AWS authentication (the AWS SDK is left out by \
     default, for a faster build): build it with `cargo build --release --features aws-auth`";

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

/// What answers on the MongoDB wire: real MongoDB, or a product that speaks
/// its protocol and is something else (SecantusDB, FerretDB, Amazon
/// DocumentDB, Azure Cosmos DB), never labelled MongoDB. Also the topology and
/// the read preference the commands follow.
pub async fn describe(spec: &EngineSpec, db: &mongodb::Database, url: &str) -> Result<ServerInfo, mongodb::error::Error> {
    let (product, info) = product(db, url).await?;
    let reported = info.get_str("version").unwrap_or("unknown").to_string();
    let mut settings = BTreeMap::new();
    if let Ok(git) = info.get_str("gitVersion") {
        settings.insert("git_version".into(), git.to_string());
    }
    match db.client().database("admin").run_command(doc! {"serverStatus": 1}).await {
        Ok(status) => {
            if let Ok(engine) = status.get_document("storageEngine").and_then(|s| s.get_str("name")) {
                settings.insert("storage_engine".into(), engine.to_string());
            }
        }
        Err(e) => {
            settings.insert("storage_engine".into(), format!("unknown: {}", crate::error::refusal("serverStatus", &e)));
        }
    }
    if let Ok(hello) = db.run_command(doc! {"hello": 1}).await {
        settings.insert("topology".into(), topology(&hello));
    }
    settings.insert("read_preference".into(), read_preference(db));
    settings.insert("collation".into(), product.collation_sent().into());
    let (name, version) = match &product {
        Product::MongoDB => ("MongoDB".to_string(), reported.clone()),
        Product::Other { name, version, .. } => {
            settings.insert("reported_mongodb_version".into(), reported.clone());
            (name.to_string(), version.clone().unwrap_or_else(|| "unknown version".into()))
        }
    };
    let build = format!("{name} {version}; buildInfo.version {reported}");
    let mut server = ServerInfo::new(spec.engine.clone(), &name, &version, build, url);
    if let Product::Other { how_known, .. } = &product {
        server.label = format!("{name} {version} (MongoDB-wire, reports {reported})");
        server.caveat = Some(format!(
            "{} is a MongoDB-wire server, not MongoDB ({how_known}): its timings say nothing about MongoDB's speed; they only show this setup",
            server.label
        ));
    }
    server.settings = settings;
    Ok(server)
}

/// What answers at `url` (with its `buildInfo`), asked of the node the queries go to.
pub async fn product(db: &mongodb::Database, url: &str) -> Result<(Product, Document), mongodb::error::Error> {
    let info: Document = db.run_command(doc! {"buildInfo": 1}).selection_criteria(queries_node(db)).await?;
    Ok((Product::of(&info, &url_hosts(url)), info))
}

/// What speaks on the MongoDB wire.
#[derive(Debug, PartialEq)]
pub enum Product {
    MongoDB,
    /// Something else, and how ghbench knows.
    Other { name: &'static str, version: Option<String>, how_known: &'static str },
}

impl Product {
    /// From `buildInfo` (SecantusDB and FerretDB name themselves there) and
    /// the URI's hosts (Amazon DocumentDB and Azure Cosmos DB report a MongoDB
    /// version and are known by their host names, as MongoDB's drivers know them).
    pub fn of(build_info: &Document, hosts: &[String]) -> Product {
        if let Ok(version) = build_info.get_str("secantusVersion") {
            return Product::Other { name: "SecantusDB", version: Some(version.into()), how_known: "buildInfo.secantusVersion" };
        }
        if let Some((_, version)) = build_info.iter().find(|(key, _)| key.to_ascii_lowercase().starts_with("ferretdb")) {
            let version = version.as_str().map(str::to_string);
            return Product::Other { name: "FerretDB", version, how_known: "buildInfo names FerretDB" };
        }
        let on = |suffixes: &[&str]| hosts.iter().any(|h| suffixes.iter().any(|s| h.to_ascii_lowercase().ends_with(s)));
        if on(&[".docdb.amazonaws.com", ".docdb-elastic.amazonaws.com"]) {
            return Product::Other { name: "Amazon DocumentDB", version: None, how_known: "its host name" };
        }
        if on(&[".cosmos.azure.com"]) {
            return Product::Other { name: "Azure Cosmos DB for MongoDB", version: None, how_known: "its host name" };
        }
        Product::MongoDB
    }

    /// Whether the queries state collation `simple` (binary comparison, as
    /// MongoDB defines it). SecantusDB 0.7 reads `{locale: "simple"}` as a
    /// language's collation and sorts "a" before "B" (measured), while its
    /// default compares bytes: there the collation is left out, or its
    /// answers would differ from every other engine's.
    pub fn states_simple_collation(&self) -> bool {
        !matches!(self, Product::Other { name: "SecantusDB", .. })
    }

    /// For the record: the collation the queries ran with.
    pub fn collation_sent(&self) -> &'static str {
        match self.states_simple_collation() {
            true => "simple (binary comparison), stated on every query",
            false => "the server's default (binary), not stated: SecantusDB sorts {locale: \"simple\"} case-insensitively",
        }
    }
}

/// The URI's host names (the SRV name of a `mongodb+srv://` URI), without ports.
pub fn url_hosts(url: &str) -> Vec<String> {
    match mongodb::options::ConnectionString::parse(url).map(|c| c.host_info) {
        Ok(mongodb::options::HostInfo::HostIdentifiers(hosts)) => hosts
            .iter()
            .map(|h| match h {
                mongodb::options::ServerAddress::Tcp { host, .. } => host.clone(),
                other => other.to_string(),
            })
            .collect(),
        Ok(mongodb::options::HostInfo::DnsRecord(name)) => vec![name],
        _ => Vec::new(),
    }
}

/// For the record: `standalone`, `replica set rs0 (primary)`, `sharded cluster (mongos)`.
pub fn topology(hello: &Document) -> String {
    if hello.get_str("msg") == Ok("isdbgrid") {
        return "sharded cluster (mongos)".into();
    }
    match hello.get_str("setName") {
        Ok(set) => {
            let member = if hello.get_bool("isWritablePrimary").unwrap_or(false) { "primary" } else { "secondary" };
            format!("replica set {set} ({member} answered)")
        }
        Err(_) => "standalone".into(),
    }
}

/// Where the queries go (the URI's read preference, else the primary): a
/// command given this goes there too (`run_command` alone ignores the URI's).
pub fn queries_node(db: &mongodb::Database) -> mongodb::options::SelectionCriteria {
    db.selection_criteria().cloned().unwrap_or(mongodb::options::SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary))
}

/// The read preference the queries and their commands follow (the URI's, else primary).
pub fn read_preference(db: &mongodb::Database) -> String {
    match db.selection_criteria() {
        Some(mongodb::options::SelectionCriteria::ReadPreference(preference)) => format!("{preference:?}"),
        Some(_) => "a custom server selection".into(),
        None => "primary (the default)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::Bson;

    fn build_info(name: &str) -> Document {
        let path = format!("{}/tests/replies/build_info/{name}.json", env!("CARGO_MANIFEST_DIR"));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        match Bson::try_from(json).unwrap() {
            Bson::Document(d) => d,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn wire_products_are_named_as_what_they_are() {
        let local = ["127.0.0.1".to_string()];
        assert_eq!(Product::of(&build_info("mongodb_8"), &local), Product::MongoDB);
        match Product::of(&build_info("ferretdb_v1"), &local) {
            Product::Other { name: "FerretDB", version, .. } => assert_eq!(version.as_deref(), Some("v1.24.0")),
            other => panic!("{other:?}"),
        }
        let docdb = ["cluster1.cluster-c9akciq32.eu-west-1.docdb.amazonaws.com".to_string()];
        assert!(matches!(Product::of(&build_info("mongodb_8"), &docdb), Product::Other { name: "Amazon DocumentDB", .. }));
        let cosmos = ["acct.mongo.cosmos.azure.com".to_string()];
        assert!(matches!(Product::of(&build_info("mongodb_8"), &cosmos), Product::Other { name: "Azure Cosmos DB for MongoDB", .. }));
    }

    #[cfg(not(feature = "aws-auth"))]
    #[tokio::test]
    async fn an_aws_uri_without_the_feature_says_how_to_build_it() {
        let url = "mongodb://127.0.0.1:27017/?authMechanism=MONGODB-AWS&authSource=%24external";
        let error = connect(&crate::SPEC, url).await.unwrap_err().to_string();
        assert!(error.contains("--features aws-auth"), "{error}");
    }

    /// Credentials in the URI, so the AWS SDK looks nowhere else (no instance
    /// metadata service is asked); the wire server refuses them.
    #[cfg(feature = "aws-auth")]
    #[tokio::test]
    async fn a_refused_aws_authentication_says_where_credentials_come_from() {
        let url = "mongodb://AKIDEXAMPLE:not-a-secret@127.0.0.1:27017/?authMechanism=MONGODB-AWS&authSource=%24external&directConnection=true&serverSelectionTimeoutMS=5000";
        let error = connect(&crate::SPEC, url).await.unwrap_err().to_string();
        assert!(error.contains("MONGODB-AWS authentication failed") && error.contains("AWS_ACCESS_KEY_ID"), "{error}");
        assert!(!error.contains("not-a-secret"), "{error}");
    }

    #[test]
    fn hosts_come_from_the_uri() {
        assert_eq!(url_hosts("mongodb://u:p@a.example:27017,b.example/db?replicaSet=rs0"), ["a.example", "b.example"]);
        assert!(url_hosts("not a uri").is_empty());
    }

    #[test]
    fn topology_is_read_from_hello() {
        assert_eq!(topology(&doc! {"isWritablePrimary": true}), "standalone");
        assert_eq!(topology(&doc! {"isWritablePrimary": true, "setName": "rs0"}), "replica set rs0 (primary answered)");
        assert_eq!(topology(&doc! {"isWritablePrimary": true, "msg": "isdbgrid"}), "sharded cluster (mongos)");
    }
}

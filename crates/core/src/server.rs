//! Saying exactly what answered: every number ghbench prints names the engine
//! and the server build (or library) that produced it. And reaching a server:
//! errors that keep their cause, handshakes that cannot hang.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{redact_url, Engine, EngineSpec};

/// How long reaching a server may take, handshake included, unless its URL
/// says otherwise. A server that accepts the connection and then stays silent
/// must not hang ghbench.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub struct ConnectError {
    pub engine: Engine,
    pub url: String,
    pub reason: String,
    hint: &'static str,
    /// The engine has a server to reach (else `url` is its data folder).
    server: bool,
    /// The server answered but is not one the engine can use (a plain
    /// PostgreSQL where a Citus coordinator was wanted): `reason` says what to do.
    wrong_server: bool,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ConnectError { engine, url, reason, hint, .. } = self;
        if self.wrong_server {
            write!(f, "{engine} at {url} answered, but {reason}\n  hint: point ghbench at the right server with {hint}")
        } else if self.server && self.login_refused() {
            write!(f, "{engine} at {url} refused the login: {reason}\n  hint: check the user and password in the URL ({hint}): the password goes in the URL itself (ghbench does not read PGPASSWORD or ~/.pgpass)")
        } else if self.server {
            write!(f, "cannot reach {engine} at {url}: {reason}\n  hint: start the project's servers with `just setup` and `source .ghbench/env`, or point ghbench at yours with {hint}")
        } else {
            write!(f, "{engine} cannot use its data folder {url}: {reason}\n  hint: choose another with {hint}")
        }
    }
}

impl ConnectError {
    /// `url` is shown with its password hidden (a data folder as it is).
    pub fn new(spec: &EngineSpec, url: &str, reason: impl std::fmt::Display) -> Self {
        let server = spec.capabilities.server;
        let url = if server { redact_url(url) } else { url.to_string() };
        ConnectError { engine: spec.engine.clone(), url, reason: reason.to_string(), hint: spec.connect_hint, server, wrong_server: false }
    }

    /// The server at `url` answered but is not one the engine can use: `reason` says what it is instead.
    pub fn wrong_server(spec: &EngineSpec, url: &str, reason: impl std::fmt::Display) -> Self {
        ConnectError { wrong_server: true, ..ConnectError::new(spec, url, reason) }
    }

    /// The server answered but refused the user or password: not a server
    /// to start, a login to correct.
    pub fn login_refused(&self) -> bool {
        let reason = self.reason.to_ascii_lowercase();
        ["authentication failed", "password missing", "pg_hba.conf", "access denied for user"].iter().any(|said| reason.contains(said))
    }

    /// Something accepted the connection but did not answer `step` within `limit`.
    pub fn silent(spec: &EngineSpec, url: &str, limit: Duration, step: &str) -> Self {
        let reason = format!(
            "no answer within {} s during {step}: something accepts connections there but does not answer",
            limit.as_secs_f64()
        );
        ConnectError::new(spec, url, reason)
    }
}

/// What an engine is: product, version and the settings that shape its timings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerInfo {
    pub engine: Engine,
    /// e.g. `PostgreSQL`, `MongoDB`, `SecantusDB`: never a product's name on something else.
    pub product: String,
    pub version: String,
    /// For people, e.g. `SecantusDB 0.7.0b3 (MongoDB-wire, reports 8.2.11)`.
    pub label: String,
    /// The server's own full version line.
    pub build: String,
    /// The connection string with any password hidden (a data folder for an embedded engine).
    pub url: String,
    pub settings: BTreeMap<String, String>,
    /// What a reader must know before trusting the numbers, said by the engine
    /// itself (e.g. that a MongoDB-wire server is not MongoDB).
    pub caveat: Option<String>,
}

impl ServerInfo {
    /// `label` defaults to `product version`.
    pub fn new(engine: Engine, product: &str, version: &str, build: String, url: &str) -> ServerInfo {
        ServerInfo {
            engine,
            product: product.to_string(),
            version: version.to_string(),
            label: format!("{product} {version}"),
            build,
            url: redact_url(url),
            settings: BTreeMap::new(),
            caveat: None,
        }
    }
}

/// An error and its causes in one line: drivers hide the reason (e.g.
/// "Connection refused", the server's own message) in their source.
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

#[cfg(test)]
mod connect_error_tests {
    use super::*;

    fn said(reason: &str) -> String {
        let error = ConnectError { engine: Engine::named("postgres"), url: "postgres://alice:***@db:5433/bench".into(), reason: reason.into(), hint: "--pg-url or DATABASE_URL", server: true, wrong_server: false };
        error.to_string()
    }

    #[test]
    fn a_refused_login_is_told_apart_from_a_server_that_cannot_be_reached() {
        let login = said("db error: FATAL: password authentication failed for user \"alice\"");
        assert!(login.starts_with("postgres at postgres://alice:***@db:5433/bench refused the login") && login.contains("check the user and password"), "{login}");
        assert!(!login.contains("just setup"), "no server to start: {login}");
        let down = said("error connecting to server: Connection refused (os error 111)");
        assert!(down.starts_with("cannot reach postgres") && down.contains("just setup"), "{down}");
    }

    #[test]
    fn a_server_that_answered_but_is_the_wrong_kind_is_not_called_unreachable() {
        let capabilities = crate::Capabilities { server: true, indexes: true, restartable: true, durable: true, optional: true };
        let spec = EngineSpec {
            engine: Engine::named("citus"),
            aliases: &[],
            about: "test",
            capabilities,
            limits: crate::DocumentLimits::default(),
            options: &[],
            default: false,
            connect_hint: "--citus-url or CITUS_URL",
        };
        let wrong = ConnectError::wrong_server(&spec, "postgres://ghbench:secret@127.0.0.1:5432/ghbench", "it is not a Citus coordinator").to_string();
        assert!(wrong.starts_with("citus at postgres://ghbench:***@127.0.0.1:5432/ghbench answered, but it is not a Citus coordinator"), "{wrong}");
        assert!(wrong.contains("--citus-url or CITUS_URL") && !wrong.contains("cannot reach") && !wrong.contains("just setup"), "{wrong}");
    }
}

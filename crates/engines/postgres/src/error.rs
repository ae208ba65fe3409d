//! PostgreSQL's errors as ghbench reads them: the server's own message with
//! its cause, and what the failure means ([`failure_kind`]): a lost
//! connection, a wait a retry may outlast, or a failure of the work itself.
//! Loading gets them as a `SinkError` ([`to_sink_error`]), querying as the
//! typed `EngineError` in its chain ([`engine_error`]).

use ghbench_engine::load::SinkError;
use ghbench_engine::{EngineError, FailureKind};

/// `.sink()?` turns a driver error into a [`SinkError`] (`?` alone cannot: both types are foreign here).
pub trait OrSink<T> {
    fn sink(self) -> Result<T, SinkError>;
}

impl<T> OrSink<T> for Result<T, tokio_postgres::Error> {
    fn sink(self) -> Result<T, SinkError> {
        self.map_err(|e| to_sink_error(&e))
    }
}

pub fn to_sink_error(e: &tokio_postgres::Error) -> SinkError {
    let mut message = format!("PostgreSQL: {}", ghbench_core::error_chain(e));
    // 42501 insufficient_privilege: a role of the user's own that may not make
    // what an engine needs; `doctor` cannot tell, as it makes nothing.
    if e.as_db_error().is_some_and(|db| db.code().code() == "42501") {
        message.push_str(MISSING_RIGHT);
    }
    // 53100 disk_full: "could not extend file …: No space left on device".
    match e.as_db_error().is_some_and(|db| db.code().code() == "53100") {
        true => SinkError::NoSpace(message),
        false => SinkError::Engine(EngineError::new(failure_kind(e), message)),
    }
}

/// A query's driver error as the typed error (its words and causes as the
/// driver says them), for an `anyhow` chain: the runner finds it there and
/// runs the query again on a new connection when the connection was lost.
pub fn engine_error(e: tokio_postgres::Error) -> EngineError {
    EngineError::driver(failure_kind(&e), e)
}

/// What to do about a right the role lacks (SQLSTATE 42501).
pub const MISSING_RIGHT: &str = "\n  hint: the role in the URL lacks the right PostgreSQL names: the engines make tables (and the tuned and normalized engines schemas of their own) in the URL's database, so grant it, e.g. GRANT CREATE ON DATABASE <database> TO <role>; GRANT CREATE ON SCHEMA public TO <role>, or use a role that owns the database";

/// A lost connection (see [`is_lost_connection`]); a lock another session
/// held too long (40P01 deadlock, 55P03 lock timeout), transient: the same
/// work may go through a moment later; anything else, the work's own failure.
pub fn failure_kind(e: &tokio_postgres::Error) -> FailureKind {
    let waited_on_a_lock = e.as_db_error().is_some_and(|db| matches!(db.code().code(), "40P01" | "55P03"));
    if is_lost_connection(e) {
        FailureKind::LostConnection
    } else if waited_on_a_lock {
        FailureKind::Transient
    } else {
        FailureKind::Permanent
    }
}

/// The connection or the server went away (closed, an I/O error, SQLSTATE
/// 57P: shutdown or crash, 08: connection failure), not the statement.
pub fn is_lost_connection(e: &tokio_postgres::Error) -> bool {
    let going_away = e.as_db_error().is_some_and(|db| {
        let code = db.code().code();
        code.starts_with("57P") || code.starts_with("08")
    });
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    e.is_closed() || going_away || io
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection refused, as a server that is down refuses it (port 1
    /// has no PostgreSQL): an I/O error under the driver's own.
    async fn refused() -> tokio_postgres::Error {
        let url = "host=127.0.0.1 port=1 user=ghbench dbname=ghbench connect_timeout=5";
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.map(drop).expect_err("nothing listens on port 1")
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_lost_one_for_loading_and_querying_alike() {
        assert_eq!(failure_kind(&refused().await), FailureKind::LostConnection);
        assert!(to_sink_error(&refused().await).is_transient(), "loading retries it on a new connection");
        let typed = anyhow::Error::from(engine_error(refused().await)).context("preparing");
        assert!(EngineError::lost_connection_in(&typed), "querying reconnects");
        // The record says what the driver said, as before it was classified.
        let plain = anyhow::Error::from(refused().await).context("preparing");
        assert_eq!(format!("{typed:#}"), format!("{plain:#}"));
    }

    #[test]
    fn a_failure_of_the_work_itself_is_permanent() {
        // A connection string that does not read: no retry mends it.
        let bad = || "host=127.0.0.1 port=not-a-port".parse::<tokio_postgres::Config>().expect_err("no port");
        assert_eq!(failure_kind(&bad()), FailureKind::Permanent);
        assert!(!to_sink_error(&bad()).is_transient());
        assert!(!EngineError::lost_connection_in(&engine_error(bad()).into()));
    }
}

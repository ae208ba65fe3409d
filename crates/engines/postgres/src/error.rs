//! PostgreSQL's errors as loading reports them: the server's own message with
//! its cause, and whether a retry on a new connection may mend it.

use ghbench_engine::load::SinkError;

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
        false => SinkError::Engine { message, transient: is_transient(e) },
    }
}

/// What to do about a right the role lacks (SQLSTATE 42501).
pub const MISSING_RIGHT: &str = "\n  hint: the role in the URL lacks the right PostgreSQL names: the engines make tables (and the tuned and normalized engines schemas of their own) in the URL's database, so grant it, e.g. GRANT CREATE ON DATABASE <database> TO <role>; GRANT CREATE ON SCHEMA public TO <role>, or use a role that owns the database";

/// A lost connection, an I/O error, a server going away or not yet back
/// (SQLSTATE classes 57P: shutdown and crash, 08: cannot connect now), or a
/// lock another session held too long (40P01 deadlock, 55P03 lock timeout):
/// the same work may go through a moment later.
fn is_transient(e: &tokio_postgres::Error) -> bool {
    let waited_on_a_lock = e.as_db_error().is_some_and(|db| matches!(db.code().code(), "40P01" | "55P03"));
    is_lost_connection(e) || waited_on_a_lock
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

/// Somewhere in `error`'s chain, PostgreSQL's connection went away.
pub fn lost_connection_in(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.downcast_ref::<tokio_postgres::Error>().is_some_and(is_lost_connection))
}

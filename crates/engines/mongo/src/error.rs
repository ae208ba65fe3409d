//! The driver's errors as loading reports them: the server's own words, and
//! whether a retry on a new connection may mend it.

use ghbench_ingest::sink::SinkError;

/// `.sink()?` turns a driver error into a [`SinkError`] (`?` alone cannot: both types are foreign here).
pub trait OrSink<T> {
    fn sink(self) -> Result<T, SinkError>;
}

impl<T> OrSink<T> for Result<T, mongodb::error::Error> {
    fn sink(self) -> Result<T, SinkError> {
        self.map_err(|e| to_sink_error(&e))
    }
}

pub fn to_sink_error(e: &mongodb::error::Error) -> SinkError {
    SinkError::Engine { message: format!("MongoDB-wire server: {}", crate::connect::short_error(e)), transient: is_lost_connection(e) }
}

/// The network, or a server shutting down, restarting or stepping down
/// (ShutdownInProgress, InterruptedAtShutdown, NotWritablePrimary, ...).
pub fn is_lost_connection(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    const SERVER_AWAY: [i32; 12] = [6, 7, 89, 91, 189, 9001, 10058, 10107, 11600, 11602, 13435, 13436];
    let code = match &*e.kind {
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } | ErrorKind::ServerSelection { .. } => return true,
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m.write_concern_error.as_ref().map(|w| w.code),
        _ => None,
    };
    e.contains_label(mongodb::error::RETRYABLE_WRITE_ERROR) || code.is_some_and(|c| SERVER_AWAY.contains(&c))
}

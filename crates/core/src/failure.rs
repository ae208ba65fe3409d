//! What an engine's failure means for what comes next, said once by the
//! engine that saw it and read the same way by loading and by querying.
//!
//! An engine turns its driver's error into an [`EngineError`] where it gets
//! one: its [`FailureKind`] says whether the connection or the server went
//! away, whether the same work may go through a moment later, or whether it
//! fails again whatever ghbench does. Loading retries an hour on a new
//! connection after a transient failure (`SinkError::Engine` carries the
//! typed error); querying runs a query again on a new connection after a
//! lost one, finding the typed error anywhere in an `anyhow` chain
//! ([`EngineError::in_chain`]), under whatever context was added above it.

use std::error::Error;
use std::fmt;

/// What a failure of an engine says about doing the same work again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The connection or the server went away (closed, a network fault, a
    /// server shutting down, crashing or restarting): the same work may go
    /// through on a new connection.
    LostConnection,
    /// The server is there but could not do the work now (a lock held too
    /// long, a deadlock): the same work may go through a moment later.
    Transient,
    /// The work itself failed (the data, the statement, a right, a limit):
    /// done again, it fails again.
    Permanent,
}

impl FailureKind {
    /// A retry, on a new connection, may mend it: a lost connection or a
    /// transient failure.
    pub fn is_transient(self) -> bool {
        !matches!(self, FailureKind::Permanent)
    }

    /// The connection is gone: a new one is needed before anything else.
    pub fn is_lost_connection(self) -> bool {
        matches!(self, FailureKind::LostConnection)
    }
}

/// An engine's failure in its own words, with what it means ([`FailureKind`]).
///
/// Built from the driver's error with [`EngineError::driver`], it reads
/// exactly as the driver's error did (its words, then its causes), so a
/// message or a record says the same as before it was classified; built with
/// [`EngineError::new`], its message is the whole of what is said.
#[derive(Debug)]
pub struct EngineError {
    kind: FailureKind,
    message: String,
    /// The driver's error the message is the words of: its causes are this
    /// error's causes.
    driver: Option<Box<dyn Error + Send + Sync>>,
}

impl EngineError {
    /// A failure said in `message` (causes included: it has none of its own).
    pub fn new(kind: FailureKind, message: impl Into<String>) -> EngineError {
        EngineError { kind, message: message.into(), driver: None }
    }

    /// The driver's `error`, classified as `kind`: said in its words, with its causes.
    pub fn driver(kind: FailureKind, error: impl Error + Send + Sync + 'static) -> EngineError {
        EngineError { kind, message: error.to_string(), driver: Some(Box::new(error)) }
    }

    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The failure in the engine's words (without the causes of a driver's error).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// See [`FailureKind::is_transient`].
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }

    /// The typed error in `error`'s chain, under any context added above it.
    pub fn in_chain(error: &anyhow::Error) -> Option<&EngineError> {
        error.chain().find_map(|cause| cause.downcast_ref::<EngineError>())
    }

    /// `error` says the connection or the server went away (a restart, a
    /// network fault), not that the work is wrong: the same work may go
    /// through on a new connection. An error no engine classified (an engine
    /// with no connection, a query file that does not read) never says so.
    pub fn lost_connection_in(error: &anyhow::Error) -> bool {
        EngineError::in_chain(error).is_some_and(|e| e.kind.is_lost_connection())
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for EngineError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.driver.as_deref().and_then(|driver| driver.source())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver's error with a cause, as drivers hide the reason in one.
    #[derive(Debug)]
    struct DriverError(std::io::Error);

    impl fmt::Display for DriverError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("error communicating with the server")
        }
    }

    impl Error for DriverError {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    fn reset() -> DriverError {
        DriverError(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }

    #[test]
    fn kinds_say_what_a_retry_may_mend() {
        assert!(FailureKind::LostConnection.is_transient() && FailureKind::LostConnection.is_lost_connection());
        assert!(FailureKind::Transient.is_transient() && !FailureKind::Transient.is_lost_connection());
        assert!(!FailureKind::Permanent.is_transient() && !FailureKind::Permanent.is_lost_connection());
        let refused = EngineError::new(FailureKind::Permanent, "PostgreSQL: permission denied");
        assert!(!refused.is_transient());
        assert_eq!(refused.to_string(), "PostgreSQL: permission denied");
        assert!(refused.source().is_none());
    }

    #[test]
    fn a_driver_error_reads_as_it_did_before_it_was_classified() {
        let plain = anyhow::Error::from(reset());
        let typed = anyhow::Error::from(EngineError::driver(FailureKind::LostConnection, reset()));
        assert_eq!(format!("{typed:#}"), format!("{plain:#}"));
        assert_eq!(format!("{typed}"), format!("{plain}"));
        assert_eq!(crate::error_chain(&EngineError::driver(FailureKind::LostConnection, reset())), crate::error_chain(&reset()));
    }

    #[test]
    fn the_typed_error_is_found_under_any_context() {
        let lost = anyhow::Error::from(EngineError::driver(FailureKind::LostConnection, reset()));
        let wrapped = lost.context("creating t_type").context("building the indexes");
        assert_eq!(EngineError::in_chain(&wrapped).map(EngineError::kind), Some(FailureKind::LostConnection));
        assert!(EngineError::lost_connection_in(&wrapped));

        let busy = anyhow::Error::from(EngineError::new(FailureKind::Transient, "deadlock detected")).context("committing the hour");
        assert!(!EngineError::lost_connection_in(&busy), "a retry may mend it, but the connection is there");

        let unclassified = anyhow::Error::from(reset()).context("reading the query file");
        assert!(EngineError::in_chain(&unclassified).is_none());
        assert!(!EngineError::lost_connection_in(&unclassified), "only an engine says a connection was lost");
    }
}

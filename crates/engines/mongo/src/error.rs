//! The driver's errors as ghbench reports them: the server's own words, what
//! a user can do about a refusal, and what the failure means
//! ([`failure_kind`]): whether a retry (on a new connection) may mend it.
//! Loading gets them as a `SinkError` ([`to_sink_error`]), querying as the
//! typed `EngineError` in its chain ([`with_advice`]).

use ghbench_engine::load::SinkError;
use ghbench_engine::{EngineError, FailureKind};
use mongodb::error::{ErrorKind, WriteFailure};

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
    let message = format!("MongoDB-wire server: {}", crate::connect::short_error(e));
    // 14031 OutOfDiskSpace; WiredTiger's own says the OS's words.
    match code(e) == Some(OUT_OF_DISK_SPACE) || message.contains("No space left on device") {
        true => SinkError::NoSpace(message),
        false => SinkError::Engine(EngineError::new(failure_kind(e), message)),
    }
}

/// Every transient error (see [`is_transient`]) is said as a lost
/// connection: the network, or a server away, restarting or stepping down,
/// is met with a new client, by loading and querying alike (a server busy
/// for now is too: the driver's pool cannot tell it apart from one going
/// away); anything else is the work's own failure.
pub fn failure_kind(e: &mongodb::error::Error) -> FailureKind {
    match is_transient(e) {
        true => FailureKind::LostConnection,
        false => FailureKind::Permanent,
    }
}

/// MongoDB's code for a server whose disk is full (error_codes.yml).
const OUT_OF_DISK_SPACE: i32 = 14031;

/// The server's code for a failed command or write, if it gave one.
pub fn code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m.write_concern_error.as_ref().map(|w| w.code),
        _ => None,
    }
}

/// Codes that say the server is away or busy for now: shutting down,
/// restarting, stepping down (the retryable reads and writes specifications'
/// list), a time limit on a lock (ExceededTimeLimit, 262), a new primary
/// without a majority snapshot yet (ReadConcernMajorityNotAvailableYet, 134).
const TRANSIENT_CODES: [i32; 14] = [6, 7, 89, 91, 134, 189, 262, 9001, 10058, 10107, 11600, 11602, 13435, 13436];

/// Labels with which the server or the driver calls an error retryable: a
/// write's, any operation's, and an overloaded server's (it asks the client to back off).
const RETRYABLE_LABELS: [&str; 3] =
    [mongodb::error::RETRYABLE_WRITE_ERROR, mongodb::error::RETRYABLE_ERROR, mongodb::error::SYSTEM_OVERLOADED_ERROR];

/// The network, or a server away or busy for now (see [`TRANSIENT_CODES`],
/// [`RETRYABLE_LABELS`]): worth a retry. A server selection that failed for a
/// reason no retry mends (a TLS certificate, a wrong replica set name) is not.
pub fn is_transient(e: &mongodb::error::Error) -> bool {
    match &*e.kind {
        ErrorKind::ServerSelection { message, .. } => return !permanent_selection_failure(message),
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } => return true,
        _ => {}
    }
    RETRYABLE_LABELS.iter().any(|label| e.contains_label(label)) || code(e).is_some_and(|c| TRANSIENT_CODES.contains(&c))
}

/// A server selection failure whose cause stays: the URI's `replicaSet` is
/// not the servers' set, or TLS fails (a certificate, a server without TLS).
pub fn permanent_selection_failure(message: &str) -> bool {
    let wrong_set = message.contains("replicaSet name") && message.contains("does not match");
    let tls = ["certificate", "UnknownIssuer", "NotValidForName", "InvalidCertificate", "InvalidContentType", "corrupt message"]
        .iter()
        .any(|word| message.contains(word));
    wrong_set || tls
}

/// A refused or failed `command`, said so a user can act: the server's words,
/// then what to do for the refusals real deployments give (missing rights,
/// Atlas tier limits, time and memory limits).
pub fn refusal(command: &str, e: &mongodb::error::Error) -> String {
    let said = match &*e.kind {
        ErrorKind::Command(c) => format!("{} ({})", c.message, c.code_name),
        _ => crate::connect::short_error(e),
    };
    match advice(command, code(e)) {
        Some(advice) => format!("{said}: {advice}"),
        None => said,
    }
}

/// The driver's error as the typed error (its words and causes as the
/// driver says them; [`failure_kind`]), with what to do before it when there
/// is advice: the typed error stays in the chain, so the runner still finds
/// a lost connection under the advice.
pub fn with_advice(command: &str, e: mongodb::error::Error) -> anyhow::Error {
    let advice = advice(command, code(&e));
    let error = anyhow::Error::from(EngineError::driver(failure_kind(&e), e));
    match advice {
        Some(advice) => error.context(advice),
        None => error,
    }
}

fn advice(command: &str, code: Option<i32>) -> Option<String> {
    Some(match code? {
        // Unauthorized
        13 => format!("the URI's user may not run {command}; grant it {}", role_for(command)),
        // AtlasError: "<command> is not allowed or the syntax is incorrect"
        8000 => format!(
            "Atlas refused {command}: its Free and Flex tiers do not allow it (Atlas documentation, \"Unsupported Commands in Atlas\"); \
             ghbench goes on without it where it can"
        ),
        // MaxTimeMSExpired
        50 => format!(
            "{command} ran past its maxTimeMS: the --query-timeout ghbench was given, else a cap of the server's own \
             (without --query-timeout ghbench sends maxTimeMS 0, no limit, which overrides MongoDB 8's defaultMaxTimeMS); \
             Atlas Free and Flex tiers cap maxTimeMS at 300 s and it cannot be lifted there (Atlas documentation, \
             \"Unsupported Commands in Atlas\"): use a smaller --table or a dedicated tier"
        ),
        // QueryExceededMemoryLimitNoDiskUseAllowed
        292 => format!(
            "a stage of {command} needed more memory than the server allows without spilling to disk; ghbench asks allowDiskUse: true, \
             which Atlas Free and Flex tiers ignore and a server with allowDiskUseByDefault=false refuses"
        ),
        // CommandNotFound, CommandNotSupported
        59 | 115 => format!("this server does not support {command}"),
        _ => return None,
    })
}

/// The built-in role that grants `command` (MongoDB's "Built-In Roles").
fn role_for(command: &str) -> &'static str {
    match command {
        "serverStatus" => "the clusterMonitor role (on admin)",
        "planCacheClear" => "the dbAdmin role on the database (privilege planCacheWrite)",
        "collStats" | "$collStats" => "the dbAdmin or clusterMonitor role (privilege collStats)",
        "createIndexes" => "the readWrite or dbAdmin role on the database (privilege createIndex)",
        _ => "the read role on the database (privilege find)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permanent_selection_failures_are_told_apart() {
        assert!(permanent_selection_failure(
            "Server selection timeout: No available servers. Topology: { Type: Single, Servers: [ { Address: a:27017, Type: Unknown, Error: Kind: An invalid argument was provided: Connection string replicaSet name \"rs1\" does not match actual name \"rs0\", labels: {} } ] }"
        ));
        assert!(permanent_selection_failure("No available servers. Topology: { Error: Kind: I/O error: invalid peer certificate: UnknownIssuer, labels: {} }"));
        assert!(!permanent_selection_failure("Server selection timeout: No available servers. Topology: { Error: Kind: I/O error: Connection refused (os error 111), labels: {} }"));
    }

    #[test]
    fn a_network_fault_is_a_lost_connection_under_the_advice_too() {
        let reset = || mongodb::error::Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(failure_kind(&reset()), FailureKind::LostConnection);
        assert!(to_sink_error(&reset()).is_transient(), "loading retries it on a new connection");
        let typed = with_advice("aggregate", reset()).context("running Query A");
        assert!(EngineError::lost_connection_in(&typed), "querying reconnects");
        // Said as the driver says it, as before it was classified.
        assert_eq!(format!("{typed:#}"), format!("{:#}", anyhow::Error::from(reset()).context("running Query A")));
    }

    #[test]
    fn a_failure_of_the_work_itself_is_permanent() {
        let refused = || mongodb::error::Error::custom("a pipeline the server cannot run");
        assert_eq!(failure_kind(&refused()), FailureKind::Permanent);
        assert!(!to_sink_error(&refused()).is_transient());
        assert!(!EngineError::lost_connection_in(&with_advice("aggregate", refused())));
    }

    #[test]
    fn refusals_say_what_to_do() {
        assert!(advice("serverStatus", Some(13)).unwrap().contains("clusterMonitor"));
        assert!(advice("aggregate", Some(8000)).unwrap().contains("Free and Flex"));
        assert!(advice("aggregate", Some(50)).unwrap().contains("300 s"));
        assert!(advice("aggregate", Some(292)).unwrap().contains("allowDiskUse"));
        assert_eq!(advice("aggregate", Some(2)), None);
    }
}

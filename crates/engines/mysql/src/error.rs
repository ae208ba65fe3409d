//! The MySQL family's errors as ghbench reads them: the server's own message
//! with its code, and what the failure means ([`failure_kind`]): a lost
//! connection, a wait a retry may outlast, or a failure of the work itself.
//! Loading gets them as a `SinkError` ([`to_sink_error`]), querying as the
//! typed `EngineError` in its chain ([`engine_error`]).

use ghbench_engine::load::SinkError;
use ghbench_engine::{EngineError, FailureKind};

/// `.sink()?` turns a driver error into a [`SinkError`].
pub trait OrSink<T> {
    fn sink(self) -> Result<T, SinkError>;
}

impl<T> OrSink<T> for Result<T, mysql_async::Error> {
    fn sink(self) -> Result<T, SinkError> {
        self.map_err(|e| to_sink_error(&e))
    }
}

/// The server's error code, if the server (not the driver or the network) said it.
pub fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(server) => Some(server.code),
        _ => None,
    }
}

/// Where storage ran out: 1021 ER_DISK_FULL, 1114 ER_RECORD_FILE_FULL ("The
/// table is full"), or any error whose text names the OS's ENOSPC (3
/// ER_ERROR_ON_WRITE "Errcode: 28", a temporary file).
pub fn is_no_space(e: &mysql_async::Error) -> bool {
    let text = e.to_string();
    matches!(server_code(e), Some(1021 | 1114)) || text.contains("Errcode: 28") || text.contains("No space left on device")
}

/// The codes of a right the user lacks: 1044 (database), 1142 (table), 1227 (privilege).
const MISSING_RIGHT_CODES: [u16; 3] = [1044, 1142, 1227];

/// What to do about a right the user lacks.
pub const MISSING_RIGHT: &str = "\n  hint: the user in the URL lacks a right the engine needs: it makes tables in the URL's database and the tuned setup a database of its own (`tuned`), and reads information_schema; \
     grant them, e.g. GRANT ALL ON *.* TO '<user>'@'<host>' on a server of the benchmark's own";

/// TiDB's refusals of a transaction too large: 8004 (`txn-total-size-limit`),
/// 8175 (`tidb_mem_quota_query`, its ceiling since v6.5), 8025 (a row over 6 MiB).
const TOO_LARGE_TRANSACTION_CODES: [u16; 3] = [8004, 8175, 8025];

/// What to do when TiDB refuses an hour's transaction as too large.
pub const TOO_LARGE_TRANSACTION: &str = "\n  hint: TiDB refused the hour's transaction as too large: an hour is one transaction (so it is stored exactly once); \
     raise txn-total-size-limit and tidb_mem_quota_query on the TiDB servers for the load";

/// The driver's error in one line, its causes included, once each (its
/// I/O errors say "Input/output error" twice: once per layer).
pub fn said(e: &mysql_async::Error) -> String {
    ghbench_core::error_chain(e).replace("Input/output error: Input/output error: ", "Input/output error: ")
}

pub fn to_sink_error(e: &mysql_async::Error) -> SinkError {
    let mut message = format!("MySQL family server: {}", said(e));
    if server_code(e).is_some_and(|code| MISSING_RIGHT_CODES.contains(&code)) {
        message.push_str(MISSING_RIGHT);
    }
    if server_code(e).is_some_and(|code| TOO_LARGE_TRANSACTION_CODES.contains(&code)) {
        message.push_str(TOO_LARGE_TRANSACTION);
    }
    match is_no_space(e) {
        true => SinkError::NoSpace(message),
        false => SinkError::Engine(EngineError::new(failure_kind(e), message)),
    }
}

/// A query's driver error as the typed error (its words as the driver says
/// them): the runner finds it in the chain and runs the query again on a new
/// connection when the connection was lost.
pub fn engine_error(e: mysql_async::Error) -> EngineError {
    EngineError::driver(failure_kind(&e), e)
}

/// A lost connection (an I/O error, the driver's closed or out-of-step
/// connection, the server shutting down or dropping the client: 1053, 1927,
/// the network codes 1153 and 1158-1161, MySQL's 4031);
/// a lock another session held too long (1205 lock wait timeout, 1213
/// deadlock) or a server out of connections (1040), transient; anything else
/// the work's own failure.
pub fn failure_kind(e: &mysql_async::Error) -> FailureKind {
    use mysql_async::DriverError::{ConnectionClosed, PacketOutOfOrder, PoolDisconnected, UnexpectedPacket};
    match e {
        mysql_async::Error::Io(_) => FailureKind::LostConnection,
        mysql_async::Error::Driver(ConnectionClosed | PoolDisconnected | PacketOutOfOrder | UnexpectedPacket { .. }) => FailureKind::LostConnection,
        // The driver's refusal of the work itself (a packet too large, too many parameters).
        mysql_async::Error::Driver(_) => FailureKind::Permanent,
        mysql_async::Error::Server(server) => match server.code {
            // 1053 shutdown, 1927 killed, 1153/1158-1161 the network read or
            // write failed or timed out, 4031 MySQL's idle disconnect.
            1053 | 1927 | 1153 | 1158..=1161 | 4031 => FailureKind::LostConnection,
            1205 | 1213 | 1040 => FailureKind::Transient,
            _ => FailureKind::Permanent,
        },
        mysql_async::Error::Other(_) | mysql_async::Error::Url(_) => FailureKind::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: u16, message: &str) -> mysql_async::Error {
        mysql_async::Error::Server(mysql_async::ServerError { code, message: message.into(), state: "HY000".into() })
    }

    #[test]
    fn each_failure_means_what_it_says() {
        assert_eq!(failure_kind(&server(1213, "Deadlock found")), FailureKind::Transient);
        assert_eq!(failure_kind(&server(1053, "Server shutdown in progress")), FailureKind::LostConnection);
        assert_eq!(failure_kind(&server(1064, "You have an error in your SQL syntax")), FailureKind::Permanent);
        let closed = mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed);
        assert_eq!(failure_kind(&closed), FailureKind::LostConnection);
        assert!(to_sink_error(&closed).is_transient());
    }

    #[test]
    fn a_full_disk_stops_the_run_and_a_missing_right_says_what_to_grant() {
        assert!(matches!(to_sink_error(&server(1114, "The table 't' is full")), SinkError::NoSpace(_)));
        let written = server(3, "Error writing file './ghbench/t.ibd' (Errcode: 28 \"No space left on device\")");
        assert!(matches!(to_sink_error(&written), SinkError::NoSpace(_)));
        let denied = to_sink_error(&server(1044, "Access denied for user 'u'@'%' to database 'tuned'")).to_string();
        assert!(denied.contains("Access denied") && denied.contains("GRANT"), "{denied}");
        let too_large = to_sink_error(&server(8004, "Transaction is too large, size: 104857600")).to_string();
        assert!(too_large.contains("txn-total-size-limit"), "{too_large}");
    }
}

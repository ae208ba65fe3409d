//! Vocabulary shared by every ghbench crate: hours of GH Archive, what an
//! engine is (name, capabilities, options), validated table names, how a
//! server describes itself, and what an engine's failure means (transient, a
//! lost connection). No database driver: each engine brings its own.

pub mod changes;
pub mod digest;
pub mod engine;
pub mod failure;
pub mod hour;
pub mod limit;
pub mod owner;
pub mod peak;
pub mod redact;
pub mod place;
pub mod server;
pub mod setup;
pub mod size;
pub mod stop;
pub mod table;
pub mod ticking;

pub use engine::{Capabilities, DocumentLimits, Engine, EngineConfig, EngineOption, EngineSpec};
pub use failure::{EngineError, FailureKind};
pub use hour::{summarise_hours, Hour, HourRange};
pub use redact::redact_url;
pub use place::Place;
pub use server::{error_chain, ConnectError, ServerInfo, CONNECT_TIMEOUT};
pub use setup::{Change, Setup};
pub use table::TableName;

/// A line on standard error that cannot fail: said on the way out or from
/// deep in an engine, where stderr may be closed (`eprintln!` would panic)
/// and what is being done (putting a server back) comes first.
pub fn note(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `1 hour`, `2 hours`.
pub fn count_of(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

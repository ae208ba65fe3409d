//! Vocabulary shared by every ghbench crate: hours of GH Archive, the engines,
//! validated table names, and how to reach (and describe) the servers.

pub mod engine;
pub mod hour;
pub mod redact;
#[cfg(feature = "servers")]
pub mod server;
pub mod table;

pub use engine::Engine;
pub use hour::{summarise_hours, Hour, HourRange};
pub use redact::redact_url;
#[cfg(feature = "servers")]
pub use server::{describe_mongo, describe_postgres, error_chain, short_mongo_error, ConnectError, ServerInfo, Servers};
pub use table::TableName;

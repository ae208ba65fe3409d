//! The OLAP benchmark: the paper's indexes and queries A–D, run on every
//! engine, timed, verified across engines, and recorded for reports.
//!
//! - [`catalog`]: the query files under `queries/` (no query text in code).
//! - [`backend`]: the trait every engine implements in its own folder
//!   (describe, ledger, sizes, indexes, prepare and execute, explain).
//! - [`runner`]: the timed runs and the cross-engine verification ([`verify`]).
//! - [`ledger`]: what ingest says each engine holds, hour by hour; [`consistency`]:
//!   whether the engines hold the same data, checked before timing.
//! - [`kernel_io`]: what the kernel counted for a server's processes on this
//!   machine (bytes from storage), read around each query's runs;
//!   [`cgroup`]: the memory limit an engine runs under and whether it held;
//!   [`throttle`]: the disk limit, the same way.
//! - [`record`], [`bench`], [`rows`]: the records this crate fills, which are
//!   data of their own (`ghbench-record`); the views that read them are
//!   `ghbench-report`, which depends on the records and not on this crate.

pub mod backend;
pub mod catalog;
pub mod cgroup;
pub mod concurrency;
pub mod consistency;
pub mod disk;
pub mod environment;
pub mod kernel_io;
pub mod ledger;
mod progress;
pub mod runner;
pub mod throttle;
pub mod verify;

pub use ghbench_record::{bench, rows, run as record};

pub use backend::Backend;
pub use catalog::Catalog;
pub use record::RunRecord;

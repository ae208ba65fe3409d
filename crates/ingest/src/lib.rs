//! Loading GH Archive hours into every engine: sources, decoding, the cleaning
//! policy, quarantine, per-engine sinks with their ledgers, and the run itself.

pub mod clean;
pub mod decode;
pub mod digest;
pub mod mirror;
pub mod pipeline;
pub mod plan;
pub mod quarantine;
pub mod report;
pub mod serve;
pub mod sink;
pub mod source;
pub mod space;

pub use pipeline::{ingest, Event, IngestError, IngestOptions, Observer, Quiet};
pub use report::{HourReport, HourStatus, IngestSummary};
pub use source::{Source, DEFAULT_SOURCE};

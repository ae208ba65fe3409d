//! What ghbench measured, as data: the records its runs write and its views
//! read. Nothing here measures or draws; `ghbench-olap` fills these records
//! and `ghbench-report` renders them, so a saved file can be read, compared
//! and re-rendered by any later ghbench.
//!
//! - [`run`]: the record of one `query` run (the results JSON).
//! - [`bench`]: the record of one `bench`: sizes, loads, index builds, runs.
//! - [`concurrency`]: the concurrency phase's part of a run record.
//! - [`rows`]: query answers as rows, compared across engines.
//! - [`catalog`]: what the query catalog says that a record keeps.

pub mod bench;
pub mod catalog;
pub mod concurrency;
pub mod rows;
pub mod run;

pub use bench::BenchRecord;
pub use run::RunRecord;

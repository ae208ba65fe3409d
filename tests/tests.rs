//! The integration tests: one binary, a module per area (as ripgrep's
//! tests/tests.rs). One binary links polars once, not 22 times, and its
//! tests run side by side; those that touch the servers `just setup`
//! started, or disturb what their tests read, hold a group guard from
//! `ghbench_testkit::groups` so they never overlap the wrong tests.
//!
//! One area: `cargo test --test integration ingest_outage::`.

// What only these tests can do: run the ghbench binary cargo built for them.
mod util;

mod bench;
mod bench_data;
mod bench_year;
mod citus;
mod citus_commit;
mod citus_tuned;
mod concurrency;
mod disk_limit;
mod download;
mod engine_plugin;
mod gen;
mod ingest_crash;
mod ingest_faults;
mod ingest_http;
mod ingest_outage;
mod ingest_overlap;
mod ingest_recovery;
mod ledger_upgrade;
mod leftovers;
mod limits;
mod lock_waits;
mod mysql;
mod normalized;
mod olap;
mod olap_cli;
mod polars;
mod query_reconnect;
mod report_compare;
mod report_html;
mod secrets;
mod statistics;
mod stored_hours;
mod tuned;

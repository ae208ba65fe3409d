//! What ghbench's tests share, in one place instead of copies: the servers
//! `just setup` starts, servers of a test's own, the real hour and hour
//! files a test writes, misbehaving servers, the files a run writes, and
//! the groups that keep disturbing tests apart in the one integration
//! binary (`tests/tests.rs`). Never published; only a dev-dependency.
//!
//! The crates' own tests ask only for the part they need: the default
//! part needs no engine; `postgres`, `servers` and `olap` add what talks to
//! the engines (see Cargo.toml). What runs the `ghbench` program itself
//! stays with the tests of the `ghbench` package (`tests/util.rs`): only
//! they know where cargo built it (`CARGO_BIN_EXE_ghbench`).
//!
//! The items tests use most are here at the root (`use ghbench_testkit::*`);
//! servers of a test's own and misbehaving servers by their module.

pub mod data;
pub mod faulty_http;
pub mod groups;
pub mod host;
#[cfg(feature = "olap")]
pub mod olap_fixture;
pub mod process;
pub mod results;
#[cfg(feature = "records")]
pub mod sample;
#[cfg(feature = "servers")]
pub mod servers;
pub mod throwaway_mongo;
pub mod throwaway_mysql;
pub mod throwaway_pg;
pub mod tls;

pub use data::{data_dir, gzip_lines, lines_of, real_hour, real_hour_copies, real_lines, repo, write_hour, HOUR, HOUR_EVENTS, REAL_HOUR_FILE};
pub use groups::{alone_with_servers, disturbs_servers, shared_servers, ServersGuard};
pub use host::{free_port, free_ports_in_a_row, is_root, own_temp_dir};
#[cfg(feature = "olap")]
pub use olap_fixture::{ingest_options, postgres_and_polars, LoadedTable};
pub use process::{output_within, text, wait_within, Owned};
pub use results::{bench_record, copy_dir, newest_file, newest_record};
#[cfg(feature = "servers")]
pub use servers::{assert_exact, counts, drop_all, drop_table, ledger_hours, mongo, mongo_url, mysql_url, pg, pg_url, servers, table, Servers};

//! The engines this ghbench is built with: one line per engine. Everything
//! else (flags, `--help`, `doctor`, errors, reports) takes the list from here.

use ghbench_engine::Registry;

pub fn builtin() -> Registry {
    Registry::default()
        .with(ghbench_postgres::plugin())
        .with(ghbench_postgres::setup_plugin("postgres-tuned"))
        .with(ghbench_postgres::citus_plugin("citus"))
        .with(ghbench_postgres::citus_plugin("citus-tuned"))
        .with(ghbench_mongo::plugin())
        .with(ghbench_mongo::setup_plugin("mongo-tuned"))
        .with(ghbench_normalized::plugin())
        .with(ghbench_mysql::plugin())
        .with(ghbench_mysql::setup_plugin("mysql-tuned"))
        .with(ghbench_polars::plugin())
}

//! PostgreSQL's SQL files as statements: ghbench's tokenizer-based split
//! (`ghbench_engine::sql`) in PostgreSQL's dialect, for every engine on
//! PostgreSQL.

use ghbench_core::TableName;
use ghbench_engine::sql::SqlDialect;

/// The statements of `sql`, comments removed and white space folded, in order
/// (see `ghbench_engine::sql::statements`).
pub fn statements(sql: &str) -> anyhow::Result<Vec<String>> {
    ghbench_engine::sql::statements(SqlDialect::PostgreSql, sql)
}

/// `CREATE INDEX IF NOT EXISTS <name> ON ...`: the name, validated.
pub fn created_index_name(statement: &str) -> anyhow::Result<TableName> {
    ghbench_engine::sql::created_index_name(SqlDialect::PostgreSql, statement)
}

//! What PostgreSQL says of a long step over a whole table while it runs
//! (its `pg_stat_progress_*` views), for the progress lines of steps that
//! take minutes to hours on a year of data.

use tokio_postgres::Client;

/// The VACUUM or ANALYZE running on `table` (as qualified as the server
/// needs it), e.g. `VACUUM: scanning heap, 1200 of 5000 blocks (24%)`; None
/// when neither runs or the views cannot be read.
pub async fn whole_table(client: &Client, table: &str) -> Option<String> {
    let vacuum = "SELECT phase, heap_blks_scanned, heap_blks_total FROM pg_stat_progress_vacuum WHERE relid = to_regclass($1)";
    if let Ok(Some(row)) = client.query_opt(vacuum, &[&table]).await {
        return Some(format!("VACUUM: {}", phase(row.get(0), row.get(1), row.get(2), "blocks")));
    }
    let analyze = "SELECT phase, sample_blks_scanned, sample_blks_total FROM pg_stat_progress_analyze WHERE relid = to_regclass($1)";
    if let Ok(Some(row)) = client.query_opt(analyze, &[&table]).await {
        return Some(format!("ANALYZE: {}", phase(row.get(0), row.get(1), row.get(2), "sample blocks")));
    }
    None
}

/// The index being built on `table`, e.g. `CREATE INDEX: building index:
/// scanning table, 300 of 5000 blocks (6%)`.
pub async fn index_build(client: &Client, table: &str) -> Option<String> {
    let sql = "SELECT phase, blocks_done, blocks_total FROM pg_stat_progress_create_index WHERE relid = to_regclass($1)";
    let row = client.query_opt(sql, &[&table]).await.ok()??;
    Some(format!("CREATE INDEX: {}", phase(row.get(0), row.get(1), row.get(2), "blocks")))
}

fn phase(name: String, done: i64, total: i64, unit: &str) -> String {
    match total {
        0 => name,
        _ => format!("{name}, {done} of {total} {unit} ({:.0}%)", 100.0 * done as f64 / total as f64),
    }
}

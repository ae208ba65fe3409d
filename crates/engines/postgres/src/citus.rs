//! Citus, the distributed PostgreSQL: the `jsonb` layout's table distributed
//! over a coordinator's workers (`queries/citus/`), reached at the
//! coordinator. The coordinator's table is an empty shell; its rows live in
//! shards (tables named `<table>_<shard id>`) on the workers, so everything
//! ghbench reads of a table's size, rows and reads is summed over its shards,
//! each shard answering on its worker (`run_command_on_shards`). Loading and
//! querying go through the coordinator as on one PostgreSQL; an hour's rows
//! are found by the hour each keeps ([`crate::setup::Server::Citus`]).

use ghbench_core::{EngineOption, EngineSpec, ServerInfo};
use ghbench_engine::load::RowEstimate;
use ghbench_engine::record::{IndexSize, MemoryShare};
use tokio_postgres::Client;

/// What `just setup` starts (scripts/citus.sh): the coordinator.
pub const DEFAULT_URL: &str = "postgres://ghbench@127.0.0.1:54330/ghbench";

/// `--citus-url` / `CITUS_URL`: the coordinator.
pub static URL: [EngineOption; 1] = [EngineOption {
    long: "citus-url",
    env: Some("CITUS_URL"),
    default: Some(DEFAULT_URL),
    value_name: "URL",
    help: "Citus coordinator connection URL (libpq style, as --pg-url); its workers are the ones it lists (pg_dist_node).",
    secret: true,
}];

/// Where to point users whose coordinator cannot be reached.
pub const CONNECT_HINT: &str = "--citus-url or CITUS_URL (`just setup` starts a cluster when Citus is installed or GHBENCH_CITUS_SOURCE names its source)";

/// An error of a step on the shards: which, and what the worker said.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error(transparent)]
    Coordinator(#[from] tokio_postgres::Error),
    #[error("shard {shard} of {table} answered '{said}' to: {command}")]
    Shard { table: String, shard: i64, said: String, command: String },
    #[error("{table} is not a distributed table of this Citus coordinator (pg_dist_partition has no entry for it)")]
    NotDistributed { table: String },
}

/// `command` run on every shard of `table`, each `%s` in it the shard's
/// name: each shard's id and answer (text), in shard order; an error names
/// the shard and its worker's words.
async fn on_shards(client: &Client, table: &str, command: &str) -> Result<Vec<(i64, String)>, ShardError> {
    let distributed: bool = client.query_one("SELECT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = to_regclass($1))", &[&table]).await?.get(0);
    if !distributed {
        return Err(ShardError::NotDistributed { table: table.to_string() });
    }
    let rows = client.query("SELECT shardid, success, result FROM run_command_on_shards(to_regclass($1), $2) ORDER BY shardid", &[&table, &command]).await?;
    rows.iter()
        .map(|r| match r.get::<_, bool>(1) {
            true => Ok((r.get(0), r.get::<_, Option<String>>(2).unwrap_or_default())),
            false => Err(ShardError::Shard { table: table.to_string(), shard: r.get(0), said: r.get::<_, Option<String>>(2).unwrap_or_default(), command: command.to_string() }),
        })
        .collect()
}

/// The sum over `table`'s shards of the number `command` answers on each.
pub async fn sum_on_shards(client: &Client, table: &str, command: &str) -> Result<u64, ShardError> {
    let answers = on_shards(client, table, command).await?;
    let number = |(shard, said): &(i64, String)| said.trim().parse::<f64>().map_err(|_| ShardError::Shard { table: table.into(), shard: *shard, said: said.clone(), command: command.into() });
    Ok(answers.iter().map(number).sum::<Result<f64, _>>()?.max(0.0) as u64)
}

/// `table`'s heap and TOAST bytes and its indexes' bytes, over its shards;
/// None when there is no such table.
pub async fn table_and_index_bytes(client: &Client, table: &str) -> Result<Option<(u64, u64)>, tokio_postgres::Error> {
    let row = client.query_one("SELECT citus_table_size(to_regclass($1)), citus_total_relation_size(to_regclass($1))", &[&table]).await?;
    let (Some(table_bytes), Some(total)) = (row.get::<_, Option<i64>>(0), row.get::<_, Option<i64>>(1)) else { return Ok(None) };
    Ok(Some((table_bytes.max(0) as u64, (total - table_bytes).max(0) as u64)))
}

/// Each index of `table` and its bytes summed over the shards (Citus's
/// `citus_relation_size` of the coordinator's index, which knows each
/// shard's copy whatever name it was given).
pub async fn index_sizes(client: &Client, table: &str) -> Result<Vec<IndexSize>, tokio_postgres::Error> {
    let sql = "SELECT i.indexrelid::regclass::text, citus_relation_size(i.indexrelid) FROM pg_index i WHERE i.indrelid = to_regclass($1) ORDER BY 1";
    let rows = client.query(sql, &[&table]).await?;
    Ok(rows.iter().map(|r| IndexSize { name: r.get(0), bytes: r.get::<_, i64>(1).max(0) as u64 }).collect())
}

/// One index's bytes summed over the shards (see [`index_sizes`]).
pub async fn index_bytes(client: &Client, index: &str) -> Result<u64, tokio_postgres::Error> {
    let bytes: Option<i64> = client.query_one("SELECT citus_relation_size(to_regclass($1))", &[&index]).await?.get(0);
    Ok(bytes.unwrap_or(0).max(0) as u64)
}

/// The statistics' live rows summed over the shards (reset on a worker by
/// its crash), and whether one row exists.
pub async fn row_estimate(client: &Client, table: &str) -> Result<RowEstimate, ShardError> {
    let rows = sum_on_shards(client, table, "SELECT coalesce((SELECT n_live_tup FROM pg_stat_all_tables WHERE relid = '%s'::regclass), 0)").await?;
    // `SELECT FROM` (no column) of a distributed table is refused by Citus 13.2 ("a column definition list is required").
    let any: bool = client.query_one(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), &[]).await?.get(0);
    Ok(RowEstimate { rows, from: "the workers' statistics (n_live_tup summed over the shards)", any })
}

/// The planner's row estimate summed over the shards (`reltuples`; -1, never
/// analysed, counts as 0).
pub async fn planned_rows(client: &Client, table: &str) -> Result<u64, ShardError> {
    sum_on_shards(client, table, "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = '%s'::regclass").await
}

/// Whether some shard's expression index has no statistics yet (see
/// `crate::backend::lacks_expression_statistics`, which the coordinator's
/// empty shell would always answer yes).
pub async fn lacks_expression_statistics(client: &Client, table: &str) -> Result<bool, ShardError> {
    let command = "SELECT EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                     WHERE i.indrelid = '%s'::regclass AND i.indexprs IS NOT NULL
                       AND NOT EXISTS (SELECT FROM pg_stats s WHERE s.schemaname = c.relnamespace::regnamespace::name AND s.tablename = c.relname))::int";
    Ok(sum_on_shards(client, table, command).await? > 0)
}

/// Why the reads of a query on a distributed table are not counted yet: the
/// workers' sessions that ran it are Citus's, kept open between queries, and
/// a session flushes its statistics up to 10 s after going idle (PostgreSQL
/// 15's `PGSTAT_IDLE_INTERVAL`), so a count read after the runs could miss
/// the last; the coordinator's own process reads nothing of the shards.
pub const READS_NOT_COUNTED: &str =
    "not counted on Citus yet: the workers' sessions, kept open by Citus, flush their statistics up to 10 s after a query, and the coordinator's process reads none of the shards";

/// The memory the data competes for when the coordinator is on this
/// machine: the machine's, which the nodes `just setup` starts share (each
/// node's own limit is not read yet). None for a coordinator elsewhere.
pub fn memory(url: &str) -> Option<MemoryShare> {
    (ghbench_core::Place::of(url) == ghbench_core::Place::ThisMachine).then_some(())?;
    let bytes = ghbench_engine::query::memory_bytes()?;
    Some(MemoryShare { bytes, from: "this machine's memory (MemTotal), which the coordinator and the workers `just setup` starts share (a node's own limit is not read yet)".into(), limit: None })
}

/// The coordinator described as one PostgreSQL is (`crate::connect::describe`),
/// with what Citus adds: its version, its nodes, the workers' memory
/// settings, and `table`'s shards.
pub async fn describe(spec: &EngineSpec, client: &Client, url: &str, table: &str) -> Result<ServerInfo, tokio_postgres::Error> {
    let mut info = crate::connect::describe(spec, client, url).await?;
    let installed: bool = client.query_one("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')", &[]).await?.get(0);
    if !installed {
        info.caveat = Some("this server has no Citus extension (CREATE EXTENSION citus): its tables cannot be distributed".into());
        return Ok(info);
    }
    // `Citus 13.2.2 on x86_64-pc-linux-gnu, compiled by ...`: the release, where the extension's own version says 13.2-1.
    let build: String = client.query_one("SELECT citus_version()", &[]).await?.get(0);
    let citus = build.split_whitespace().nth(1).unwrap_or(&build).to_string();
    // Group 0 is the coordinator's, when it is listed too.
    let nodes = client.query("SELECT nodename || ':' || nodeport, isactive FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid", &[]).await?;
    let workers: Vec<String> = nodes.iter().map(|r| format!("{}{}", r.get::<_, String>(0), if r.get::<_, bool>(1) { "" } else { " (inactive)" })).collect();
    let shards: i64 = client.query_one("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = to_regclass($1)", &[&table]).await?.get(0);
    info.settings.insert("citus workers".into(), if workers.is_empty() { "none (add them with citus_add_node)".into() } else { workers.join(", ") });
    info.settings.insert(format!("citus shards of {table}"), shards.to_string());
    info.settings.insert("citus.shard_count".into(), client.query_one("SHOW citus.shard_count", &[]).await?.get(0));
    for name in ["shared_buffers", "work_mem"] {
        let rows = client.query("SELECT nodename || ':' || nodeport, success, result FROM run_command_on_workers($1) ORDER BY 1", &[&format!("SHOW {name}")]).await?;
        let said: Vec<String> = rows.iter().map(|r| format!("{} {}", r.get::<_, String>(0), r.get::<_, String>(2))).collect();
        info.settings.insert(format!("{name} (workers)"), said.join(", "));
    }
    info.label = format!("Citus {citus} on PostgreSQL {}, {} worker(s)", info.version, workers.len());
    info.product = "Citus".into();
    info.build = format!("{build}; {}", info.build);
    info.version = citus;
    Ok(info)
}

impl<T> crate::error::OrSink<T> for Result<T, ShardError> {
    fn sink(self) -> Result<T, ghbench_engine::load::SinkError> {
        self.map_err(|e| match e {
            ShardError::Coordinator(e) => crate::error::to_sink_error(&e),
            other => ghbench_engine::load::SinkError::Other(format!("Citus: {other}")),
        })
    }
}

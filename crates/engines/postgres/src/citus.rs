//! Citus, the distributed PostgreSQL: the `jsonb` layout's table distributed
//! over a coordinator's workers (`queries/citus/`), reached at the
//! coordinator. The coordinator's table is an empty shell; its rows live in
//! shards (tables named `<table>_<shard id>`) on the workers, so everything
//! ghbench reads of a table's size, rows and reads is summed over its shards,
//! each shard answering on its worker (`run_command_on_shards`). Loading and
//! querying go through the coordinator as on one PostgreSQL; an hour's rows
//! are found by the hour each keeps ([`crate::setup::Server::Citus`]).

use std::collections::BTreeMap;

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
/// the shard and its worker's words. One shard after another (`parallel`
/// false): these are ghbench's catalog and statistics lookups, and run in
/// parallel they open a session per shard on each worker at once (16 on
/// each of 2 workers here), which got two workers under a 108 MiB share of
/// memory killed for it, postmaster and all.
async fn on_shards(client: &Client, table: &str, command: &str) -> Result<Vec<(i64, String)>, ShardError> {
    let distributed: bool = client.query_one("SELECT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = to_regclass($1))", &[&table]).await?.get(0);
    if !distributed {
        return Err(ShardError::NotDistributed { table: table.to_string() });
    }
    let rows = client.query("SELECT shardid, success, result FROM run_command_on_shards(to_regclass($1), $2, parallel := false) ORDER BY shardid", &[&table, &command]).await?;
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

/// The counters of `table`'s shards, as [`crate::backend::read_counters`]
/// reads one table's: its heap, index and TOAST blocks found in
/// `shared_buffers` (hit) or asked of the kernel (read), summed over the
/// shards, each read on its worker; and the temporary files of the
/// coordinator and every worker, which their merges and sorts spill.
///
/// A worker session flushes its statistics as it goes idle, unless it
/// flushed less than a second before: then up to 10 s later (PostgreSQL
/// 15's `PGSTAT_MIN_INTERVAL` and `PGSTAT_IDLE_INTERVAL`), and the session
/// Citus keeps open to each worker between queries held the last query's
/// blocks that long (a third of a whole-table scan's, tried on the real hour).
/// So the workers' sessions of this coordinator session are ended first
/// ([`end_idle_worker_sessions`]): a session that ends flushes before it
/// leaves. Then, so that the runs after the count find the sessions Citus
/// keeps as they would have been, one is opened again on each worker and
/// warmed ([`warm_up`]); what that reads is counted apart (`warm_ups`, kept
/// by the caller across counts) and left out of every count.
pub async fn read_counters(client: &Client, table: &str, warm_ups: &std::sync::Mutex<BTreeMap<String, u64>>) -> Result<BTreeMap<String, u64>, String> {
    let _ = client.batch_execute("SELECT pg_stat_force_next_flush()").await;
    end_idle_worker_sessions(client).await?;
    let counted = cluster_counters(client, table).await?;
    warm_up(client, table).await?;
    let warmed = cluster_counters(client, table).await?;
    let mut left_out = warm_ups.lock().unwrap_or_else(|e| e.into_inner());
    let reported = counted.iter().map(|(name, n)| (name.clone(), n.saturating_sub(left_out.get(name).copied().unwrap_or(0)))).collect();
    for (name, n) in warmed {
        *left_out.entry(name.clone()).or_default() += n.saturating_sub(counted.get(&name).copied().unwrap_or(0));
    }
    Ok(reported)
}

/// What `table`'s shards and every node have counted now (see [`read_counters`]).
async fn cluster_counters(client: &Client, table: &str) -> Result<BTreeMap<String, u64>, String> {
    let per_shard = "SELECT concat_ws(',', heap_blks_read, heap_blks_hit, coalesce(idx_blks_read, 0), coalesce(idx_blks_hit, 0), coalesce(toast_blks_read, 0), coalesce(toast_blks_hit, 0))
                     FROM pg_statio_all_tables WHERE relid = '%s'::regclass";
    let names = ["heap_blks_read", "heap_blks_hit", "idx_blks_read", "idx_blks_hit", "toast_blks_read", "toast_blks_hit"];
    let mut counters = sum_columns(&on_shards(client, table, per_shard).await.map_err(|e| e.to_string())?, &names)?;
    let temp = "SELECT temp_files || ',' || temp_bytes FROM pg_stat_database WHERE datname = current_database()";
    let mut nodes = on_workers(client, temp).await?;
    let coordinator: String = client.query_one(temp, &[]).await.map_err(|e| format!("pg_stat_database: {}", ghbench_core::error_chain(&e)))?.get(0);
    nodes.push(("the coordinator".into(), coordinator));
    counters.extend(sum_columns(&nodes, &["temp_files (database-wide, every node)", "temp_bytes (database-wide, every node)"])?);
    Ok(counters)
}

/// Whether `table` keeps its rows in Citus's columnar access method, which
/// cannot delete them nor scan by tuple id.
pub async fn is_columnar(client: &Client, table: &str) -> Result<bool, tokio_postgres::Error> {
    let sql = "SELECT EXISTS (SELECT FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = to_regclass($1) AND a.amname = 'columnar')";
    Ok(client.query_one(sql, &[&table]).await?.get(0))
}

/// Opens the one session Citus keeps on each worker again (a pool of one
/// per worker) and plans `table` on every shard in it, reading no row: on a
/// heap table a tuple id past any table's end reads no block; a columnar
/// table takes no tuple id, and an hour no row has skips every chunk group by
/// its minimum and maximum. Planning reads each index's metapage. What it
/// reads is counted apart by the caller. The sessions are new, so each
/// flushes its statistics as it goes idle at the COMMIT, before the COMMIT returns.
async fn warm_up(client: &Client, table: &str) -> Result<(), String> {
    let context = |e: tokio_postgres::Error| format!("opening the workers' sessions again after the count: {}", ghbench_core::error_chain(&e));
    let nothing = match is_columnar(client, table).await.map_err(context)? {
        true => format!("{} < 0", crate::setup::HOUR_COLUMN),
        false => "ctid = '(4294967294,1)'".to_string(),
    };
    let sql = format!("BEGIN; SET LOCAL citus.max_adaptive_executor_pool_size = 1; SELECT count(*) FROM {table} WHERE {nothing}; COMMIT");
    if let Err(e) = client.batch_execute(&sql).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(context(e));
    }
    Ok(())
}

/// Ends the sessions Citus keeps open on the workers for this coordinator
/// session (named by its global id in their `application_name`), waiting
/// until each has gone, so that what they counted is flushed (see
/// [`read_counters`]), then checks that none is left. Citus notices a kept
/// session closed and opens another at the next query (`WL_SOCKET_CLOSED`
/// in its adaptive executor).
async fn end_idle_worker_sessions(client: &Client) -> Result<(), String> {
    let gpid: i64 = client.query_one("SELECT citus_backend_gpid()", &[]).await.map_err(|e| format!("this session's global id: {}", ghbench_core::error_chain(&e)))?.get(0);
    let ours = format!("FROM pg_stat_activity WHERE application_name = 'citus_internal gpid={gpid}' AND state = 'idle' AND pid <> pg_backend_pid()");
    // Its answer is not looked at: a session already on its way out answers false, and has flushed.
    let end = format!("SELECT count(pg_terminate_backend(pid, 3000)) {ours}");
    let left = format!("SELECT count(*) {ours}");
    for (step, command) in [("ending", &end), ("counting", &left)] {
        let answers = worker_answers(client, command).await.map_err(|e| format!("{step} this session's idle sessions on the workers: {}", ghbench_core::error_chain(&e)))?;
        for (node, ok, said) in answers {
            if !ok {
                return Err(format!("not counted: worker {node} did not answer ({said})"));
            }
            if step == "counting" && said.trim() != "0" {
                return Err(format!("not counted: {said} session(s) Citus keeps on worker {node} for this run did not end within 3 s, so what they read may not be flushed"));
            }
        }
    }
    Ok(())
}

/// `command` run on every worker (`run_command_on_workers`): each worker's
/// `host:port`, whether it answered, and its answer or error, in node order.
async fn worker_answers(client: &Client, command: &str) -> Result<Vec<(String, bool, String)>, tokio_postgres::Error> {
    let sql = "SELECT nodename || ':' || nodeport, success, result FROM run_command_on_workers($1) ORDER BY 1";
    let rows = client.query(sql, &[&command]).await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get::<_, Option<String>>(2).unwrap_or_default())).collect())
}

/// `command` run on every worker: each worker's `host:port` and answer; an
/// error names the worker and its words.
async fn on_workers(client: &Client, command: &str) -> Result<Vec<(String, String)>, String> {
    let answers = worker_answers(client, command).await.map_err(|e| format!("run_command_on_workers: {}", ghbench_core::error_chain(&e)))?;
    answers.into_iter().map(|(node, ok, said)| if ok { Ok((node, said)) } else { Err(format!("worker {node} answered '{said}' to: {command}")) }).collect()
}

/// Commits or rolls back what workers left prepared by Citus's two-phase
/// commit when one stopped mid-commit: a transaction the coordinator
/// committed (an hour and its ledger entry) whose rows that worker shows
/// only once recovered, which Citus's maintenance daemon does every
/// `citus.recover_2pc_interval` (a minute by default). Run before anything
/// counts or reads the rows: an hour counted short would be taken for
/// damaged and loaded again, and doubled when the recovery came; a query
/// would miss its rows. The number of transactions recovered.
pub async fn recover_prepared(client: &Client) -> Result<i32, tokio_postgres::Error> {
    Ok(client.query_one("SELECT recover_prepared_transactions()", &[]).await?.get(0))
}

/// Ok when the server is a Citus coordinator: the citus extension in its
/// database, and the node itself the coordinator's group (0), not a worker,
/// which Citus 11 and later also lets take queries on the distributed
/// tables' metadata but where ghbench would find, load and count nothing as
/// on the coordinator. Err: what it is instead, and what to do.
pub async fn check_coordinator(client: &Client) -> Result<(), String> {
    let asked = |e: tokio_postgres::Error| format!("asking whether it is a Citus coordinator failed: {}", ghbench_core::error_chain(&e));
    let row = client.query_one("SELECT current_database(), (SELECT extversion FROM pg_extension WHERE extname = 'citus')", &[]).await.map_err(asked)?;
    let (database, citus): (String, Option<String>) = (row.get(0), row.get(1));
    if citus.is_none() {
        return Err(format!(
            "it is not a Citus coordinator: its database {database} has no citus extension (a plain PostgreSQL?). Point it at a Citus coordinator, or create the extension there (CREATE EXTENSION citus, with citus in shared_preload_libraries)"
        ));
    }
    let group: i32 = client.query_one("SELECT groupid FROM pg_dist_local_group", &[]).await.map_err(asked)?.get(0);
    match group {
        0 => Ok(()),
        _ => Err(format!("it is a Citus worker (group {group}), not the coordinator: point it at the coordinator, the node whose pg_dist_node lists this one")),
    }
}

/// The setting under which [`recover_prepared`]'s answer is recorded.
pub const RECOVERED: &str = "citus prepared transactions recovered before this run";

/// Ok when every worker answers; else which do not, and what was said.
pub async fn workers_answer(client: &Client) -> Result<(), String> {
    let answers = worker_answers(client, "SELECT 1").await.map_err(|e| format!("asking the Citus workers: {}", ghbench_core::error_chain(&e)))?;
    let silent: Vec<String> = answers.into_iter().filter(|(_, ok, _)| !ok).map(|(node, _, said)| format!("{node} ({})", said.trim())).collect();
    match silent.is_empty() {
        true => Ok(()),
        false => Err(format!("Citus worker(s) not answering: {}", silent.join("; "))),
    }
}

/// Answers of comma-separated numbers, one per `names`, by whoever gave
/// them (a shard's id, a node), summed column by column.
fn sum_columns<W: std::fmt::Display>(answers: &[(W, String)], names: &[&str]) -> Result<BTreeMap<String, u64>, String> {
    let mut sums = vec![0u64; names.len()];
    for (whose, said) in answers {
        let numbers: Vec<u64> = said.split(',').map(|n| n.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(|_| format!("{whose} answered '{said}', not {} numbers", names.len()))?;
        if numbers.len() != names.len() {
            return Err(format!("{whose} answered '{said}', not {} numbers", names.len()));
        }
        sums.iter_mut().zip(numbers).for_each(|(sum, n)| *sum = sum.saturating_add(n));
    }
    Ok(names.iter().map(|n| n.to_string()).zip(sums).collect())
}

/// The coordinator at `url` and its active primary nodes, each
/// `host:port` as it lists them (the coordinator from `url` when it does
/// not list itself): whose processes read for a query.
pub async fn nodes(client: &Client, url: &str) -> Result<Vec<String>, String> {
    let coordinator = crate::address(url).ok_or_else(|| "the coordinator's URL names no single TCP address (a Unix socket, several hosts)".to_string())?;
    let sql = "SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND groupid <> 0 ORDER BY nodeid";
    let workers = client.query(sql, &[]).await.map_err(|e| format!("pg_dist_node: {}", ghbench_core::error_chain(&e)))?;
    Ok(std::iter::once(coordinator).chain(workers.iter().map(|r| r.get::<_, String>(0))).collect())
}

/// The memory the data competes for when the nodes are on this machine
/// (`ghbench_engine::query::nodes_memory`): each node's limit where every
/// node has one (`bench --memory` gives each node the size asked), with the
/// table's bytes on each (`citus_shards`); else this machine's, which they
/// share. None for a node elsewhere.
pub async fn memory(client: &Client, url: &str, table: &str) -> Option<MemoryShare> {
    // This machine's, which the nodes share, where they cannot be listed one by one (a Unix socket).
    let shared = || {
        (ghbench_core::Place::of(url) == ghbench_core::Place::ThisMachine).then_some(())?;
        let from = "this machine's memory (MemTotal), which the coordinator and its workers share (the nodes could not be listed one by one)";
        Some(MemoryShare { bytes: ghbench_engine::query::memory_bytes()?, from: from.into(), limit: None, nodes: Vec::new() })
    };
    let Ok(nodes) = nodes(client, url).await else { return shared() };
    let sql = "SELECT nodename || ':' || nodeport, sum(shard_size)::bigint FROM citus_shards WHERE table_name = to_regclass($1) GROUP BY 1";
    // A shard's size is NULL when its worker does not answer: then what each node holds is not known.
    let Ok(rows) = client.query(sql, &[&table]).await else { return shared() };
    let held: BTreeMap<String, Option<i64>> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let nodes = nodes.into_iter().map(|node| match held.get(&node) {
        Some(bytes) => Some((node, bytes.as_ref()?.max(&0).unsigned_abs())),
        None => Some((node, 0)),
    });
    ghbench_engine::query::nodes_memory(nodes.collect::<Option<_>>()?).await
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
    // How the table is laid out: what it is distributed by, and how its rows are kept.
    let layout = client
        .query_opt("SELECT distribution_column::text, access_method::text FROM citus_tables WHERE table_name = to_regclass($1)", &[&table])
        .await?;
    if let Some(layout) = layout {
        let (column, method): (String, String) = (layout.get(0), layout.get(1));
        info.settings.insert(format!("citus distribution column of {table}"), column);
        if method == "columnar" {
            info.settings.insert("columnar.compression".into(), client.query_one("SHOW columnar.compression", &[]).await?.get(0));
        }
        info.settings.insert(format!("access method of {table}"), method);
    }
    for setting in ["citus.shard_count", "citus.max_shared_pool_size", "citus.max_adaptive_executor_pool_size"] {
        info.settings.insert(setting.into(), client.query_one(&format!("SHOW {setting}"), &[]).await?.get(0));
    }
    for name in ["shared_buffers", "work_mem"] {
        let answers = worker_answers(client, &format!("SHOW {name}")).await?;
        let said: Vec<String> = answers.into_iter().map(|(node, answered, said)| if answered { format!("{node} {said}") } else { format!("{node} not read ({said})") }).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_each_column_over_the_answers_and_names_an_answer_that_is_not_numbers() {
        let answers = [(102008_i64, "1,2,3".to_string()), (102009, "10,20,30".to_string())];
        let sums = sum_columns(&answers, &["a", "b", "c"]).unwrap();
        assert_eq!(sums, BTreeMap::from([("a".into(), 11), ("b".into(), 22), ("c".into(), 33)]));
        let short = sum_columns(&[(102010_i64, "1,2".to_string())], &["a", "b", "c"]).unwrap_err();
        assert!(short.contains("102010 answered '1,2', not 3 numbers"), "{short}");
        let text = sum_columns(&[("127.0.0.1:54331", "x,1".to_string())], &["a", "b"]).unwrap_err();
        assert!(text.starts_with("127.0.0.1:54331 answered 'x,1'"), "{text}");
    }
}

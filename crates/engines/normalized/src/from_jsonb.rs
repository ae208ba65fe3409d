//! `ghbench normalize`: the derived tables made from a collection already
//! loaded as `jsonb`, for users who loaded before this engine existed.
//!
//! It starts from empty and derives the whole table, in chunks committed as
//! they go; the hours are listed in the normalized engine's ledger only at the
//! end, in one transaction, so an interrupted run leaves no hour listed and is
//! simply run again. Both engines' table locks are held throughout: no load
//! changes the `jsonb` table while it is read, and none into the derived tables.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Context as _};
use futures_util::{pin_mut, TryStreamExt};
use ghbench_core::TableName;
use ghbench_engine::load::{EngineSink, SinkError, Upkeep};
use ghbench_postgres::ledger::PgLedger;
use tokio_postgres::types::ToSql;

use crate::deriver::Deriver;
use crate::sink::{ledger_of, send_error, NormalizedSink};
use crate::{did, meta, SPEC};

/// Documents derived and committed at a time.
const CHUNK_DOCUMENTS: u64 = 20_000;

/// One derived table after the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableStats {
    pub name: String,
    /// Dotted path of what it holds (`` for the root).
    pub path: String,
    pub rows: u64,
    /// On disk, indexes and TOAST included.
    pub bytes: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Derivation {
    pub documents: u64,
    /// Reading, deriving and loading (without the upkeep).
    pub seconds: f64,
    pub upkeep: Upkeep,
    pub tables: Vec<TableStats>,
    /// Hours listed in the normalized engine's ledger (those of the `jsonb` one).
    pub hours: u64,
}

fn sink_err(e: SinkError) -> anyhow::Error {
    anyhow::anyhow!(e.detail())
}

/// Derives the tables of `table` from its `jsonb` rows; `progress(done,
/// total)` follows the documents.
pub async fn derive(url: &str, table: &TableName, progress: &(dyn Fn(u64, u64) + Sync)) -> anyhow::Result<Derivation> {
    let jsonb = &ghbench_postgres::SPEC;
    let reader = ghbench_postgres::connect::connect(&SPEC, url).await?;
    let exists: bool = reader.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table.as_str()]).await?.get(0);
    if !exists {
        bail!("there is no jsonb table '{table}' to derive from: load it first (ghbench ingest --engines {} --table {table})", jsonb.engine);
    }
    let mut sink = NormalizedSink::new(ghbench_postgres::session::Session::connect(&SPEC, url).await?, url.to_string(), table.clone());
    sink.check_name().await.map_err(sink_err)?;
    let jsonb_lock = ghbench_postgres::lock::lock(url, &jsonb.engine, table.as_str(), table).await.map_err(sink_err)?;
    let own_lock = match sink.lock(std::time::Duration::ZERO).await {
        Ok(lock) => lock,
        Err(e) => {
            jsonb_lock.release().await;
            return Err(sink_err(e));
        }
    };
    let result = derive_locked(&reader, &mut sink, url, table, progress).await;
    own_lock.release().await;
    jsonb_lock.release().await;
    result
}

async fn derive_locked(
    reader: &tokio_postgres::Client,
    sink: &mut NormalizedSink,
    url: &str,
    table: &TableName,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> anyhow::Result<Derivation> {
    let started = Instant::now();
    let jsonb_ledger = PgLedger { engine: &ghbench_postgres::SPEC.engine, table };
    let listed = jsonb_ledger.events(reader).await.context("reading the jsonb table's ledger")?;
    sink.prepare(true).await.map_err(sink_err)?;
    let writer = ghbench_postgres::connect::connect(&SPEC, url).await?;
    let mut deriver = Deriver::load(&writer, table.as_str()).await?;
    let mut rows_by_table: BTreeMap<usize, u64> = BTreeMap::new();
    let mut documents = 0;
    progress(0, listed);

    let none: [&(dyn ToSql + Sync); 0] = [];
    let stream = reader.query_raw(&format!("SELECT ctid::text, data::text FROM {table}"), none).await?;
    pin_mut!(stream);
    loop {
        let row = stream.try_next().await?;
        if let Some(row) = &row {
            let (ctid, json): (&str, &str) = (row.get(0), row.get(1));
            deriver.add(did::of_ctid(ctid).map_err(anyhow::Error::msg)?, json).map_err(anyhow::Error::msg)?;
        }
        if deriver.documents() >= CHUNK_DOCUMENTS || (row.is_none() && deriver.documents() > 0) {
            deriver.extend(&writer).await?;
            writer.batch_execute("BEGIN").await?;
            let stored = deriver.send(&writer).await.map_err(|e| sink_err(send_error(e)))?;
            writer.batch_execute("COMMIT").await?;
            documents += deriver.documents();
            for (t, rows) in stored {
                *rows_by_table.entry(t).or_default() += rows;
            }
            deriver.clear();
            progress(documents, listed);
        }
        if row.is_none() {
            break;
        }
    }
    if documents != listed {
        bail!(
            "the jsonb table '{table}' holds {documents} documents but its ledger lists {listed}: the derived tables hold them all, \
             but no hour is listed as loaded for the normalized engine (reload the jsonb table, then run this again)"
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    writer.batch_execute("BEGIN").await?;
    let finished_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let _ = ledger_of(table).copy_from(&writer, &jsonb_ledger, seconds, finished_at).await?;
    writer.batch_execute("COMMIT").await?;
    let hours = ledger_of(table).completed_hours(&writer).await?.len() as u64;
    let upkeep = sink.after_load().await.map_err(sink_err)?.context("no upkeep")?;
    let tables = table_stats(&writer, deriver.schema(), &rows_by_table).await?;
    Ok(Derivation { documents, seconds, upkeep, tables, hours })
}

/// Rows sent and bytes on disk of every derived table.
async fn table_stats(
    client: &tokio_postgres::Client,
    schema: &ghbench_normalize::Schema,
    rows: &BTreeMap<usize, u64>,
) -> anyhow::Result<Vec<TableStats>> {
    let mut stats = Vec::new();
    for (t, def) in schema.tables().iter().enumerate() {
        let sql = "SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)::bigint";
        let bytes: i64 = client.query_one(sql, &[&meta::qualified(&def.name)]).await?.get(0);
        stats.push(TableStats { name: def.name.clone(), path: def.path.clone(), rows: rows.get(&t).copied().unwrap_or(0), bytes: bytes as u64 });
    }
    Ok(stats)
}

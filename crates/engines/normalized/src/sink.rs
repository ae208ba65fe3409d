//! Loading the normalized layout: each hour's documents are derived as they
//! come and sent at the hour's commit: first any new tables and columns (a
//! short transaction of their own, see `meta`), then one transaction with
//! every table's COPY and the hour's ledger row, so a crash leaves no partial
//! hour and a rerun loads it again.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use ghbench_core::{Hour, ServerInfo, TableName};
use ghbench_engine::load::{check_counts, check_estimate, check_stored, EngineBatch, EngineSink, HourRecord, Room, SinkError, StoredCheck, StoredHour, TableLock, Upkeep};
use ghbench_postgres::error::OrSink;
use ghbench_postgres::ledger::{self, PgLedger, SERIALIZE_DDL};
use ghbench_postgres::session::Session;
use tokio_postgres::Client;

use crate::deriver::Deriver;
use crate::rows::SendError;
use crate::{did, meta, SPEC};

pub struct NormalizedSink {
    /// Cancellable: see the postgres engine's sink.
    client: Session,
    url: String,
    table: TableName,
    /// Read from the database once the tables exist (after `prepare`).
    deriver: Option<Deriver>,
    /// The hour being loaded.
    hour: Option<Hour>,
    /// The hour replaces the stored one (`--reload`): deleted in its commit.
    replacing: bool,
}

impl NormalizedSink {
    pub fn new(client: Session, url: String, table: TableName) -> Self {
        NormalizedSink { client, url, table, deriver: None, hour: None, replacing: false }
    }

    fn ledger(&self) -> PgLedger<'_> {
        ledger_of(&self.table)
    }

    async fn deriver(&mut self) -> Result<&mut Deriver, SinkError> {
        if self.deriver.is_none() {
            self.deriver = Some(Deriver::load(&self.client, self.table.as_str()).await.sink()?);
        }
        Ok(self.deriver.as_mut().expect("loaded above"))
    }

    /// Documents no ledger entry lists can only be an interrupted `ghbench
    /// normalize`'s (an hour's rows commit with its entry): nothing listed is
    /// lost by starting from empty, and loading beside them would store
    /// documents twice.
    async fn drop_unlisted(&self) -> Result<(), SinkError> {
        let listed = !self.ledger().completed_hours(&self.client).await.sink()?.is_empty();
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {})", meta::qualified(self.table.as_str()));
        let holds: bool = self.client.query_one(&sql, &[]).await.sink()?.get(0);
        if listed || !holds {
            return Ok(());
        }
        meta::drop_collection(&self.client, self.table.as_str()).await.sink()?;
        self.create_root().await.map(|_| ())
    }

    /// The root table, made if missing (true then), or why the name cannot be one.
    async fn create_root(&self) -> Result<bool, SinkError> {
        meta::create_root(&self.client, self.table.as_str()).await.sink()?.map_err(SinkError::Other)
    }

    async fn commit(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        let deriver = self.deriver.as_mut().ok_or_else(|| SinkError::Other("commit outside an hour".into()))?;
        deriver.extend(&self.client).await.sink()?;
        self.client.batch_execute("BEGIN").await.sink()?;
        if self.replacing {
            delete_hour(&self.client, &self.table, &r.hour).await?;
        }
        let stored = deriver.send(&self.client).await.map_err(send_error)?;
        let documents = stored.iter().find(|(table, _)| *table == ghbench_normalize::ROOT).map_or(0, |(_, rows)| *rows);
        check_stored(documents, r)?;
        // The primary key refuses a second record of the hour, which rolls it back.
        ledger_of(&self.table).record(&self.client, r).await.sink()?;
        self.client.batch_execute("COMMIT").await.sink()?;
        deriver.clear();
        Ok(documents)
    }
}

/// Deletes a stored hour (its documents in every table, found by their ids,
/// which hold the hour, and its ledger entry) inside the open transaction.
/// The documents deleted must be the entry's count, or nothing changes.
async fn delete_hour(client: &Client, table: &TableName, stem: &str) -> Result<(), SinkError> {
    let Some((_, events)) = ledger_of(table).take_entry(client, stem).await.sink()? else {
        return Ok(());
    };
    let hour: Hour = stem.parse().map_err(|e| SinkError::Other(format!("{e}")))?;
    let (from, to) = (did::of_line(hour, 0).map_err(SinkError::Other)?, did::of_line(hour.next(), 0).map_err(SinkError::Other)?);
    let mut documents = 0;
    for (position, name) in meta::table_names(client, table.as_str()).await.sink()?.iter().enumerate() {
        let sql = format!("DELETE FROM {} WHERE did >= $1 AND did < $2", meta::qualified(name));
        let deleted = client.execute(&sql, &[&from, &to]).await.sink()?;
        // The root table comes first: one row per document.
        if position == 0 {
            documents = deleted;
        }
    }
    if !ghbench_postgres::sink::replaceable(documents, events) {
        return Err(SinkError::Other(format!(
            "cannot reload hour {stem} of {table}: its ledger lists {events} documents, and {documents} carry its ids \
             (derived by `ghbench normalize` from the jsonb table?); load the table again with --drop"
        )));
    }
    Ok(())
}

/// The normalized engine's ledger entries for a collection.
pub fn ledger_of(table: &TableName) -> PgLedger<'_> {
    PgLedger { engine: &SPEC.engine, table }
}

pub fn send_error(e: SendError) -> SinkError {
    match e {
        SendError::Db(e) => ghbench_postgres::error::to_sink_error(&e),
        SendError::Count { table, sent, took } => SinkError::Other(format!("COPY into {table} took {took} of {sent} rows")),
    }
}

#[async_trait]
impl EngineSink for NormalizedSink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        ghbench_postgres::connect::describe(&SPEC, &self.client, &self.url).await.sink()
    }

    fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    async fn check_name(&self) -> Result<(), SinkError> {
        ghbench_postgres::sink::check_table_name(&self.client, &self.table).await
    }

    async fn lock(&self, _limit: Duration) -> Result<TableLock, SinkError> {
        // Its own key: the jsonb engine may load the same name in the same run.
        let key = format!("{}:{}", SPEC.engine, self.table);
        ghbench_postgres::lock::lock(&self.url, &SPEC.engine, &key, &self.table).await
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        let t = self.table.as_str();
        let forget = self.ledger().forget_sql();
        let ddl = format!("BEGIN; {SERIALIZE_DDL} {} {}", ledger::create_sql(), meta::create_sql());
        self.client.batch_execute(&ddl).await.sink()?;
        let prepared = async {
            if drop {
                meta::drop_collection(&self.client, t).await.sink()?;
                self.client.batch_execute(&forget).await.sink()?;
            }
            if self.create_root().await? {
                // New tables hold nothing: whatever the ledger says of them is gone.
                self.client.batch_execute(&forget).await.sink()
            } else {
                self.drop_unlisted().await
            }
        };
        match prepared.await {
            Ok(()) => self.client.batch_execute("COMMIT").await.sink()?,
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK").await;
                return Err(e);
            }
        }
        self.deriver = None;
        self.deriver().await?;
        Ok(())
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        self.ledger().completed_hours(&self.client).await.sink()
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        self.ledger().events(&self.client).await.sink()
    }

    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        self.ledger().hour_done(&self.client, stem).await.sink()
    }

    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        self.begin_hour(stem).await?;
        self.replacing = true;
        Ok(())
    }

    /// Every table of the collection's bytes, where its root table lives and
    /// the WAL, as the PostgreSQL engine says them.
    async fn room(&self) -> Result<Option<Room>, SinkError> {
        let root = meta::qualified(self.table.as_str());
        let mut room = ghbench_postgres::sink::room(&self.client, &self.url, &root).await.sink()?;
        let tables = meta::table_names(&self.client, self.table.as_str()).await.sink()?;
        let sizes = "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)::bigint FROM unnest($1::text[]) t";
        let qualified: Vec<String> = tables.iter().map(|t| meta::qualified(t)).collect();
        room.stored_bytes = self.client.query_one(sizes, &[&qualified]).await.sink()?.get::<_, i64>(0).max(0) as u64;
        Ok(Some(room))
    }

    /// The ledger's entries. An hour's rows commit with its entry: checked
    /// against the server's statistics of the root table, or
    /// (`StoredCheck::Whole`) counted by the hour their document ids hold
    /// (see [`check_counts`]), as the PostgreSQL engine does.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        let mut stored = self.ledger().stored_hours(&self.client).await.sink()?;
        let root = meta::qualified(self.table.as_str());
        let what = format!("{} table {}", SPEC.engine, self.table);
        if *check != StoredCheck::Whole {
            let estimate = ghbench_postgres::sink::row_estimate(&self.client, &root).await.sink()?;
            check_estimate(&mut stored, &what, estimate)?;
            return Ok(stored);
        }
        let rows: i64 = self.client.query_one(&format!("SELECT count(*) FROM {root}"), &[]).await.sink()?.get(0);
        check_counts(&mut stored, &what, rows.max(0) as u64, || async {
            let sql = format!("SELECT did >> 32, count(*) FROM {root} GROUP BY 1");
            let rows = self.client.query(&sql, &[]).await.sink()?;
            Ok(rows.iter().map(|r| (did::hour_of_id_prefix(r.get(0)), r.get::<_, i64>(1).max(0) as u64)).collect())
        })
        .await?;
        Ok(stored)
    }

    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.replacing = false;
        let hour: Hour = stem.parse().map_err(|e| SinkError::Other(format!("{e}")))?;
        self.deriver().await?.clear();
        self.hour = Some(hour);
        Ok(())
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        let hour = self.hour.ok_or_else(|| SinkError::Other("write outside an hour".into()))?;
        let deriver = self.deriver().await?;
        for doc in batch.docs() {
            let did = did::of_line(hour, doc.line).map_err(SinkError::Other)?;
            deriver.add(did, &doc.json).map_err(SinkError::Other)?;
        }
        Ok(())
    }

    async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        let result = self.commit(r).await;
        if result.is_err() {
            self.abort_hour().await;
        }
        self.hour = None;
        result
    }

    async fn abort_hour(&mut self) {
        // Outside a transaction this only warns; the tables and columns made
        // for the hour stay (empty), recorded, for the next attempt.
        let _ = self.client.batch_execute("ROLLBACK").await;
        if let Some(deriver) = self.deriver.as_mut() {
            deriver.clear();
        }
        self.hour = None;
    }

    async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        let tables: Vec<String> = meta::table_names(&self.client, self.table.as_str()).await.sink()?.iter().map(|t| meta::qualified(t)).collect();
        Ok(Some(ghbench_postgres::sink::vacuum_analyze(&self.client, self.ledger(), &tables).await?))
    }
}

//! PostgreSQL: `(data jsonb)` loaded with binary COPY, one transaction per hour
//! that also inserts the hour's ledger row, so a crash leaves no partial hour.

use std::collections::HashSet;
use std::error::Error;
use std::pin::Pin;

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use ghbench_core::TableName;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::Client;

use super::{EngineSink, HourRecord, SinkError, LEDGER};
use crate::decode::Batch;

pub struct PostgresSink {
    client: Client,
    table: TableName,
    copy: Option<Pin<Box<BinaryCopyInWriter>>>,
}

/// JSON text sent as `jsonb` in binary COPY: version byte 1, then the text.
/// Saves parsing the JSON into a value only to print it again.
#[derive(Debug)]
pub struct JsonbText<'a>(pub &'a str);

impl ToSql for JsonbText<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_u8(1);
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB
    }

    to_sql_checked!();
}

impl PostgresSink {
    pub fn new(client: Client, table: TableName) -> Self {
        PostgresSink { client, table, copy: None }
    }
}

#[async_trait]
impl EngineSink for PostgresSink {
    async fn describe(&self, servers: &ghbench_core::Servers) -> Result<ghbench_core::ServerInfo, SinkError> {
        Ok(ghbench_core::describe_postgres(&self.client, &servers.pg_url).await?)
    }

    fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    /// Refuses a name PostgreSQL reserves (`user`, `table`, ...): the server
    /// knows its reserved words, it quotes them.
    async fn check_name(&self) -> Result<(), SinkError> {
        let t = &self.table;
        let plain: bool = self.client.query_one("SELECT quote_ident($1) = $1", &[&t.as_str()]).await?.get(0);
        if plain {
            Ok(())
        } else {
            Err(SinkError::Other(format!("'{t}' is a reserved word in PostgreSQL and cannot name a table unquoted: choose another --table")))
        }
    }

    /// The events the ledger records for `stem`, if the hour is done.
    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        let sql = format!("SELECT events FROM {LEDGER} WHERE tbl = $1 AND hour = $2");
        let row = self.client.query_opt(&sql, &[&self.table.as_str(), &stem]).await?;
        Ok(row.map(|r| r.get::<_, i64>(0).max(0) as u64))
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        let t = &self.table;
        // Concurrent `CREATE ... IF NOT EXISTS` can still collide; serialize them.
        let ddl = format!(
            "BEGIN;
             SELECT pg_advisory_xact_lock(4713);
             CREATE TABLE IF NOT EXISTS {LEDGER} (
                tbl text NOT NULL, hour text NOT NULL, events bigint NOT NULL, lines bigint NOT NULL,
                quarantined bigint NOT NULL, sanitized bigint NOT NULL, compressed_bytes bigint NOT NULL,
                file_defect text, ghbench_version text NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tbl, hour));
             {drop_sql}
             DELETE FROM {LEDGER} WHERE tbl = '{t}' AND to_regclass('{t}') IS NULL;
             CREATE TABLE IF NOT EXISTS {t} (data jsonb);
             COMMIT;",
            drop_sql = if drop { format!("DROP TABLE IF EXISTS {t}; DELETE FROM {LEDGER} WHERE tbl = '{t}';") } else { String::new() }
        );
        self.client.batch_execute(&ddl).await?;
        Ok(())
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        let rows = self.client.query(&format!("SELECT hour FROM {LEDGER} WHERE tbl = $1"), &[&self.table.as_str()]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        let sql = format!("SELECT coalesce(sum(events), 0)::bigint FROM {LEDGER} WHERE tbl = $1");
        let n: i64 = self.client.query_one(&sql, &[&self.table.as_str()]).await?.get(0);
        Ok(n as u64)
    }

    async fn begin_hour(&mut self, _stem: &str) -> Result<(), SinkError> {
        self.client.batch_execute("BEGIN").await?;
        let sink = self.client.copy_in(&format!("COPY {} (data) FROM STDIN (FORMAT binary)", self.table)).await?;
        self.copy = Some(Box::pin(BinaryCopyInWriter::new(sink, &[Type::JSONB])));
        Ok(())
    }

    async fn write(&mut self, batch: &Batch) -> Result<(), SinkError> {
        let copy = self.copy.as_mut().ok_or_else(|| SinkError::Other("write outside an hour".into()))?;
        for doc in &batch.docs {
            copy.as_mut().write(&[&JsonbText(&doc.json)]).await?;
        }
        Ok(())
    }

    async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        let copy = self.copy.take().ok_or_else(|| SinkError::Other("commit outside an hour".into()))?;
        let mut copy = copy;
        let rows = copy.as_mut().finish().await?;
        if let Err(e) = super::check_stored(rows, r) {
            self.abort_hour().await;
            return Err(e);
        }
        let sql = format!(
            "INSERT INTO {LEDGER} (tbl, hour, events, lines, quarantined, sanitized, compressed_bytes, file_defect, ghbench_version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        );
        let n = |v: u64| v as i64;
        let version = env!("CARGO_PKG_VERSION");
        let params: [&(dyn ToSql + Sync); 9] = [
            &self.table.as_str(), &r.hour, &n(r.events), &n(r.lines), &n(r.quarantined), &n(r.sanitized),
            &n(r.compressed_bytes), &r.file_defect, &version,
        ];
        // The primary key refuses a second record of the hour (e.g. a concurrent
        // run), which rolls this one back: an hour is never stored twice.
        if let Err(e) = self.client.execute(&sql, &params).await {
            self.abort_hour().await;
            return Err(e.into());
        }
        self.client.batch_execute("COMMIT").await?;
        Ok(rows)
    }

    async fn abort_hour(&mut self) {
        // Dropping an unfinished COPY makes the server fail it; then roll back.
        self.copy = None;
        let _ = self.client.batch_execute("ROLLBACK").await;
    }

    async fn lock(&self, servers: &ghbench_core::Servers, _limit: std::time::Duration) -> Result<super::TableLock, SinkError> {
        super::postgres_lock::lock(servers, &self.table).await
    }
}

//! PostgreSQL: `(data jsonb)` loaded with binary COPY, one transaction per hour
//! that also inserts the hour's ledger row, so a crash leaves no partial hour.
//!
//! The table has no column saying which hour a row came from (its layout is
//! what is measured), but an hour's rows and its ledger row share the
//! transaction that wrote them, so their `xmin`: that finds an hour's rows to
//! replace it (`--reload`), in the same transaction as the new ones. On Citus
//! that does not hold (see [`crate::setup::Server`]): there each row keeps
//! its hour in a column of its own, by which it is found.

use std::collections::{BTreeMap, HashSet};
use std::error::Error;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use ghbench_core::{ServerInfo, TableName};
use ghbench_engine::load::{
    check_counts, check_estimate, check_stored, Besides, EngineBatch, EngineSink, Free, HourRecord, Room, RowEstimate, SinkError, StoredCheck, StoredHour, TableLock, Upkeep,
};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::Client;

use crate::error::OrSink;

/// Whether `deleted` rows found for an hour whose entry lists `events` are
/// that hour's (see `delete_hour`).
pub fn replaceable(deleted: u64, events: u64) -> bool {
    deleted == events || (deleted > 0 && deleted < events)
}
use crate::ledger::{self, PgLedger, SERIALIZE_DDL};
use crate::session::Session;
use crate::setup::{JsonbSetup, Server};

pub struct PostgresSink {
    /// Which setup's table this loads (its engine, schema and DDL).
    setup: &'static JsonbSetup,
    /// A session whose statements can be cancelled: a whole-table step cut
    /// by `--whole-table-timeout` must not go on on the server.
    client: Session,
    /// For the lock's own connection and for describing the server.
    url: String,
    table: TableName,
    copy: Option<Pin<Box<BinaryCopyInWriter>>>,
    /// The hour being loaded, as a table keeping each row's hour stores it
    /// ([`JsonbSetup::hour_column`]).
    hour_key: Option<i32>,
    /// On Citus, the two-phase commits recovered before the load (see
    /// [`crate::citus::recover_prepared`]), for the record.
    recovered: Option<i32>,
    /// The columns the loader fills beside `data` ([`JsonbSetup::loaded_columns`]).
    loaded: Vec<(&'static str, Vec<&'static str>)>,
    /// Why the table's rows cannot be deleted, so no hour replaced (its
    /// access method, learnt in `prepare`); None: they can.
    cannot_delete: Option<String>,
}

/// An hour as [`crate::setup::HOUR_COLUMN`] keeps it: `yyyymmddhh`
/// (2015010115), which an `int` holds for every year GH Archive has.
pub fn hour_key(stem: &str) -> Result<i32, SinkError> {
    let hour: ghbench_core::Hour = stem.parse().map_err(|e| SinkError::Other(format!("hour {stem}: {e}")))?;
    // Its stem's four numbers (2015-01-01-15), read as one.
    hour.stem().split('-').try_fold(0i32, |key, part| key.checked_mul(100)?.checked_add(part.parse().ok()?)).ok_or_else(|| SinkError::Other(format!("hour {stem} has no key that fits an int")))
}

/// The stem of an hour key ([`hour_key`]).
fn stem_of_key(key: i32) -> String {
    let (date, hour) = (key / 100, key % 100);
    format!("{:04}-{:02}-{:02}-{hour}", date / 10_000, date / 100 % 100, date % 100)
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

/// `VACUUM (ANALYZE)` of `tables`, timed and recorded in `ledger`'s upkeep:
/// without statistics the planner guesses, and without a visibility map no
/// index-only scan happens, so nothing is timed before it. Cancelled on the
/// server if dropped unfinished (`--whole-table-timeout`, Ctrl-C).
pub async fn vacuum_analyze(client: &Session, ledger: PgLedger<'_>, tables: &[String]) -> Result<Upkeep, SinkError> {
    const STEP: &str = "VACUUM (ANALYZE)";
    let started = std::time::Instant::now();
    let statement = format!("{STEP} {}", tables.join(", "));
    client.cancellable(&statement, client.batch_execute(&statement)).await.sink()?;
    let seconds = started.elapsed().as_secs_f64();
    ledger.record_upkeep(client, STEP, seconds).await.sink()?;
    let what = match tables {
        [one] => one.clone(),
        many => format!("{} tables", many.len()),
    };
    Ok(Upkeep { step: format!("{STEP} {what}"), seconds })
}

/// Refuses a table name PostgreSQL reserves (`pg_...`, `user`, `table`, ...):
/// the server knows its reserved words, it quotes them.
pub async fn check_table_name(client: &Client, t: &TableName) -> Result<(), SinkError> {
    if t.as_str().starts_with("pg_") {
        return Err(SinkError::Other(format!(
            "table name '{t}' is reserved: names starting with pg_ belong to PostgreSQL's system catalogs; choose another --table"
        )));
    }
    let plain: bool = client.query_one("SELECT quote_ident($1) = $1", &[&t.as_str()]).await.sink()?.get(0);
    if plain {
        Ok(())
    } else {
        Err(SinkError::Other(format!("'{t}' is a reserved word in PostgreSQL and cannot name a table unquoted: choose another --table")))
    }
}

impl PostgresSink {
    pub fn new(setup: &'static JsonbSetup, client: Session, url: String, table: TableName) -> Self {
        PostgresSink { setup, client, url, table, copy: None, hour_key: None, recovered: None, loaded: setup.loaded_columns(), cannot_delete: None }
    }

    fn ledger(&self) -> PgLedger<'_> {
        PgLedger { engine: &self.setup.spec.engine, table: &self.table }
    }

    /// The table as SQL names it (qualified with the setup's schema).
    fn data_table(&self) -> String {
        self.setup.table(&self.table)
    }
}

#[async_trait]
impl EngineSink for PostgresSink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        match self.setup.server {
            Server::Postgres => crate::connect::describe(&self.setup.spec, &self.client, &self.url).await.sink(),
            Server::Citus => {
                let mut info = crate::citus::describe(&self.setup.spec, &self.client, &self.url, &self.data_table()).await.sink()?;
                if let Some(recovered) = self.recovered {
                    info.settings.insert(crate::citus::RECOVERED.into(), recovered.to_string());
                }
                Ok(info)
            }
        }
    }

    fn is_broken(&self) -> bool {
        self.client.is_closed()
    }

    async fn check_name(&self) -> Result<(), SinkError> {
        check_table_name(&self.client, &self.table).await
    }

    /// The events the ledger records for `stem`, if the hour is done.
    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        self.ledger().hour_done(&self.client, stem).await.sink()
    }

    /// One transaction, each of the table's statements sent on its own: Citus
    /// sends DDL on a distributed table to every shard as it was given, and
    /// refuses a string of several statements.
    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        if self.setup.server == Server::Citus {
            // Citus counts 0 for a worker it cannot reach: a load needs every worker anyway.
            crate::citus::workers_answer(&self.client).await.map_err(SinkError::Other)?;
            self.recovered = Some(crate::citus::recover_prepared(&self.client).await.sink()?);
        }
        let t = self.data_table();
        let forget = self.ledger().forget_sql();
        let mut steps = vec![format!("BEGIN; {SERIALIZE_DDL} {}", ledger::create_sql())];
        if drop {
            steps.push(format!("DROP TABLE IF EXISTS {t}"));
            steps.push(forget.clone());
        }
        steps.push(format!("DO $$ BEGIN IF to_regclass('{t}') IS NULL THEN {forget} END IF; END $$"));
        let create = self.setup.create_sql(&self.table);
        steps.extend(crate::sql::statements(&create).map_err(|e| SinkError::Other(format!("the table's DDL: {e:#}")))?);
        steps.push("COMMIT".into());
        for step in &steps {
            if let Err(e) = self.client.batch_execute(step).await.sink() {
                let _ = self.client.batch_execute("ROLLBACK").await;
                return Err(missing_access_method_hint(e));
            }
        }
        self.deletes_refused().await?;
        Ok(())
    }

    fn refuses_replacing(&self) -> Option<String> {
        self.cannot_delete.clone()
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        self.ledger().completed_hours(&self.client).await.sink()
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        self.ledger().events(&self.client).await.sink()
    }

    async fn room(&self) -> Result<Option<Room>, SinkError> {
        let room = match self.setup.server {
            Server::Postgres => room(&self.client, &self.url, &self.data_table()).await.sink()?,
            // The coordinator's table is an empty shell: its shards hold the
            // rows. Where the workers keep them and their WAL is theirs to
            // say: not checked here (`bench` checks the folders `just setup` made).
            Server::Citus => {
                let stored = crate::citus::table_and_index_bytes(&self.client, &self.data_table()).await.sink()?;
                Room { stored_bytes: stored.map_or(0, |(table, indexes)| table + indexes), ..Room::default() }
            }
        };
        Ok(Some(room))
    }

    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.set_hour(stem)?;
        self.client.batch_execute("BEGIN").await.sink()?;
        self.start_copy().await
    }

    /// In the hour's transaction, before its COPY: its ledger entry and its
    /// rows are deleted, found by the transaction that wrote both (the rows'
    /// `xmin` is the entry's, see the module's note). The count must be the
    /// entry's, or nothing changes.
    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        if let Some(why) = self.deletes_refused().await? {
            return Err(SinkError::Other(format!("cannot load hour {stem} again: {why}")));
        }
        self.set_hour(stem)?;
        self.client.batch_execute("BEGIN").await.sink()?;
        // A pass over the whole table (see `replacing_reads_whole_table`): cancelled on the server if cut.
        let what = format!("removing hour {stem} of {} to load it again", self.data_table());
        let deleted = self.client.cancellable(&what, self.delete_hour(stem)).await;
        if let Err(e) = deleted {
            let _ = self.client.batch_execute("ROLLBACK").await;
            return Err(e);
        }
        self.start_copy().await
    }

    /// The hour's rows are found by their `xmin`, which no index says; by
    /// their indexed hour where they keep it.
    fn replacing_reads_whole_table(&self) -> bool {
        self.setup.hour_column().is_none()
    }

    /// One transaction: the entries of `stems` and the rows their
    /// transactions wrote, in one pass over the table.
    async fn remove_hours(&mut self, stems: &[String]) -> Result<Option<u64>, SinkError> {
        if let Some(why) = self.deletes_refused().await? {
            return Err(SinkError::Other(format!("cannot remove {} hour(s) to load them again: {why}", stems.len())));
        }
        let what = format!("removing {} hour(s) of {} to load them again", stems.len(), self.data_table());
        let removing = async {
            self.client.batch_execute("BEGIN").await.sink()?;
            let removed = self.delete_hours(stems).await;
            match &removed {
                Ok(_) => self.client.batch_execute("COMMIT").await.sink()?,
                Err(_) => {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                }
            }
            removed.map(Some)
        };
        self.client.cancellable(&what, removing).await
    }

    /// The ledger's entries. An hour's rows commit with its entry, so only a
    /// hand on the table can part them: checked against the server's
    /// statistics, or (`StoredCheck::Whole`) counted (see [`check_counts`]).
    /// Counting one hour would read the whole table (its rows are known by
    /// the transaction that wrote them), so the hours a run touches get no
    /// check of their own.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        let what = format!("{} table {}", self.setup.spec.engine, self.data_table());
        let checking = async {
            let mut stored = self.ledger().stored_hours(&self.client).await.sink()?;
            match check {
                StoredCheck::Whole => {
                    let rows: i64 = self.client.query_one(&format!("SELECT count(*) FROM {}", self.data_table()), &[]).await.sink()?.get(0);
                    check_counts(&mut stored, &what, rows.max(0) as u64, || self.rows_per_hour()).await?;
                }
                StoredCheck::Touched(_) => {
                    let estimate = match self.setup.server {
                        Server::Postgres => row_estimate(&self.client, &self.data_table()).await.sink()?,
                        Server::Citus => crate::citus::row_estimate(&self.client, &self.data_table()).await.sink()?,
                    };
                    check_estimate(&mut stored, &what, estimate)?;
                }
            }
            Ok(stored)
        };
        self.client.cancellable(&format!("checking the stored hours of {}", self.data_table()), checking).await
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        let copy = self.copy.as_mut().ok_or_else(|| SinkError::Other("write outside an hour".into()))?;
        // The paper's table: the document alone, row after row with nothing to build.
        if self.hour_key.is_none() && self.loaded.is_empty() {
            for doc in batch.docs() {
                copy.as_mut().write(&[&JsonbText(&doc.json)]).await.sink()?;
            }
            return Ok(());
        }
        // Beside it, in `start_copy`'s order: the hour, then the loaded columns.
        for doc in batch.docs() {
            let values = crate::loaded::values(&doc.json, &self.loaded).map_err(|e| SinkError::Other(format!("line {}: {e}", doc.line)))?;
            let jsonb = JsonbText(&doc.json);
            let mut row: Vec<&(dyn ToSql + Sync)> = vec![&jsonb];
            row.extend(self.hour_key.as_ref().map(|h| h as &(dyn ToSql + Sync)));
            row.extend(values.iter().map(|v| v as &(dyn ToSql + Sync)));
            copy.as_mut().write(&row).await.sink()?;
        }
        Ok(())
    }

    async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        let copy = self.copy.take().ok_or_else(|| SinkError::Other("commit outside an hour".into()))?;
        let mut copy = copy;
        let rows = copy.as_mut().finish().await.sink()?;
        if let Err(e) = check_stored(rows, r) {
            self.abort_hour().await;
            return Err(e);
        }
        // The primary key refuses a second record of the hour (e.g. a concurrent
        // run), which rolls this one back: an hour is never stored twice.
        if let Err(e) = self.ledger().record(&self.client, r).await.sink() {
            self.abort_hour().await;
            return Err(e);
        }
        self.client.batch_execute("COMMIT").await.sink()?;
        Ok(rows)
    }

    async fn abort_hour(&mut self) {
        // Dropping an unfinished COPY makes the server fail it; then roll back.
        self.copy = None;
        let _ = self.client.batch_execute("ROLLBACK").await;
    }

    async fn lock(&self, _limit: Duration) -> Result<TableLock, SinkError> {
        crate::lock::lock(&self.url, &self.setup.spec.engine, &self.setup.lock_key(&self.table), &self.table).await
    }

    async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        let tables = [self.data_table()];
        Ok(Some(vacuum_analyze(&self.client, self.ledger(), &tables).await?))
    }
}

/// A DDL's error for an access method the server lacks, with what to do:
/// Citus's columnar comes as an extension of its own.
fn missing_access_method_hint(e: SinkError) -> SinkError {
    match e.detail() {
        d if d.contains("access method \"columnar\" does not exist") => SinkError::Other(format!(
            "{d}: this setup keeps its table columnar, which Citus provides as the extension citus_columnar; \
             create it on the coordinator as a superuser (CREATE EXTENSION citus_columnar), as `just setup` does"
        )),
        _ => e,
    }
}

/// A table's bytes (indexes and TOAST included), the folder of its
/// tablespace, the WAL's folder and what `max_wal_size` lets it grow by
/// beyond the segments already there. The folders need a
/// superuser or `pg_read_all_settings`; without, NULL (not checked).
const ROOM: &str = "SELECT pg_total_relation_size(c.oid),
        CASE WHEN pg_has_role('pg_read_all_settings', 'MEMBER') THEN coalesce(nullif(pg_tablespace_location(CASE c.reltablespace WHEN 0 THEN d.dattablespace ELSE c.reltablespace END), ''),
                           current_setting('data_directory')) END,
        CASE WHEN pg_has_role('pg_read_all_settings', 'MEMBER') THEN current_setting('data_directory') || '/pg_wal' END,
        pg_size_bytes(current_setting('max_wal_size'))
          - CASE WHEN pg_has_role('pg_monitor', 'MEMBER') THEN (SELECT coalesce(sum(size), 0) FROM pg_ls_waldir())::bigint ELSE 0 END
    FROM pg_class c CROSS JOIN pg_database d
    WHERE c.oid = to_regclass($1) AND d.datname = current_database()";

/// `table`'s bytes and its tablespace's folder, and the WAL in the data
/// folder's `pg_wal`, growing with what a load writes up to `max_wal_size`:
/// folders only a server on this machine (as `url` says) shares with ghbench.
pub async fn room(client: &Client, url: &str, table: &str) -> Result<Room, tokio_postgres::Error> {
    let row = client.query_one(ROOM, &[&table]).await?;
    let here = ghbench_core::Place::of(url) == ghbench_core::Place::ThisMachine;
    let folder = |path: Option<String>| path.filter(|_| here).map(|p| Free::Folder(PathBuf::from(p)));
    let max_wal: i64 = row.get(3);
    let wal = Besides { what: "WAL growing to max_wal_size".into(), bytes: max_wal.max(0) as u64, free: folder(row.get(2)), times_what_is_written: Some(2.0) };
    Ok(Room { stored_bytes: row.get::<_, i64>(0).max(0) as u64, free: folder(row.get(1)), besides: vec![wal], rewritten_after: None })
}

/// What the server knows of `table`'s rows without counting them: the
/// statistics' live rows (kept from every commit, reset by a crash), and
/// whether one row exists (the first block read).
pub async fn row_estimate(client: &Client, table: &str) -> Result<RowEstimate, tokio_postgres::Error> {
    let sql = format!(
        "SELECT coalesce((SELECT n_live_tup FROM pg_stat_all_tables WHERE relid = to_regclass($1)), 0), EXISTS (SELECT FROM {table})"
    );
    let row = client.query_one(&sql, &[&table]).await?;
    Ok(RowEstimate { rows: row.get::<_, i64>(0).max(0) as u64, from: "the server's statistics (n_live_tup)", any: row.get(1) })
}

impl PostgresSink {
    /// Why the table's rows cannot be deleted (a columnar table on Citus),
    /// asked of the server until known (a loading worker's sink runs no
    /// `prepare`, where the run's own sink learns it first).
    async fn deletes_refused(&mut self) -> Result<Option<String>, SinkError> {
        if self.cannot_delete.is_none() && self.setup.server == Server::Citus {
            let t = self.data_table();
            if crate::citus::is_columnar(&self.client, &t).await.sink()? {
                self.cannot_delete = Some(format!("{t} is a columnar table (Citus's columnar access method), which cannot delete rows, so no stored hour can be replaced"));
            }
        }
        Ok(self.cannot_delete.clone())
    }

    /// Notes `stem` as the hour its rows are written with, where they keep it.
    fn set_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.hour_key = self.setup.hour_column().map(|_| hour_key(stem)).transpose()?;
        Ok(())
    }

    async fn start_copy(&mut self) -> Result<(), SinkError> {
        let (mut columns, mut types) = (vec!["data"], vec![Type::JSONB]);
        if let Some(hour) = self.setup.hour_column() {
            columns.push(hour);
            types.push(Type::INT4);
        }
        for (column, _) in &self.loaded {
            columns.push(column);
            types.push(Type::TEXT);
        }
        let sink = self.client.copy_in(&format!("COPY {} ({}) FROM STDIN (FORMAT binary)", self.data_table(), columns.join(", "))).await.sink()?;
        self.copy = Some(Box::pin(BinaryCopyInWriter::new(sink, &types)));
        Ok(())
    }

    /// The table's rows by hour: by the transaction that wrote them, which
    /// wrote the hour's ledger entry too. Rows of no entry's transaction come
    /// under a key no hour has.
    async fn rows_per_hour(&self) -> Result<BTreeMap<String, u64>, SinkError> {
        if let Some(hour) = self.setup.hour_column() {
            let sql = format!("SELECT {hour}, count(*) FROM {} GROUP BY 1", self.data_table());
            let rows = self.client.query(&sql, &[]).await.sink()?;
            return Ok(rows.iter().map(|r| (stem_of_key(r.get(0)), r.get::<_, i64>(1).max(0) as u64)).collect());
        }
        let sql = format!(
            "SELECT coalesce(l.hour, 'written by transaction ' || d.xid), d.n
             FROM (SELECT xmin::text AS xid, count(*) AS n FROM {} GROUP BY 1) d
             LEFT JOIN {} l ON l.xmin::text = d.xid AND l.engine = $1 AND l.tbl = $2",
            self.data_table(),
            ledger::LEDGER
        );
        let rows = self.client.query(&sql, &[&self.setup.spec.engine.name(), &self.table.as_str()]).await.sink()?;
        Ok(rows.iter().map(|r| (r.get(0), r.get::<_, i64>(1).max(0) as u64)).collect())
    }

    /// Deletes the stored hours and their ledger entries, inside the open
    /// transaction, each checked as [`replaceable`]; the rows deleted.
    async fn delete_hours(&self, stems: &[String]) -> Result<u64, SinkError> {
        let entries = self.ledger().take_entries(&self.client, stems).await.sink()?;
        // No hour stored: nothing to find, and no pass over the table for it.
        if entries.is_empty() {
            return Ok(0);
        }
        if let Some(hour) = self.setup.hour_column() {
            return self.delete_hours_by_key(hour, &entries).await;
        }
        let xids: Vec<&str> = entries.iter().map(|(_, xid, _)| xid.as_str()).collect();
        // xid has no binary parameter type: compared as text, in the one scan the delete makes.
        let sql = format!(
            "WITH gone AS (DELETE FROM {} WHERE xmin::text = ANY($1) RETURNING xmin::text AS xid) SELECT xid, count(*) FROM gone GROUP BY xid",
            self.data_table()
        );
        let deleted: BTreeMap<String, u64> =
            self.client.query(&sql, &[&xids]).await.sink()?.iter().map(|r| (r.get(0), r.get::<_, i64>(1).max(0) as u64)).collect();
        for (stem, xid, events) in &entries {
            let rows = deleted.get(xid).copied().unwrap_or(0);
            if !replaceable(rows, *events) {
                return Err(SinkError::Other(format!(
                    "cannot reload hour {stem} of {}: its ledger lists {events} events, and {rows} rows were written with its entry \
                     (loaded by an older ghbench, or the table was restored from a dump); load the table again with --drop",
                    self.data_table()
                )));
            }
        }
        Ok(deleted.values().sum())
    }

    /// [`PostgresSink::delete_hours`] where each row keeps its hour: the
    /// entries' rows counted by it, checked, then deleted (Citus takes no
    /// `DELETE ... RETURNING` over shards inside a query).
    async fn delete_hours_by_key(&self, hour: &str, entries: &[(String, String, u64)]) -> Result<u64, SinkError> {
        let keys = entries.iter().map(|(stem, ..)| hour_key(stem)).collect::<Result<Vec<i32>, _>>()?;
        let t = self.data_table();
        let counted = format!("SELECT {hour}, count(*) FROM {t} WHERE {hour} = ANY($1) GROUP BY 1");
        let held: BTreeMap<i32, u64> = self.client.query(&counted, &[&keys]).await.sink()?.iter().map(|r| (r.get(0), r.get::<_, i64>(1).max(0) as u64)).collect();
        for ((stem, _, events), key) in entries.iter().zip(&keys) {
            let rows = held.get(key).copied().unwrap_or(0);
            if !replaceable(rows, *events) {
                return Err(SinkError::Other(format!(
                    "cannot reload hour {stem} of {t}: its ledger lists {events} events, and {rows} rows keep its hour ({hour} = {key}); load the table again with --drop"
                )));
            }
        }
        let deleted = self.client.execute(&format!("DELETE FROM {t} WHERE {hour} = ANY($1)"), &[&keys]).await.sink()?;
        Ok(deleted)
    }

    /// Deletes the stored hour and its ledger entry, inside the open
    /// transaction (see [`PostgresSink::delete_hours`]).
    async fn delete_hour(&self, stem: &str) -> Result<(), SinkError> {
        self.delete_hours(&[stem.to_string()]).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hours_key_reads_as_its_date_and_hour_and_back() {
        for (stem, key) in [("2015-01-01-15", 2015010115), ("2015-12-31-0", 2015123100), ("2011-02-12-9", 2011021209)] {
            assert_eq!(hour_key(stem).unwrap(), key, "{stem}");
            assert_eq!(stem_of_key(key), stem);
        }
        assert!(hour_key("2015-13-01-0").is_err());
    }
}

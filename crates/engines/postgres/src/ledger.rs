//! The ingest ledger in PostgreSQL: one row per engine, table and loaded hour,
//! written in the same transaction as the hour's data and read again by
//! queries and reports. The one place that knows its SQL: the sink and the
//! backend of every engine on PostgreSQL use it.
//!
//! Keyed by `(engine, tbl, hour)`, so engines sharing one server (the `jsonb`
//! layout in each of its setups, and the normalized engine's tables) never
//! take each other's hours.

use std::collections::{BTreeMap, HashSet};

use ghbench_core::{Engine, TableName};
use ghbench_engine::load::{HourRecord, StoredHour};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Error};

use anyhow::Context as _;
use ghbench_engine::ledger::{Entry, Ledger};

/// The ledger table.
pub const LEDGER: &str = "ghbench_ledger";
/// Work done on a whole table after loading it (e.g. `VACUUM (ANALYZE)`), by
/// engine, table and step: the last run of each, part of the load's cost.
pub const UPKEEP: &str = "ghbench_upkeep";
/// Rows written before the ledger had an `engine` column were this engine's
/// (the only engine on PostgreSQL then).
const FIRST_OWNER: &str = "postgres";

/// Creates the ledger, or brings an older one up to date. Run inside the
/// caller's transaction, after [`SERIALIZE_DDL`].
pub fn create_sql() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {LEDGER} (
            engine text NOT NULL, tbl text NOT NULL, hour text NOT NULL, events bigint NOT NULL, lines bigint NOT NULL,
            quarantined bigint NOT NULL, sanitized bigint NOT NULL, compressed_bytes bigint NOT NULL,
            file_defect text, ghbench_version text NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now(),
            seconds double precision, source_digest text, retries integer, finished_at double precision,
            PRIMARY KEY (engine, tbl, hour));
         CREATE TABLE IF NOT EXISTS {UPKEEP} (
            engine text NOT NULL, tbl text NOT NULL, step text NOT NULL, seconds double precision NOT NULL,
            done_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (engine, tbl, step));
         {}",
        upgrade_sql()
    )
}

/// Brings a ledger written by an older ghbench up to date, if there is one:
/// the `engine` key (its rows were [`FIRST_OWNER`]'s) and the `seconds`,
/// `source_digest`, `retries` and `finished_at` (seconds since the Unix
/// epoch) columns (NULL in older rows: not known). The default stays, so an older ghbench still writes (as the
/// [`FIRST_OWNER`]) into the upgraded ledger.
fn upgrade_sql() -> String {
    format!(
        "DO $$ BEGIN
            IF to_regclass('{LEDGER}') IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('{LEDGER}') AND attname = 'engine') THEN
                ALTER TABLE {LEDGER} ADD COLUMN engine text NOT NULL DEFAULT '{FIRST_OWNER}';
                ALTER TABLE {LEDGER} DROP CONSTRAINT {LEDGER}_pkey, ADD PRIMARY KEY (engine, tbl, hour);
            END IF;
            -- Only when missing: even a no-op ALTER takes the table's strongest lock.
            IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('{LEDGER}') AND attname = 'seconds') THEN
                ALTER TABLE {LEDGER} ADD COLUMN seconds double precision;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('{LEDGER}') AND attname = 'source_digest') THEN
                ALTER TABLE {LEDGER} ADD COLUMN source_digest text, ADD COLUMN retries integer;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('{LEDGER}') AND attname = 'finished_at') THEN
                ALTER TABLE {LEDGER} ADD COLUMN finished_at double precision;
            END IF;
         END $$;"
    )
}

/// Whether the ledger has its `engine` key yet (queries read an older ledger
/// as it is: they change nothing).
async fn keyed_by_engine(client: &Client) -> Result<bool, Error> {
    let sql = "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'engine')";
    Ok(client.query_one(sql, &[&LEDGER]).await?.get(0))
}

/// Whether the ledger has its `finished_at` column yet (queries read an
/// older ledger as it is).
async fn has_finished_at(client: &Client) -> Result<bool, Error> {
    let sql = "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'finished_at')";
    Ok(client.query_one(sql, &[&LEDGER]).await?.get(0))
}

/// Serialises ghbench's DDL: concurrent `CREATE ... IF NOT EXISTS` can still collide.
pub const SERIALIZE_DDL: &str = "SELECT pg_advisory_xact_lock(4713);";

/// One engine's entries for one table.
pub struct PgLedger<'a> {
    pub engine: &'a Engine,
    pub table: &'a TableName,
}

impl PgLedger<'_> {
    /// Deletes the table's entries (it was dropped, or is about to be).
    /// Names are validated identifiers, safe to splice.
    pub fn forget_sql(&self) -> String {
        let (engine, table) = (self.engine, self.table);
        format!(
            "DELETE FROM {LEDGER} WHERE engine = '{engine}' AND tbl = '{table}';
             DELETE FROM {UPKEEP} WHERE engine = '{engine}' AND tbl = '{table}';"
        )
    }

    /// Records the time of a step done on the whole table after loading it
    /// (its last run replaces the one before).
    pub async fn record_upkeep(&self, client: &Client, step: &str, seconds: f64) -> Result<(), Error> {
        let sql = format!(
            "INSERT INTO {UPKEEP} (engine, tbl, step, seconds) VALUES ($1, $2, $3, $4)
             ON CONFLICT (engine, tbl, step) DO UPDATE SET seconds = excluded.seconds, done_at = now()"
        );
        client.execute(&sql, &[&self.engine.name(), &self.table.as_str(), &step, &seconds]).await.map(|_| ())
    }

    /// The upkeep steps' seconds summed (None when none was recorded, or the
    /// ledger predates them).
    pub async fn upkeep_seconds(&self, client: &Client) -> Result<Option<f64>, Error> {
        let exists: bool = client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&UPKEEP]).await?.get(0);
        if !exists {
            return Ok(None);
        }
        let sql = format!("SELECT sum(seconds) FROM {UPKEEP} WHERE engine = $1 AND tbl = $2");
        client.query_one(&sql, &[&self.engine.name(), &self.table.as_str()]).await.map(|r| r.get(0))
    }

    pub async fn completed_hours(&self, client: &Client) -> Result<HashSet<String>, Error> {
        let sql = format!("SELECT hour FROM {LEDGER} WHERE engine = $1 AND tbl = $2");
        let rows = client.query(&sql, &[&self.engine.name(), &self.table.as_str()]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Every entry, with what a rerun compares: the source file's size and
    /// digest, and whether it was a damaged copy.
    pub async fn stored_hours(&self, client: &Client) -> Result<BTreeMap<String, StoredHour>, Error> {
        let sql = format!("SELECT hour, events, compressed_bytes, source_digest, file_defect, quarantined FROM {LEDGER} WHERE engine = $1 AND tbl = $2");
        let rows = client.query(&sql, &[&self.engine.name(), &self.table.as_str()]).await?;
        let stored = rows.iter().map(|r| {
            let hour = StoredHour {
                events: r.get::<_, i64>(1).max(0) as u64,
                compressed_bytes: Some(r.get::<_, i64>(2).max(0) as u64),
                source_digest: r.get(3),
                file_defect: r.get(4),
                quarantined: r.get::<_, i64>(5).max(0) as u64,
                ..StoredHour::default()
            };
            (r.get(0), hour)
        });
        Ok(stored.collect())
    }

    /// Deletes the hour's entry and returns the transaction id that wrote it
    /// (with the hour's rows: see [`crate::sink`]), inside the caller's
    /// transaction; None when the hour has no entry.
    /// Deletes the entries of `stems` that exist: (hour, its transaction's
    /// id, its events) each: the rows of an hour were written by the
    /// transaction that wrote its entry.
    pub async fn take_entries(&self, client: &Client, stems: &[String]) -> Result<Vec<(String, String, u64)>, Error> {
        let sql = format!("DELETE FROM {LEDGER} WHERE engine = $1 AND tbl = $2 AND hour = ANY($3) RETURNING hour, xmin::text, events");
        let rows = client.query(&sql, &[&self.engine.name(), &self.table.as_str(), &stems]).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2).max(0) as u64)).collect())
    }

    pub async fn take_entry(&self, client: &Client, stem: &str) -> Result<Option<(u32, u64)>, Error> {
        let sql = format!("DELETE FROM {LEDGER} WHERE engine = $1 AND tbl = $2 AND hour = $3 RETURNING xmin::text::bigint, events");
        let row = client.query_opt(&sql, &[&self.engine.name(), &self.table.as_str(), &stem]).await?;
        Ok(row.map(|r| (r.get::<_, i64>(0) as u32, r.get::<_, i64>(1).max(0) as u64)))
    }

    /// Attempts after the first summed over the table's hours (0 for entries
    /// written before ghbench kept them).
    pub async fn retries(&self, client: &Client) -> Result<u64, Error> {
        let sql = "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'retries')";
        if !client.query_one(sql, &[&LEDGER]).await?.get::<_, bool>(0) {
            return Ok(0);
        }
        let sql = format!("SELECT coalesce(sum(retries), 0)::bigint FROM {LEDGER} WHERE engine = $1 AND tbl = $2");
        let n: i64 = client.query_one(&sql, &[&self.engine.name(), &self.table.as_str()]).await?.get(0);
        Ok(n.max(0) as u64)
    }

    pub async fn events(&self, client: &Client) -> Result<u64, Error> {
        let sql = format!("SELECT coalesce(sum(events), 0)::bigint FROM {LEDGER} WHERE engine = $1 AND tbl = $2");
        let n: i64 = client.query_one(&sql, &[&self.engine.name(), &self.table.as_str()]).await?.get(0);
        Ok(n.max(0) as u64)
    }

    /// The events recorded for `stem`, if the hour is done.
    pub async fn hour_done(&self, client: &Client, stem: &str) -> Result<Option<u64>, Error> {
        let sql = format!("SELECT events FROM {LEDGER} WHERE engine = $1 AND tbl = $2 AND hour = $3");
        let row = client.query_opt(&sql, &[&self.engine.name(), &self.table.as_str(), &stem]).await?;
        Ok(row.map(|r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// Records the hour, inside the hour's transaction. The primary key refuses
    /// a second record of it (e.g. a concurrent run), which rolls the hour back.
    pub async fn record(&self, client: &Client, r: &HourRecord) -> Result<(), Error> {
        let sql = format!(
            "INSERT INTO {LEDGER} (engine, tbl, hour, events, lines, quarantined, sanitized, compressed_bytes, file_defect, ghbench_version, seconds,
                                   source_digest, retries, finished_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
        );
        let n = |v: u64| v as i64;
        let version = env!("CARGO_PKG_VERSION");
        let retries = i32::try_from(r.retries).unwrap_or(i32::MAX);
        let (seconds, finished_at) = (r.seconds(), r.finished_at());
        let params: [&(dyn ToSql + Sync); 14] = [
            &self.engine.name(), &self.table.as_str(), &r.hour, &n(r.events), &n(r.lines), &n(r.quarantined), &n(r.sanitized),
            &n(r.compressed_bytes), &r.file_defect, &version, &seconds, &r.source_digest, &retries, &finished_at,
        ];
        client.execute(&sql, &params).await.map(|_| ())
    }

    /// Lists as loaded every hour `other` lists, for a table derived from
    /// `other`'s whole table at once, in `seconds` that ended at
    /// `finished_at` (seconds since the Unix epoch): each hour's seconds are
    /// its share, by events, of `seconds`, the hours laid one after another
    /// in that span (their wall time is the derivation's). Returns the events listed.
    pub async fn copy_from(&self, client: &Client, other: &PgLedger<'_>, seconds: f64, finished_at: f64) -> Result<u64, Error> {
        let sql = format!(
            "WITH source AS (SELECT * FROM {LEDGER} WHERE engine = $3 AND tbl = $4),
                  total AS (SELECT greatest(sum(events), 1)::float8 AS events FROM source),
                  shares AS (SELECT s.*, $6::float8 * s.events / total.events AS share FROM source s, total)
             INSERT INTO {LEDGER} (engine, tbl, hour, events, lines, quarantined, sanitized, compressed_bytes, file_defect, ghbench_version, seconds,
                                   source_digest, retries, finished_at)
             SELECT $1, $2, hour, events, lines, quarantined, sanitized, compressed_bytes, file_defect, $5,
                    share, source_digest, 0, $7::float8 - $6::float8 + sum(share) OVER (ORDER BY hour)
             FROM shares
             RETURNING events"
        );
        let version = env!("CARGO_PKG_VERSION");
        let params: [&(dyn ToSql + Sync); 7] =
            [&self.engine.name(), &self.table.as_str(), &other.engine.name(), &other.table.as_str(), &version, &seconds, &finished_at];
        let rows = client.query(&sql, &params).await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0).max(0) as u64).sum())
    }

    /// What the reports show of the ledger: every hour, and the load time with
    /// the upkeep after it.
    pub async fn report(&self, client: &Client) -> anyhow::Result<Ledger> {
        let entries = self.entries(client).await.context("reading the ingest ledger")?;
        let upkeep = self.upkeep_seconds(client).await.context("reading the ingest ledger's upkeep")?;
        let retries = self.retries(client).await.context("reading the ingest ledger's retries")?;
        Ok(Ledger::from_entries(entries).with_upkeep(upkeep).with_retries(retries))
    }

    /// Every entry for the reports: hour stem, events, seconds and when it
    /// finished (None before ghbench recorded them). An older ledger's
    /// entries are the first owner's.
    pub async fn entries(&self, client: &Client) -> Result<Vec<Entry>, Error> {
        let entry = |r: &tokio_postgres::Row| Entry::new(r.get::<_, String>(0), r.get(1)).timed(r.get(2), r.get(3));
        if !keyed_by_engine(client).await? {
            if self.engine.name() != FIRST_OWNER {
                return Ok(Vec::new());
            }
            let sql = format!("SELECT hour, events, NULL::float8, NULL::float8 FROM {LEDGER} WHERE tbl = $1");
            let rows = client.query(&sql, &[&self.table.as_str()]).await?;
            return Ok(rows.iter().map(entry).collect());
        }
        // Read only once the ledger is up to date: `finished_at` may not be there yet.
        let finished_at = match has_finished_at(client).await? {
            true => "finished_at",
            false => "NULL::float8",
        };
        let sql = format!("SELECT hour, events, seconds, {finished_at} FROM {LEDGER} WHERE engine = $1 AND tbl = $2");
        let rows = client.query(&sql, &[&self.engine.name(), &self.table.as_str()]).await?;
        Ok(rows.iter().map(entry).collect())
    }
}

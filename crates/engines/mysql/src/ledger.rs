//! The ingest ledger in the MySQL family's server: one row per engine, table
//! and loaded hour, in the URL's database, written in the same transaction
//! as the hour's rows (InnoDB; `LOAD DATA` is transactional there) and read
//! again by queries and reports. Keyed by `(engine, tbl, hour)`, so the
//! setups sharing one server never take each other's hours.

use std::collections::{BTreeMap, HashSet};

use ghbench_core::{Engine, TableName};
use ghbench_engine::ledger::{Entry, Ledger};
use ghbench_engine::load::{HourRecord, StoredHour};
use mysql_async::prelude::Queryable;
use mysql_async::{params, Conn, Error};

/// The ledger table.
pub const LEDGER: &str = "ghbench_ledger";
/// Work done on a whole table after loading it (`ANALYZE TABLE`), by engine,
/// table and step: the last run of each, part of the load's cost.
pub const UPKEEP: &str = "ghbench_upkeep";

/// Creates the ledger and the upkeep table if missing (two statements: DDL
/// commits on its own in this family).
pub fn create_statements() -> [String; 2] {
    [
        format!(
            "CREATE TABLE IF NOT EXISTS {LEDGER} (
                engine VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, hour VARCHAR(16) NOT NULL,
                events BIGINT NOT NULL, line_count BIGINT NOT NULL, quarantined BIGINT NOT NULL, sanitized BIGINT NOT NULL,
                compressed_bytes BIGINT NOT NULL, file_defect TEXT, ghbench_version VARCHAR(32) NOT NULL,
                loaded_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), seconds DOUBLE, source_digest VARCHAR(128),
                retries INT, finished_at DOUBLE,
                PRIMARY KEY (engine, tbl, hour)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {UPKEEP} (
                engine VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, step VARCHAR(128) NOT NULL, seconds DOUBLE NOT NULL,
                done_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                PRIMARY KEY (engine, tbl, step)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        ),
    ]
}

/// An entry as `stored_hours` reads it: hour, events, source bytes, digest,
/// file defect, quarantined lines.
type StoredRow = (String, i64, i64, Option<String>, Option<String>, i64);
/// An entry as the reports read it: hour, events, seconds, finished at, retries.
type ReportRow = (String, i64, Option<f64>, Option<f64>, i64);

/// One engine's entries for one table.
pub struct MyLedger<'a> {
    pub engine: &'a Engine,
    pub table: &'a TableName,
}

impl MyLedger<'_> {
    fn key(&self) -> mysql_async::Params {
        params! { "engine" => self.engine.name(), "tbl" => self.table.as_str() }
    }

    /// Whether the ledger exists yet (a backend reads before any load).
    async fn exists(conn: &mut Conn, table: &str) -> Result<bool, Error> {
        let sql = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?";
        Ok(conn.exec_first::<u64, _, _>(sql, (table,)).await?.unwrap_or(0) > 0)
    }

    /// Deletes the table's entries (it was dropped, or is about to be).
    pub async fn forget(&self, conn: &mut Conn) -> Result<(), Error> {
        conn.exec_drop(format!("DELETE FROM {LEDGER} WHERE engine = :engine AND tbl = :tbl"), self.key()).await?;
        conn.exec_drop(format!("DELETE FROM {UPKEEP} WHERE engine = :engine AND tbl = :tbl"), self.key()).await
    }

    /// Records the time of a step done on the whole table after loading it
    /// (its last run replaces the one before).
    pub async fn record_upkeep(&self, conn: &mut Conn, step: &str, seconds: f64) -> Result<(), Error> {
        let sql = format!(
            "INSERT INTO {UPKEEP} (engine, tbl, step, seconds) VALUES (?, ?, ?, ?)
             ON DUPLICATE KEY UPDATE seconds = VALUES(seconds), done_at = CURRENT_TIMESTAMP(6)"
        );
        conn.exec_drop(sql, (self.engine.name(), self.table.as_str(), step, seconds)).await
    }

    pub async fn completed_hours(&self, conn: &mut Conn) -> Result<HashSet<String>, Error> {
        let sql = format!("SELECT hour FROM {LEDGER} WHERE engine = :engine AND tbl = :tbl");
        Ok(conn.exec::<String, _, _>(sql, self.key()).await?.into_iter().collect())
    }

    /// Every entry, with what a rerun compares: the source file's size and
    /// digest, and whether it was a damaged copy.
    pub async fn stored_hours(&self, conn: &mut Conn) -> Result<BTreeMap<String, StoredHour>, Error> {
        let sql = format!("SELECT hour, events, compressed_bytes, source_digest, file_defect, quarantined FROM {LEDGER} WHERE engine = :engine AND tbl = :tbl");
        let rows: Vec<StoredRow> = conn.exec(sql, self.key()).await?;
        let n = |v: i64| v.max(0) as u64;
        Ok(rows
            .into_iter()
            .map(|(hour, events, bytes, source_digest, file_defect, quarantined)| {
                let stored = StoredHour {
                    events: n(events),
                    compressed_bytes: Some(n(bytes)),
                    source_digest,
                    file_defect,
                    quarantined: n(quarantined),
                    ..StoredHour::default()
                };
                (hour, stored)
            })
            .collect())
    }

    /// Deletes the entries of `stems` that exist, inside the caller's
    /// transaction, locking them; returns (hour, events) of each.
    pub async fn take_entries(&self, conn: &mut Conn, stems: &[String]) -> Result<Vec<(String, u64)>, Error> {
        let mut taken = Vec::new();
        for stem in stems {
            let sql = format!("SELECT events FROM {LEDGER} WHERE engine = ? AND tbl = ? AND hour = ? FOR UPDATE");
            let events: Option<i64> = conn.exec_first(sql, (self.engine.name(), self.table.as_str(), stem)).await?;
            if let Some(events) = events {
                let sql = format!("DELETE FROM {LEDGER} WHERE engine = ? AND tbl = ? AND hour = ?");
                conn.exec_drop(sql, (self.engine.name(), self.table.as_str(), stem)).await?;
                taken.push((stem.clone(), events.max(0) as u64));
            }
        }
        Ok(taken)
    }

    pub async fn events(&self, conn: &mut Conn) -> Result<u64, Error> {
        let sql = format!("SELECT CAST(COALESCE(SUM(events), 0) AS SIGNED) FROM {LEDGER} WHERE engine = :engine AND tbl = :tbl");
        Ok(conn.exec_first::<i64, _, _>(sql, self.key()).await?.unwrap_or(0).max(0) as u64)
    }

    /// The events recorded for `stem`, if the hour is done.
    pub async fn hour_done(&self, conn: &mut Conn, stem: &str) -> Result<Option<u64>, Error> {
        let sql = format!("SELECT events FROM {LEDGER} WHERE engine = ? AND tbl = ? AND hour = ?");
        Ok(conn.exec_first::<i64, _, _>(sql, (self.engine.name(), self.table.as_str(), stem)).await?.map(|n| n.max(0) as u64))
    }

    /// Records the hour, inside the hour's transaction. The primary key refuses
    /// a second record of it (e.g. a concurrent run), which rolls the hour back.
    pub async fn record(&self, conn: &mut Conn, r: &HourRecord) -> Result<(), Error> {
        let sql = format!(
            "INSERT INTO {LEDGER} (engine, tbl, hour, events, line_count, quarantined, sanitized, compressed_bytes, file_defect, ghbench_version,
                                   seconds, source_digest, retries, finished_at)
             VALUES (:engine, :tbl, :hour, :events, :lines, :quarantined, :sanitized, :bytes, :defect, :version, :seconds, :digest, :retries, :finished_at)"
        );
        let params = params! {
            "engine" => self.engine.name(), "tbl" => self.table.as_str(), "hour" => &r.hour, "events" => r.events, "lines" => r.lines,
            "quarantined" => r.quarantined, "sanitized" => r.sanitized, "bytes" => r.compressed_bytes, "defect" => &r.file_defect,
            "version" => env!("CARGO_PKG_VERSION"), "seconds" => r.seconds(), "digest" => &r.source_digest, "retries" => r.retries,
            "finished_at" => r.finished_at(),
        };
        conn.exec_drop(sql, params).await
    }

    /// What the reports show of the ledger: every hour, and the load time with
    /// the upkeep after it. An empty ledger where none exists yet.
    pub async fn report(&self, conn: &mut Conn) -> anyhow::Result<Ledger> {
        use anyhow::Context as _;
        if !Self::exists(conn, LEDGER).await.context("looking for the ingest ledger")? {
            return Ok(Ledger::from_entries(Vec::new()));
        }
        let sql = format!("SELECT hour, events, seconds, finished_at, COALESCE(retries, 0) FROM {LEDGER} WHERE engine = :engine AND tbl = :tbl");
        let rows: Vec<ReportRow> = conn.exec(sql, self.key()).await.context("reading the ingest ledger")?;
        let retries = rows.iter().map(|r| r.4.max(0) as u64).sum();
        let entries = rows.into_iter().map(|(hour, events, seconds, finished_at, _)| Entry::new(hour, events).timed(seconds, finished_at));
        let upkeep = match Self::exists(conn, UPKEEP).await? {
            true => {
                let sql = format!("SELECT SUM(seconds) FROM {UPKEEP} WHERE engine = :engine AND tbl = :tbl");
                conn.exec_first::<Option<f64>, _, _>(sql, self.key()).await.context("reading the ingest ledger's upkeep")?.flatten()
            }
            false => None,
        };
        Ok(Ledger::from_entries(entries).with_upkeep(upkeep).with_retries(retries))
    }
}

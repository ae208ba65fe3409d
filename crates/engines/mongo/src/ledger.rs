//! The ingest ledger on a MongoDB-wire server: one document per engine, table
//! and hour in `ghbench_ledger`, marked `loading` while an attempt runs and
//! `done` after its data. Written by the sink, read by the backend: the one
//! place that knows its shape.
//!
//! Keyed by engine, table and hour, so engines sharing one server never take
//! each other's hours. Entries written before the key held the engine belong
//! to [`FIRST_OWNER`]; its ids keep their old form, so nothing is reloaded.

use std::collections::BTreeMap;

use futures_util::TryStreamExt;
use ghbench_core::{Engine, TableName};
use ghbench_engine::load::StoredHour;
use ghbench_engine::ledger::{Entry, Ledger};
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{Acknowledgment, CollectionOptions, ReadConcern, WriteConcern};
use mongodb::{Collection, Database};

/// The ledger collection.
pub const LEDGER: &str = "ghbench_ledger";
/// The only engine on MongoDB-wire servers before the ledger knew engines.
const FIRST_OWNER: &str = "mongo";

pub struct MongoLedger<'a> {
    pub db: &'a Database,
    pub engine: &'a Engine,
    pub table: &'a TableName,
}

impl MongoLedger<'_> {
    pub fn collection(&self) -> Collection<Document> {
        self.db.collection_with_options(LEDGER, durable())
    }

    fn first_owner(&self) -> bool {
        self.engine.name() == FIRST_OWNER
    }

    /// The hour's entry id: `<table>/<hour>` (the first owner's), else `<engine>:<table>/<hour>`.
    pub fn id(&self, stem: &str) -> String {
        if self.first_owner() {
            format!("{}/{stem}", self.table)
        } else {
            format!("{}:{}/{stem}", self.engine, self.table)
        }
    }

    /// Every entry of this engine and table, in any state.
    pub fn scope(&self) -> Document {
        let engine: Bson = if self.first_owner() {
            doc! {"$in": [self.engine.name(), Bson::Null]}.into()
        } else {
            self.engine.name().into()
        };
        doc! {"table": self.table.as_str(), "engine": engine}
    }

    /// Finished hours only: a `loading` mark is an interrupted or running attempt.
    pub fn done(&self) -> Document {
        let mut filter = self.scope();
        filter.insert("state", "done");
        filter
    }

    /// Hours begun and not finished: their stems, each with the token of the
    /// attempt that marked it `loading` (None in a mark without one).
    pub async fn unfinished(&self) -> Result<Vec<(String, Option<ObjectId>)>, mongodb::error::Error> {
        let filter = doc! {"$and": [self.scope(), {"state": {"$ne": "done"}}]};
        let marks: Vec<Document> = self.collection().find(filter).projection(doc! {"hour": 1, "attempt": 1}).await?.try_collect().await?;
        Ok(marks.iter().filter_map(|d| Some((d.get_str("hour").ok()?.to_string(), d.get_object_id("attempt").ok()))).collect())
    }

    /// What the reports show of the ledger: every finished hour, its load
    /// time and the retries it needed.
    pub async fn report(&self) -> Result<Ledger, mongodb::error::Error> {
        let fields = doc! {"hour": 1, "events": 1, "seconds": 1, "finished_at": 1, "retries": 1};
        let entries: Vec<Document> = self.collection().find(self.done()).projection(fields).await?.try_collect().await?;
        let retries = entries.iter().map(|d| number(d, "retries").unwrap_or(0)).sum();
        let ledger = Ledger::from_entries(entries.iter().map(|d| {
            Entry::new(d.get_str("hour").unwrap_or(""), number(d, "events").unwrap_or(0) as i64).timed(d.get_f64("seconds").ok(), d.get_f64("finished_at").ok())
        }));
        Ok(ledger.with_retries(retries))
    }

    /// Every finished hour with what a rerun compares: the source file's
    /// size and digest, whether it was a damaged copy.
    pub async fn stored_hours(&self) -> Result<BTreeMap<String, StoredHour>, mongodb::error::Error> {
        let fields = doc! {"hour": 1, "events": 1, "compressed_bytes": 1, "source_digest": 1, "file_defect": 1, "quarantined": 1};
        let entries: Vec<Document> = self.collection().find(self.done()).projection(fields).await?.try_collect().await?;
        let stored = entries.iter().filter_map(|d| {
            let hour = StoredHour {
                events: number(d, "events").unwrap_or(0),
                compressed_bytes: number(d, "compressed_bytes"),
                source_digest: d.get_str("source_digest").ok().map(str::to_string),
                file_defect: d.get_str("file_defect").ok().map(str::to_string),
                quarantined: number(d, "quarantined").unwrap_or(0),
                ..StoredHour::default()
            };
            Some((d.get_str("hour").ok()?.to_string(), hour))
        });
        Ok(stored.collect())
    }

    /// The fields every entry carries besides its state.
    pub fn key_fields(&self, stem: &str) -> Document {
        doc! {"engine": self.engine.name(), "table": self.table.as_str(), "hour": stem}
    }
}

/// For the ledger and the leases: writes acknowledged by a majority of a
/// replica set's members and journaled, reads of majority-committed data
/// only, so a `done` mark (or a lease) that ghbench saw cannot be rolled
/// back by a failover. On a standalone both mean the one server's journal.
pub fn durable() -> CollectionOptions {
    let write = WriteConcern::builder().w(Acknowledgment::Majority).journal(true).build();
    CollectionOptions::builder().write_concern(write).read_concern(ReadConcern::majority()).build()
}

/// A number from a server reply, whichever integer or double type it chose.
pub fn number(d: &Document, key: &str) -> Option<u64> {
    match d.get(key)? {
        Bson::Int32(n) => Some((*n).max(0) as u64),
        Bson::Int64(n) => Some((*n).max(0) as u64),
        Bson::Double(n) => Some(n.max(0.0) as u64),
        _ => None,
    }
}

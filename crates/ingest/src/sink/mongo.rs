//! MongoDB-wire server: the documents as they are, unordered bulk inserts.
//! Each document's `_id` is `<hour>/<line>` (see `clean`). Before an hour is
//! loaded its ledger record is marked `loading`; finding such a mark from an
//! earlier attempt means that attempt died, and its partial documents are
//! deleted first. The mark turns `done` after the data. Deleting only then
//! matters: a range delete can scan the whole collection on some servers.

use std::collections::HashSet;

use futures_util::TryStreamExt;
use ghbench_core::TableName;
use mongodb::bson::{doc, Document, RawDocumentBuf};
use mongodb::{Collection, Database};

use super::{HourRecord, SinkError, LEDGER};
use crate::decode::Batch;

pub struct MongoSink {
    db: Database,
    table: TableName,
    /// The hour being loaded and how many of its documents the server took.
    hour: Option<String>,
    inserted: u64,
}

impl MongoSink {
    pub fn new(db: Database, table: TableName) -> Self {
        MongoSink { db, table, hour: None, inserted: 0 }
    }

    pub fn clone_handle(&self) -> Self {
        MongoSink::new(self.db.clone(), self.table.clone())
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    fn data(&self) -> Collection<RawDocumentBuf> {
        self.db.collection(self.table.as_str())
    }

    fn ledger(&self) -> Collection<Document> {
        self.db.collection(LEDGER)
    }

    pub async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        let exists = !self.db.list_collection_names().filter(doc! {"name": self.table.as_str()}).await?.is_empty();
        if drop {
            self.data().drop().await?;
        }
        if drop || !exists {
            self.ledger().delete_many(doc! {"table": self.table.as_str()}).await?;
        }
        Ok(())
    }

    pub async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        let mut cursor = self.ledger().find(self.done_filter()).projection(doc! {"hour": 1}).await?;
        let mut hours = HashSet::new();
        while let Some(d) = cursor.try_next().await? {
            if let Ok(h) = d.get_str("hour") {
                hours.insert(h.to_string());
            }
        }
        Ok(hours)
    }

    pub async fn ledger_events(&self) -> Result<u64, SinkError> {
        let pipeline = [doc! {"$match": self.done_filter()}, doc! {"$group": {"_id": null, "n": {"$sum": "$events"}}}];
        let mut cursor = self.ledger().aggregate(pipeline).await?;
        let total = match cursor.try_next().await? {
            Some(d) => d.get_i64("n").or_else(|_| d.get_i32("n").map(i64::from)).unwrap_or(0),
            None => 0,
        };
        Ok(total as u64)
    }

    fn done_filter(&self) -> Document {
        doc! {"table": self.table.as_str(), "state": "done"}
    }

    fn ledger_id(&self, stem: &str) -> String {
        format!("{}/{stem}", self.table)
    }

    /// Marks the hour `loading`; when an earlier attempt had marked it, removes
    /// what that attempt left.
    pub async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.inserted = 0;
        self.hour = Some(stem.to_string());
        let mark = doc! {"$set": {"table": self.table.as_str(), "hour": stem, "state": "loading",
                                  "started_at": mongodb::bson::DateTime::now()}};
        let earlier = self.ledger().find_one_and_update(doc! {"_id": self.ledger_id(stem)}, mark).upsert(true).await?;
        if earlier.is_some() {
            self.delete_hour(stem).await?;
        }
        Ok(())
    }

    /// Deletes every `_id` with the prefix `<stem>/` (`0` is the character after `/`).
    async fn delete_hour(&self, stem: &str) -> Result<(), SinkError> {
        let (from, to) = (format!("{stem}/"), format!("{stem}0"));
        self.data().delete_many(doc! {"_id": {"$gte": from, "$lt": to}}).await?;
        Ok(())
    }

    pub async fn write(&mut self, batch: &Batch) -> Result<(), SinkError> {
        if batch.docs.is_empty() {
            return Ok(());
        }
        let result = self.data().insert_many(batch.docs.iter().map(|d| &d.bson)).ordered(false).await?;
        self.inserted += result.inserted_ids.len() as u64;
        Ok(())
    }

    pub async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        super::check_stored(self.inserted, r)?;
        let record = doc! {
            "state": "done",
            "events": r.events as i64,
            "lines": r.lines as i64,
            "quarantined": r.quarantined as i64,
            "sanitized": r.sanitized as i64,
            "compressed_bytes": r.compressed_bytes as i64,
            "file_defect": r.file_defect.clone(),
            "ghbench_version": env!("CARGO_PKG_VERSION"),
            "loaded_at": mongodb::bson::DateTime::now(),
        };
        // Only our own `loading` mark may turn `done`: an hour is never recorded twice.
        let filter = doc! {"_id": self.ledger_id(&r.hour), "state": "loading"};
        let updated = self.ledger().update_one(filter, doc! {"$set": record}).await?;
        if updated.modified_count != 1 {
            return Err(SinkError::Other(format!("hour {} was recorded by another run meanwhile", r.hour)));
        }
        self.hour = None;
        Ok(self.inserted)
    }

    /// Deletes the hour's partial documents. Should that fail too, the next
    /// attempt's `begin_hour` deletes them; without a ledger record the hour is
    /// never counted as loaded.
    pub async fn abort_hour(&mut self) {
        if let Some(stem) = self.hour.take() {
            let _ = self.delete_hour(&stem).await;
        }
        self.inserted = 0;
    }
}

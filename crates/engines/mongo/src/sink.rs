//! MongoDB-wire server: the documents as they are, unordered bulk inserts.
//! Each document's `_id` is `<hour>/<line>` (see `encode`). Before an hour is
//! loaded its ledger record is marked `loading`; the mark turns `done` after
//! the data. A mark found by a run that holds the table's lease is a dead
//! attempt's: its partial documents go before anything else, whichever hours
//! the run loads (`remove_unfinished`), and a query names them meanwhile (the
//! backend's ledger). Deleting only then matters: a range delete can scan the
//! whole collection on some servers.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use ghbench_core::{ServerInfo, TableName};
use ghbench_engine::load::{
    check_counts, check_estimate, check_stored, note_every, EngineBatch, EngineSink, Free, HourRecord, Room, RowEstimate, SinkError, StoredCheck, StoredHour, TableLock,
};
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Document, RawDocumentBuf};
use mongodb::{Collection, Database};

use crate::error::{to_sink_error, OrSink};
use crate::ledger::{number, MongoLedger};
use crate::setup::MongoSetup;

pub struct MongoSink {
    /// Which setup's collection this loads (its engine, name and options).
    setup: &'static MongoSetup,
    db: Database,
    /// For describing the server.
    url: String,
    table: TableName,
    /// The hour being loaded, with the token of this attempt's `loading` mark,
    /// and how many of its documents the server took.
    hour: Option<(String, ObjectId)>,
    inserted: u64,
}

impl MongoSink {
    /// The documents of each hour of `stems`: an index range on `_id` each.
    async fn count_hours(&self, stems: Vec<String>) -> Result<BTreeMap<String, u64>, SinkError> {
        let mut counted = BTreeMap::new();
        for stem in stems {
            let n = self.data().count_documents(hour_ids(&stem)).max_time(crate::NO_TIME_LIMIT).await.sink()?;
            counted.insert(stem, n);
        }
        Ok(counted)
    }

    pub fn new(setup: &'static MongoSetup, db: Database, url: String, table: TableName) -> Self {
        MongoSink { setup, db, url, table, hour: None, inserted: 0 }
    }

    /// The collection's name in this setup (`tuned.<table>`, or the table's).
    fn name(&self) -> String {
        self.setup.collection(&self.table)
    }

    fn data(&self) -> Collection<RawDocumentBuf> {
        self.db.collection(&self.name())
    }

    fn entries(&self) -> MongoLedger<'_> {
        MongoLedger { db: &self.db, engine: &self.setup.spec.engine, table: &self.table }
    }

    fn ledger(&self) -> Collection<Document> {
        self.entries().collection()
    }

    fn done_filter(&self) -> Document {
        self.entries().done()
    }

    fn ledger_id(&self, stem: &str) -> String {
        self.entries().id(stem)
    }

    /// Deletes the hour's documents (see [`hour_ids`]).
    async fn delete_hour(&self, stem: &str) -> Result<(), SinkError> {
        self.data().delete_many(hour_ids(stem)).await.sink()?;
        Ok(())
    }
}

#[async_trait]
impl EngineSink for MongoSink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        crate::connect::describe(&self.setup.spec, &self.db, &self.url).await.sink()
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        let exists = !self.db.list_collection_names().filter(doc! {"name": self.name()}).await.sink()?.is_empty();
        if drop {
            self.data().drop().await.sink()?;
        }
        if drop || !exists {
            // The ledger describes a collection that is gone: forget it.
            self.ledger().delete_many(self.entries().scope()).await.sink()?;
            // Created now, not by the first insert: an hour of 0 events must leave
            // a collection behind, or the next run would take its ledger entry
            // for a dropped collection's and forget it (PostgreSQL would not).
            // With the setup's options (e.g. its block compressor).
            self.setup.create_collection(&self.db, &self.name()).await.sink()?;
        }
        Ok(())
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        let mut cursor = self.ledger().find(self.done_filter()).projection(doc! {"hour": 1}).await.sink()?;
        let mut hours = HashSet::new();
        while let Some(d) = cursor.try_next().await.sink()? {
            if let Ok(h) = d.get_str("hour") {
                hours.insert(h.to_string());
            }
        }
        Ok(hours)
    }

    /// The collection's bytes on disk (`collStats`: data and indexes, 0 for
    /// a collection not made yet), and the free space `dbStats` reports
    /// (`fsTotalSize` − `fsUsedSize`, where the server gives them; else the
    /// run reads its data folder, if it knows it).
    async fn room(&self) -> Result<Option<Room>, SinkError> {
        let stats = self.db.run_command(doc! {"collStats": self.name()}).await;
        let sizes = stats.map(|reply| crate::stats::CollectionSizes::from_coll_stats_command(&reply)).unwrap_or_default();
        let db = self.db.run_command(doc! {"dbStats": 1}).await.sink()?;
        let free = match (number(&db, "fsTotalSize"), number(&db, "fsUsedSize")) {
            (Some(total), Some(used)) if total > 0 => {
                Some(Free::Reported { bytes: total.saturating_sub(used), by: "dbStats fsTotalSize - fsUsedSize".into() })
            }
            _ => None,
        };
        Ok(Some(Room { stored_bytes: sizes.on_disk + sizes.indexes_total, free, besides: Vec::new(), rewritten_after: None }))
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        let pipeline = [doc! {"$match": self.done_filter()}, doc! {"$group": {"_id": null, "n": {"$sum": "$events"}}}];
        let mut cursor = self.ledger().aggregate(pipeline).await.sink()?;
        let total = match cursor.try_next().await.sink()? {
            Some(d) => number(&d, "n").unwrap_or(0),
            None => 0,
        };
        Ok(total)
    }

    /// The events the ledger records for `stem`, if the hour is done.
    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        let done = self.ledger().find_one(doc! {"_id": self.ledger_id(stem), "state": "done"}).await.sink()?;
        Ok(done.map(|d| number(&d, "events").unwrap_or(0)))
    }

    /// Marks the hour `loading` with a token of this attempt; when an earlier
    /// attempt had marked it (it died, or another run is at it), removes what
    /// that attempt left. An hour already `done` is never touched.
    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.begin(stem, false).await
    }

    /// Marks the hour `loading` even when it is `done`, then deletes its
    /// documents: interrupted from here on, the hour is not done, and the
    /// next run that asks for it loads it again (deleting what is left).
    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        self.begin(stem, true).await
    }

    /// The ledger's finished hours, the collection's metadata count against
    /// them; when the two differ, the hours `check` covers are counted by
    /// their ids' prefix (an index range each), and with `StoredCheck::Whole`
    /// the collection is counted outright (see [`check_counts`]). The
    /// documents and the ledger entry of an hour are written apart, so the
    /// hours a run touches are what it must know whole.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        // What dead loads left of hours they did not finish is gone by now
        // (`remove_unfinished`, under the same lock): every document not of
        // a listed hour is one the check must name.
        let mut stored = self.entries().stored_hours().await.sink()?;
        let what = format!("{} collection {}", self.setup.spec.engine, self.name());
        if *check == StoredCheck::Whole {
            let rows = self.data().count_documents(doc! {}).max_time(crate::NO_TIME_LIMIT).await.sink()?;
            let stems: Vec<String> = stored.keys().cloned().collect();
            check_counts(&mut stored, &what, rows, || async {
                let mut counted = self.count_hours(stems).await?;
                let listed: u64 = counted.values().sum();
                counted.insert("documents of no listed hour".into(), rows.saturating_sub(listed));
                Ok(counted)
            })
            .await?;
            return Ok(stored);
        }
        let listed: u64 = stored.values().map(|h| h.events).sum();
        let fast = self.data().estimated_document_count().await.sink()?;
        if fast == listed {
            return Ok(stored);
        }
        if listed == 0 {
            let estimate = RowEstimate { rows: fast, from: "the collection's metadata count", any: fast > 0 };
            check_estimate(&mut stored, &what, estimate)?;
        }
        let touched: Vec<String> = stored.keys().filter(|stem| check.covers(stem)).cloned().collect();
        let counted = self.count_hours(touched).await?;
        let mut explained = 0;
        for (stem, hour) in stored.iter_mut() {
            let Some(&held) = counted.get(stem) else {
                explained += hour.events;
                continue;
            };
            explained += held;
            hour.check_held(&what, held);
        }
        // The metadata count is exact after a clean shutdown: what the hours
        // counted do not explain lies in hours this run does not check.
        if explained != fast {
            let note = format!(
                "{what}: its metadata count (estimatedDocumentCount) is {fast} where the hours this run counted and \
                 its ledger's other entries make {explained}; `ghbench ingest --check-stored` with the same --table counts every hour"
            );
            note_every(&mut stored, &note);
        }
        Ok(stored)
    }

    /// Every hour marked `loading` is a dead attempt's (the run holds the
    /// table's lease): its documents go, then its mark, the one seen and no
    /// other; stopped between the two, the next run finds the mark again.
    async fn remove_unfinished(&mut self) -> Result<Vec<String>, SinkError> {
        let mut said = Vec::new();
        for (stem, attempt) in self.entries().unfinished().await.sink()? {
            let removed = self.data().delete_many(hour_ids(&stem)).await.sink()?.deleted_count;
            let mut mark = doc! {"_id": self.ledger_id(&stem), "state": {"$ne": "done"}};
            if let Some(attempt) = attempt {
                mark.insert("attempt", attempt);
            }
            self.ledger().delete_one(mark).await.sink()?;
            said.push(format!("removed {removed} documents of hour {stem}, which a load began and did not finish"));
        }
        Ok(said)
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        if batch.docs().is_empty() {
            return Ok(());
        }
        // Encoded on the decode thread (`encode`); one per document.
        let docs: Option<Vec<&RawDocumentBuf>> = batch.encoded().iter().map(|e| e.downcast_ref::<RawDocumentBuf>()).collect();
        let docs = docs.filter(|d| d.len() == batch.docs().len()).ok_or_else(|| SinkError::Other("a batch without its BSON".into()))?;
        let result = self.data().insert_many(docs).ordered(false).await.sink()?;
        self.inserted += result.inserted_ids.len() as u64;
        Ok(())
    }

    async fn commit_hour(&mut self, r: &HourRecord) -> Result<u64, SinkError> {
        check_stored(self.inserted, r)?;
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
            "seconds": r.seconds(),
            "finished_at": r.finished_at(),
            "source_digest": r.source_digest.clone(),
            "retries": i64::from(r.retries),
        };
        let Some((_, attempt)) = self.hour.take() else {
            return Err(SinkError::Other("commit outside an hour".into()));
        };
        // Only this attempt's own mark may turn `done`, so an hour is never recorded
        // twice. From here on nothing deletes the hour's documents: should this
        // update fail after the server applied it, the hour is `done` and complete.
        let filter = doc! {"_id": self.ledger_id(&r.hour), "state": "loading", "attempt": attempt};
        let updated = self.ledger().update_one(filter, doc! {"$set": record}).await.sink()?;
        if updated.modified_count != 1 {
            return Err(SinkError::Other(format!("hour {} was taken over by another run meanwhile", r.hour)));
        }
        Ok(self.inserted)
    }

    /// Deletes the hour's partial documents, unless another run has taken the
    /// hour over since (its mark replaced ours). Should the delete fail, the next
    /// attempt's `begin_hour` deletes them; without a `done` record the hour is
    /// never counted as loaded.
    async fn abort_hour(&mut self) {
        self.inserted = 0;
        let Some((stem, attempt)) = self.hour.take() else { return };
        let ours = doc! {"_id": self.ledger_id(&stem), "state": "loading", "attempt": attempt};
        if let Ok(Some(_)) = self.ledger().find_one(ours).await {
            let _ = self.delete_hour(&stem).await;
        }
    }

    async fn lock(&self, limit: Duration) -> Result<TableLock, SinkError> {
        crate::lease::lock(&self.db, &self.setup.spec.engine, &self.name(), limit).await
    }

    /// See `MongoBackend::close`: the driver's pool must not outlive the runtime's tasks.
    async fn close(&mut self) {
        self.db.client().clone().shutdown().await;
    }
}

impl MongoSink {
    /// See [`EngineSink::begin_hour`]; `replace` takes over a `done` hour too.
    async fn begin(&mut self, stem: &str, replace: bool) -> Result<(), SinkError> {
        self.inserted = 0;
        let attempt = ObjectId::new();
        let id = self.ledger_id(stem);
        let not_done = if replace { doc! {"_id": &id} } else { doc! {"_id": &id, "state": {"$ne": "done"}} };
        let mut fields = self.entries().key_fields(stem);
        fields.extend(doc! {"state": "loading", "attempt": attempt, "started_at": mongodb::bson::DateTime::now()});
        let mark = doc! {"$set": fields};
        let earlier = match self.ledger().find_one_and_update(not_done, mark).upsert(true).await {
            Ok(earlier) => earlier,
            // The upsert collides with the `done` record: another run loaded the hour meanwhile.
            Err(e) if is_duplicate_key(&e) => {
                return Err(SinkError::Other(format!("hour {stem} was recorded by another run meanwhile")))
            }
            Err(e) => return Err(to_sink_error(&e)),
        };
        self.hour = Some((stem.to_string(), attempt));
        // A replaced hour's documents go too (its entry now says `loading`).
        if earlier.is_some() {
            self.delete_hour(stem).await?;
        }
        Ok(())
    }
}

/// Every `_id` with the prefix `<stem>/` (`0` is the character after `/`).
pub(crate) fn hour_ids(stem: &str) -> Document {
    let (from, to) = (format!("{stem}/"), format!("{stem}0"));
    doc! {"_id": {"$gte": from, "$lt": to}}
}

pub fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == 11000)
        || matches!(&*e.kind, mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) if w.code == 11000)
}

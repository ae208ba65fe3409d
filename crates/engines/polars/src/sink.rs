//! Loading an hour: its documents become columns of the declared schema,
//! written as Parquet row groups to a temporary file as they fill; the commit
//! finishes and fsyncs the file and names it (see [`crate::store`]).

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use ghbench_core::ServerInfo;
use ghbench_engine::load::digest::{HashingWriter, WrittenDigest};
use ghbench_engine::load::lock::{Lost, TableLock};
use ghbench_engine::load::{check_stored, EngineBatch, EngineSink, Free, HourRecord, Rewrite, Room, SinkError, StoredCheck, StoredHour, Upkeep};
use polars::prelude::*;

use crate::schema::{Columns, Layout};
use crate::store::{annotate, Check, HourEntry, TableDir};

/// Rows per Parquet row group, about (the buffer is written once it holds
/// this many, with the rest of the batch that filled it): large enough for column statistics and
/// compression to pay, small enough that an hour of a million events is not
/// held in memory whole (the `event` column is most of a row).
pub const ROW_GROUP_ROWS: usize = 65_536;

/// How the files are compressed.
pub const COMPRESSION: &str = "zstd";

/// An hour being written.
struct HourFile {
    stem: String,
    path: PathBuf,
    writer: polars::io::parquet::write::BatchedWriter<HashingWriter<File>>,
    /// The size and checksum of what `writer` wrote, for the ledger entry.
    written: WrittenDigest,
    columns: Columns,
    rows: u64,
    /// It replaces the hour's stored file (`--reload`, or a damaged file).
    replacing: bool,
    /// The layout it is written in, for its ledger entry.
    layout: &'static Layout,
}

pub struct PolarsSink {
    table: TableDir,
    hour: Option<HourFile>,
}

impl PolarsSink {
    pub fn new(table: TableDir) -> PolarsSink {
        PolarsSink { table, hour: None }
    }

    fn io(error: std::io::Error) -> SinkError {
        SinkError::from_io(&error)
    }

    fn polars(error: PolarsError, doing: &str) -> SinkError {
        match &error {
            // A full disk while writing the file stops the run, as for every engine.
            PolarsError::IO { error: io, .. } if matches!(SinkError::from_io(io), SinkError::NoSpace(_)) => SinkError::NoSpace(format!("polars, {doing}: {error}")),
            _ => SinkError::Other(format!("polars, {doing}: {error}")),
        }
    }

    fn hour_file(&mut self) -> Result<&mut HourFile, SinkError> {
        self.hour.as_mut().ok_or_else(|| SinkError::Other("no hour was begun".into()))
    }

    /// Writes the buffered rows as row groups, off the async threads (it
    /// compresses); `all` also writes a last, partial group.
    async fn flush(&mut self, all: bool) -> Result<(), SinkError> {
        let hour = self.hour_file()?;
        if hour.columns.is_empty() || (!all && hour.columns.len() < ROW_GROUP_ROWS) {
            return Ok(());
        }
        let frame = hour.columns.take_frame().map_err(|e| Self::polars(e, "building columns"))?;
        hour.rows += frame.height() as u64;
        let mut taken = self.hour.take().expect("checked above");
        let (taken, written) = tokio::task::spawn_blocking(move || {
            let written = taken.writer.write_batch(&frame);
            (taken, written)
        })
        .await
        .map_err(|e| SinkError::Other(format!("writing a row group: {e}")))?;
        self.hour = Some(taken);
        written.map_err(|e| Self::polars(e, "writing a row group"))
    }
}

#[async_trait]
impl EngineSink for PolarsSink {
    async fn describe(&self) -> Result<ServerInfo, SinkError> {
        Ok(crate::info(&self.table))
    }

    /// Refuses at once when held: a `flock` is released the moment its run
    /// ends, so there is no ending session to wait for.
    async fn lock(&self, _: Duration) -> Result<TableLock, SinkError> {
        let path = self.table.lock_path();
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(|e| Self::io(annotate(e, "opening", &path)))?;
        if let Err(e) = file.try_lock() {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(match e {
                std::fs::TryLockError::WouldBlock => SinkError::Locked(format!(
                    "another ghbench run ({}) is loading {} table {} ({}); wait for it or stop it",
                    if holder.trim().is_empty() { "holder unknown" } else { holder.trim() },
                    crate::SPEC.engine,
                    self.table.name(),
                    self.table.path().display()
                )),
                std::fs::TryLockError::Error(e) => Self::io(annotate(e, "locking", &path)),
            });
        }
        // Who holds it, for the message another run shows.
        let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| write!(file, "pid {}", std::process::id()));
        // The keeper owns the file: the lock is released when it is stopped or
        // the process ends. A `flock` is never lost while held.
        let keeper = tokio::spawn(async move {
            let _held = file;
            std::future::pending::<()>().await
        });
        Ok(TableLock::kept(keeper, Lost::default(), None))
    }

    async fn prepare(&mut self, drop: bool) -> Result<(), SinkError> {
        if drop {
            self.table.drop_all().map_err(Self::io)?;
        }
        self.table.create().map_err(Self::io)?;
        self.table.clean().map_err(Self::io)?;
        // A ledger that cannot be read stops the run before it loads anything,
        // and so do hours of another layout: one table, one layout.
        let (layout, ledger) = (declared_layout()?, self.table.ledger().map_err(Self::io)?);
        if let Some(other) = self.table.other_layout(&ledger, &layout.signature()) {
            return Err(SinkError::Other(other.to_string()));
        }
        Ok(())
    }

    async fn completed_hours(&self) -> Result<HashSet<String>, SinkError> {
        Ok(self.table.ledger().map_err(Self::io)?.into_keys().collect())
    }

    /// The table folder's files, and its file system's free space.
    async fn room(&self) -> Result<Option<Room>, SinkError> {
        let folder = self.table.path();
        let files = std::fs::read_dir(&folder).into_iter().flatten().flatten();
        let stored_bytes = files.filter_map(|f| f.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
        // The merge after a load writes its hours again into segments with
        // the loose hours already there, all kept until it ends (a partly
        // filled segment merged with them adds up to a segment's size more).
        let loose = self.table.listing().map_err(Self::io)?.loose;
        let waiting_bytes = loose.iter().filter_map(|stem| std::fs::metadata(self.table.data_path(stem)).ok()).map(|m| m.len()).sum();
        let rewritten_after = Some(Rewrite {
            what: "merging the hours into segments after loading, beside them until it ends,".to_string(),
            waiting_hours: loose.len(),
            waiting_bytes,
            from_hours: crate::compact::MIN_UNITS,
        });
        Ok(Some(Room { stored_bytes, free: Some(Free::Folder(folder)), besides: Vec::new(), rewritten_after }))
    }

    async fn ledger_events(&self) -> Result<u64, SinkError> {
        Ok(self.table.ledger().map_err(Self::io)?.values().map(HourEntry::events).sum())
    }

    async fn hour_done(&self, stem: &str) -> Result<Option<u64>, SinkError> {
        Ok(self.table.entry(stem).map_err(Self::io)?.map(|e| e.events()))
    }

    async fn begin_hour(&mut self, stem: &str) -> Result<(), SinkError> {
        self.begin(stem, false).await
    }

    /// The stored file stays until the new one is complete: the commit
    /// removes it, then names the new one (see [`TableDir::remove_data`]).
    async fn begin_replacing(&mut self, stem: &str) -> Result<(), SinkError> {
        self.begin(stem, true).await
    }

    /// Out of their segments in one rewrite of each (and their own files
    /// removed), before they load again; see [`crate::compact::remove_hours`].
    async fn remove_hours(&mut self, stems: &[String]) -> Result<Option<u64>, SinkError> {
        let (table, stems) = (self.table.clone(), stems.to_vec());
        tokio::task::spawn_blocking(move || crate::compact::remove_hours(&table, &stems))
            .await
            .map_err(|e| SinkError::Other(format!("removing hours to load them again: {e}")))?
            .map(Some)
            .map_err(Self::io)
    }

    /// Every entry, each hour's file checked against it: by size and
    /// checksum (one read of the file) for the hours `check` covers, by size
    /// (a `stat`) for the others.
    async fn stored_hours(&self, check: &StoredCheck) -> Result<BTreeMap<String, StoredHour>, SinkError> {
        let (table, check) = (self.table.clone(), check.clone());
        tokio::task::spawn_blocking(move || stored_hours(&table, &check))
            .await
            .map_err(|e| SinkError::Other(format!("checking the stored hours: {e}")))?
            .map_err(Self::io)
    }

    async fn write(&mut self, batch: &EngineBatch) -> Result<(), SinkError> {
        let hour = self.hour_file()?;
        for doc in batch.docs() {
            hour.columns.push(doc.line, &doc.json).map_err(SinkError::Other)?;
        }
        self.flush(false).await
    }

    async fn commit_hour(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        let temporary = self.hour.as_ref().map(|h| h.path.clone());
        let committed = self.commit(record).await;
        if let (Err(_), Some(path)) = (&committed, temporary) {
            // Whatever step failed, nothing of the hour stays behind.
            self.hour = None;
            let _ = std::fs::remove_file(path);
        }
        committed
    }

    async fn abort_hour(&mut self) {
        if let Some(hour) = self.hour.take() {
            drop(hour.writer);
            let _ = std::fs::remove_file(&hour.path);
        }
    }

    /// Merges the loaded hours into segments ([`crate::compact`]): a year of
    /// hour files is a few files to a query.
    async fn after_load(&mut self) -> Result<Option<Upkeep>, SinkError> {
        let table = self.table.clone();
        let started = std::time::Instant::now();
        let compacted = tokio::task::spawn_blocking(move || crate::compact::compact(&table, crate::compact::TARGET_ROWS, crate::compact::MIN_UNITS))
            .await
            .map_err(|e| SinkError::Other(format!("compacting: {e}")))?
            .map_err(Self::io)?;
        if compacted == crate::compact::Compacted::default() {
            return Ok(None);
        }
        Ok(Some(Upkeep { step: compacted.said(), seconds: started.elapsed().as_secs_f64() }))
    }

    /// Hours a killed run loaded but did not merge.
    async fn upkeep_due(&mut self) -> Result<bool, SinkError> {
        let table = self.table.clone();
        tokio::task::spawn_blocking(move || crate::compact::due(&table, crate::compact::TARGET_ROWS, crate::compact::MIN_UNITS))
            .await
            .map_err(|e| SinkError::Other(format!("looking for hours to merge: {e}")))?
            .map_err(Self::io)
    }
}

impl PolarsSink {
    /// See [`EngineSink::begin_hour`]; `replacing` replaces the stored hour at the commit.
    async fn begin(&mut self, stem: &str, replacing: bool) -> Result<(), SinkError> {
        self.abort_hour().await;
        let path = self.table.temporary_data_path(stem);
        let file = File::create(&path).map_err(|e| Self::io(annotate(e, "creating", &path)))?;
        let (file, written) = HashingWriter::new(file);
        let layout = declared_layout()?;
        let writer = ParquetWriter::new(file)
            .with_compression(ParquetCompression::Zstd(None))
            .with_statistics(StatisticsOptions::full())
            .batched(&layout.schema())
            .map_err(|e| Self::polars(e, "starting a Parquet file"))?;
        let columns = Columns::new(layout);
        self.hour = Some(HourFile { stem: stem.to_string(), path, writer, written, columns, rows: 0, replacing, layout });
        Ok(())
    }

    /// See [`EngineSink::commit_hour`]; on error the caller removes the temporary file.
    async fn commit(&mut self, record: &HourRecord) -> Result<u64, SinkError> {
        self.flush(true).await?;
        let hour = self.hour.take().ok_or_else(|| SinkError::Other("no hour was begun".into()))?;
        check_stored(hour.rows, record)?;
        if hour.stem != record.hour {
            return Err(SinkError::Other(format!("the hour begun was {}, the one committed {}", hour.stem, record.hour)));
        }
        let HourFile { path, writer, written, replacing, layout, .. } = hour;
        let temporary = path.clone();
        tokio::task::spawn_blocking(move || -> Result<(), SinkError> {
            writer.finish().map_err(|e| Self::polars(e, "finishing the Parquet file"))?;
            // fsync is per file, whichever descriptor asks.
            File::open(&temporary).and_then(|f| f.sync_all()).map_err(|e| Self::io(annotate(e, "syncing", &temporary)))
        })
        .await
        .map_err(|e| SinkError::Other(format!("finishing {}: {e}", path.display())))??;
        let (bytes, digest) = written.result();
        let entry = HourEntry {
            record: record.clone(),
            seconds: record.seconds(),
            finished_at: Some(record.finished_at()),
            parquet_bytes: Some(bytes),
            parquet_digest: Some(digest),
            layout: Some(layout.signature()),
            stored_in: None,
        };
        if replacing {
            self.table.remove_data(&record.hour).map_err(Self::io)?;
        }
        self.table.commit(&record.hour, &entry).map_err(Self::io)?;
        Ok(record.events)
    }
}

/// The layout this ghbench writes and reads.
fn declared_layout() -> Result<&'static Layout, SinkError> {
    Layout::declared().map_err(SinkError::Other)
}

/// See [`EngineSink::stored_hours`]: an entry older than files' checksums is
/// not checked, and says so. (A table of another layout never gets here:
/// `prepare` refuses it.)
fn stored_hours(table: &TableDir, check: &StoredCheck) -> std::io::Result<BTreeMap<String, StoredHour>> {
    let mut stored = BTreeMap::new();
    let ledger = table.ledger()?;
    let mut damages = table.damages(&ledger, |stem| if check.covers(stem) { Check::Checksum } else { Check::Size })?;
    for (stem, entry) in ledger {
        let damage = damages.remove(&stem).flatten();
        // A segment's hours are checked by the segment's own size and digest.
        let note = (entry.parquet_digest.is_none() && entry.stored_in.is_none()).then(|| {
            "hours loaded before ghbench recorded their files' size and checksum are not checked (reload them with --reload to be)".to_string()
        });
        let hour = StoredHour {
            events: entry.events(),
            compressed_bytes: Some(entry.record.compressed_bytes),
            source_digest: entry.record.source_digest.clone(),
            file_defect: entry.record.file_defect.clone(),
            quarantined: entry.record.quarantined,
            damage: damage.map(|d| d.to_string()),
            note,
        };
        stored.insert(stem, hour);
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_run_at_a_time_holds_a_table_and_its_lock_dies_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let table = TableDir::new(dir.path(), &"t".parse().unwrap());
        table.create().unwrap();
        let (first, second) = (PolarsSink::new(table.clone()), PolarsSink::new(table.clone()));
        let held = first.lock(Duration::from_secs(1)).await.unwrap();
        match second.lock(Duration::from_secs(1)).await {
            Err(SinkError::Locked(message)) => assert!(message.contains(&format!("pid {}", std::process::id())), "{message}"),
            other => panic!("a second run must be refused, got {:?}", other.map(|_| ())),
        }
        held.release().await;
        tokio::task::yield_now().await;
        assert!(second.lock(Duration::from_secs(1)).await.is_ok(), "released, the table can be taken again");
    }
}

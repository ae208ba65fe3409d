//! A table's folder, `<data dir>/<table>/`: one Parquet file per loaded hour,
//! and the ledger those files make.
//!
//! An hour is written under a temporary name, then its ledger entry
//! (`<hour>.ledger.json`: the hour's counts and load time) is written and
//! renamed into place, then the Parquet file is renamed to `<hour>.parquet`,
//! each fsynced. The last rename is the commit: an hour is loaded exactly when
//! its `.parquet` file exists, and an interrupted hour leaves only temporary
//! files or an entry without data, which [`TableDir::clean`] removes under
//! the table's lock before anything loads.
//!
//! The lock is a file beside the folder, `<table>.lock`, held with an
//! exclusive `flock` by the loading run: the kernel releases it when the run
//! ends, however it ends.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use ghbench_core::{Hour, TableName};
use ghbench_engine::load::HourRecord;
use serde::{Deserialize, Serialize};

use crate::segment::{hour_order, Listing};

pub(crate) const DATA: &str = ".parquet";
const ENTRY: &str = ".ledger.json";
/// Every temporary name ends so (`<hour>.parquet.tmp`, `<hour>.ledger.json.tmp`).
const TEMPORARY: &str = ".tmp";

/// What the ledger records for an hour: the counts every engine's ledger
/// keeps, and this engine's load time for it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HourEntry {
    #[serde(flatten)]
    pub record: HourRecord,
    pub seconds: f64,
    /// When the hour committed, in seconds since the Unix epoch; None in
    /// entries written before ghbench kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<f64>,
    /// The data file's size and digest as written, to tell a file that is no
    /// longer whole; None in entries written before ghbench kept them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parquet_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parquet_digest: Option<String>,
    /// The layout the file was written in ([`crate::schema::Layout::signature`]);
    /// None in entries written before ghbench flattened the queried paths,
    /// whose files keep them in struct columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// The segment the hour's rows are in, when not in a file of their own
    /// (set by [`TableDir::ledger`], never written).
    #[serde(skip)]
    pub stored_in: Option<StoredIn>,
}

/// A segment holding an hour: its data file and what its manifest recorded of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIn {
    pub segment: String,
    pub data: PathBuf,
    pub bytes: u64,
    pub digest: String,
    /// Its earliest and latest hours: what reloads all of it.
    pub span: (String, String),
}

impl HourEntry {
    pub fn events(&self) -> u64 {
        self.record.events
    }

    /// The layout its file was written in, for people.
    pub fn layout_name(&self) -> &str {
        self.layout.as_deref().unwrap_or(STRUCT_LAYOUT)
    }
}

/// What entries without a layout hold.
const STRUCT_LAYOUT: &str = "the queried fields in struct columns (ghbench before flat columns)";

/// Hours of a table written in another layout than the one this ghbench
/// reads: never read as if they were of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherLayout {
    pub table: TableName,
    /// The data folder the table is in (`--polars-dir`).
    pub root: PathBuf,
    /// The hours in another layout, in order, and that layout.
    pub hours: Vec<(String, String)>,
    /// How many hours the table has.
    pub of: usize,
    /// The layout this ghbench reads.
    pub reads: String,
}

impl std::fmt::Display for OtherLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (first, last) = (&self.hours[0].0, &self.hours[self.hours.len() - 1].0);
        let which = if first == last { format!("hour {first}") } else { format!("first {first}, last {last}") };
        let mut layouts: Vec<&str> = self.hours.iter().map(|(_, layout)| layout.as_str()).collect();
        layouts.sort_unstable();
        layouts.dedup();
        write!(
            f,
            "the polars table {} ({}) holds {} of its {} hours ({which}) in another layout than this ghbench reads: {}; \
             it reads {}. They are not read as if they were. Load the table again: \
             `ghbench ingest --engines polars --polars-dir {} --table {} --drop` with the --source and hours you loaded it from",
            self.table,
            self.root.join(self.table.as_str()).display(),
            self.hours.len(),
            self.of,
            layouts.join("; "),
            self.reads,
            self.root.display(),
            self.table
        )
    }
}

/// How closely a stored hour's file is compared with its ledger entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Its size (a `stat`): what every query does.
    Size,
    /// Its size, then its checksum (reads the file): what an ingest rerun does.
    Checksum,
}

/// What a check found wrong with an hour's file, naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub stem: String,
    pub path: PathBuf,
    pub what: String,
    /// The hours to load again to repair it: the segment's earliest and
    /// latest (None: the hour alone, in a file of its own).
    pub reload: Option<(String, String)>,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the file {} of hour {} {}", self.path.display(), self.stem, self.what)
    }
}

/// One table of the engine.
#[derive(Debug, Clone)]
pub struct TableDir {
    root: PathBuf,
    table: TableName,
}

impl TableDir {
    pub fn new(root: &Path, table: &TableName) -> TableDir {
        TableDir { root: root.to_path_buf(), table: table.clone() }
    }

    pub fn name(&self) -> &TableName {
        &self.table
    }

    /// The engine's data folder the table is in (`--polars-dir`).
    pub fn dir(&self) -> &std::path::Path {
        &self.root
    }

    /// The folder of the table's files.
    pub fn path(&self) -> PathBuf {
        self.root.join(self.table.as_str())
    }

    pub fn lock_path(&self) -> PathBuf {
        self.root.join(format!("{}.lock", self.table))
    }

    /// Held shared by every query run on the table, exclusive by whatever
    /// removes or replaces its files (a compaction, a reload of an hour in
    /// a segment): a query never finds a file gone that it listed.
    fn readers_lock_path(&self) -> PathBuf {
        self.root.join(format!("{}.readers.lock", self.table))
    }

    fn open_readers_lock(&self) -> io::Result<File> {
        let path = self.readers_lock_path();
        fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(|e| annotate(e, "opening", &path))
    }

    /// The readers' lock, shared: held while the file is open. Waits while a
    /// compaction or a reload replaces files (seconds).
    pub fn read_shared(&self) -> io::Result<File> {
        let file = self.open_readers_lock()?;
        match file.try_lock_shared() {
            Ok(()) => Ok(file),
            Err(fs::TryLockError::WouldBlock) => {
                eprintln!("polars table {}: waiting while a load replaces its files (hours taken out of segments to load again)", self.table);
                file.lock_shared().map_err(|e| annotate(e, "locking", &self.readers_lock_path()))?;
                Ok(file)
            }
            Err(fs::TryLockError::Error(e)) => Err(annotate(e, "locking", &self.readers_lock_path())),
        }
    }

    /// The readers' lock, exclusive, if no query run holds it.
    pub fn try_exclusive(&self) -> io::Result<Option<File>> {
        let file = self.open_readers_lock()?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(annotate(e, "locking", &self.readers_lock_path())),
        }
    }

    pub fn data_path(&self, stem: &str) -> PathBuf {
        self.path().join(format!("{stem}{DATA}"))
    }

    pub(crate) fn entry_path(&self, stem: &str) -> PathBuf {
        self.path().join(format!("{stem}{ENTRY}"))
    }

    /// The data folder and the table's folder, made if missing.
    pub fn create(&self) -> io::Result<()> {
        fs::create_dir_all(self.path()).map_err(|e| annotate(e, "creating", &self.path()))
    }

    /// Deletes the table's files (not its lock). The folder is first renamed
    /// aside in one step, so a drop interrupted half-way never leaves an hour's
    /// data without its ledger entry; what it leaves aside goes next time.
    pub fn drop_all(&self) -> io::Result<()> {
        let aside = self.root.join(format!("{}.dropping", self.table));
        remove_all(&aside)?;
        match fs::rename(self.path(), &aside) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(annotate(e, "moving aside", &self.path())),
            _ => remove_all(&aside)?,
        }
        self.create()
    }

    /// Removes what interrupted hours left: temporary files, and entries
    /// whose data file never got its name. Only with the table's lock held.
    /// Also removes the manifests of segments never committed, and, when no
    /// query run reads the table, what compactions replaced.
    pub fn clean(&self) -> io::Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        for (name, path) in self.files()? {
            let orphan_entry = name.strip_suffix(ENTRY).is_some_and(|stem| !self.data_path(stem).exists());
            if name.ends_with(TEMPORARY) || orphan_entry {
                fs::remove_file(&path).map_err(|e| annotate(e, "removing", &path))?;
                removed.push(path);
            }
        }
        let listing = self.listing()?;
        for path in &listing.unfinished {
            remove_file(path)?;
            removed.push(path.clone());
        }
        if let Some(_readers) = self.try_exclusive()? {
            removed.extend(crate::compact::remove_superseded(self, &listing)?);
        }
        if !removed.is_empty() {
            self.sync_folder()?;
        }
        Ok(removed)
    }

    /// What the folder holds: live segments, loose hours, and what is not read.
    pub fn listing(&self) -> io::Result<Listing> {
        let hour_stem = |name: &str| name.strip_suffix(DATA).filter(|stem| stem.parse::<Hour>().is_ok()).map(str::to_string);
        Listing::of(&self.files()?, hour_stem, |stem| format!("{stem}{ENTRY}"))
    }

    /// The files a query reads: every live segment and loose hour, in hour order.
    pub fn live_files(&self) -> io::Result<Vec<PathBuf>> {
        Ok(self.live_files_of(&self.listing()?))
    }

    /// The ledger and the files a query reads, from one listing of the
    /// folder: a query run's record names exactly the hours it read, even
    /// while a load commits more (or takes some out to load again).
    pub fn snapshot(&self) -> io::Result<(BTreeMap<String, HourEntry>, Vec<PathBuf>)> {
        let listing = self.listing()?;
        let files = self.live_files_of(&listing);
        Ok((self.ledger_of(listing)?, files))
    }

    fn live_files_of(&self, listing: &Listing) -> Vec<PathBuf> {
        let mut files: Vec<((bool, Option<Hour>, String), PathBuf)> = listing.loose.iter().map(|stem| (hour_order(stem), self.data_path(stem))).collect();
        files.extend(listing.segments.iter().filter_map(|s| Some((hour_order(&s.manifest.hours.first()?.stem), s.data.clone()))));
        files.sort();
        files.into_iter().map(|(_, path)| path).collect()
    }

    /// The file names and paths in the table's folder (none if it does not exist).
    fn files(&self) -> io::Result<Vec<(String, PathBuf)>> {
        let dir = self.path();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(annotate(e, "reading", &dir)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| annotate(e, "reading", &dir))?;
            if let Ok(name) = entry.file_name().into_string() {
                files.push((name, entry.path()));
            }
        }
        files.sort();
        Ok(files)
    }

    /// The loaded hours' data files, by hour stem, in hour order: files named
    /// `<hour>.parquet`, nothing else.
    pub fn hour_files(&self) -> io::Result<BTreeMap<String, PathBuf>> {
        Ok(self
            .files()?
            .into_iter()
            .filter_map(|(name, path)| Some((name.strip_suffix(DATA)?.to_string(), path)))
            .filter(|(stem, _)| stem.parse::<Hour>().is_ok())
            .collect())
    }

    /// The ledger: every loaded hour's entry. A data file whose entry cannot
    /// be read is an error naming it and what to do, never a silent gap (nor
    /// an hour counted as loaded).
    /// Hours in segments carry where (`stored_in`).
    pub fn ledger(&self) -> io::Result<BTreeMap<String, HourEntry>> {
        self.ledger_of(self.listing()?)
    }

    fn ledger_of(&self, listing: Listing) -> io::Result<BTreeMap<String, HourEntry>> {
        let mut ledger = BTreeMap::new();
        for stem in listing.loose {
            if let Some(entry) = self.own_entry(&stem)? {
                ledger.insert(stem, entry);
            }
        }
        for segment in listing.segments {
            let m = &segment.manifest;
            for hour in &m.hours {
                let span = m.span().unwrap_or_default();
                let stored_in = StoredIn { segment: m.name.clone(), data: segment.data.clone(), bytes: m.bytes, digest: m.digest.clone(), span };
                ledger.insert(hour.stem.clone(), HourEntry { stored_in: Some(stored_in), ..hour.entry.clone() });
            }
        }
        Ok(ledger)
    }

    /// The hour's entry, if the hour is loaded.
    pub fn entry(&self, stem: &str) -> io::Result<Option<HourEntry>> {
        Ok(self.ledger()?.remove(stem))
    }

    /// The entry of an hour stored in a file of its own, if it is.
    fn own_entry(&self, stem: &str) -> io::Result<Option<HourEntry>> {
        if !self.data_path(stem).exists() {
            return Ok(None);
        }
        let path = self.entry_path(stem);
        let text = fs::read_to_string(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => io::Error::new(
                e.kind(),
                format!(
                    "{} has no ledger entry {}: ghbench did not write it so; delete the file (or load the table again with --drop)",
                    self.data_path(stem).display(),
                    path.display()
                ),
            ),
            _ => annotate(e, "reading", &path),
        })?;
        serde_json::from_str(&text).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
    }

    /// Whether the hour's data file is still the one its entry recorded:
    /// None when it is (or the entry predates sizes and checksums, see
    /// [`HourEntry::parquet_bytes`]).
    pub fn check(&self, stem: &str, entry: &HourEntry, check: Check) -> io::Result<Option<Damage>> {
        let (path, what, reload) = match &entry.stored_in {
            Some(stored_in) => {
                let found = file_damage(&stored_in.data, stored_in.bytes, Some(&stored_in.digest), check, "its manifest")?;
                (stored_in.data.clone(), found.map(|what| format!("(segment {}) {what}", stored_in.segment)), Some(stored_in.span.clone()))
            }
            None => {
                let path = self.data_path(stem);
                let Some(expected) = entry.parquet_bytes else { return Ok(None) };
                let found = file_damage(&path, expected, entry.parquet_digest.as_deref(), check, "its ledger entry")?;
                (path, found, None)
            }
        };
        Ok(what.map(|what| Damage { stem: stem.to_string(), path, what, reload }))
    }

    /// Each hour of `ledger` checked (`depth` says how closely), a segment
    /// read once however many of its hours are checked by checksum.
    pub fn damages(&self, ledger: &BTreeMap<String, HourEntry>, depth: impl Fn(&str) -> Check) -> io::Result<BTreeMap<String, Option<Damage>>> {
        // A segment is checked as closely as the most closely checked of its
        // hours, and its damage is every one of its hours': all of them are
        // then loaded again, none left out of a segment rewritten without them.
        let mut deepest: BTreeMap<&str, Check> = BTreeMap::new();
        for (stem, entry) in ledger {
            if let Some(stored_in) = &entry.stored_in {
                let check = deepest.entry(stored_in.segment.as_str()).or_insert(Check::Size);
                if depth(stem) == Check::Checksum {
                    *check = Check::Checksum;
                }
            }
        }
        let mut segments: BTreeMap<&str, Option<Damage>> = BTreeMap::new();
        let mut found = BTreeMap::new();
        for (stem, entry) in ledger {
            let damage = match &entry.stored_in {
                Some(stored_in) => {
                    let segment = stored_in.segment.as_str();
                    if !segments.contains_key(segment) {
                        segments.insert(segment, self.check(stem, entry, deepest[segment])?);
                    }
                    segments[segment].clone().map(|d| Damage { stem: stem.clone(), ..d })
                }
                None => self.check(stem, entry, depth(stem))?,
            };
            found.insert(stem.clone(), damage);
        }
        Ok(found)
    }

    /// Hours of `ledger` (this table's, as [`TableDir::ledger`] read it) whose
    /// entries record another layout than `signature` (or none).
    pub fn other_layout(&self, ledger: &BTreeMap<String, HourEntry>, signature: &str) -> Option<OtherLayout> {
        let hours: Vec<(String, String)> = ledger
            .iter()
            .filter(|(_, entry)| entry.layout.as_deref() != Some(signature))
            .map(|(stem, entry)| (stem.clone(), entry.layout_name().to_string()))
            .collect();
        let (table, root, of, reads) = (self.table.clone(), self.root.clone(), ledger.len(), signature.to_string());
        (!hours.is_empty()).then_some(OtherLayout { table, root, hours, of, reads })
    }

    /// Removes a committed hour's data file, so that its replacement is
    /// committed in its place (its entry, left alone, is then an orphan that
    /// [`TableDir::clean`] removes should the replacement not be committed).
    /// An hour in a segment is taken out of it: the segment rewritten
    /// without its rows (see [`crate::compact::remove_hours`]).
    pub fn remove_data(&self, stem: &str) -> io::Result<()> {
        if self.listing()?.segment_of(stem).is_some() {
            return crate::compact::remove_hours(self, &[stem.to_string()]).map(|_| ());
        }
        let path = self.data_path(stem);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(annotate(e, "removing", &path)),
            _ => self.sync_folder(),
        }
    }

    /// Where an hour's data is written before it is committed.
    pub fn temporary_data_path(&self, stem: &str) -> PathBuf {
        self.path().join(format!("{stem}{DATA}{TEMPORARY}"))
    }

    /// Commits an hour whose data is complete (fsynced) at its temporary path:
    /// its entry first, then the data file's own name. See the module's note.
    pub fn commit(&self, stem: &str, entry: &HourEntry) -> io::Result<()> {
        let entry_path = self.entry_path(stem);
        let temporary_entry = self.path().join(format!("{stem}{ENTRY}{TEMPORARY}"));
        let mut file = File::create(&temporary_entry).map_err(|e| annotate(e, "creating", &temporary_entry))?;
        file.write_all(&serde_json::to_vec_pretty(entry).map_err(io::Error::other)?)?;
        file.sync_all().map_err(|e| annotate(e, "syncing", &temporary_entry))?;
        // Each rename is durable once the folder is synced; the entry's must be
        // before the data's, whatever order the file system keeps renames in.
        rename(&temporary_entry, &entry_path)?;
        self.sync_folder()?;
        rename(&self.temporary_data_path(stem), &self.data_path(stem))?;
        self.sync_folder()
    }

    pub(crate) fn sync_folder(&self) -> io::Result<()> {
        File::open(self.path()).and_then(|dir| dir.sync_all()).map_err(|e| annotate(e, "syncing", &self.path()))
    }

    /// Total bytes of the files a query reads.
    pub fn data_bytes(&self) -> io::Result<u64> {
        let mut bytes = 0;
        for path in &self.live_files()? {
            bytes += fs::metadata(path).map_err(|e| annotate(e, "reading", path))?.len();
        }
        Ok(bytes)
    }
}

/// What is wrong with the file at `path` against the size and digest
/// `recorded_by` recorded (its size always; its digest, when there is one,
/// with `Check::Checksum`): None when nothing is.
pub(crate) fn file_damage(path: &Path, bytes: u64, digest: Option<&str>, check: Check, recorded_by: &str) -> io::Result<Option<String>> {
    let size = fs::metadata(path).map_err(|e| annotate(e, "reading", path))?.len();
    if size != bytes {
        return Ok(Some(format!("is {size} bytes where {recorded_by} recorded {bytes}")));
    }
    let Some(recorded) = digest.filter(|_| check == Check::Checksum) else { return Ok(None) };
    let (_, found) = ghbench_engine::load::digest::of_file(path).map_err(|e| annotate(e, "reading", path))?;
    Ok((found != recorded).then(|| {
        format!(
            "has another checksum ({}) than {recorded_by} recorded ({})",
            ghbench_engine::load::digest::short(&found),
            ghbench_engine::load::digest::short(recorded)
        )
    }))
}

/// Removes a folder and everything in it, if it exists.
fn remove_all(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(annotate(e, "removing", path)),
        _ => Ok(()),
    }
}

/// Removes a file, if it exists.
pub(crate) fn remove_file(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(annotate(e, "removing", path)),
        _ => Ok(()),
    }
}

pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to).map_err(|e| io::Error::new(e.kind(), format!("renaming {} to {}: {e}", from.display(), to.display())))
}

/// The error with what was being done to which path.
pub fn annotate(error: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{doing} {}: {error}", path.display()))
}

/// An entry of hour `stem` holding `events` events, as a test writes one.
#[cfg(test)]
pub(crate) fn test_entry(stem: &str, events: u64) -> HourEntry {
    let record = HourRecord {
        hour: stem.into(),
        events,
        lines: events,
        quarantined: 0,
        sanitized: 0,
        compressed_bytes: 1,
        file_defect: None,
        source_digest: None,
        retries: 0,
        clock: Default::default(),
    };
    HourEntry { record, seconds: 0.5, finished_at: None, parquet_bytes: None, parquet_digest: None, layout: Some("flat-1: x text".into()), stored_in: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(events: u64) -> HourEntry {
        test_entry("2015-01-01-0", events)
    }


    #[test]
    fn an_hour_exists_only_once_committed_and_leftovers_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let table = TableDir::new(dir.path(), &"t".parse::<TableName>().unwrap());
        table.create().unwrap();
        fs::write(table.temporary_data_path("2015-01-01-0"), b"data").unwrap();
        assert!(table.ledger().unwrap().is_empty(), "a temporary file is no hour");

        table.commit("2015-01-01-0", &entry(3)).unwrap();
        let ledger = table.ledger().unwrap();
        assert_eq!(ledger.keys().collect::<Vec<_>>(), ["2015-01-01-0"]);
        assert_eq!((ledger["2015-01-01-0"].events(), ledger["2015-01-01-0"].seconds), (3, 0.5), "the entry comes back as written");
        assert_eq!(table.data_bytes().unwrap(), 4);

        // An hour interrupted after its entry was written but before its data was named.
        fs::write(table.temporary_data_path("2015-01-01-1"), b"half").unwrap();
        fs::write(table.entry_path("2015-01-01-1"), b"{}").unwrap();
        let removed = table.clean().unwrap();
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert_eq!(table.hour_files().unwrap().len(), 1);
        assert!(table.entry("2015-01-01-1").unwrap().is_none());

        fs::remove_file(table.entry_path("2015-01-01-0")).unwrap();
        let err = table.ledger().unwrap_err().to_string();
        assert!(err.contains("no ledger entry"), "{err}");

        fs::write(table.path().join("notes.parquet"), b"x").unwrap();
        assert_eq!(table.hour_files().unwrap().len(), 1, "only files named after an hour are hours");

        table.drop_all().unwrap();
        assert!(!dir.path().join("t.dropping").exists(), "nothing left aside");
        assert!(table.hour_files().unwrap().is_empty() && table.path().is_dir());
    }

    #[test]
    fn hours_of_another_layout_are_named_with_how_to_reload() {
        let dir = tempfile::tempdir().unwrap();
        let table = TableDir::new(dir.path(), &"t".parse::<TableName>().unwrap());
        table.create().unwrap();
        for (hour, layout) in [("2015-01-01-0", None), ("2015-01-01-1", Some("flat-1: x text")), ("2015-01-01-2", None)] {
            fs::write(table.temporary_data_path(hour), b"data").unwrap();
            let mut entry = entry(3);
            entry.record.hour = hour.into();
            entry.layout = layout.map(String::from);
            table.commit(hour, &entry).unwrap();
        }
        let ledger = table.ledger().unwrap();
        assert_eq!(table.other_layout(&ledger, "flat-1: x text, y number").map(|o| o.hours.len()), Some(3), "another signature: every hour");
        let other = table.other_layout(&ledger, "flat-1: x text").expect("two hours without a layout");
        assert_eq!((other.hours.len(), other.of), (2, 3));
        let said = other.to_string();
        assert!(said.contains("2 of its 3 hours (first 2015-01-01-0, last 2015-01-01-2)"), "{said}");
        assert!(said.contains("struct columns") && said.contains("it reads flat-1: x text."), "{said}");
        assert!(said.contains(&format!("--polars-dir {} --table t --drop", dir.path().display())), "{said}");
        table.drop_all().unwrap();
        assert_eq!(table.other_layout(&table.ledger().unwrap(), "flat-1: x text"), None, "an empty table has no other layout");
    }
}

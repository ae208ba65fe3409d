//! Writing segments ([`crate::segment`]): merging a table's loose hours and
//! small segments after a load ([`compact`]), and taking hours out of their
//! segments before they are loaded again ([`remove_hours`]).
//!
//! Both write the new segment whole under a temporary name (rows copied a
//! row group at a time, so a segment of millions of rows never sits in
//! memory), fsync it, commit it by its manifest and then its data file's
//! name, and only then remove what it replaces. A run killed at any point
//! leaves either the old files (the new one's temporary file or unfinished
//! manifest is removed by the next load) or the new segment with files it
//! replaced beside it, never read again and removed then: every hour
//! stays stored exactly once. Files are removed only with the readers' lock
//! held exclusively, so no query run ever finds a file gone that it listed;
//! a compaction commits without it (a query run that listed the old files
//! reads them to its end), taking hours out needs it throughout.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use ghbench_engine::load::digest::HashingWriter;
use polars::prelude::*;

use crate::segment::{plan, Listing, Manifest, SegmentHour, Unit};
use crate::store::{annotate, remove_file, rename, Check, TableDir};

/// Rows a segment is merged up to: about a day of the paper's year (24,000
/// events an hour), few enough files for a year that opening them costs a
/// query milliseconds (0.17-0.28 ms a file), and a rewrite of one bounded.
pub const TARGET_ROWS: u64 = 1_000_000;
/// Files merged at the least: a day's hours; fewer wait for the next load.
pub const MIN_UNITS: usize = 24;

/// What a compaction did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Segments written, the files (hours and segments) they replaced, the
    /// hours they hold.
    pub segments: usize,
    pub files_merged: usize,
    pub hours: usize,
    /// Bytes written, and the most the folder held above its size before
    /// and after (a new segment beside the files it replaces).
    pub bytes_written: u64,
    pub peak_extra_bytes: u64,
    /// Why nothing was merged although there was something to merge.
    pub held_off: Option<String>,
}

impl Compacted {
    /// `merged 8,760 files into 1 segment of 8,760 hours, 12.3 MiB written (at most 12.3 MiB more on disk meanwhile)`.
    pub fn said(&self) -> String {
        if self.segments == 0 {
            return "nothing to merge".into();
        }
        let merged = format!(
            "merged {} files into {} segment{} of {} hours, {} written (at most {} more on disk meanwhile)",
            self.files_merged,
            self.segments,
            if self.segments == 1 { "" } else { "s" },
            self.hours,
            ghbench_core::size::said(self.bytes_written),
            ghbench_core::size::said(self.peak_extra_bytes)
        );
        match &self.held_off {
            Some(why) => format!("{merged}; {why}"),
            None => merged,
        }
    }
}

/// Merges the table's loose hours and small segments ([`plan`]'s groups).
/// Each new segment is committed whether or not a query run reads the
/// table (a run that listed the old files goes on reading them: nothing is
/// removed under it); what it replaces is removed once no query run holds
/// the readers' lock, else by the next load. A unit whose file is not the one
/// its ledger or manifest recorded is left out of the merge, so that no
/// damage is copied into a segment under a fresh digest. Only with the
/// table's load lock held.
pub fn compact(table: &TableDir, target_rows: u64, min_units: usize) -> io::Result<Compacted> {
    let listing = table.listing()?;
    let ledger = table.ledger()?;
    let whole = |stem: &str| ledger.get(stem).is_some_and(|entry| matches!(table.check(stem, entry, Check::Checksum), Ok(None)));
    let mut units: Vec<Unit> = Vec::new();
    for stem in &listing.loose {
        units.push(Unit::Hour { stem: stem.clone(), rows: rows_in(&table.data_path(stem))? });
    }
    units.extend(segment_units(&listing));
    let mut done = Compacted::default();
    for group in plan(units, target_rows, min_units) {
        // Checked by checksum just before they are read: one more read of files the merge reads anyway.
        let group: Vec<Unit> = group
            .into_iter()
            .filter(|unit| match unit {
                Unit::Hour { stem, .. } => whole(stem),
                Unit::Segment { name, .. } => listing.segments.iter().find(|s| &s.manifest.name == name).is_some_and(|s| segment_is_whole(&s.manifest, &s.data)),
            })
            .collect();
        if group.len() < 2 {
            continue;
        }
        let mut hours = Vec::new();
        let mut sources: Vec<Source> = Vec::new();
        let mut replaces = Vec::new();
        let mut generation = 1;
        for unit in &group {
            match unit {
                Unit::Hour { stem, rows } => {
                    let entry = ledger.get(stem).cloned().ok_or_else(|| io::Error::other(format!("hour {stem} has no ledger entry")))?;
                    hours.push(SegmentHour { stem: stem.clone(), rows: *rows, entry });
                    sources.push(Source { path: table.data_path(stem), rows: vec![(0, *rows)] });
                }
                Unit::Segment { name, rows, .. } => {
                    let live = listing.segments.iter().find(|s| &s.manifest.name == name).expect("a unit of the listing");
                    hours.extend(live.manifest.hours.iter().cloned());
                    sources.push(Source { path: live.data.clone(), rows: vec![(0, *rows)] });
                    replaces.push(name.clone());
                    generation = generation.max(live.manifest.generation + 1);
                }
            }
        }
        let written = write_segment(table, hours, &sources, generation, declared_signature(), replaces)?;
        done.segments += 1;
        done.files_merged += group.len();
        done.hours += written.hours.len();
        done.bytes_written += written.bytes;
        // What it replaces stays until the end: each segment adds to the peak.
        done.peak_extra_bytes += written.bytes;
    }
    if done.segments > 0 {
        match table.try_exclusive()? {
            Some(_readers) => drop(remove_superseded(table, &table.listing()?)?),
            None => done.held_off = Some("the files they replace stay until the next load, as a query run was reading them".into()),
        }
    }
    Ok(done)
}

/// Whether [`compact`] would merge something: read from the listing and
/// the ledger (an hour's rows as recorded), no data file opened. (What a
/// merge replaced goes when a load starts: [`TableDir::clean`].)
pub fn due(table: &TableDir, target_rows: u64, min_units: usize) -> io::Result<bool> {
    let listing = table.listing()?;
    let ledger = table.ledger()?;
    let mut units: Vec<Unit> = listing.loose.iter().map(|stem| Unit::Hour { stem: stem.clone(), rows: ledger.get(stem).map_or(0, |e| e.record.events) }).collect();
    units.extend(segment_units(&listing));
    Ok(!plan(units, target_rows, min_units).is_empty())
}

/// The live segments as units to merge (their rows from their manifests).
fn segment_units(listing: &Listing) -> impl Iterator<Item = Unit> + '_ {
    listing.segments.iter().map(|s| Unit::Segment { name: s.manifest.name.clone(), first: s.manifest.hours[0].stem.clone(), rows: s.manifest.rows() })
}

/// Rows in a Parquet file, from its footer (not its ledger entry: a file
/// holding more rows than recorded must not be cut short unseen).
fn rows_in(path: &Path) -> io::Result<u64> {
    let file = File::open(path).map_err(|e| annotate(e, "opening", path))?;
    ParquetReader::new(file).num_rows().map(|n| n as u64).map_err(|e| io::Error::other(format!("reading {}: {e}", path.display())))
}

/// Whether a segment's data file is the one its manifest recorded (size, then digest).
fn segment_is_whole(manifest: &Manifest, data: &Path) -> bool {
    matches!(crate::store::file_damage(data, manifest.bytes, Some(&manifest.digest), Check::Checksum, "its manifest"), Ok(None))
}

/// Takes the hours `stems` out of the table, before they are loaded again
/// (`--reload`, a repair): each segment holding some of them rewritten once
/// without their rows as its next generation (removed when none of its
/// hours is left), their own files removed. A damaged segment cannot be
/// rewritten: it is removed when every one of its hours is among `stems`,
/// else nothing is removed and the error names the hours to reload. Refused
/// while a query run reads the table. Stale files are removed first, so
/// that none is read as an hour a segment no longer holds. The rows removed.
pub fn remove_hours(table: &TableDir, stems: &[String]) -> io::Result<u64> {
    // This load's own hours, replaced side by side, take turns here: each
    // would otherwise find the others' exclusive lock and blame a query run.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(_readers) = table.try_exclusive()? else {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("a query run is reading polars table {}: its hours are loaded again once that run ends", table.name()),
        ));
    };
    remove_superseded(table, &table.listing()?)?;
    let listing = table.listing()?;
    let ledger = table.ledger()?;
    let asked: std::collections::BTreeSet<&str> = stems.iter().map(String::as_str).collect();
    // Every damaged segment checked before anything is removed.
    let mut touched: Vec<(&crate::segment::Live, bool)> = Vec::new();
    for live in &listing.segments {
        let m = &live.manifest;
        if !m.hours.iter().any(|h| asked.contains(h.stem.as_str())) {
            continue;
        }
        let whole = segment_is_whole(m, &live.data);
        if !whole && !m.hours.iter().all(|h| asked.contains(h.stem.as_str())) {
            let (first, last) = m.span().unwrap_or_default();
            let hour = |stem: &str| stem.parse::<ghbench_core::Hour>().map_or_else(|_| stem.to_string(), |h| h.to_string());
            return Err(io::Error::other(format!(
                "segment {} of polars table {} is damaged, so its hours cannot be taken out one by one: load all {} of them again (`--reload {}..{}`)",
                m.name,
                table.name(),
                m.hours.len(),
                hour(&first),
                hour(&last)
            )));
        }
        touched.push((live, whole));
    }
    let mut removed = 0;
    for (live, whole) in touched {
        let m = &live.manifest;
        let kept: Vec<SegmentHour> = m.hours.iter().filter(|h| !asked.contains(h.stem.as_str())).cloned().collect();
        removed += m.rows() - kept.iter().map(|h| h.rows).sum::<u64>();
        if whole && !kept.is_empty() {
            // The rows of the hours kept, adjacent ones as one range.
            let mut ranges: Vec<(u64, u64)> = Vec::new();
            let mut offset = 0;
            for hour in &m.hours {
                if !asked.contains(hour.stem.as_str()) {
                    match ranges.last_mut() {
                        Some((start, count)) if *start + *count == offset => *count += hour.rows,
                        _ => ranges.push((offset, hour.rows)),
                    }
                }
                offset += hour.rows;
            }
            write_segment(table, kept, &[Source { path: live.data.clone(), rows: ranges }], m.generation + 1, m.layout.clone(), vec![m.name.clone()])?;
        }
        remove_segment(table, m, &live.data)?;
    }
    for stem in stems.iter().filter(|stem| listing.loose.contains(*stem)) {
        removed += ledger.get(stem).map_or(0, |e| e.events());
        remove_file(&table.data_path(stem))?;
        remove_file(&table.entry_path(stem))?;
    }
    table.sync_folder()?;
    Ok(removed)
}

/// A segment's files: its data first (without it the manifest names nothing).
fn remove_segment(table: &TableDir, manifest: &Manifest, data: &Path) -> io::Result<()> {
    remove_file(data)?;
    table.sync_folder()?;
    remove_file(&table.path().join(manifest.manifest_file()))
}

/// Files no query reads (replaced segments, stale hour files), removed:
/// segments oldest first, so that a removal stopped part way never leaves
/// a segment whose replacement is gone beside it (it would be read again).
/// Only with the readers' lock held exclusively.
pub(crate) fn remove_superseded(table: &TableDir, listing: &Listing) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let mut segments: Vec<&(Manifest, PathBuf)> = listing.replaced.iter().collect();
    segments.sort_by_key(|(m, _)| m.generation);
    for (manifest, data) in segments {
        remove_segment(table, manifest, data)?;
        removed.extend([data.clone(), table.path().join(manifest.manifest_file())]);
    }
    for path in &listing.stale {
        remove_file(path)?;
        removed.push(path.clone());
    }
    table.sync_folder()?;
    Ok(removed)
}

/// Rows of one file to copy: (offset, count) ranges.
struct Source {
    path: PathBuf,
    rows: Vec<(u64, u64)>,
}

/// The layout segments are written in: the declared one (a table of
/// another layout never loads, so never compacts).
fn declared_signature() -> String {
    crate::schema::Layout::declared().map(|l| l.signature()).unwrap_or_default()
}

/// Writes and commits a segment of `hours`, its rows copied from
/// `sources` in order; checks the rows copied are the hours' rows.
fn write_segment(table: &TableDir, hours: Vec<SegmentHour>, sources: &[Source], generation: u64, layout: String, replaces: Vec<String>) -> io::Result<Manifest> {
    let mut manifest = Manifest::new(hours, generation, 0, String::new(), layout, replaces);
    let data = table.path().join(manifest.data_file());
    let temporary = table.path().join(format!("{}.tmp", manifest.data_file()));
    let schema = crate::schema::Layout::declared().map_err(io::Error::other)?.schema();
    let file = File::create(&temporary).map_err(|e| annotate(e, "creating", &temporary))?;
    let (file, written) = HashingWriter::new(file);
    let copied = (|| -> PolarsResult<u64> {
        let mut writer = ParquetWriter::new(file)
            .with_compression(ParquetCompression::Zstd(None))
            .with_statistics(StatisticsOptions::full())
            .batched(&schema)?;
        let mut copied = 0;
        // Rows gathered into row groups of about ROW_GROUP_ROWS, as a load
        // writes them: 8,760 hours of 20 rows each written as they came made
        // a segment of 8,760 row groups, 40% larger and slow to plan on.
        let mut pending: Option<DataFrame> = None;
        let group = crate::sink::ROW_GROUP_ROWS as u64;
        for source in sources {
            let rows_in_file = rows_in(&source.path).map_err(|e| PolarsError::IO { error: Arc::new(e), msg: None })?;
            for &(offset, count) in &source.rows {
                let mut at = offset;
                while at < offset + count {
                    let take = (offset + count - at).min(group);
                    let frame = match (at, take) == (0, rows_in_file) {
                        // A whole small file (an hour): read as it is, without a scan's setup.
                        true => ParquetReader::new(File::open(&source.path).map_err(|e| PolarsError::IO { error: Arc::new(e), msg: None })?).finish()?,
                        false => {
                            let args = ScanArgsParquet { schema: Some(Arc::new(schema.clone())), ..ScanArgsParquet::default() };
                            LazyFrame::scan_parquet(PlRefPath::from(source.path.to_string_lossy().as_ref()), args)?.slice(at as i64, take as IdxSize).collect()?
                        }
                    };
                    copied += frame.height() as u64;
                    at += take;
                    let gathered = match pending.take() {
                        Some(mut before) => {
                            before.vstack_mut(&frame)?;
                            before
                        }
                        None => frame,
                    };
                    match gathered.height() as u64 >= group {
                        true => {
                            let mut gathered = gathered;
                            gathered.rechunk_mut();
                            writer.write_batch(&gathered)?;
                        }
                        false => pending = Some(gathered),
                    }
                }
            }
        }
        if let Some(mut last) = pending.filter(|frame| frame.height() > 0) {
            last.rechunk_mut();
            writer.write_batch(&last)?;
        }
        writer.finish()?;
        Ok(copied)
    })();
    let fail = |what: String| {
        let _ = std::fs::remove_file(&temporary);
        io::Error::other(format!("writing segment {}: {what}", manifest.name))
    };
    let copied = copied.map_err(|e| fail(e.to_string()))?;
    if copied != manifest.rows() {
        return Err(fail(format!("copied {copied} rows where its hours hold {}", manifest.rows())));
    }
    File::open(&temporary).and_then(|f| f.sync_all()).map_err(|e| annotate(e, "syncing", &temporary))?;
    let (bytes, digest) = written.result();
    (manifest.bytes, manifest.digest) = (bytes, digest);
    commit(table, &manifest, &temporary, &data)?;
    Ok(manifest)
}

/// The manifest first (fsynced, renamed), then the data file's name: the commit.
fn commit(table: &TableDir, manifest: &Manifest, temporary: &Path, data: &Path) -> io::Result<()> {
    let path = table.path().join(manifest.manifest_file());
    let temporary_manifest = table.path().join(format!("{}.tmp", manifest.manifest_file()));
    let mut file = File::create(&temporary_manifest).map_err(|e| annotate(e, "creating", &temporary_manifest))?;
    file.write_all(&serde_json::to_vec_pretty(manifest).map_err(io::Error::other)?)?;
    file.sync_all().map_err(|e| annotate(e, "syncing", &temporary_manifest))?;
    rename(&temporary_manifest, &path)?;
    table.sync_folder()?;
    rename(temporary, data)?;
    table.sync_folder()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Columns, Layout};
    use crate::store::HourEntry;

    /// Hour `stem` loaded as a load commits one: `events` rows (each event
    /// naming its hour and line), its file, then its entry.
    fn load_hour(table: &TableDir, stem: &str, events: u64) {
        let mut columns = Columns::new(Layout::declared().unwrap());
        for line in 1..=events {
            columns.push(line, &format!(r#"{{"id":"{stem}/{line}","type":"PushEvent","actor":{{"login":"a{line}"}}}}"#)).unwrap();
        }
        let mut frame = columns.take_frame().unwrap();
        let path = table.temporary_data_path(stem);
        ParquetWriter::new(File::create(&path).unwrap()).finish(&mut frame).unwrap();
        let (bytes, digest) = ghbench_engine::load::digest::of_file(&path).unwrap();
        let entry = HourEntry {
            parquet_bytes: Some(bytes),
            parquet_digest: Some(digest),
            layout: Some(Layout::declared().unwrap().signature()),
            ..crate::store::test_entry(stem, events)
        };
        table.commit(stem, &entry).unwrap();
    }

    /// Every row's event, as the files a query reads hold them, sorted
    /// (from its `id`: `<stem>/<line>",…`).
    fn ids(table: &TableDir) -> Vec<String> {
        let mut ids = Vec::new();
        for path in table.live_files().unwrap() {
            let frame = ParquetReader::new(File::open(&path).unwrap()).finish().unwrap();
            // Each event's JSON names its hour and line first: `{"id":"<stem>/<line>",…`.
            ids.extend(frame.column("event").unwrap().str().unwrap().iter().map(|v| v.unwrap()[7..].to_string()));
        }
        ids.sort();
        ids
    }

    fn table() -> (tempfile::TempDir, TableDir) {
        let dir = tempfile::tempdir().unwrap();
        let table = TableDir::new(dir.path(), &"t".parse().unwrap());
        table.create().unwrap();
        (dir, table)
    }

    /// A table of 24 hours of `events` events each, merged into one segment.
    fn a_day_in_a_segment(events: u64) -> (tempfile::TempDir, TableDir) {
        let (dir, table) = table();
        for stem in stems(24) {
            load_hour(&table, &stem, events);
        }
        compact(&table, 1000, 24).unwrap();
        (dir, table)
    }

    fn stems(n: u32) -> Vec<String> {
        (0..n).map(|h| format!("2015-01-0{}-{}", 1 + h / 24, h % 24)).collect()
    }

    #[test]
    fn hours_merge_into_segments_holding_the_same_rows_and_ledger() {
        let (_dir, table) = table();
        for stem in stems(30) {
            load_hour(&table, &stem, 3);
        }
        let (rows, ledger) = (ids(&table), table.ledger().unwrap());
        assert!(due(&table, 1000, 24).unwrap(), "30 loose hours are due to merge");
        let done = compact(&table, 1000, 24).unwrap();
        assert!(!due(&table, 1000, 24).unwrap(), "nothing left to merge");
        assert_eq!((done.segments, done.files_merged, done.hours), (1, 30, 30), "{done:?}");
        assert!(done.said().starts_with("merged 30 files into 1 segment of 30 hours"), "{}", done.said());
        assert_eq!(table.live_files().unwrap().len(), 1, "one file to read");
        assert_eq!(ids(&table), rows, "the same rows");
        let after = table.ledger().unwrap();
        assert_eq!(after.keys().collect::<Vec<_>>(), ledger.keys().collect::<Vec<_>>(), "the same hours");
        assert!(after.values().all(|e| e.stored_in.is_some()), "each hour says its segment");
        assert_eq!(after["2015-01-01-3"].events(), 3);
        // Nothing but the segment and its manifest is left of the hours.
        let names: Vec<String> = std::fs::read_dir(table.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"2015-01-01-0--2015-01-02-5.g1.parquet".to_string()), "{names:?}");
        // Whole, by size and by checksum.
        assert!(table.damages(&after, |_| crate::store::Check::Checksum).unwrap().values().all(Option::is_none));
        // Another day's hours merge with the segment once there are enough.
        for stem in (30..40).map(|h| format!("2015-01-0{}-{}", 1 + h / 24, h % 24)) {
            load_hour(&table, &stem, 3);
        }
        assert!(!due(&table, 1000, 24).unwrap(), "ten loose hours wait for more");
        for stem in (40..60).map(|h| format!("2015-01-0{}-{}", 1 + h / 24, h % 24)) {
            load_hour(&table, &stem, 3);
        }
        let done = compact(&table, 1000, 24).unwrap();
        assert_eq!((done.segments, done.files_merged, done.hours), (1, 31, 60), "the segment and 30 hours: {done:?}");
        assert_eq!(table.live_files().unwrap().len(), 1);
        assert_eq!(table.ledger().unwrap().len(), 60);
        assert_eq!(table.listing().unwrap().segments[0].manifest.generation, 2);
    }

    #[test]
    fn an_hour_taken_out_of_its_segment_leaves_every_other_hour_exactly() {
        let (_dir, table) = a_day_in_a_segment(4);
        let before = ids(&table);
        table.remove_data("2015-01-01-7").unwrap();
        let expected: Vec<String> = before.iter().filter(|id| !id.starts_with("2015-01-01-7/")).cloned().collect();
        assert_eq!(ids(&table), expected, "the hour's 4 rows out, no other");
        let ledger = table.ledger().unwrap();
        assert_eq!(ledger.len(), 23);
        assert!(!ledger.contains_key("2015-01-01-7"));
        let listing = table.listing().unwrap();
        assert_eq!((listing.segments.len(), listing.segments[0].manifest.generation, listing.replaced.len()), (1, 2, 0), "the next generation, the old removed");
        // Loaded again, the hour is a file of its own beside the segment.
        load_hour(&table, "2015-01-01-7", 4);
        assert_eq!(ids(&table), before);
        assert_eq!(table.live_files().unwrap().len(), 2);
        // A query run holds the readers' lock: no hour is taken out under it,
        // and a compaction commits but removes nothing the run listed.
        let reading = table.read_shared().unwrap();
        let listed = table.live_files().unwrap();
        let error = table.remove_data("2015-01-01-8").unwrap_err().to_string();
        assert!(error.contains("a query run is reading polars table t"), "{error}");
        let done = compact(&table, 1000, 2).unwrap();
        assert_eq!(done.held_off.as_deref(), Some("the files they replace stay until the next load, as a query run was reading them"));
        assert!(listed.iter().all(|path| path.exists()), "what the run listed is all there");
        assert_eq!((ids(&table), table.live_files().unwrap().len()), (before.clone(), 1), "one segment read from now on");
        drop(reading);
        assert_eq!(table.clean().unwrap().len(), 4, "the replaced segment and the hour's file, once the run ended");
        assert_eq!(ids(&table), before);
    }

    /// Killed after a `--reload`'s rewrite committed the next generation,
    /// before the one it replaces was removed: the old is never read, the
    /// hour taken out stays out (its rerun loads it), the next load's clean
    /// removes the old.
    #[test]
    fn a_reload_rewrite_stopped_before_removing_the_old_generation_leaves_each_hour_once() {
        let (_dir, table) = a_day_in_a_segment(3);
        let before = ids(&table);
        let old = table.listing().unwrap().segments[0].clone();
        let old_manifest = table.path().join(old.manifest.manifest_file());
        let (old_bytes, old_text) = (std::fs::read(&old.data).unwrap(), std::fs::read(&old_manifest).unwrap());
        remove_hours(&table, &["2015-01-01-5".to_string()]).unwrap();
        // As if killed before the removal: the first generation back beside the second.
        std::fs::write(&old.data, &old_bytes).unwrap();
        std::fs::write(&old_manifest, &old_text).unwrap();
        let listing = table.listing().unwrap();
        assert_eq!((listing.segments.len(), listing.segments[0].manifest.generation, listing.replaced.len()), (1, 2, 1));
        let expected: Vec<String> = before.iter().filter(|id| !id.starts_with("2015-01-01-5/")).cloned().collect();
        assert_eq!(ids(&table), expected, "the second generation alone is read");
        assert!(!table.ledger().unwrap().contains_key("2015-01-01-5"), "the hour taken out is not listed as loaded");
        assert_eq!(table.clean().unwrap().len(), 2, "the first generation's data and manifest");
        load_hour(&table, "2015-01-01-5", 3);
        assert_eq!(ids(&table), before, "loaded again, each hour once");
    }

    #[test]
    fn a_damaged_segment_is_every_one_of_its_hours_damage_and_goes_only_with_all_of_them() {
        let (_dir, table) = a_day_in_a_segment(2);
        let segment = table.live_files().unwrap().remove(0);
        let mut bytes = std::fs::read(&segment).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&segment, &bytes).unwrap();
        let ledger = table.ledger().unwrap();
        // One hour checked by checksum finds its segment damaged, and so every hour of it.
        let found = table.damages(&ledger, |stem| if stem == "2015-01-01-3" { crate::store::Check::Checksum } else { crate::store::Check::Size }).unwrap();
        assert_eq!(found.values().filter(|d| d.is_some()).count(), 24, "{found:?}");
        assert!(found["2015-01-01-9"].as_ref().unwrap().to_string().contains("has another checksum"), "{found:?}");
        // One of its hours alone cannot be taken out: nothing is removed, the error says what to reload.
        let error = table.remove_data("2015-01-01-3").unwrap_err().to_string();
        assert!(error.contains("is damaged") && error.contains("load all 24 of them again (`--reload 2015-01-01T00..2015-01-01T23`)"), "{error}");
        assert_eq!(table.ledger().unwrap().len(), 24, "nothing removed");
        // A merge leaves a damaged segment out rather than copy its damage.
        load_hour(&table, "2015-01-02-0", 2);
        load_hour(&table, "2015-01-02-1", 2);
        assert_eq!(compact(&table, 1000, 2).unwrap().hours, 2, "the two hours alone");
        // All its hours taken out at once: it goes.
        let all: Vec<String> = stems(24);
        assert_eq!(remove_hours(&table, &all).unwrap(), 48, "24 hours of 2 rows");
        assert_eq!(table.ledger().unwrap().keys().collect::<Vec<_>>(), ["2015-01-02-0", "2015-01-02-1"]);
    }

    #[test]
    fn a_segment_is_named_by_its_earliest_and_latest_hour_whatever_its_rows_order() {
        let (_dir, table) = a_day_in_a_segment(2);
        remove_hours(&table, &["2015-01-01-23".to_string()]).unwrap();
        load_hour(&table, "2015-01-01-23", 2);
        compact(&table, 1000, 2).unwrap();
        let listing = table.listing().unwrap();
        let m = &listing.segments[0].manifest;
        // The hour loaded again comes last in the rows, as it does in time here; the name spans them all.
        assert_eq!(m.name, "2015-01-01-0--2015-01-01-23.g3");
        // One from the middle, loaded again, comes after the segment: the name still spans them.
        remove_hours(&table, &["2015-01-01-5".to_string()]).unwrap();
        load_hour(&table, "2015-01-01-5", 2);
        compact(&table, 1000, 2).unwrap();
        let m = table.listing().unwrap().segments[0].manifest.clone();
        assert_eq!(m.hours.last().unwrap().stem, "2015-01-01-5", "merged after the segment it was taken out of");
        assert_eq!(m.name, "2015-01-01-0--2015-01-01-23.g5", "not 2015-01-01-0--2015-01-01-5");
        remove_hours(&table, &["2015-01-01-0".to_string()]).unwrap();
        load_hour(&table, "2015-01-01-0", 2);
        compact(&table, 1000, 2).unwrap();
        let m = table.listing().unwrap().segments[0].manifest.clone();
        // Merged in order of first hours: the hour before the segment's first comes first.
        assert_eq!(m.hours.first().unwrap().stem, "2015-01-01-0");
        assert_eq!(m.name, "2015-01-01-0--2015-01-01-23.g7");
        assert_eq!(m.span(), Some(("2015-01-01-0".to_string(), "2015-01-01-23".to_string())));
    }

    #[test]
    fn hours_taken_out_of_several_segments_at_once_leave_the_rest_in_order() {
        let (_dir, table) = table();
        for stem in stems(48) {
            load_hour(&table, &stem, 3);
        }
        // Two segments of 24 hours (72 rows each).
        compact(&table, 72, 24).unwrap();
        assert_eq!(table.live_files().unwrap().len(), 2);
        let before = ids(&table);
        let out: Vec<String> = ["2015-01-01-0", "2015-01-01-1", "2015-01-01-10", "2015-01-02-23"].map(String::from).to_vec();
        assert_eq!(remove_hours(&table, &out).unwrap(), 12);
        let expected: Vec<String> = before.iter().filter(|id| !out.iter().any(|stem| id.starts_with(&format!("{stem}/")))).cloned().collect();
        assert_eq!(ids(&table), expected);
        // Each hour's rows where its manifest says they are.
        for live in table.listing().unwrap().segments {
            let frame = ParquetReader::new(File::open(&live.data).unwrap()).finish().unwrap();
            let events: Vec<&str> = frame.column("event").unwrap().str().unwrap().iter().map(Option::unwrap).collect();
            for hour in &live.manifest.hours {
                let (offset, rows) = live.manifest.rows_of(&hour.stem).unwrap();
                for at in offset..offset + rows {
                    assert!(events[at as usize].contains(&format!("\"{}/", hour.stem)), "row {at} of {}: {}", hour.stem, events[at as usize]);
                }
            }
        }
    }

    /// What `kill -9` leaves at each step of a compaction, made by hand: the
    /// hours are read from exactly one place at every step, and the next
    /// load's clean removes what is left over.
    #[test]
    fn a_compaction_stopped_at_any_step_leaves_each_hour_stored_once() {
        let (_dir, table) = table();
        for stem in stems(24) {
            load_hour(&table, &stem, 2);
        }
        let rows = ids(&table);
        compact(&table, 1000, 24).unwrap();
        let listing = table.listing().unwrap();
        let manifest = listing.segments[0].manifest.clone();
        let data = listing.segments[0].data.clone();
        let manifest_path = table.path().join(manifest.manifest_file());
        let (segment_bytes, manifest_text) = (std::fs::read(&data).unwrap(), std::fs::read(&manifest_path).unwrap());
        let reload = |table: &TableDir| {
            std::fs::remove_file(&data).unwrap();
            std::fs::remove_file(&manifest_path).unwrap();
            for stem in stems(24) {
                load_hour(table, &stem, 2);
            }
        };

        // Killed while writing the segment: its temporary file alone.
        reload(&table);
        std::fs::write(table.path().join(format!("{}.tmp", manifest.data_file())), &segment_bytes).unwrap();
        assert_eq!((ids(&table), table.ledger().unwrap().len()), (rows.clone(), 24));
        // Killed after the manifest's rename, before the data's: unfinished.
        std::fs::write(&manifest_path, &manifest_text).unwrap();
        assert_eq!((ids(&table), table.live_files().unwrap().len()), (rows.clone(), 24), "the hours, not a segment without its data");
        let removed = table.clean().unwrap();
        assert_eq!(removed.len(), 2, "the temporary data and the unfinished manifest: {removed:?}");

        // Killed after the commit, before the hours it merged were removed: they are stale.
        std::fs::write(&manifest_path, &manifest_text).unwrap();
        std::fs::write(&data, &segment_bytes).unwrap();
        assert_eq!((ids(&table), table.live_files().unwrap().len()), (rows.clone(), 1), "the segment alone is read");
        assert_eq!(table.ledger().unwrap().len(), 24);
        assert_eq!(table.clean().unwrap().len(), 48, "each hour's file and entry");
        assert_eq!(ids(&table), rows);
    }
}

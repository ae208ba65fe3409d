//! Writing segments ([`crate::segment`]): merging a table's loose hours and
//! small segments after a load ([`compact`]), and taking an hour out of its
//! segment before it is loaded again ([`take_out`]).
//!
//! Both write the new segment whole under a temporary name (rows copied a
//! row group at a time, so a segment of millions of rows never sits in
//! memory), fsync it, commit it by its manifest and then its data file's
//! name, and only then remove what it replaces. A run killed at any point
//! leaves either the old files (the new one's temporary file or unfinished
//! manifest is removed by the next load) or the new segment with files it
//! replaced beside it, never read again and removed then: every hour
//! stays stored exactly once. Both hold the readers' lock exclusively, so
//! no query run ever finds a file gone that it listed.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use ghbench_engine::load::digest::HashingWriter;
use polars::prelude::*;

use crate::segment::{plan, Listing, Manifest, SegmentHour, Unit};
use crate::store::{annotate, remove_file, rename, TableDir};

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
        if let Some(why) = &self.held_off {
            return format!("not compacted: {why}");
        }
        if self.segments == 0 {
            return "nothing to compact".into();
        }
        format!(
            "merged {} files into {} segment{} of {} hours, {} written (at most {} more on disk meanwhile)",
            self.files_merged,
            self.segments,
            if self.segments == 1 { "" } else { "s" },
            self.hours,
            ghbench_core::size::said(self.bytes_written),
            ghbench_core::size::said(self.peak_extra_bytes)
        )
    }
}

/// Merges the table's loose hours and small segments ([`plan`]'s groups),
/// unless a query run reads the table: then nothing is rewritten, and the
/// next load compacts. Only with the table's load lock held.
pub fn compact(table: &TableDir, target_rows: u64, min_units: usize) -> io::Result<Compacted> {
    let listing = table.listing()?;
    let ledger = table.ledger()?;
    let mut units: Vec<Unit> = listing.loose.iter().map(|stem| Unit::Hour { stem: stem.clone(), rows: ledger.get(stem).map_or(0, |e| e.events()) }).collect();
    units.extend(listing.segments.iter().map(|s| Unit::Segment { name: s.manifest.name.clone(), first: s.manifest.hours[0].stem.clone(), rows: s.manifest.rows() }));
    let groups = plan(units, target_rows, min_units);
    let mut done = Compacted::default();
    if groups.is_empty() {
        return Ok(done);
    }
    let Some(_readers) = table.try_exclusive()? else {
        done.held_off = Some("a query run is reading the table; the next load compacts it".into());
        return Ok(done);
    };
    for group in groups {
        let mut hours = Vec::new();
        let mut sources: Vec<Source> = Vec::new();
        let mut replaces = Vec::new();
        let mut generation = 1;
        let mut removed: Vec<PathBuf> = Vec::new();
        for unit in &group {
            match unit {
                Unit::Hour { stem, rows } => {
                    let entry = ledger.get(stem).cloned().ok_or_else(|| io::Error::other(format!("hour {stem} has no ledger entry")))?;
                    hours.push(SegmentHour { stem: stem.clone(), rows: *rows, entry });
                    sources.push(Source { path: table.data_path(stem), rows: vec![(0, *rows)] });
                    removed.extend([table.data_path(stem), table.entry_path(stem)]);
                }
                Unit::Segment { name, rows, .. } => {
                    let live = listing.segments.iter().find(|s| &s.manifest.name == name).expect("a unit of the listing");
                    hours.extend(live.manifest.hours.iter().cloned());
                    sources.push(Source { path: live.data.clone(), rows: vec![(0, *rows)] });
                    replaces.push(name.clone());
                    generation = generation.max(live.manifest.generation + 1);
                    removed.extend([live.data.clone(), table.path().join(live.manifest.manifest_file())]);
                }
            }
        }
        let written = write_segment(table, hours, &sources, generation, declared_signature(), replaces)?;
        done.segments += 1;
        done.files_merged += group.len();
        done.hours += written.hours.len();
        done.bytes_written += written.bytes;
        done.peak_extra_bytes = done.peak_extra_bytes.max(written.bytes);
        for path in &removed {
            remove_file(path)?;
        }
        table.sync_folder()?;
    }
    Ok(done)
}

/// Takes hour `stem` out of the live segment holding it: the segment
/// rewritten without its rows as the next generation (or removed, when it
/// held that hour alone or is damaged: a damaged segment's hours are all
/// loaded again by the run that found it). Refused while a query run reads
/// the table. Stale files of `stem` are removed first, so that none of them
/// is read as the hour once the segment no longer holds it.
pub fn take_out(table: &TableDir, stem: &str) -> io::Result<()> {
    let Some(_readers) = table.try_exclusive()? else {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("hour {stem} of polars table {} is in a segment, and a query run is reading the table: load it again once that run ends", table.name()),
        ));
    };
    let listing = table.listing()?;
    remove_superseded(table, &listing)?;
    let Some(live) = listing.segment_of(stem) else { return Ok(()) };
    let m = &live.manifest;
    let manifest_path = table.path().join(m.manifest_file());
    let whole = std::fs::metadata(&live.data).map(|meta| meta.len() == m.bytes).unwrap_or(false)
        && ghbench_engine::load::digest::of_file(&live.data).is_ok_and(|(_, digest)| digest == m.digest);
    let kept: Vec<SegmentHour> = m.hours.iter().filter(|h| h.stem != stem).cloned().collect();
    if whole && !kept.is_empty() {
        let (offset, rows) = m.rows_of(stem).expect("the segment holds it");
        let total = m.rows();
        let source = Source { path: live.data.clone(), rows: vec![(0, offset), (offset + rows, total - offset - rows)] };
        write_segment(table, kept, &[source], m.generation + 1, m.layout.clone(), vec![m.name.clone()])?;
    }
    // The data file first: without it the manifest names nothing.
    remove_file(&live.data)?;
    table.sync_folder()?;
    remove_file(&manifest_path)?;
    table.sync_folder()
}

/// Files no query reads (replaced segments, stale hour files), removed.
fn remove_superseded(table: &TableDir, listing: &Listing) -> io::Result<()> {
    for path in &listing.superseded {
        remove_file(path)?;
    }
    table.sync_folder()
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
        for source in sources {
            for &(offset, count) in &source.rows {
                let mut at = offset;
                while at < offset + count {
                    let take = (offset + count - at).min(crate::sink::ROW_GROUP_ROWS as u64);
                    let args = ScanArgsParquet { schema: Some(Arc::new(schema.clone())), ..ScanArgsParquet::default() };
                    let frame = LazyFrame::scan_parquet(PlRefPath::from(source.path.to_string_lossy().as_ref()), args)?.slice(at as i64, take as IdxSize).collect()?;
                    writer.write_batch(&frame)?;
                    copied += frame.height() as u64;
                    at += take;
                }
            }
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
    use ghbench_engine::load::HourRecord;

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
        let entry = HourEntry {
            record,
            seconds: 0.1,
            finished_at: None,
            parquet_bytes: Some(bytes),
            parquet_digest: Some(digest),
            layout: Some(Layout::declared().unwrap().signature()),
            stored_in: None,
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
        let done = compact(&table, 1000, 24).unwrap();
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
        for stem in (30..60).map(|h| format!("2015-01-0{}-{}", 1 + h / 24, h % 24)) {
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
        let (_dir, table) = table();
        for stem in stems(24) {
            load_hour(&table, &stem, 4);
        }
        compact(&table, 1000, 24).unwrap();
        let before = ids(&table);
        table.remove_data("2015-01-01-7").unwrap();
        let expected: Vec<String> = before.iter().filter(|id| !id.starts_with("2015-01-01-7/")).cloned().collect();
        assert_eq!(ids(&table), expected, "the hour's 4 rows out, no other");
        let ledger = table.ledger().unwrap();
        assert_eq!(ledger.len(), 23);
        assert!(!ledger.contains_key("2015-01-01-7"));
        let listing = table.listing().unwrap();
        assert_eq!((listing.segments.len(), listing.segments[0].manifest.generation, listing.superseded.len()), (1, 2, 0), "the next generation, the old removed");
        // Loaded again, the hour is a file of its own beside the segment.
        load_hour(&table, "2015-01-01-7", 4);
        assert_eq!(ids(&table), before);
        assert_eq!(table.live_files().unwrap().len(), 2);
        // A query run holds the readers' lock: no hour is taken out under it.
        let _reading = table.read_shared().unwrap();
        let error = table.remove_data("2015-01-01-8").unwrap_err().to_string();
        assert!(error.contains("a query run is reading the table"), "{error}");
        assert_eq!(compact(&table, 1000, 2).unwrap().held_off.as_deref(), Some("a query run is reading the table; the next load compacts it"));
        assert_eq!(ids(&table), before, "nothing changed");
    }

    #[test]
    fn a_damaged_segment_is_every_one_of_its_hours_damage_and_is_dropped_when_one_is_reloaded() {
        let (_dir, table) = table();
        for stem in stems(24) {
            load_hour(&table, &stem, 2);
        }
        compact(&table, 1000, 24).unwrap();
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
        table.remove_data("2015-01-01-3").unwrap();
        assert!(table.ledger().unwrap().is_empty(), "a damaged segment is not read from: its hours load again");
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

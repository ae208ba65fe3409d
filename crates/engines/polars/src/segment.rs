//! Segments: a table's hours merged into larger files once loaded, so that
//! polars opens a few files for a year of hours, not 8,760 (each file costs
//! a query 0.17-0.28 ms whatever it holds: docs/performance.md).
//!
//! The hour stays the unit of exactly-once loading: an hour loads into a file
//! of its own as before ([`crate::store`]), and after the load
//! ([`crate::compact`]) loose hours (and small segments) are merged, in hour
//! order, into a segment `<first>--<last>.g<N>.parquet`. Beside it its
//! manifest, `<first>--<last>.g<N>.segment.json`, lists each hour it holds
//! with the hour's ledger entry and row count (its rows lie together, in
//! that order), the file's size and digest, and the segments it replaces.
//! The manifest is written (fsynced, renamed) before the data file is
//! renamed into place: a segment exists exactly when its data file has its
//! name, as an hour does.
//!
//! What a folder holds, read by [`Listing::of`]: a segment is *live* when
//! its data file has its name and no live segment replaces it. An hour file
//! whose hour a live segment holds is *stale*: a compaction stopped between
//! its commit and removing what it merged left it. Stale files and replaced
//! segments are never read, and are removed under the readers' lock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ghbench_core::Hour;
use serde::{Deserialize, Serialize};

use crate::store::HourEntry;

/// A segment's manifest ends so; its data file is `<name>.parquet`.
pub const MANIFEST: &str = ".segment.json";
const SCHEMA: &str = "ghbench-polars-segment/1";

/// What a segment holds, written beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    /// `<first hour>--<last hour>.g<generation>`: its files' names without their endings.
    pub name: String,
    /// One more than the highest of the segments it was made from (1 from hour files).
    pub generation: u64,
    /// The hours it holds, in the order of their rows.
    pub hours: Vec<SegmentHour>,
    /// The data file's size and digest as written.
    pub bytes: u64,
    pub digest: String,
    /// The layout its rows are in ([`crate::schema::Layout::signature`]).
    pub layout: String,
    /// The segments it replaces: merged into it, or rewritten without an
    /// hour that is loaded again (`--reload`).
    #[serde(default)]
    pub replaces: Vec<String>,
}

/// An hour of a segment: its rows, and the ledger entry its load wrote.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SegmentHour {
    pub stem: String,
    pub rows: u64,
    pub entry: HourEntry,
}

impl Manifest {
    pub fn new(hours: Vec<SegmentHour>, generation: u64, bytes: u64, digest: String, layout: String, replaces: Vec<String>) -> Manifest {
        let mut manifest = Manifest { schema: SCHEMA.into(), name: String::new(), generation, hours, bytes, digest, layout, replaces };
        manifest.name = match manifest.span() {
            Some((first, last)) => format!("{first}--{last}.g{generation}"),
            None => format!("empty.g{generation}"),
        };
        manifest
    }

    /// Its earliest and latest hours (its rows are in the order merged: an
    /// hour loaded again comes after the segment it was taken out of).
    pub fn span(&self) -> Option<(String, String)> {
        let first = self.hours.iter().map(|h| &h.stem).min_by_key(|stem| hour_order(stem))?;
        let last = self.hours.iter().map(|h| &h.stem).max_by_key(|stem| hour_order(stem))?;
        Some((first.clone(), last.clone()))
    }

    pub fn rows(&self) -> u64 {
        self.hours.iter().map(|h| h.rows).sum()
    }

    /// Where `stem`'s rows lie: (offset, rows).
    pub fn rows_of(&self, stem: &str) -> Option<(u64, u64)> {
        let mut offset = 0;
        for hour in &self.hours {
            if hour.stem == stem {
                return Some((offset, hour.rows));
            }
            offset += hour.rows;
        }
        None
    }

    pub fn data_file(&self) -> String {
        format!("{}{}", self.name, crate::store::DATA)
    }

    pub fn manifest_file(&self) -> String {
        format!("{}{MANIFEST}", self.name)
    }

    /// Whether `text` is a manifest of this ghbench's, for a file's name's sake.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let manifest: Manifest = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match manifest.schema == SCHEMA {
            true => Ok(manifest),
            false => Err(format!("schema {}, where this ghbench reads {SCHEMA}", manifest.schema)),
        }
    }
}

/// Whether `name` (without its ending) is a segment's: `<hour>--<hour>.g<N>`.
pub fn is_segment_name(name: &str) -> bool {
    let Some((hours, generation)) = name.rsplit_once(".g") else { return false };
    let Some((first, last)) = hours.split_once("--") else { return false };
    generation.parse::<u64>().is_ok() && first.parse::<Hour>().is_ok() && last.parse::<Hour>().is_ok()
}

/// A live segment, as a query and a check see it.
#[derive(Debug, Clone)]
pub struct Live {
    pub manifest: Manifest,
    pub data: PathBuf,
}

/// What a table's folder holds, by the rules of the module's note.
#[derive(Debug, Default)]
pub struct Listing {
    /// Live segments, in the order of their first hours.
    pub segments: Vec<Live>,
    /// Hours stored in files of their own that no live segment holds.
    pub loose: BTreeSet<String>,
    /// Segments never read again (their manifest and data file): replaced
    /// by a live one. Removed when no query run reads the table.
    pub replaced: Vec<(Manifest, PathBuf)>,
    /// Hour files (data and entry) never read again: their hour is in a live
    /// segment. Removed with the replaced segments.
    pub stale: Vec<PathBuf>,
    /// Manifests whose data file never got its name: a compaction stopped
    /// before its commit. Removed with the other leftovers.
    pub unfinished: Vec<PathBuf>,
}

impl Listing {
    /// `files`: the folder's (name, path); `hour_stem`: the hour a file name
    /// holds when it is an hour's data file; `entry_of`: that hour's entry
    /// file's name. Manifests are read from their paths.
    pub fn of(files: &[(String, PathBuf)], hour_stem: impl Fn(&str) -> Option<String>, entry_of: impl Fn(&str) -> String) -> std::io::Result<Listing> {
        let names: BTreeMap<&str, &PathBuf> = files.iter().map(|(n, p)| (n.as_str(), p)).collect();
        let mut committed: Vec<(Manifest, PathBuf, PathBuf)> = Vec::new();
        let mut listing = Listing::default();
        for (name, path) in files {
            let Some(stem) = name.strip_suffix(MANIFEST).filter(|stem| is_segment_name(stem)) else { continue };
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                // Removed since the folder was listed: a segment gone.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(crate::store::annotate(e, "reading", path)),
            };
            let manifest = Manifest::parse(&text).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}: ghbench did not write it so; move it out of the folder, or load the table again with --drop", path.display()),
                )
            })?;
            match names.get(manifest.data_file().as_str()) {
                Some(data) if manifest.name == stem => committed.push((manifest, (*data).clone(), path.clone())),
                _ => listing.unfinished.push(path.clone()),
            }
        }
        let replaced: BTreeSet<String> = committed.iter().flat_map(|(m, _, _)| m.replaces.iter().cloned()).collect();
        let mut held: BTreeMap<String, String> = BTreeMap::new();
        for (manifest, data, manifest_path) in committed {
            if replaced.contains(&manifest.name) {
                let _ = manifest_path;
                listing.replaced.push((manifest, data));
                continue;
            }
            for hour in &manifest.hours {
                if let Some(other) = held.insert(hour.stem.clone(), manifest.name.clone()) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("hour {} is held by two segments, {other} and {}: ghbench never writes that; load the table again with --drop", hour.stem, manifest.name),
                    ));
                }
            }
            listing.segments.push(Live { manifest, data });
        }
        listing.segments.sort_by_key(|s| s.manifest.hours.first().map(|h| hour_order(&h.stem)));
        for (name, path) in files {
            let Some(stem) = hour_stem(name) else { continue };
            match held.contains_key(&stem) {
                false => {
                    listing.loose.insert(stem);
                }
                true => {
                    listing.stale.push(path.clone());
                    if let Some(entry) = names.get(entry_of(&stem).as_str()) {
                        listing.stale.push((*entry).clone());
                    }
                }
            }
        }
        Ok(listing)
    }

    /// The live segment holding `stem`.
    pub fn segment_of(&self, stem: &str) -> Option<&Live> {
        self.segments.iter().find(|s| s.manifest.rows_of(stem).is_some())
    }
}

/// A stem's place in time (`2015-01-01-2` before `2015-01-01-10`, which
/// their names' order is not); a name that is no hour goes last.
pub fn hour_order(stem: &str) -> (bool, Option<Hour>, String) {
    let hour = stem.parse::<Hour>().ok();
    (hour.is_none(), hour, stem.to_string())
}

/// What a compaction merges: a loose hour, or a live segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    Hour { stem: String, rows: u64 },
    Segment { name: String, first: String, rows: u64 },
}

impl Unit {
    pub fn rows(&self) -> u64 {
        match self {
            Unit::Hour { rows, .. } | Unit::Segment { rows, .. } => *rows,
        }
    }

    fn first(&self) -> &str {
        match self {
            Unit::Hour { stem, .. } => stem,
            Unit::Segment { first, .. } => first,
        }
    }
}

/// Which units to merge, each group into one segment: in hour order, a
/// group takes units while it stays within `target_rows` (a unit of that
/// many rows or more stays as it is). A group is merged once it is full,
/// or holds `min_units` units: the last, open group waits for more hours
/// until then, so that loading hour by hour does not rewrite a growing
/// segment at every load. A group of one unit is left as it is.
pub fn plan(mut units: Vec<Unit>, target_rows: u64, min_units: usize) -> Vec<Vec<Unit>> {
    units.sort_by_key(|unit| hour_order(unit.first()));
    let mut groups: Vec<(Vec<Unit>, bool)> = Vec::new();
    let mut open: Vec<Unit> = Vec::new();
    let mut rows = 0;
    for unit in units {
        if !open.is_empty() && rows + unit.rows() > target_rows {
            groups.push((std::mem::take(&mut open), true));
            rows = 0;
        }
        rows += unit.rows();
        open.push(unit);
    }
    let open_is_due = open.len() >= min_units || rows >= target_rows;
    groups.push((open, open_is_due));
    groups.into_iter().filter(|(group, due)| *due && group.len() > 1).map(|(group, _)| group).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(stem: &str, rows: u64) -> Unit {
        Unit::Hour { stem: stem.into(), rows }
    }

    #[test]
    fn segment_names_are_told_from_hour_names() {
        assert!(is_segment_name("2015-01-01-0--2015-01-01-23.g1"));
        assert!(!is_segment_name("2015-01-01-0"));
        assert!(!is_segment_name("2015-01-01-0--notes.g1"));
        assert!(!is_segment_name("2015-01-01-0--2015-01-01-23.gx"));
    }

    #[test]
    fn groups_fill_to_the_target_and_the_last_waits_for_enough_hours() {
        // Twelve hours, given out of order: by name 2015-01-01-10 sorts before -2.
        let hours: Vec<Unit> = (0..12).rev().map(|h| hour(&format!("2015-01-01-{h}"), 10)).collect();
        // 30 rows a group: four full groups of three.
        let groups = plan(hours.clone(), 30, 24);
        assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 3, 3]);
        assert_eq!(groups[0], vec![hour("2015-01-01-0", 10), hour("2015-01-01-1", 10), hour("2015-01-01-2", 10)], "in hour order");
        assert_eq!(groups[3], vec![hour("2015-01-01-9", 10), hour("2015-01-01-10", 10), hour("2015-01-01-11", 10)], "in hour order");
        // Room for all: one open group of 12 hours, under 24 units: it waits.
        assert!(plan(hours.clone(), 1000, 24).is_empty());
        assert_eq!(plan(hours, 1000, 12).len(), 1, "twelve hours make the group due");
        // A segment as full as the target stays as it is.
        let units = vec![Unit::Segment { name: "s".into(), first: "2015-01-01-0".into(), rows: 30 }, hour("2015-01-01-5", 10), hour("2015-01-01-6", 10)];
        assert_eq!(plan(units, 30, 2), vec![vec![hour("2015-01-01-5", 10), hour("2015-01-01-6", 10)]]);
    }
}

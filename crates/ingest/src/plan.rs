//! Which hours each engine loads, replaces or keeps, decided once at the start
//! of a run from every engine's ledger: an hour listed as loaded is kept
//! unless it was asked for again (`--reload`), the engine finds its stored
//! copy no longer whole, or the source now holds another copy of its file
//! than the one it was loaded from.
//!
//! Which copy a stored hour came from is compared for local folders only:
//! the file's size (a `stat`), then, when the sizes agree and the entry has
//! one (entries of older ghbench versions do not), its BLAKE3 digest
//! (one read of the file, well over 1 GB/s: a rerun over a year of hours
//! reads them all once). An HTTP source is not compared: that would download
//! every skipped hour, and GH Archive's published files do not change.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
#[cfg(test)]
use std::path::Path;

use ghbench_core::{Engine, Hour};

use crate::digest;
use crate::pipeline::IngestOptions;
use crate::report::StoredNotice;
use crate::sink::StoredHour;
use crate::source::Source;

/// One hour to load, and the engines that load it.
#[derive(Debug, Clone)]
pub struct PlannedHour {
    pub hour: Hour,
    pub needed: Vec<Engine>,
    /// Of `needed`: the engines that replace a stored copy of the hour.
    pub replacing: Vec<Engine>,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub queue: VecDeque<PlannedHour>,
    /// Hours every engine keeps as stored.
    pub skipped: Vec<Hour>,
    /// Hours stored from another copy of their file than the source's now,
    /// kept as they are (without [`IngestOptions::reload_changed`]).
    pub changed: Vec<StoredNotice>,
    /// Hours replaced, and why.
    pub reloaded: Vec<StoredNotice>,
    /// Hours kept that were loaded from a damaged copy of their file.
    pub damaged_copies: Vec<StoredNotice>,
    /// Lines quarantined when the hours every engine keeps were loaded (as
    /// the first engine's ledger lists them: the policy is every engine's).
    pub kept_quarantined: u64,
    /// What an engine's check says once per run (e.g. entries it cannot check).
    pub notes: Vec<String>,
}

/// Every hour the run is about: its range and the hours to reload, in order.
pub fn run_hours(options: &IngestOptions) -> Vec<Hour> {
    let hours: BTreeSet<Hour> = options.hours.iter().chain(options.reload.iter().copied()).collect();
    hours.into_iter().collect()
}

/// Decides, hour by hour and engine by engine, from what each engine's ledger
/// says it stores (`stored`, by engine, in the order the engines load).
pub fn plan(options: &IngestOptions, stored: &[(Engine, BTreeMap<String, StoredHour>)]) -> Plan {
    let mut plan = Plan::default();
    for (engine, hours) in stored {
        let notes: BTreeSet<&String> = hours.values().filter_map(|h| h.note.as_ref()).collect();
        plan.notes.extend(notes.into_iter().map(|note| format!("{engine}: {note}")));
    }
    // One read of a file, however many engines stored its hour.
    let mut digests = HashMap::new();
    for hour in run_hours(options) {
        let stem = hour.stem();
        let mut planned = PlannedHour { hour, needed: Vec::new(), replacing: Vec::new() };
        let mut changed = false;
        for (engine, hours) in stored {
            let Some(kept) = hours.get(&stem) else {
                planned.needed.push(engine.clone());
                continue;
            };
            let notice = |detail: String| StoredNotice { hour, engine: engine.clone(), detail };
            let why = if options.reload.contains(&hour) {
                Some("asked for with --reload".to_string())
            } else if let Some(damage) = &kept.damage {
                Some(format!("its stored copy is not whole: {damage}"))
            } else {
                match source_differs(&options.source, hour, kept, &mut digests) {
                    Some(detail) if options.reload_changed => Some(format!("loaded from another copy of its file ({detail})")),
                    Some(detail) => {
                        plan.changed.push(notice(detail));
                        changed = true;
                        None
                    }
                    None => {
                        if let Some(defect) = &kept.file_defect {
                            plan.damaged_copies.push(notice(defect.clone()));
                        }
                        None
                    }
                }
            };
            if let Some(why) = why {
                plan.reloaded.push(notice(why));
                planned.needed.push(engine.clone());
                planned.replacing.push(engine.clone());
            }
        }
        if !planned.needed.is_empty() || options.dry_run {
            plan.queue.push_back(planned);
        } else if !changed {
            plan.kept_quarantined += stored.first().and_then(|(_, hours)| hours.get(&stem)).map_or(0, |h| h.quarantined);
            plan.skipped.push(hour);
        }
    }
    plan
}

/// How the source's file for `hour` differs from the copy the stored hour was
/// loaded from, if it does (local folders only; see the module's note).
/// `digests` keeps each file's digest once read.
fn source_differs(source: &Source, hour: Hour, stored: &StoredHour, digests: &mut HashMap<Hour, Option<String>>) -> Option<String> {
    let Source::Dir(dir) = source else { return None };
    let path = dir.join(hour.file_name());
    // Gone from the source: what is stored is all there is, not another copy.
    let size = std::fs::metadata(&path).ok()?.len();
    // An older ghbench recorded the bytes it read, which stop early in a
    // corrupt file: only a whole file's are its size.
    let stored_size = stored.compressed_bytes.filter(|_| stored.source_digest.is_some() || stored.file_defect.is_none())?;
    if size != stored_size {
        return Some(format!("stored from {stored_size} bytes, {} now has {size}", path.display()));
    }
    let recorded = stored.source_digest.as_deref()?;
    let now = digests.entry(hour).or_insert_with(|| digest::of_file(&path).ok().map(|(_, digest)| digest)).as_deref()?;
    (now != recorded).then(|| {
        format!("stored from a file of digest {}, {} now has {}", digest::short(recorded), path.display(), digest::short(now))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_core::HourRange;

    fn options(source: &Path, first: &str, hours: u32) -> IngestOptions {
        IngestOptions {
            hours: HourRange::starting_at(first.parse().unwrap(), hours).unwrap(),
            source: Source::Dir(source.to_path_buf()),
            engines: Vec::new(),
            policy: Default::default(),
            table: "t".parse().unwrap(),
            concurrency: 1,
            retries: 0,
            timeout: std::time::Duration::from_secs(1),
            force: false,
            server_folders: Vec::new(),
            check_stored: false,
            whole_table_timeout: None,
            accept_damaged: false,
            quarantine_dir: source.join("q"),
            drop: false,
            dry_run: false,
            reload: BTreeSet::new(),
            reload_changed: false,
        }
    }

    fn kept(bytes: u64, digest: Option<String>) -> StoredHour {
        StoredHour { events: 1, compressed_bytes: Some(bytes), source_digest: digest, ..StoredHour::default() }
    }

    #[test]
    fn each_hour_is_kept_reloaded_or_reported_engine_by_engine() {
        let dir = tempfile::tempdir().unwrap();
        let file = |stem: &str, body: &[u8]| {
            let path = dir.path().join(format!("{stem}.json.gz"));
            std::fs::write(&path, body).unwrap();
            digest::of_file(&path).unwrap()
        };
        let (size0, digest0) = file("2015-01-01-0", b"zero");
        let (size1, _) = file("2015-01-01-1", b"one, now longer");
        let (size2, _) = file("2015-01-01-2", b"two!");
        let (pg, polars) = (Engine::from("postgres"), Engine::from("polars"));
        let pg_hours = BTreeMap::from([
            ("2015-01-01-0".to_string(), StoredHour { file_defect: Some("truncated".into()), ..kept(size0, Some(digest0.clone())) }),
            ("2015-01-01-1".to_string(), kept(size1 - 5, None)),
            // Same size, another digest.
            ("2015-01-01-2".to_string(), kept(size2, Some(digest0.clone()))),
        ]);
        let polars_hours = BTreeMap::from([
            ("2015-01-01-0".to_string(), StoredHour { damage: Some("cut short".into()), ..kept(size0, Some(digest0.clone())) }),
            ("2015-01-01-1".to_string(), StoredHour { note: Some("old entry".into()), ..kept(size1, None) }),
        ]);
        let stored = [(pg.clone(), pg_hours), (polars.clone(), polars_hours)];
        let mut asked = options(dir.path(), "2015-01-01T00", 4);
        asked.reload.insert("2015-01-02T00".parse().unwrap());
        let plan = plan(&asked, &stored);

        let queued: Vec<(String, Vec<Engine>, Vec<Engine>)> =
            plan.queue.iter().map(|p| (p.hour.stem(), p.needed.clone(), p.replacing.clone())).collect();
        assert_eq!(
            queued,
            [
                ("2015-01-01-0".into(), vec![polars.clone()], vec![polars.clone()]),
                ("2015-01-01-2".into(), vec![polars.clone()], vec![]),
                ("2015-01-01-3".into(), vec![pg.clone(), polars.clone()], vec![]),
                ("2015-01-02-0".into(), vec![pg.clone(), polars.clone()], vec![]),
            ]
        );
        let changed: Vec<(String, &str)> = plan.changed.iter().map(|c| (c.hour.stem(), c.engine.name())).collect();
        assert_eq!(changed, [("2015-01-01-1".into(), "postgres"), ("2015-01-01-2".into(), "postgres")]);
        assert!(plan.changed[0].detail.contains(&format!("stored from {} bytes", size1 - 5)), "{:?}", plan.changed);
        assert!(plan.changed[1].detail.contains("stored from a file of digest blake3:"), "{:?}", plan.changed);
        assert_eq!(plan.damaged_copies.len(), 1, "hour 0 on postgres: kept, from a damaged copy");
        assert!(plan.skipped.is_empty(), "hour 1 is neither loaded nor skipped: {:?}", plan.skipped);
        assert_eq!(plan.notes, ["polars: old entry"]);

        // With reload_changed (bench), the changed hours are replaced instead.
        asked.reload_changed = true;
        let plan = super::plan(&asked, &stored);
        assert!(plan.changed.is_empty());
        let replaced: Vec<String> = plan.reloaded.iter().filter(|r| r.engine == pg).map(|r| r.hour.stem()).collect();
        assert_eq!(replaced, ["2015-01-01-1", "2015-01-01-2"]);
        assert_eq!(plan.skipped.len(), 0);
    }
}

//! Writing a range of generated hours to a folder, in parallel, and the manifest
//! that records what each file holds so tests can check a loader exactly.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use ghbench_core::{summarise_hours, Hour, HourRange};
use serde::{Deserialize, Serialize};

use crate::defects::{damage, DamagedHour, DefectOptions, Expected, Injected};
use crate::event::Generator;

/// Written beside the hour files.
pub const MANIFEST: &str = "gen-manifest.json";

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub out: PathBuf,
    pub range: HourRange,
    /// Events per hour; `None` means the profile's mean.
    pub events: Option<u64>,
    pub defects: DefectOptions,
    /// Worker threads; the files do not depend on it.
    pub threads: usize,
    /// How the profile was chosen, for the manifest (`built-in default` or a path).
    pub profile_name: String,
}

#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("--events must be at least 1")]
    NoEvents,
    #[error("{name} must be a probability between 0 and 1, got {value}")]
    NotAProbability { name: &'static str, value: f64 },
    #[error("cannot write {path}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{path} lists hours this run would not make again ({hours}), made with other settings ({theirs}; this run: {ours}): \
         one manifest cannot describe both; generate into another folder, or with their settings, or remove those hours' files and the manifest first"
    )]
    OtherSettings { path: PathBuf, hours: String, theirs: String, ours: String },
    #[error("{lines} events cannot fill {hours} hours (a split gives every hour one at least: an empty hour file reads as damaged input); ask fewer hours, or give more hour files")]
    TooFewLines { lines: u64, hours: u64 },
    #[error("{path} holds {other}, which this split would not write: split into an empty folder (or one holding this same split)")]
    NotASplitFolder { path: PathBuf, other: String },
    #[error("{path} is a source of the split and lies in the folder it writes: its hours would be written over before they are read; split into another folder")]
    SourceInSplitFolder { path: PathBuf },
    #[error("{path} is given twice (the same file under two names, or overlapping globs): its events would be split twice; give each hour file once")]
    SourceTwice { path: PathBuf },
    #[error("{path} changed while it was split (its digest differs from the one counted first); split again once it is whole")]
    SourceChanged { path: PathBuf },
}

/// One hour's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HourManifest {
    pub hour: Hour,
    pub file: String,
    /// Events generated before any damage.
    pub generated: u64,
    /// Size of the gzip file.
    pub bytes: u64,
    /// Its content (`blake3:…`, as the ingest ledgers record a source file):
    /// a reader can tell the file is still the one written.
    pub digest: String,
    pub injected: Injected,
    pub expected: Expected,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    pub hours: usize,
    pub generated: u64,
    pub bytes: u64,
    pub corrupt_lines: u64,
    pub nul_escapes: u64,
    pub invalid_utf8: u64,
    pub truncated_files: u64,
    /// What a correct loader reports over all hours.
    pub expected: Expected,
}

/// Every generated hour in its folder: those of this run and those an
/// earlier run made there with the same settings.
/// The schema and version `gen-manifest.json` names.
pub const MANIFEST_SCHEMA: &str = "ghbench-gen-manifest/1";

fn manifest_schema() -> String {
    MANIFEST_SCHEMA.into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// `ghbench-gen-manifest/1` (absent in manifests written before it).
    #[serde(default = "manifest_schema")]
    pub schema: String,
    pub generator: String,
    pub seed: u64,
    pub profile: String,
    /// The real files the profile was calibrated on (names only).
    pub profile_source: Vec<String>,
    pub events_per_hour: u64,
    pub defects: DefectOptions,
    /// How new actors and repositories keep arriving (the profile's growth);
    /// absent: fixed pools, as in every manifest before growth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<crate::growth::Growth>,
    pub totals: Totals,
    pub hours: Vec<HourManifest>,
}

/// One hour, damaged as `defects` asks; the same bytes for a seed, hour and count on any thread.
pub fn generate_hour(gen: &Generator, hour: Hour, events: u64, defects: DefectOptions) -> DamagedHour {
    let lines = gen.events(hour, events);
    // Damage draws from its own stream, so the events are the same with and without it.
    damage(lines, defects, &mut gen.hour_rng(hour, 1))
}

/// Writes every hour of `options.range` to `options.out`, then the manifest.
/// `on_hour` is called as each hour is written (from worker threads).
pub fn run(gen: &Generator, options: &RunOptions, on_hour: &(dyn Fn(&HourManifest) + Sync)) -> Result<Manifest, GenError> {
    let events = options.events.unwrap_or(gen.profile().events_per_hour);
    if events == 0 {
        return Err(GenError::NoEvents);
    }
    for (name, value) in [("--defects", options.defects.rate), ("--truncate-prob", options.defects.truncate_prob)] {
        if !(0.0..=1.0).contains(&value) {
            return Err(GenError::NotAProbability { name, value });
        }
    }
    let out = &options.out;
    std::fs::create_dir_all(out).map_err(|source| GenError::Write { path: out.clone(), source })?;
    let settings = Manifest {
        schema: MANIFEST_SCHEMA.into(),
        generator: concat!("ghbench-gen ", env!("CARGO_PKG_VERSION")).into(),
        seed: gen.seed(),
        profile: options.profile_name.clone(),
        profile_source: gen.profile().source.clone(),
        events_per_hour: events,
        defects: options.defects,
        growth: gen.profile().growth.clone(),
        totals: Totals::default(),
        hours: Vec::new(),
    };
    let kept = kept_hours(out, &settings, &options.range)?;
    // While this run's hours are written the manifest lists the kept ones
    // alone: a run that fails part way leaves no entry for a file it replaced.
    write_manifest(out, &settings, kept.clone())?;
    let hours: Vec<Hour> = options.range.iter().collect();
    let results: Mutex<Vec<Option<HourManifest>>> = Mutex::new(vec![None; hours.len()]);
    let first_error: Mutex<Option<GenError>> = Mutex::new(None);
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|scope| {
        for _ in 0..options.threads.clamp(1, hours.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= hours.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                match write_hour(gen, out, hours[i], events, options.defects) {
                    Ok(m) => {
                        on_hour(&m);
                        results.lock().expect("no panics while locked")[i] = Some(m);
                    }
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        first_error.lock().expect("no panics while locked").get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("no panics while locked") {
        return Err(e);
    }
    let mut hours = kept;
    hours.extend(results.into_inner().expect("no panics while locked").into_iter().flatten());
    hours.sort_by_key(|h| h.hour);
    write_manifest(out, &settings, hours)
}

/// The hours an earlier run made in `out` that this run keeps: those its
/// manifest lists outside `range` whose file is still there. An error when
/// they were made with other settings than `this`: one manifest cannot
/// describe both (the hours this run makes again are replaced whatever made them).
fn kept_hours(out: &Path, this: &Manifest, range: &HourRange) -> Result<Vec<HourManifest>, GenError> {
    let path = out.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(GenError::Read { path, source }),
    };
    // Read loosely first: a manifest of an older ghbench still names its files.
    let listed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let remade: HashSet<String> = range.iter().map(|h| h.file_name()).collect();
    let outside: HashSet<&str> = listed["hours"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["file"].as_str())
        .filter(|file| !remade.contains(*file) && out.join(file).is_file())
        .collect();
    if outside.is_empty() {
        return Ok(Vec::new());
    }
    match serde_json::from_str::<Manifest>(&text) {
        Ok(earlier) if same_settings(&earlier, this) => Ok(earlier.hours.into_iter().filter(|h| outside.contains(h.file.as_str())).collect()),
        earlier => Err(GenError::OtherSettings {
            hours: summarise_hours(outside.iter().filter_map(|f| f.strip_suffix(".json.gz")?.parse().ok()), 10),
            theirs: earlier.map_or_else(|e| format!("unknown: not a manifest this ghbench reads ({e})"), |m| settings_of(&m)),
            ours: settings_of(this),
            path,
        }),
    }
}

/// Whether two runs make the same file of the same hour.
fn same_settings(a: &Manifest, b: &Manifest) -> bool {
    (&a.generator, a.seed, &a.profile, &a.profile_source, a.events_per_hour, a.defects, &a.growth)
        == (&b.generator, b.seed, &b.profile, &b.profile_source, b.events_per_hour, b.defects, &b.growth)
}

fn settings_of(m: &Manifest) -> String {
    format!(
        "seed {}, {} events per hour, defects {} (truncate {}), profile {}, {}, {}",
        m.seed,
        m.events_per_hour,
        m.defects.rate,
        m.defects.truncate_prob,
        m.profile,
        crate::growth::Pools::said(m.growth.as_ref()),
        m.generator
    )
}

/// Writes the manifest of `hours` made with `settings`, whole or not at all
/// (written aside, then renamed into place); none when there are no hours.
fn write_manifest(out: &Path, settings: &Manifest, hours: Vec<HourManifest>) -> Result<Manifest, GenError> {
    let path = out.join(MANIFEST);
    let manifest = Manifest { totals: totals(&hours), hours, ..settings.clone() };
    if manifest.hours.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(GenError::Write { path, source: e }),
            _ => Ok(manifest),
        };
    }
    let json = serde_json::to_string_pretty(&manifest).expect("manifests serialise");
    let partial = out.join(format!("{MANIFEST}.partial"));
    std::fs::write(&partial, json).map_err(|source| GenError::Write { path: partial.clone(), source })?;
    std::fs::rename(&partial, &path).map_err(|source| GenError::Write { path, source })?;
    Ok(manifest)
}

fn write_hour(gen: &Generator, out: &Path, hour: Hour, events: u64, defects: DefectOptions) -> Result<HourManifest, GenError> {
    let damaged = generate_hour(gen, hour, events, defects);
    let path = out.join(hour.file_name());
    std::fs::write(&path, &damaged.gzip).map_err(|source| GenError::Write { path, source })?;
    Ok(HourManifest {
        hour,
        file: hour.file_name(),
        generated: events,
        bytes: damaged.gzip.len() as u64,
        digest: ghbench_core::digest::of_bytes(&damaged.gzip),
        injected: damaged.injected,
        expected: damaged.expected,
    })
}

fn totals(hours: &[HourManifest]) -> Totals {
    let mut t = Totals { hours: hours.len(), ..Totals::default() };
    let mut quarantined: BTreeMap<String, u64> = BTreeMap::new();
    for h in hours {
        t.generated += h.generated;
        t.bytes += h.bytes;
        t.corrupt_lines += h.injected.corrupt_lines;
        t.nul_escapes += h.injected.nul_escapes;
        t.invalid_utf8 += h.injected.invalid_utf8;
        t.truncated_files += u64::from(h.injected.truncated_file);
        t.expected.lines += h.expected.lines;
        t.expected.events += h.expected.events;
        t.expected.sanitized += h.expected.sanitized;
        for (reason, n) in &h.expected.quarantined {
            *quarantined.entry(reason.clone()).or_default() += n;
        }
    }
    t.expected.quarantined = quarantined;
    t
}

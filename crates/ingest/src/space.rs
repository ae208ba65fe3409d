//! Whether a load will fit, decided before it writes anything: each engine's
//! need, from the gzip bytes of the hours it is to load (a folder's by `stat`,
//! an http source's estimated from a sample of HEAD requests) times what it stores
//! per gzip byte (measured on what it holds; with nothing stored yet, the JSON
//! size of the first hour to load: more than PostgreSQL's jsonb and polars store, less
//! than MariaDB's text JSON and the normalized layout with their indexes), plus
//! what grows beside the tables (PostgreSQL's WAL: twice what the load writes on
//! the server, up to `max_wal_size`; a test's 24 MB load once asked for the
//! whole 8.6 GB), against the free space of the file systems ghbench can see.
//! Engines on one file system add up. A load that would not fit is refused
//! with the numbers, unless `--force`; a full disk still stops a forced load.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ghbench_core::{Engine, Hour};

use crate::source::Source;

/// What an engine says of its room (see [`crate::sink::EngineSink::room`]).
#[derive(Debug, Clone, Default)]
pub struct Room {
    /// What the table holds on disk now, indexes included.
    pub stored_bytes: u64,
    /// Where the table grows.
    pub free: Option<Free>,
    /// Room needed whatever the load's size, each with where it lives.
    pub besides: Vec<Besides>,
    /// The engine writes what the load stored once more after it, beside
    /// it until that ends (polars' merge of hours into segments).
    pub rewritten_after: Option<Rewrite>,
}

/// What an engine rewrites after a load (see [`Room::rewritten_after`]).
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub what: String,
    /// Hours stored and not rewritten yet, and their bytes: rewritten with the load's.
    pub waiting_hours: usize,
    pub waiting_bytes: u64,
    /// The rewrite is done once this many hours wait, the load's included.
    pub from_hours: usize,
}

/// Where free space is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Free {
    /// A folder on this machine: its file system's free space.
    Folder(PathBuf),
    /// What the server reports (MongoDB's `dbStats` fs fields): its name for it.
    Reported { bytes: u64, by: String },
}

#[derive(Debug, Clone)]
pub struct Besides {
    pub what: String,
    /// The most it can need (PostgreSQL's WAL: up to `max_wal_size`).
    pub bytes: u64,
    pub free: Option<Free>,
    /// Some(n): it grows with what the loads sharing it write, taken as n
    /// times their bytes, so a small load needs little of `bytes`
    /// (PostgreSQL's WAL logs each row once, and an index page once more at
    /// its first change after a checkpoint: about twice what is stored, an
    /// estimate, not a bound, which `bytes` caps). None: `bytes` whatever
    /// the load's size.
    pub times_what_is_written: Option<f64>,
}

/// A [`Besides`] of the load, summed over the engines sharing it.
struct SharedNeed<'a> {
    engine: &'a Engine,
    besides: &'a Besides,
    written: u64,
}

impl SharedNeed<'_> {
    fn bytes(&self) -> u64 {
        match self.besides.times_what_is_written {
            Some(times) => self.besides.bytes.min((self.written as f64 * times) as u64),
            None => self.besides.bytes,
        }
    }

    fn text(&self) -> String {
        let (engine, what, bytes) = (self.engine, &self.besides.what, size_text(self.bytes()));
        match self.besides.times_what_is_written {
            Some(times) if self.bytes() < self.besides.bytes => {
                format!("{engine} {what} {}: {bytes} of it for this load ({times}× the {} it writes there)", size_text(self.besides.bytes), size_text(self.written))
            }
            _ => format!("{engine} {what} {bytes}"),
        }
    }
}

/// One engine's part of a load, for [`check`].
pub struct EngineLoad {
    pub engine: Engine,
    pub room: Room,
    /// The gzip bytes of the hours its ledger lists (what `stored_bytes` came from).
    pub stored_source_bytes: u64,
    /// The hours it is to load.
    pub hours: Vec<Hour>,
}

/// The verdict: what each file system needs and has, one line each.
#[derive(Debug, Default)]
pub struct Verdict {
    pub lines: Vec<String>,
    /// Lines of file systems the load would not fit.
    pub short: Vec<String>,
}

/// A file system's share of the load.
struct Share {
    place: String,
    free: u64,
    need: u64,
    parts: Vec<String>,
}

/// How many hours of an http source are sized by a HEAD request: spread
/// over the load, first and last included (8,760 requests would take minutes).
pub const HTTP_SAMPLE: usize = 24;

/// The sizes of the hours a load reads, as a check works from them.
#[derive(Debug, Default)]
pub struct SourceSizes {
    /// Each hour's gzip bytes: a folder's measured (`stat`); an http source's
    /// sampled ones measured and the others at the sample's mean.
    sizes: BTreeMap<Hour, u64>,
    /// JSON bytes per gzip byte of the first hour (when some engine stores
    /// nothing yet to measure on): None when not needed or unreadable.
    json_ratio: Option<f64>,
    /// How the sizes were had, when not every one was measured.
    estimated: Option<String>,
    /// Why none could be had.
    unknown: Option<String>,
}

impl SourceSizes {
    /// The hours' gzip bytes (estimated where [`SourceSizes`] says).
    pub fn total(&self) -> u64 {
        self.sizes.values().sum()
    }

    /// JSON bytes per gzip byte of the first hour, when asked and readable.
    pub fn json_ratio(&self) -> Option<f64> {
        self.json_ratio
    }
}

/// The sizes of `hours` in `source` (see [`SourceSizes`]); the first hour
/// read whole when `json_ratio` is asked (an http one downloaded once more).
pub async fn source_sizes(source: &Source, hours: &[Hour], json_ratio: bool) -> SourceSizes {
    let mut sized = SourceSizes::default();
    let Some(first) = hours.first().copied() else { return sized };
    match source {
        Source::Dir(dir) => return folder_sizes(dir, hours, json_ratio),
        Source::Http { .. } => {
            let step = (hours.len() as f64 / HTTP_SAMPLE as f64).max(1.0);
            let mut picked: Vec<Hour> = (0..HTTP_SAMPLE.min(hours.len())).map(|i| hours[((i as f64 * step) as usize).min(hours.len() - 1)]).collect();
            picked.push(hours[hours.len() - 1]);
            picked.dedup();
            let mut measured = BTreeMap::new();
            for hour in &picked {
                match source.size_of(*hour).await {
                    Ok(Some(bytes)) => {
                        measured.insert(*hour, bytes);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        sized.unknown = Some(format!("sizing the source's hours by HEAD failed ({e})"));
                        return sized;
                    }
                }
            }
            if measured.is_empty() {
                sized.unknown = Some(format!("the http source named no size (Content-Length) for any of {} hours asked by HEAD", picked.len()));
                return sized;
            }
            let mean = measured.values().sum::<u64>() / measured.len() as u64;
            sized.sizes = hours.iter().map(|h| (*h, measured.get(h).copied().unwrap_or(mean))).collect();
            sized.estimated = Some(format!(
                "the hours' sizes estimated from {} of {} by HEAD (Content-Length), {} each on average",
                measured.len(),
                hours.len(),
                size_text(mean)
            ));
            if json_ratio {
                sized.json_ratio = downloaded_json_ratio(source, first).await;
            }
        }
    }
    sized
}

/// [`source_sizes`] of a folder: every hour's measured.
pub fn folder_sizes(dir: &Path, hours: &[Hour], json_ratio: bool) -> SourceSizes {
    SourceSizes {
        sizes: hours.iter().map(|&h| (h, std::fs::metadata(dir.join(h.file_name())).map_or(0, |m| m.len()))).collect(),
        json_ratio: json_ratio.then(|| hours.first().and_then(|first| json_per_gzip_byte(&dir.join(first.file_name())))).flatten(),
        ..SourceSizes::default()
    }
}

/// JSON bytes per gzip byte of an hour downloaded whole; None when it cannot be.
async fn downloaded_json_ratio(source: &Source, hour: Hour) -> Option<f64> {
    use tokio::io::AsyncReadExt as _;
    let Ok(Some(crate::source::HourBytes::Stream(mut stream))) = source.open(hour).await else { return None };
    let mut gzip = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(600), stream.read_to_end(&mut gzip)).await.ok()?.ok()?;
    json_per_gzip(&gzip[..], gzip.len() as u64)
}

/// The load's need against free space (see the module's note), from the
/// hours' `sizes` ([`source_sizes`]).
pub fn check(sizes: &SourceSizes, loads: &[EngineLoad]) -> Verdict {
    let mut verdict = Verdict::default();
    if let Some(why) = &sizes.unknown {
        verdict.lines.push(format!("free space not checked: {why}"));
        return verdict;
    }
    verdict.lines.extend(sizes.estimated.clone());
    let size = |hour: &Hour| sizes.sizes.get(hour).copied().unwrap_or(0);
    let mut shares: BTreeMap<String, Share> = BTreeMap::new();
    // Keyed without the bytes: each engine reads the server's WAL at its
    // own moment, a segment more or less.
    let mut shared: BTreeMap<(String, String), SharedNeed> = BTreeMap::new();
    for load in loads {
        let source_bytes: u64 = load.hours.iter().map(size).sum();
        // Nothing to load here (or only hours the source lacks): nothing to fit.
        if source_bytes == 0 {
            continue;
        }
        // A table whose size reads 0 although hours are stored (MariaDB's
        // statistics after a killed load) is not measured on.
        let stored_source_bytes = if load.room.stored_bytes == 0 { 0 } else { load.stored_source_bytes };
        let (ratio, measured) = match stored_source_bytes {
            0 => {
                let ratio = sizes.json_ratio;
                let Some(ratio) = ratio else {
                    verdict.lines.push(format!("{}: free space not checked (the first hour's file could not be read)", load.engine));
                    continue;
                };
                (ratio, "taken at their JSON size: nothing stored yet to measure on".to_string())
            }
            stored => {
                let ratio = load.room.stored_bytes as f64 / stored as f64;
                (ratio, format!("× {ratio:.2}, the bytes stored per gzip byte measured on what it holds"))
            }
        };
        let table = (source_bytes as f64 * ratio) as u64;
        let what = format!("{} table {} ({} of gzip hours {measured})", load.engine, size_text(table), size_text(source_bytes));
        add(&mut shares, &mut verdict, &load.engine, load.room.free.as_ref(), table, what);
        if let Some(rewrite) = load.room.rewritten_after.as_ref().filter(|r| r.waiting_hours + load.hours.len() >= r.from_hours) {
            let bytes = table + rewrite.waiting_bytes;
            add(&mut shares, &mut verdict, &load.engine, load.room.free.as_ref(), bytes, format!("{} {} {}", load.engine, rewrite.what, size_text(bytes)));
        }
        // Engines on one server share its needs (postgres and normalized
        // one WAL): counted once, as the first engine's, grown by what each writes.
        for besides in &load.room.besides {
            let need = shared.entry((format!("{:?}", besides.free), besides.what.clone())).or_insert(SharedNeed { engine: &load.engine, besides, written: 0 });
            need.written += table;
        }
    }
    for need in shared.values() {
        add(&mut shares, &mut verdict, need.engine, need.besides.free.as_ref(), need.bytes(), need.text());
    }
    for share in shares.into_values() {
        let line =
            format!("{} needs about {} ({}) where {} are free", share.place, size_text(share.need), share.parts.join("; "), size_text(share.free));
        if share.need > share.free {
            verdict.short.push(line.clone());
        }
        verdict.lines.push(line);
    }
    verdict
}

/// Adds `bytes` to the share of the file system `free` names.
fn add(shares: &mut BTreeMap<String, Share>, verdict: &mut Verdict, engine: &Engine, free: Option<&Free>, bytes: u64, what: String) {
    let (key, place, available) = match free {
        None => {
            verdict.lines.push(format!("{what}: free space not checked (its server is not on this machine, or does not say)"));
            return;
        }
        Some(Free::Reported { bytes: free, by }) => (format!("{engine} {by}"), format!("{engine}'s storage ({by})"), Ok(*free)),
        Some(Free::Folder(folder)) => {
            let device = std::fs::metadata(folder).map(|m| m.dev());
            let key = device.as_ref().map_or_else(|_| folder.display().to_string(), |d| format!("device {d}"));
            (key, folder.display().to_string(), fs4::available_space(folder))
        }
    };
    let available = match available {
        Ok(bytes) => bytes,
        Err(e) => {
            verdict.lines.push(format!("{what}: free space not checked ({place}: {e})"));
            return;
        }
    };
    let share = shares.entry(key).or_insert_with(|| Share { place, free: available, need: 0, parts: Vec::new() });
    share.need += bytes;
    share.parts.push(what);
}

/// The JSON bytes per gzip byte of a file (one read of it); None when unreadable.
fn json_per_gzip_byte(path: &Path) -> Option<f64> {
    json_per_gzip(std::fs::File::open(path).ok()?, std::fs::metadata(path).ok()?.len())
}

/// The JSON bytes per gzip byte of `gzip` bytes read from `reader`.
fn json_per_gzip(reader: impl Read, gzip: u64) -> Option<f64> {
    let mut json = 0u64;
    let mut decoder = flate2::read::MultiGzDecoder::new(reader);
    let mut buffer = vec![0u8; 1 << 16];
    // A damaged file counts as far as it reads.
    while let Ok(n) = decoder.read(&mut buffer) {
        if n == 0 {
            break;
        }
        json += n as u64;
    }
    (gzip > 0 && json > 0).then(|| json as f64 / gzip as f64)
}

/// Bytes as people read them: `41.2 MB`, `6.3 GB`.
pub fn size_text(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000_000 => format!("{:.1} kB", b / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_on_one_file_system_add_up_and_a_load_too_big_is_short() {
        let dir = tempfile::tempdir().unwrap();
        let hour: Hour = "2015-01-01T00".parse().unwrap();
        let lines = "{\"a\":1}\n".repeat(10_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, lines.as_bytes()).unwrap();
        std::fs::write(dir.path().join(hour.file_name()), gz.finish().unwrap()).unwrap();
        let free = fs4::available_space(dir.path()).unwrap();
        let load = |engine: &str, stored_bytes: u64, stored_source_bytes: u64, besides: u64| EngineLoad {
            engine: Engine::from(engine),
            room: Room {
                stored_bytes,
                free: Some(Free::Folder(dir.path().to_path_buf())),
                // Each engine a server of its own here (its own WAL).
                besides: vec![Besides { what: format!("WAL of server {engine}"), bytes: besides, free: Some(Free::Folder(dir.path().to_path_buf())), times_what_is_written: None }],
                rewritten_after: (engine == "b").then(|| Rewrite { what: "merge".into(), waiting_hours: 0, waiting_bytes: 50, from_hours: 1 }),
            },
            stored_source_bytes,
            hours: vec![hour],
        };
        let source = folder_sizes(dir.path(), &[hour], true);
        let fits = check(&source, &[load("a", 0, 0, 1000), load("b", 300, 100, 1000)]);
        assert!(fits.short.is_empty(), "{fits:?}");
        let line = fits.lines.iter().find(|l| l.contains("needs about")).unwrap();
        assert!(line.contains("a table") && line.contains("b table") && line.contains("× 3.00, the bytes stored per gzip byte"), "{line}");
        assert!(line.contains("taken at their JSON size"), "{line}");
        // b rewrites its load and what waits after it: its table twice (300 bytes of 100 gzip bytes: 3x), 50 bytes more.
        let gzip = std::fs::metadata(dir.path().join(hour.file_name())).unwrap().len();
        assert!(line.contains(&format!("b merge {}", size_text(gzip * 3 + 50))), "{line}");
        // Not until enough hours wait.
        let mut waits = load("b", 300, 100, 1000);
        waits.room.rewritten_after = Some(Rewrite { what: "merge".into(), waiting_hours: 22, waiting_bytes: 50, from_hours: 24 });
        let line = check(&source, &[waits]).lines.into_iter().find(|l| l.contains("needs about")).unwrap();
        assert!(!line.contains("merge"), "{line}");
        // A size of 0 with hours stored is not measured on.
        let line = check(&source, &[load("c", 0, 100, 1000)]).lines.into_iter().find(|l| l.contains("needs about")).unwrap();
        assert!(line.contains("taken at their JSON size"), "{line}");
        let short = check(&source, &[load("a", 0, 0, free / 2 + 1), load("b", 0, 0, free / 2 + 1)]);
        assert_eq!(short.short.len(), 1, "two engines on one file system add up: {short:?}");
        // Two engines on one server: its WAL counted once.
        let one_server = |engine: &str| {
            let mut load = load(engine, 0, 0, free / 2 + 1);
            load.room.besides[0].what = "WAL of the server".into();
            load
        };
        let shared = check(&source, &[one_server("a"), one_server("b")]);
        assert!(shared.short.is_empty(), "{shared:?}");
        let line = shared.lines.iter().find(|l| l.contains("needs about")).unwrap();
        assert_eq!(line.matches("WAL of the server").count(), 1, "{line}");
        // A need that grows with what is written: twice the tables of the
        // engines sharing it, capped at what it can reach.
        let json = (gzip as f64 * source.json_ratio().unwrap()) as u64;
        let growing = |engine: &str, cap: u64| {
            let mut load = load(engine, 0, 0, cap);
            load.room.besides[0] = Besides { what: "WAL of the server".into(), bytes: cap, free: Some(Free::Folder(dir.path().to_path_buf())), times_what_is_written: Some(2.0) };
            load.room.rewritten_after = None;
            load
        };
        let small = check(&source, &[growing("a", free), growing("b", free)]);
        assert!(small.short.is_empty(), "a small load needs little of a large cap: {small:?}");
        let line = small.lines.iter().find(|l| l.contains("needs about")).unwrap();
        assert!(line.contains(&format!("WAL of the server {}: {} of it for this load (2× the {} it writes there)", size_text(free), size_text(4 * json), size_text(2 * json))), "{line}");
        assert!(line.contains(&format!("needs about {} ", size_text(6 * json))), "two tables and twice them in WAL: {line}");
        let capped = check(&source, &[growing("a", json / 2)]);
        let line = capped.lines.iter().find(|l| l.contains("needs about")).unwrap();
        assert!(line.contains(&format!("a WAL of the server {}", size_text(json / 2))) && !line.contains("for this load"), "a load writing more than the cap needs the cap: {line}");
    }
}

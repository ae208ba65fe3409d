//! Whether a load will fit, decided before it writes anything: each engine's
//! need, from the gzip bytes of the hours it is to load times what it stores
//! per gzip byte (measured on what it holds; with nothing stored yet, the JSON
//! size of the first hour to load, an upper bound for every engine here), plus
//! what it needs whatever the load's size (PostgreSQL's WAL up to
//! `max_wal_size`), against the free space of the file systems ghbench can see.
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
    pub bytes: u64,
    pub free: Option<Free>,
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

/// The load's need against free space (see the module's note). `source`
/// gives the hours' sizes: a local folder's by `stat`; an http source's are
/// not known before each downloads, so nothing is checked and it says so.
pub fn check(source: &Source, loads: &[EngineLoad]) -> Verdict {
    let mut verdict = Verdict::default();
    let Source::Dir(dir) = source else {
        verdict.lines.push("free space not checked: an http source's file sizes are known only as each hour downloads".into());
        return verdict;
    };
    let size = |hour: &Hour| std::fs::metadata(dir.join(hour.file_name())).map_or(0, |m| m.len());
    let first = loads.iter().flat_map(|l| l.hours.first()).min().copied();
    let mut json_ratio = None;
    let mut shares: BTreeMap<String, Share> = BTreeMap::new();
    for load in loads {
        let source_bytes: u64 = load.hours.iter().map(size).sum();
        // Nothing to load here (or only hours the source lacks): nothing to fit.
        if source_bytes == 0 {
            continue;
        }
        let (ratio, measured) = match load.stored_source_bytes {
            0 => {
                let ratio = *json_ratio.get_or_insert_with(|| first.and_then(|h| json_per_gzip_byte(&dir.join(h.file_name()))));
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
        for b in &load.room.besides {
            add(&mut shares, &mut verdict, &load.engine, b.free.as_ref(), b.bytes, format!("{} {} {}", load.engine, b.what, size_text(b.bytes)));
        }
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
    let gzip = std::fs::metadata(path).ok()?.len();
    let mut json = 0u64;
    let mut decoder = flate2::read::MultiGzDecoder::new(std::fs::File::open(path).ok()?);
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
                besides: vec![Besides { what: "WAL".into(), bytes: besides, free: Some(Free::Folder(dir.path().to_path_buf())) }],
            },
            stored_source_bytes,
            hours: vec![hour],
        };
        let source = Source::Dir(dir.path().to_path_buf());
        let fits = check(&source, &[load("a", 0, 0, 1000), load("b", 300, 100, 1000)]);
        assert!(fits.short.is_empty(), "{fits:?}");
        let line = fits.lines.iter().find(|l| l.contains("needs about")).unwrap();
        assert!(line.contains("a table") && line.contains("b table") && line.contains("× 3.00, the bytes stored per gzip byte"), "{line}");
        assert!(line.contains("taken at their JSON size"), "{line}");
        let short = check(&source, &[load("a", 0, 0, free / 2 + 1), load("b", 0, 0, free / 2 + 1)]);
        assert_eq!(short.short.len(), 1, "two engines on one file system add up: {short:?}");
    }
}

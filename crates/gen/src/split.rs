//! The same events in another number of hour files (`ghbench gen --split`):
//! every line of the given hour files, in hour order, spread over the hours
//! asked as evenly as possible, byte for byte (a last line without its line
//! end gets one). Generating draws other events for another hour size, so
//! only a split compares 7 hours with 8,760 on the very same events (what a
//! file per hour costs an engine).
//!
//! Two passes over the sources (count, then copy), each holding one source's
//! gzip at a time, whatever the number of hours; the second pass checks each
//! source is the file the first counted. Each hour is written under a temporary name
//! and renamed when whole; `split-manifest.json` is written last, naming the
//! sources (with their digests) and every hour written: a folder with it is
//! a finished split, and asking for the same split again keeps it as it is.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use ghbench_core::{Hour, HourRange};
use serde::{Deserialize, Serialize};

use crate::run::GenError;

/// Written last into the folder of a finished split.
pub const SPLIT_MANIFEST: &str = "split-manifest.json";
const SCHEMA: &str = "ghbench-split/1";
/// Every file of a split is written under its name with this added, then renamed.
const PARTIAL: &str = ".partial";

/// What a split read and wrote.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SplitManifest {
    pub schema: String,
    /// The files the lines came from, in the order they were read.
    pub sources: Vec<SplitFile>,
    /// The hours written, in order.
    pub hours: Vec<SplitFile>,
    /// Lines (events) in all, the same in the sources and in the hours.
    pub lines: u64,
}

/// A file of a split: its name, the lines it holds, its size and digest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SplitFile {
    pub file: String,
    pub lines: u64,
    pub bytes: u64,
    pub digest: String,
}

/// What [`split`] did: the manifest, and whether the folder already held
/// this very split (nothing written).
#[derive(Debug)]
pub struct Split {
    pub manifest: SplitManifest,
    pub kept: bool,
}

/// Splits the lines of `sources` over the hours of `range`, into `out`.
/// Sources are read in hour order (by file name; others after, as given).
/// Blank lines are no events and are left out; a source that cannot be read
/// to its end (a truncated gzip) is refused, as its tail would be lost.
pub fn split(sources: &[PathBuf], range: HourRange, out: &Path) -> Result<Split, GenError> {
    let mut sources = sources.to_vec();
    sources.sort_by_key(|path| file_name(path).as_deref().and_then(Hour::from_file_name).map_or((1, None), |hour| (0, Some(hour))));
    // The same file given twice (overlapping globs) would give its events twice.
    let mut seen = std::collections::HashSet::new();
    for path in &sources {
        let file = fs::canonicalize(path).map_err(|source| GenError::Read { path: path.clone(), source })?;
        if !seen.insert(file) {
            return Err(GenError::SourceTwice { path: path.clone() });
        }
    }
    let mut counted = Vec::with_capacity(sources.len());
    for path in &sources {
        let bytes = fs::read(path).map_err(|source| GenError::Read { path: path.clone(), source })?;
        let lines = each_line(&bytes, path, |_| Ok(()))?;
        counted.push(SplitFile { file: path.display().to_string(), lines, bytes: bytes.len() as u64, digest: ghbench_core::digest::of_bytes(&bytes) });
    }
    let lines: u64 = counted.iter().map(|s| s.lines).sum();
    let hours = range.len() as u64;
    if lines < hours {
        return Err(GenError::TooFewLines { lines, hours });
    }
    if let Some(kept) = finished_here(out, &sources, &counted, range)? {
        return Ok(Split { manifest: kept, kept: true });
    }
    fs::create_dir_all(out).map_err(|source| GenError::Write { path: out.to_path_buf(), source })?;
    // What is rewritten is no longer the split an old manifest names.
    match fs::remove_file(out.join(SPLIT_MANIFEST)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(GenError::Write { path: out.join(SPLIT_MANIFEST), source: e }),
        _ => {}
    }
    let mut writer = HourWriter::new(out, range, lines);
    for (path, first) in sources.iter().zip(&counted) {
        let bytes = fs::read(path).map_err(|source| GenError::Read { path: path.clone(), source })?;
        if ghbench_core::digest::of_bytes(&bytes) != first.digest {
            return Err(GenError::SourceChanged { path: path.clone() });
        }
        each_line(&bytes, path, |line| writer.line(line))?;
    }
    let written = writer.finish()?;
    let manifest = SplitManifest { schema: SCHEMA.into(), sources: counted, hours: written, lines };
    write_atomically(&out.join(SPLIT_MANIFEST), &serde_json::to_vec_pretty(&manifest).expect("manifests serialise"))?;
    Ok(Split { manifest, kept: false })
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name()?.to_str().map(str::to_string)
}

/// Calls `each` with every non-blank line of a gzip file's content (with
/// its line end), and counts them.
fn each_line(gzip: &[u8], path: &Path, mut each: impl FnMut(&[u8]) -> Result<(), GenError>) -> Result<u64, GenError> {
    let mut reader = BufReader::new(MultiGzDecoder::new(gzip));
    let mut line = Vec::new();
    let mut lines = 0;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(|source| GenError::Read { path: path.to_path_buf(), source })?;
        if read == 0 {
            return Ok(lines);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        each(&line)?;
        lines += 1;
    }
}

/// The manifest of `out` when it holds this very split, whole; None when
/// `out` is new, empty, or holds only what this split writes (an
/// interrupted one); refused when it holds anything else, or a source
/// (whose hours the split would write over before reading them).
fn finished_here(out: &Path, paths: &[PathBuf], sources: &[SplitFile], range: HourRange) -> Result<Option<SplitManifest>, GenError> {
    let names = match fs::read_dir(out) {
        Ok(entries) => entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect::<Vec<_>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(GenError::Read { path: out.to_path_buf(), source }),
    };
    let folder = fs::canonicalize(out).map_err(|source| GenError::Read { path: out.to_path_buf(), source })?;
    if let Some(inside) = paths.iter().find(|p| fs::canonicalize(p).ok().and_then(|p| p.parent().map(Path::to_path_buf)).as_deref() == Some(folder.as_path())) {
        return Err(GenError::SourceInSplitFolder { path: inside.clone() });
    }
    let ours = |name: &str| {
        let name = name.strip_suffix(PARTIAL).unwrap_or(name);
        name == SPLIT_MANIFEST || Hour::from_file_name(name).is_some_and(|hour| range.first <= hour && hour <= range.last)
    };
    if let Some(other) = names.iter().find(|name| !ours(name)) {
        return Err(GenError::NotASplitFolder { path: out.to_path_buf(), other: other.clone() });
    }
    let Ok(text) = fs::read(out.join(SPLIT_MANIFEST)) else { return Ok(None) };
    let Ok(manifest) = serde_json::from_slice::<SplitManifest>(&text) else { return Ok(None) };
    let same_sources = manifest.sources.iter().map(|s| (&s.digest, s.lines)).eq(sources.iter().map(|s| (&s.digest, s.lines)));
    let same_hours = manifest.hours.iter().map(|h| h.file.clone()).eq(range.iter().map(|h| h.file_name()));
    let whole = manifest.hours.iter().all(|h| fs::read(out.join(&h.file)).is_ok_and(|bytes| bytes.len() as u64 == h.bytes && ghbench_core::digest::of_bytes(&bytes) == h.digest));
    Ok((same_sources && same_hours && whole && manifest.schema == SCHEMA).then_some(manifest))
}

/// Writes lines into the hours of a range, each hour its share of `lines`
/// (the first `lines % hours` one more), each file renamed into place once whole.
struct HourWriter<'a> {
    out: &'a Path,
    hours: Vec<Hour>,
    lines: u64,
    /// The hour being written: its place in `hours`, the lines still due, its file.
    current: Option<(usize, u64, GzEncoder<BufWriter<File>>)>,
    next: usize,
    written: Vec<SplitFile>,
}

impl<'a> HourWriter<'a> {
    fn new(out: &'a Path, range: HourRange, lines: u64) -> HourWriter<'a> {
        HourWriter { out, hours: range.iter().collect(), lines, current: None, next: 0, written: Vec::new() }
    }

    /// The lines hour `place` holds.
    fn share(&self, place: usize) -> u64 {
        let hours = self.hours.len() as u64;
        self.lines / hours + u64::from((place as u64) < self.lines % hours)
    }

    fn line(&mut self, line: &[u8]) -> Result<(), GenError> {
        if self.current.is_none() {
            let place = self.next;
            let path = self.partial_path(place);
            let file = File::create(&path).map_err(|source| GenError::Write { path, source })?;
            self.current = Some((place, self.share(place), GzEncoder::new(BufWriter::new(file), Compression::default())));
            self.next += 1;
        }
        let (place, due, encoder) = self.current.as_mut().expect("opened above");
        let (place, written) = (*place, encoder.write_all(line));
        *due -= 1;
        let finished = *due == 0;
        written.map_err(|source| GenError::Write { path: self.partial_path(place), source })?;
        if finished {
            self.close()?;
        }
        Ok(())
    }

    fn partial_path(&self, place: usize) -> PathBuf {
        self.out.join(format!("{}{PARTIAL}", self.hours[place].file_name()))
    }

    /// The hour being written, finished, synced and renamed into place.
    fn close(&mut self) -> Result<(), GenError> {
        let Some((place, _, encoder)) = self.current.take() else { return Ok(()) };
        let (partial, path) = (self.partial_path(place), self.out.join(self.hours[place].file_name()));
        let write_error = |source| GenError::Write { path: partial.clone(), source };
        let file = encoder.finish().map_err(write_error)?.into_inner().map_err(|e| write_error(e.into_error()))?;
        file.sync_all().map_err(write_error)?;
        fs::rename(&partial, &path).map_err(|source| GenError::Write { path: path.clone(), source })?;
        let bytes = fs::read(&path).map_err(|source| GenError::Read { path: path.clone(), source })?;
        let digest = ghbench_core::digest::of_bytes(&bytes);
        self.written.push(SplitFile { file: self.hours[place].file_name(), lines: self.share(place), bytes: bytes.len() as u64, digest });
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<SplitFile>, GenError> {
        self.close()?;
        assert_eq!(self.written.len(), self.hours.len(), "every hour holds at least one line (checked before writing)");
        Ok(self.written)
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), GenError> {
    let partial = PathBuf::from(format!("{}{PARTIAL}", path.display()));
    let written = File::create(&partial).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    written.map_err(|source| GenError::Write { path: partial.clone(), source })?;
    fs::rename(&partial, path).map_err(|source| GenError::Write { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read as _;

    fn gzip(text: &str) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    }

    fn lines_of(path: &Path) -> Vec<String> {
        let mut text = String::new();
        GzDecoder::new(File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        text.lines().map(str::to_string).collect()
    }

    fn range(first: &str, hours: u32) -> HourRange {
        HourRange::starting_at(first.parse().unwrap(), hours).unwrap()
    }

    #[test]
    fn the_same_lines_in_hour_order_spread_evenly_over_the_hours_asked() {
        let dir = tempfile::tempdir().unwrap();
        // Given out of hour order (as a shell's glob sorts 10 before 2).
        let late = dir.path().join("2015-01-01-10.json.gz");
        let early = dir.path().join("2015-01-01-2.json.gz");
        fs::write(&late, gzip("{\"e\":4}\n{\"e\":5}\n{\"e\":6}\n{\"e\":7}")).unwrap();
        fs::write(&early, gzip("{\"e\":1}\n\n{\"e\":2}\n{\"e\":3}\n")).unwrap();
        let out = dir.path().join("split");
        let done = split(&[late.clone(), early.clone()], range("2015-01-01T00", 3), &out).unwrap();
        assert!(!done.kept);
        let shares: Vec<u64> = done.manifest.hours.iter().map(|h| h.lines).collect();
        assert_eq!(shares, vec![3, 2, 2], "the first hours take the remainder");
        let all: Vec<String> = ["2015-01-01-0", "2015-01-01-1", "2015-01-01-2"].iter().flat_map(|h| lines_of(&out.join(format!("{h}.json.gz")))).collect();
        let expected: Vec<String> = (1..=7).map(|e| format!("{{\"e\":{e}}}")).collect();
        assert_eq!(all, expected, "every line once, byte for byte, in hour order, blank lines left out");
        assert_eq!(done.manifest.lines, 7);
        assert_eq!(done.manifest.sources.iter().map(|s| s.lines).collect::<Vec<_>>(), vec![3, 4]);

        // The same split again: kept as it is.
        let again = split(&[early.clone(), late.clone()], range("2015-01-01T00", 3), &out).unwrap();
        assert!(again.kept && again.manifest == done.manifest);
        // Another number of hours into the same folder: its hours are not these.
        let error = split(&[early.clone(), late.clone()], range("2015-01-01T00", 2), &out).unwrap_err().to_string();
        assert!(error.contains("2015-01-01-2.json.gz") && error.contains("empty folder"), "{error}");
    }

    #[test]
    fn too_few_lines_and_a_truncated_source_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("2015-01-01-0.json.gz");
        fs::write(&source, gzip("{\"e\":1}\n{\"e\":2}\n")).unwrap();
        let out = dir.path().join("split");
        let error = split(&[source.clone()], range("2015-01-01T00", 3), &out).unwrap_err().to_string();
        assert!(error.contains("2 events cannot fill 3 hours"), "{error}");
        let whole = fs::read(&source).unwrap();
        fs::write(&source, &whole[..whole.len() - 6]).unwrap();
        let twice = split(&[source.clone(), dir.path().join(".").join("2015-01-01-0.json.gz")], range("2015-01-01T00", 1), &out).unwrap_err().to_string();
        assert!(twice.contains("given twice"), "{twice}");
        let error = split(&[source], range("2015-01-01T00", 1), &out).unwrap_err();
        assert!(matches!(error, GenError::Read { .. }), "{error}");
        assert!(!out.exists(), "nothing written");
    }

    #[test]
    fn a_split_into_the_folder_of_its_sources_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("2015-01-01-0.json.gz");
        fs::write(&source, gzip("{\"e\":1}\n{\"e\":2}\n")).unwrap();
        let error = split(&[source.clone()], range("2015-01-01T00", 2), dir.path()).unwrap_err().to_string();
        assert!(error.contains("2015-01-01-0.json.gz") && error.contains("another folder"), "{error}");
        assert_eq!(lines_of(&source), ["{\"e\":1}", "{\"e\":2}"], "the source untouched");
    }

    #[test]
    fn an_interrupted_split_is_written_again_and_a_finished_one_with_a_lost_hour_too() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("2015-01-01-0.json.gz");
        fs::write(&source, gzip("{\"e\":1}\n{\"e\":2}\n{\"e\":3}\n")).unwrap();
        let out = dir.path().join("split");
        fs::create_dir(&out).unwrap();
        // What a split stopped part way leaves: a whole hour, a partial one, no manifest.
        fs::write(out.join("2015-01-01-0.json.gz"), gzip("{\"e\":1}\n")).unwrap();
        fs::write(out.join("2015-01-01-1.json.gz.partial"), b"half").unwrap();
        let done = split(&[source.clone()], range("2015-01-01T00", 3), &out).unwrap();
        assert!(!done.kept);
        assert!(!out.join("2015-01-01-1.json.gz.partial").exists());
        assert_eq!(lines_of(&out.join("2015-01-01-1.json.gz")), ["{\"e\":2}"]);
        fs::remove_file(out.join("2015-01-01-2.json.gz")).unwrap();
        let again = split(&[source.clone()], range("2015-01-01T00", 3), &out).unwrap();
        assert!(!again.kept, "an hour is missing: written again");
        assert_eq!(lines_of(&out.join("2015-01-01-2.json.gz")), ["{\"e\":3}"]);
        // An hour of the same size but other content is no longer the split.
        fs::write(out.join("2015-01-01-1.json.gz"), gzip("{\"e\":9}\n")).unwrap();
        assert!(!split(&[source], range("2015-01-01T00", 3), &out).unwrap().kept);
        assert_eq!(lines_of(&out.join("2015-01-01-1.json.gz")), ["{\"e\":2}"]);
    }
}

//! The data tests load: the real GH Archive hour kept in `../shared` beside
//! the checkout (one copy for every crate's tests, skipped with a message
//! where it is absent), and hour files a test writes itself (a slice of
//! the real hour, injected defects), gzipped as GH Archive ships them.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

/// The real hour's file name, as GH Archive names it.
pub const REAL_HOUR_FILE: &str = "2015-01-01-0.json.gz";

/// The real hour, as ghbench's `--from` writes it.
pub const HOUR: &str = "2015-01-01T00";

/// The events in the real hour (every line is one).
pub const HOUR_EVENTS: u64 = 7702;

/// The checkout this kit belongs to (`crates/testkit` is two levels down).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("crates/testkit lies in the checkout")
}

/// The shared folder of real hours, beside the checkout.
pub fn data_dir() -> PathBuf {
    repo().parent().unwrap_or(Path::new("/")).join("shared/data/gharchive")
}

/// The real hour's file, or `None` and a message saying why the test skips.
pub fn real_hour() -> Option<PathBuf> {
    let path = data_dir().join(REAL_HOUR_FILE);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("SKIPPED: the real hour {} is absent (it lives in ../shared beside the checkout)", path.display());
        None
    }
}

/// The lines of a gzipped hour file, as bytes (a line may be invalid UTF-8).
pub fn real_lines(path: &Path) -> Vec<Vec<u8>> {
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut text).unwrap();
    text.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect()
}

/// The lines of gzipped bytes, as text.
pub fn lines_of(gzip: &[u8]) -> Vec<String> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(gzip).read_to_string(&mut text).unwrap();
    text.lines().map(str::to_string).collect()
}

/// Gzipped bytes of `lines` (each gets a `\n`).
pub fn gzip_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    for line in lines {
        gz.write_all(line).unwrap();
        gz.write_all(b"\n").unwrap();
    }
    gz.finish().unwrap()
}

/// Gzips `lines` (each gets a `\n`) into `dir/<file_name>`.
pub fn write_hour(dir: &Path, file_name: &str, lines: &[Vec<u8>]) -> PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, gzip_lines(lines)).unwrap();
    path
}

/// The folder `hours` in `work`, holding the real hour as each of the `n`
/// hours from 2015-01-01T00, and the events of each; None (the test skips)
/// without the real hour.
pub fn real_hour_copies(work: &Path, n: usize) -> Option<(PathBuf, u64)> {
    let real = real_hour()?;
    let dir = work.join("hours");
    std::fs::create_dir_all(&dir).unwrap();
    for h in 0..n {
        std::fs::copy(&real, dir.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    Some((dir, real_lines(&real).len() as u64))
}

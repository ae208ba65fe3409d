//! Helpers shared by the generator's tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

/// The shared real hour, or `None` (and a message saying why the test skips).
pub fn real_hour() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/gharchive/2015-01-01-0.json.gz");
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("SKIPPED: {} not found; this test needs ../shared beside the repository", path.display());
        None
    }
}

/// The lines of a gzip hour file.
pub fn lines_of(gzip: &[u8]) -> Vec<String> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(gzip).read_to_string(&mut text).unwrap();
    text.lines().map(str::to_string).collect()
}

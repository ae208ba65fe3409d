//! Which copy of a file was read: its size and a BLAKE3 digest of its bytes,
//! recorded in every engine's ledger with the hour, so a rerun can tell the
//! file an hour was loaded from from the file the source holds now (and the
//! polars engine can tell a Parquet file that is no longer the one it wrote).
//!
//! Hashing runs while the bytes are read for loading, not in a second pass:
//! BLAKE3 hashes well over 1 GB/s on one core, gunzip a few hundred MB/s of
//! compressed input, so it costs no measurable loading time.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::path::Path;

pub use ghbench_core::digest::{format, PREFIX};

/// A digest shortened for messages (`blake3:1a2b3c4d5e6f`).
pub fn short(digest: &str) -> &str {
    &digest[..digest.len().min(PREFIX.len() + 12)]
}

/// A reader that hashes what passes through it.
pub struct HashingReader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        HashingReader { inner, hasher: blake3::Hasher::new() }
    }

    /// Reads what is left (a reader that stopped early, at a corrupt byte,
    /// still records the whole file), then the digest of everything read.
    pub fn finish(mut self) -> io::Result<String> {
        io::copy(&mut self, &mut io::sink())?;
        Ok(format(&self.hasher.finalize()))
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A writer that hashes and counts what passes through it; its
/// [`WrittenDigest`] reads the result once the writer is done (the writer
/// itself may be owned by a library that never gives it back).
pub struct HashingWriter<W> {
    inner: W,
    state: Arc<Mutex<(blake3::Hasher, u64)>>,
}

/// The size and digest of what a [`HashingWriter`] wrote.
pub struct WrittenDigest(Arc<Mutex<(blake3::Hasher, u64)>>);

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> (Self, WrittenDigest) {
        let state = Arc::new(Mutex::new((blake3::Hasher::new(), 0)));
        (HashingWriter { inner, state: state.clone() }, WrittenDigest(state))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.0.update(&buf[..n]);
        state.1 += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WrittenDigest {
    /// Bytes written so far and their digest.
    pub fn result(&self) -> (u64, String) {
        let state = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (state.1, format(&state.0.finalize()))
    }
}

/// A file's size and digest, read in one pass.
pub fn of_file(path: &Path) -> io::Result<(u64, String)> {
    let file = File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    let size = io::copy(&mut io::BufReader::with_capacity(1 << 20, file), &mut hasher)?;
    Ok((size, format(&hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_stopped_early_still_digests_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello, world").unwrap();
        let mut reader = HashingReader::new(File::open(&path).unwrap());
        let mut first = [0u8; 5];
        reader.read_exact(&mut first).unwrap();
        let digest = reader.finish().unwrap();
        assert_eq!(of_file(&path).unwrap(), (12, digest.clone()));
        assert!(digest.starts_with("blake3:") && digest.len() == 7 + 64, "{digest}");
        assert_eq!(short(&digest).len(), 19);

        let (mut writer, written) = HashingWriter::new(File::create(dir.path().join("g")).unwrap());
        writer.write_all(b"hello, world").unwrap();
        drop(writer);
        assert_eq!(written.result(), (12, digest), "what is written digests as what is read");
    }
}

/// What hashing costs beside reading: `cargo test --release -p ghbench-ingest
/// --lib -- --ignored --nocapture digest_cost` (needs ../shared beside the repo).
#[cfg(test)]
mod cost {
    use std::time::Instant;

    #[test]
    #[ignore = "a measurement, not a check: run it by name"]
    fn digest_cost() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/gharchive/2015-01-01-0.json.gz");
        let bytes = std::fs::read(&path).expect("the real hour");
        let best = |work: &dyn Fn()| (0..5).map(|_| {
            let started = Instant::now();
            work();
            started.elapsed().as_secs_f64()
        }).fold(f64::MAX, f64::min);
        let hash = best(&|| {
            blake3::hash(&bytes);
        });
        let decode = best(&|| {
            let dir = tempfile::tempdir().unwrap();
            let hour = "2015-01-01T00".parse().unwrap();
            let mut quarantine = crate::quarantine::Quarantine::for_hour(dir.path(), &"t".parse().unwrap(), hour).unwrap();
            let file = crate::source::HourBytes::File(std::fs::File::open(&path).unwrap());
            let report = crate::decode::decode_hour(hour, file, &Default::default(), &[], &mut quarantine, Default::default()).unwrap();
            assert_eq!(report.events, 7702);
        });
        let skip_check = best(&|| {
            super::of_file(&path).unwrap();
        });
        eprintln!(
            "{} bytes: BLAKE3 {:.2} ms ({:.0} MB/s); reading the hour (gunzip, parse, clean, digest included) {:.1} ms: digest {:.1} % of it; \
             a rerun's check of a kept hour (read + digest) {:.2} ms",
            bytes.len(),
            hash * 1e3,
            bytes.len() as f64 / hash / 1e6,
            decode * 1e3,
            100.0 * hash / decode,
            skip_check * 1e3
        );
    }
}

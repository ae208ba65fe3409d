//! Turns one hour's compressed bytes into batches of clean documents, on a
//! blocking thread: streaming gunzip, one JSON document per line, the cleaning
//! policy, each engine's encoding, quarantine. Every batch goes to every
//! engine, so all engines receive the same documents.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use ghbench_core::{Engine, Hour};
use tokio::sync::mpsc;

use crate::clean::{CleanDoc, Defect, Policy, Rejected};
use crate::digest::HashingReader;
use crate::quarantine::Quarantine;
use crate::sink::Encoded;
use crate::source::HourBytes;

/// Documents per batch: large enough to amortise a round trip, small enough
/// that memory stays flat with several hours in flight.
pub const BATCH_DOCS: usize = 1000;
const BATCH_BYTES: u64 = 8 << 20;

#[derive(Default)]
pub struct Batch {
    pub docs: Vec<CleanDoc>,
    pub json_bytes: u64,
    /// Per lane, each document in the lane's engine's own form (empty for an
    /// engine that takes the clean JSON as it is).
    pub encoded: Vec<Vec<Encoded>>,
}

/// One engine's view of a batch: the documents, and its own encodings of them.
#[derive(Clone)]
pub struct EngineBatch {
    pub batch: Arc<Batch>,
    pub lane: usize,
}

impl EngineBatch {
    pub fn docs(&self) -> &[CleanDoc] {
        &self.batch.docs
    }

    /// This engine's encodings, one per document (empty if it has no encoder).
    pub fn encoded(&self) -> &[Encoded] {
        self.batch.encoded.get(self.lane).map_or(&[], Vec::as_slice)
    }
}

/// Where an hour's documents go for one engine, with its encodings (made
/// here, on the decode thread, by the policy).
pub struct Lane {
    pub engine: Engine,
    pub output: mpsc::Sender<EngineBatch>,
}

/// What reading one hour found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct DecodeReport {
    /// Lines read, including quarantined ones.
    pub lines: u64,
    /// Documents handed to the engines.
    pub events: u64,
    /// Documents changed by the `\u0000` policy (also counted in `events`).
    pub sanitized: u64,
    pub quarantined: BTreeMap<Defect, u64>,
    pub compressed_bytes: u64,
    /// The digest of the compressed bytes as read (see [`crate::digest`]):
    /// which copy of the hour's file this was.
    pub source_digest: Option<String>,
    pub json_bytes: u64,
    /// A defect of the file as a whole: empty, truncated or corrupt gzip.
    pub file_defect: Option<String>,
    pub quarantine_file: Option<String>,
}

impl DecodeReport {
    pub fn quarantined_total(&self) -> u64 {
        self.quarantined.values().sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The bytes stopped coming (network): the whole hour is retried.
    #[error("reading the source failed: {0}")]
    Source(String),
    #[error("writing the quarantine file failed: {0}")]
    Quarantine(io::Error),
    /// Every engine stopped listening (each reports its own error).
    #[error("all engines stopped")]
    EnginesGone,
}

/// Marks errors of the underlying source, so they are told apart from gzip
/// corruption (a defect of the file, not worth a retry).
#[derive(Debug)]
struct SourceFailure(io::Error);

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
impl std::error::Error for SourceFailure {}

struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.count.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(io::Error::new(e.kind(), SourceFailure(e))),
        }
    }
}

/// Decompressed lines of a (multi-member) gzip stream: read them with `read_until(b'\n')`.
pub fn gz_lines<R: Read>(compressed: R) -> impl BufRead {
    BufReader::with_capacity(256 << 10, MultiGzDecoder::new(compressed))
}

fn source_failure(e: &io::Error) -> Option<&SourceFailure> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<SourceFailure>())
}

/// Reads one hour. Must run on a blocking thread (it blocks on the channels and,
/// for HTTP, on the network). `compressed` is updated as bytes arrive, for progress.
pub fn decode_hour(
    hour: Hour,
    bytes: HourBytes,
    policy: &Policy,
    lanes: &[Lane],
    quarantine: &mut Quarantine,
    compressed: Arc<AtomicU64>,
) -> Result<DecodeReport, DecodeError> {
    let raw: Box<dyn Read> = match bytes {
        HourBytes::File(f) => Box::new(f),
        HourBytes::Stream(s) => Box::new(tokio_util::io::SyncIoBridge::new(s)),
    };
    let counting = HashingReader::new(CountingReader { inner: raw, count: compressed.clone() });
    // Built here rather than by `gz_lines`: the hashing reader is taken back at the end.
    let mut reader = BufReader::with_capacity(256 << 10, MultiGzDecoder::new(counting));
    let stem = hour.stem();
    let mut report = DecodeReport::default();
    let new_batch = || Batch { encoded: lanes.iter().map(|_| Vec::new()).collect(), ..Batch::default() };
    let mut batch = new_batch();
    let mut line = Vec::with_capacity(64 << 10);
    let mut live = vec![true; lanes.len()];

    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line);
        let error = match read {
            Ok(0) => break,
            Ok(_) => None,
            Err(e) => Some(e),
        };
        if let Some(e) = &error {
            if let Some(failure) = source_failure(e) {
                return Err(DecodeError::Source(failure.to_string()));
            }
            if line.is_empty() {
                report.file_defect = Some(corrupt_message(report.lines, e));
                break;
            }
        }
        report.lines += 1;
        let number = report.lines;
        let content = line.strip_suffix(b"\n").unwrap_or(&line);
        let cleaned = if error.is_some() {
            // The bytes before the corruption are an incomplete line.
            Err(Rejected::new(Defect::TruncatedLine, "cut off by a gzip error"))
        } else {
            policy.clean_line(number, content).and_then(|doc| encode(&stem, doc, policy, lanes))
        };
        match cleaned {
            Ok((doc, encodings)) => {
                report.events += 1;
                report.sanitized += u64::from(doc.sanitized);
                batch.json_bytes += doc.json.len() as u64;
                batch.docs.push(doc);
                for (lane, encoded) in encodings {
                    batch.encoded[lane].push(encoded);
                }
                if batch.docs.len() >= BATCH_DOCS || batch.json_bytes >= BATCH_BYTES {
                    report.json_bytes += batch.json_bytes;
                    send(std::mem::replace(&mut batch, new_batch()), lanes, &mut live)?;
                }
            }
            Err(rejected) => {
                *report.quarantined.entry(rejected.defect).or_default() += 1;
                quarantine.record(number, rejected.defect, &rejected.detail, content).map_err(DecodeError::Quarantine)?;
            }
        }
        if let Some(e) = &error {
            report.file_defect = Some(corrupt_message(report.lines - 1, e));
            break;
        }
    }
    if !batch.docs.is_empty() {
        report.json_bytes += batch.json_bytes;
        send(batch, lanes, &mut live)?;
    }
    // The rest of a file whose gzip broke off is read too: the digest and size
    // are the whole file's, as a rerun sees it.
    match reader.into_inner().into_inner().finish() {
        Ok(digest) => report.source_digest = Some(digest),
        Err(e) => match source_failure(&e) {
            Some(failure) => return Err(DecodeError::Source(failure.to_string())),
            None => report.source_digest = None,
        },
    }
    report.compressed_bytes = compressed.load(Ordering::Relaxed);
    if report.compressed_bytes == 0 {
        report.file_defect = Some("empty file (0 bytes)".into());
    }
    Ok(report)
}

fn corrupt_message(complete_lines: u64, e: &io::Error) -> String {
    format!("truncated or corrupt gzip after {complete_lines} complete lines: {e}")
}

/// Every engine's encoding of a clean document, kept for the lanes of the
/// engines loading it (see [`Policy::encode`]).
fn encode(stem: &str, doc: CleanDoc, policy: &Policy, lanes: &[Lane]) -> Result<(CleanDoc, Vec<(usize, Encoded)>), Rejected> {
    let mut kept = Vec::new();
    for (engine, encoded) in policy.encode(stem, &doc, |engine| lanes.iter().any(|l| &l.engine == engine))? {
        if let Some(lane) = lanes.iter().position(|l| &l.engine == engine) {
            kept.push((lane, encoded));
        }
    }
    Ok((doc, kept))
}

/// Sends to every engine still listening; an engine that failed has dropped its
/// receiver and is skipped so the others still get the hour.
fn send(batch: Batch, lanes: &[Lane], live: &mut [bool]) -> Result<(), DecodeError> {
    let batch = Arc::new(batch);
    for (lane, (output, alive)) in lanes.iter().map(|l| &l.output).zip(live.iter_mut()).enumerate() {
        if *alive {
            *alive = output.blocking_send(EngineBatch { batch: batch.clone(), lane }).is_ok();
        }
    }
    // No lanes at all is a dry run, not a failure.
    if live.is_empty() || live.iter().any(|a| *a) {
        Ok(())
    } else {
        Err(DecodeError::EnginesGone)
    }
}

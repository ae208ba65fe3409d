//! `ghbench download`: a local mirror of a range of hours, so repeated benchmark
//! runs read local files. A file appears under its GH Archive name only once it
//! has been downloaded completely and its gzip decodes to the end, so whatever
//! is in the folder is complete and a rerun skips it. 404s are recorded in
//! `missing.txt`.

use std::collections::BTreeSet;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ghbench_core::{Hour, HourRange};
use tokio::io::AsyncWriteExt;

use crate::source::{HourBytes, Source, SourceError};

const MISSING_FILE: &str = "missing.txt";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MirrorStatus {
    Downloaded,
    /// Already complete in the folder.
    Present,
    Missing,
    Failed,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct MirrorReport {
    pub hour: Hour,
    pub status: MirrorStatus,
    pub bytes: u64,
    /// Lines in the file (counted while checking the gzip).
    pub lines: u64,
    pub error: Option<String>,
}

/// Downloads every hour of `range` not yet in `dir`, `concurrency` at a time.
/// `on_done` is called as each hour finishes (for progress).
pub async fn mirror(
    source: &Source,
    range: HourRange,
    dir: &Path,
    concurrency: usize,
    retries: u32,
    on_done: impl Fn(&MirrorReport) + Send + Sync,
) -> io::Result<Vec<MirrorReport>> {
    std::fs::create_dir_all(dir.join(".partial"))?;
    let hours: Vec<Hour> = range.iter().collect();
    let queue = Mutex::new(hours.into_iter());
    let reports = Mutex::new(Vec::new());
    let work = || async {
        loop {
            let Some(hour) = queue.lock().expect("queue").next() else { break };
            let report = mirror_hour(source, hour, dir, retries).await;
            on_done(&report);
            reports.lock().expect("reports").push(report);
        }
    };
    futures_util::future::join_all((0..concurrency.max(1)).map(|_| work())).await;
    let mut reports = reports.into_inner().expect("reports");
    reports.sort_by_key(|r| r.hour);
    record_missing(dir, &reports)?;
    Ok(reports)
}

async fn mirror_hour(source: &Source, hour: Hour, dir: &Path, retries: u32) -> MirrorReport {
    let target = dir.join(hour.file_name());
    let report = |status, bytes, lines, error| MirrorReport { hour, status, bytes, lines, error };
    if let Ok(meta) = std::fs::metadata(&target) {
        return report(MirrorStatus::Present, meta.len(), 0, None);
    }
    let partial = dir.join(".partial").join(hour.file_name());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let error = match download(source, hour, &partial).await {
            Ok(None) => return report(MirrorStatus::Missing, 0, 0, None),
            Ok(Some(bytes)) => match verify_gzip(&partial) {
                Ok(lines) => {
                    return match std::fs::rename(&partial, &target) {
                        Ok(()) => report(MirrorStatus::Downloaded, bytes, lines, None),
                        Err(e) => report(MirrorStatus::Failed, bytes, lines, Some(e.to_string())),
                    };
                }
                // A damaged download is worth another try. Should the source
                // really hold a damaged file, the hour is reported failed and
                // kept out of the mirror; `ingest` straight from the source
                // loads such a file's complete lines instead.
                Err(e) => format!("downloaded file is not a complete gzip: {e}"),
            },
            Err(SourceError::Transient(e)) => e,
            Err(SourceError::Permanent(e)) => return report(MirrorStatus::Failed, 0, 0, Some(e)),
        };
        let _ = std::fs::remove_file(&partial);
        if attempt > retries {
            return report(MirrorStatus::Failed, 0, 0, Some(error));
        }
        tokio::time::sleep(crate::pipeline::backoff(attempt)).await;
    }
}

/// Copies the hour's bytes to `path`; `None` when the source has no such hour.
async fn download(source: &Source, hour: Hour, path: &Path) -> Result<Option<u64>, SourceError> {
    let io_err = |e: io::Error| SourceError::Transient(format!("{}: {e}", path.display()));
    let Some(bytes) = source.open(hour).await? else { return Ok(None) };
    let mut out = tokio::fs::File::create(path).await.map_err(io_err)?;
    let written = match bytes {
        HourBytes::File(f) => tokio::io::copy(&mut tokio::fs::File::from_std(f), &mut out).await,
        HourBytes::Stream(mut s) => tokio::io::copy(&mut s, &mut out).await,
    }
    .map_err(io_err)?;
    out.flush().await.map_err(io_err)?;
    out.sync_all().await.map_err(io_err)?;
    Ok(Some(written))
}

/// Decodes the whole file; returns its line count.
pub fn verify_gzip(path: &Path) -> io::Result<u64> {
    let mut reader = crate::decode::gz_lines(std::fs::File::open(path)?);
    let (mut lines, mut total) = (0u64, 0u64);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        total += n as u64;
        reader.consume(n);
    }
    if total == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "empty file"));
    }
    Ok(lines)
}

/// Keeps `missing.txt` as the sorted set of hours the source did not have,
/// merged with earlier runs and minus hours that have since appeared.
fn record_missing(dir: &Path, reports: &[MirrorReport]) -> io::Result<()> {
    let path: PathBuf = dir.join(MISSING_FILE);
    let mut missing: BTreeSet<String> = match std::fs::read_to_string(&path) {
        Ok(text) => text.lines().map(str::to_string).filter(|l| !l.is_empty()).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeSet::new(),
        Err(e) => return Err(e),
    };
    for r in reports {
        match r.status {
            MirrorStatus::Missing => missing.insert(r.hour.file_name()),
            _ => missing.remove(&r.hour.file_name()),
        };
    }
    let text: String = missing.iter().map(|m| format!("{m}\n")).collect();
    std::fs::write(path, text)
}

//! Where hours come from: GH Archive over HTTP, or a local folder of the same files.
//! A source yields one hour's compressed bytes, or says the hour is missing; it
//! knows nothing of JSON.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::TryStreamExt;
use ghbench_core::Hour;
use tokio::io::AsyncRead;

pub const DEFAULT_SOURCE: &str = "https://data.gharchive.org/";

#[derive(Debug, Clone)]
pub enum Source {
    /// Base URL ending in `/`; the hour's file name is appended.
    Http { base: String, client: reqwest::Client },
    Dir(PathBuf),
}

/// The compressed bytes of one hour.
pub enum HourBytes {
    /// Read on a blocking thread (see `decode`), so local files stay on plain `std::fs`.
    File(std::fs::File),
    Stream(Box<dyn AsyncRead + Send + Unpin>),
}

/// Why an hour could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Worth retrying: timeouts, connection resets, 5xx, 429.
    #[error("{0}")]
    Transient(String),
    /// Retrying will not help: 403, a directory instead of a file, ...
    #[error("{0}")]
    Permanent(String),
}

#[derive(Debug, thiserror::Error)]
#[error("source '{0}' is neither an http(s) URL nor an existing directory")]
pub struct BadSource(String);

impl Source {
    /// `http://` / `https://` means a server; anything else must be an existing folder.
    pub fn parse(spec: &str) -> Result<Source, BadSource> {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let base = if spec.ends_with('/') { spec.to_string() } else { format!("{spec}/") };
            let client = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(15))
                // A stalled transfer is retried rather than waited on forever.
                .read_timeout(Duration::from_secs(60))
                .user_agent(concat!("ghbench/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| BadSource(format!("{spec} ({e})")))?;
            return Ok(Source::Http { base, client });
        }
        let dir = PathBuf::from(spec);
        if dir.is_dir() {
            Ok(Source::Dir(dir))
        } else {
            Err(BadSource(spec.to_string()))
        }
    }

    /// Bytes that cross a network may arrive damaged where the file is whole.
    pub fn is_remote(&self) -> bool {
        matches!(self, Source::Http { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Http { base, .. } => ghbench_core::redact_url(base),
            Source::Dir(dir) => dir.display().to_string(),
        }
    }

    /// The size of the hour's file without reading it: a folder's by `stat`,
    /// an http source's by a HEAD request's Content-Length (None when the
    /// server names none, or the hour does not exist).
    pub async fn size_of(&self, hour: Hour) -> Result<Option<u64>, SourceError> {
        match self {
            Source::Dir(dir) => Ok(std::fs::metadata(dir.join(hour.file_name())).ok().filter(|m| m.is_file()).map(|m| m.len())),
            Source::Http { base, client } => {
                let url = format!("{base}{}", hour.file_name());
                let shown = ghbench_core::redact_url(&url);
                // A HEAD waits no longer than a server needs to answer one.
                let response = tokio::time::timeout(Duration::from_secs(30), client.head(&url).send())
                    .await
                    .map_err(|_| SourceError::Transient(format!("{shown}: no answer to HEAD within 30 s")))?
                    .map_err(|e| SourceError::Transient(format!("{shown}: {}", e.without_url())))?;
                match response.status() {
                    // The header itself: reqwest's content_length() is the (empty) body's for a HEAD.
                    status if status.is_success() => Ok(response
                        .headers()
                        .get(reqwest::header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                        .filter(|&n| n > 0)),
                    status if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                        Err(SourceError::Transient(format!("{shown}: HTTP {status} to HEAD")))
                    }
                    // Missing, or HEAD not served (405, 501): no size from it.
                    _ => Ok(None),
                }
            }
        }
    }

    /// `Ok(None)` when the hour does not exist (HTTP 404, or no such file).
    pub async fn open(&self, hour: Hour) -> Result<Option<HourBytes>, SourceError> {
        match self {
            Source::Dir(dir) => {
                let path = dir.join(hour.file_name());
                match std::fs::File::open(&path) {
                    // A directory opens too on Linux; reading it would then look like a network fault.
                    Ok(file) if !file.metadata().is_ok_and(|m| m.is_file()) => {
                        Err(SourceError::Permanent(format!("{}: not a regular file", path.display())))
                    }
                    Ok(file) => Ok(Some(HourBytes::File(file))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(SourceError::Permanent(format!("{}: {e}", path.display()))),
                }
            }
            Source::Http { base, client } => {
                let url = format!("{base}{}", hour.file_name());
                // Messages name the URL with any password hidden; reqwest's own errors would repeat it.
                let shown = ghbench_core::redact_url(&url);
                let response = client
                    .get(&url)
                    .send()
                    .await
                    .map_err(|e| SourceError::Transient(format!("{shown}: {}", e.without_url())))?;
                let status = response.status();
                if status == reqwest::StatusCode::NOT_FOUND {
                    return Ok(None);
                }
                if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                    return Err(SourceError::Transient(format!("{shown}: HTTP {status}")));
                }
                if !status.is_success() {
                    return Err(SourceError::Permanent(format!("{shown}: HTTP {status}")));
                }
                let body = response.bytes_stream().map_err(std::io::Error::other);
                Ok(Some(HourBytes::Stream(Box::new(tokio_util::io::StreamReader::new(body)))))
            }
        }
    }
}

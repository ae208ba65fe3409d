//! Lines no engine can take are kept, not dropped: one JSON-lines file per hour,
//! `<dir>/<table>/<hour stem>.jsonl`, each record with the line number, the
//! reason and the original bytes. Rewritten whenever the hour is loaded again, so
//! retries never double it.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ghbench_core::{Hour, TableName};

use crate::clean::Defect;

/// An io error that names the quarantine file: the user must know which
/// folder to mend.
fn naming(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

pub struct Quarantine {
    hour: Hour,
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Quarantine {
    /// Forgets any record from an earlier attempt at this hour.
    pub fn for_hour(dir: &Path, table: &TableName, hour: Hour) -> io::Result<Quarantine> {
        let path = dir.join(table.as_str()).join(format!("{}.jsonl", hour.stem()));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(naming(&path, e)),
            _ => {}
        }
        Ok(Quarantine { hour, path, file: None })
    }

    pub fn record(&mut self, line: u64, defect: Defect, detail: &str, raw: &[u8]) -> io::Result<()> {
        if self.file.is_none() {
            let opened = std::fs::create_dir_all(self.path.parent().expect("quarantine path has a parent")).and_then(|()| File::create(&self.path));
            self.file = Some(BufWriter::new(opened.map_err(|e| naming(&self.path, e))?));
        }
        let mut record = serde_json::json!({
            "hour": self.hour,
            "file": self.hour.file_name(),
            "line": line,
            "reason": defect.name(),
            "detail": detail,
        });
        // Original bytes, losslessly: as text when they are UTF-8, else base64.
        match std::str::from_utf8(raw) {
            Ok(text) => record["text"] = text.into(),
            Err(_) => record["base64"] = base64::engine::general_purpose::STANDARD.encode(raw).into(),
        }
        let file = self.file.as_mut().expect("opened above");
        serde_json::to_writer(&mut *file, &record)?;
        file.write_all(b"\n")
    }

    /// The file written, if any line was quarantined.
    pub fn finish(self) -> io::Result<Option<PathBuf>> {
        match self.file {
            Some(mut f) => {
                f.flush()?;
                Ok(Some(self.path))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarantine_file_that_cannot_be_written_is_named() {
        let work = tempfile::tempdir().unwrap();
        let in_the_way = work.path().join("q");
        std::fs::write(&in_the_way, "a file").unwrap();
        let hour: Hour = "2015-01-01T00".parse().unwrap();
        let e = Quarantine::for_hour(&in_the_way, &TableName::for_year(2015), hour).err().expect("a file is in the way");
        assert!(e.to_string().starts_with(&format!("{}/github2015/2015-01-01-0.jsonl: ", in_the_way.display())), "{e}");
    }
}

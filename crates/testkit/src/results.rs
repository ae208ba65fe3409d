//! The files a run of ghbench writes (`olap-….json`, `bench-….json` and
//! what lies beside them), found as a person would: the newest of its kind.

use std::path::{Path, PathBuf};

/// The newest results JSON file of `prefix` (`olap`, `index`, `bench`) in `dir`.
pub fn newest_file(dir: &Path, prefix: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files.pop().unwrap_or_else(|| panic!("no {prefix} record in {}", dir.display()))
}

/// The newest results record of `prefix` in `dir` (see [`newest_file`]).
pub fn newest_record(dir: &Path, prefix: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(newest_file(dir, prefix)).unwrap()).unwrap()
}

/// The newest bench record in `dir`, and its file.
pub fn bench_record(dir: &Path) -> (PathBuf, serde_json::Value) {
    let file = newest_file(dir, "bench-");
    let record = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, record)
}

/// Copies the folder `from` to `to`, recursively (a catalog to change, say).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

//! `ghbench download` mirrors over HTTP: complete files only, 404s recorded, reruns skip.

use std::process::Command;

use ghbench_ingest::serve::StaticServer;
use ghbench_testkit::*;

fn download(url: &str, out: &std::path::Path) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["download", "--source", url, "--from", "2015-01-01T00", "--hours", "3", "--retries", "0", "--data-dir"])
        .arg(out)
        .output()
        .unwrap();
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn mirrors_complete_files_records_missing_hours_and_refuses_damaged_ones() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::copy(&real, served.join("2015-01-01-0.json.gz")).unwrap();
    // Hour 01 is a damaged file (a cut gzip); hour 02 does not exist (404).
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(served.join("2015-01-01-1.json.gz"), &bytes[..bytes.len() / 3]).unwrap();
    let server = StaticServer::start(&served, "127.0.0.1:0").unwrap();
    let mirror = work.path().join("mirror");

    let out = download(&server.url(), &mirror);
    assert_eq!(out.status.code(), Some(1), "finished, but an hour failed: rerun to retry it");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().last(), Some(format!("wrote {}", mirror.display()).as_str()), "the last line names the folder: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 downloaded") && stdout.contains("1 missing") && stdout.contains("1 failed"), "{stdout}");
    assert_eq!(std::fs::read(mirror.join("2015-01-01-0.json.gz")).unwrap(), bytes);
    assert!(!mirror.join("2015-01-01-1.json.gz").exists(), "a damaged download must not look complete");
    assert_eq!(std::fs::read_to_string(mirror.join("missing.txt")).unwrap(), "2015-01-01-2.json.gz\n");

    // Rerun: the complete hour is skipped, the damaged one tried again.
    let stdout = String::from_utf8_lossy(&download(&server.url(), &mirror).stdout).to_string();
    assert!(stdout.contains("0 downloaded") && stdout.contains("1 already present"), "{stdout}");
}

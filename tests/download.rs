//! `ghbench download` mirrors over HTTP: complete files only, 404s recorded, reruns skip;
//! `ghbench serve` serves a mirror until a signal ends it.

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

/// `ghbench serve` answers until SIGTERM or Ctrl-C, then exits with 128 + the
/// signal (it once ignored both: its loop held the thread that hears them).
#[test]
fn serve_answers_until_a_signal_ends_it() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("2015-01-01-0.json.gz"), b"not really gzip").unwrap();
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        // Owned: with the signals' default actions (a background `cargo test`
        // starts its children ignoring Ctrl-C), and killed if the test fails.
        let mut child = Owned::spawn(
            Command::new(env!("CARGO_BIN_EXE_ghbench"))
                .args(["serve", "--addr", "127.0.0.1:0"])
                .arg(dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null()),
        );
        // Kept open to the end: serve's output closed would end it (141).
        let mut output = BufReader::new(child.take_stdout());
        let mut first = String::new();
        output.read_line(&mut first).unwrap();
        let url = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no address in {first:?}"));
        let address = url.trim_start_matches("http://").trim_end_matches('/').to_string();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        std::io::Write::write_all(&mut stream, b"GET /2015-01-01-0.json.gz HTTP/1.0\r\n\r\n").unwrap();
        let mut answer = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut answer).unwrap();
        assert!(answer.starts_with(b"HTTP/1.") && answer.ends_with(b"not really gzip"), "it serves before the signal: {}", String::from_utf8_lossy(&answer));
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let ended = child.wait_within(std::time::Duration::from_secs(20));
        assert_eq!(ended.status.code(), Some(status), "signal {signal}");
        assert!(std::net::TcpStream::connect(&address).is_err(), "nothing answers after it ended");
    }
}

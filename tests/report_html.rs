//! `ghbench report FILE.json --html` as a person runs it: the page lands beside
//! the JSON (or at --out) and says where; bad input and unwritable places are
//! refused with a clear message, never a panic. No server needed.

#[path = "../crates/olap/tests/common/sample.rs"]
mod sample;

use std::path::Path;
use std::process::Output;

fn report(args: &[&Path]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ghbench"));
    command.arg("report");
    for arg in args {
        command.arg(arg);
    }
    command.output().expect("run ghbench report")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn html_lands_beside_the_json_or_at_out() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("olap-20261122T120000Z.json");
    std::fs::write(&json, serde_json::to_string_pretty(&sample::record()).unwrap()).unwrap();

    // The sample's engines disagree on one query: written, and said by the exit status.
    let out = report(&[Path::new("--html"), &json]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let beside = dir.path().join("olap-20261122T120000Z.html");
    assert!(text(&out.stdout).contains(&beside.display().to_string()), "says where: {}", text(&out.stdout));
    let page = std::fs::read_to_string(&beside).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.matches("<svg").count() == 7);

    let chosen = dir.path().join("sub/report.html");
    let out = report(&[Path::new("--html"), &json, Path::new("--out"), &chosen]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&chosen).unwrap(), page, "the same record, the same page");
}

/// The command failed with a message, not a panic; its stderr.
fn refused(out: Output) -> String {
    let stderr = text(&out.stderr);
    assert!(!out.status.success() && !stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_input_and_unwritable_places_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let stderr = refused(report(&[Path::new("--html"), &bad]));
    assert!(stderr.contains("bad.json: not a ghbench query result"), "{stderr}");

    let json = dir.path().join("run.json");
    std::fs::write(&json, serde_json::to_string(&sample::record()).unwrap()).unwrap();
    // A file where the page's folder should be.
    let stderr = refused(report(&[Path::new("--html"), &json, Path::new("--out"), &bad.join("report.html")]));
    assert!(stderr.contains(&bad.display().to_string()), "names the path: {stderr}");

    let stderr = refused(report(&[Path::new("--html"), &json, &json]));
    assert!(stderr.contains("--html renders one results file"), "{stderr}");
}

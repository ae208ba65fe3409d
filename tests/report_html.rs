//! `ghbench report FILE.json --html PAGE` as a person runs it: the page lands
//! where asked (or on standard output) and the last line says where; bad input
//! and unwritable places are refused with a clear message, never a panic. No
//! server needed.

use std::path::Path;

use ghbench_testkit::sample;
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
fn html_lands_where_asked_or_on_standard_output_and_the_last_line_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("olap-20261122T120000Z.json");
    std::fs::write(&json, serde_json::to_string_pretty(&sample::record()).unwrap()).unwrap();

    // The sample's engines disagree on one query: written, and said by the exit status.
    let chosen = dir.path().join("sub/report.html");
    let out = report(&[&json, Path::new("--html"), &chosen]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().last(), Some(format!("wrote {}", chosen.display()).as_str()), "the last line names the page: {stderr}");
    assert!(stderr.contains("MISMATCH"), "the exit status 1 is explained: {stderr}");
    let page = std::fs::read_to_string(&chosen).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.matches("<svg").count() == 7);

    let out = report(&[&json, Path::new("--html"), Path::new("-")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), page.trim_end(), "the same record, the same page, on standard output");
    assert!(!text(&out.stderr).contains("wrote"), "nothing written to a file: {}", text(&out.stderr));

    // The Markdown as a file, said on the last line.
    let md = dir.path().join("report.md");
    let out = report(&[&json, Path::new("--markdown"), &md]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&md).unwrap().contains("| query |"), "a Markdown table");
    assert_eq!(text(&out.stderr).lines().last(), Some(format!("wrote {}", md.display()).as_str()));
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
    let stderr = refused(report(&[&bad, Path::new("--html"), Path::new("-")]));
    assert!(stderr.contains("bad.json: not a ghbench query result"), "{stderr}");

    let json = dir.path().join("run.json");
    std::fs::write(&json, serde_json::to_string(&sample::record()).unwrap()).unwrap();
    // A file where the page's folder should be.
    let stderr = refused(report(&[&json, Path::new("--html"), &bad.join("report.html")]));
    assert!(stderr.contains(&bad.display().to_string()), "names the path: {stderr}");

    let stderr = refused(report(&[&json, &json, Path::new("--html"), Path::new("-")]));
    assert!(stderr.contains("--html renders one results file"), "{stderr}");

    // `--html a.json b.json` would take a results file for the page: refused,
    // the file untouched, with exit status 2 (an error, not a result).
    let before = std::fs::read(&json).unwrap();
    let out = report(&[Path::new("--html"), &json, &json]);
    let stderr = refused(out.clone());
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("would write over a results file"), "{stderr}");
    assert_eq!(std::fs::read(&json).unwrap(), before, "the record is untouched");
}

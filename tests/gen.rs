//! `ghbench gen` end to end: clear errors on bad input, calibrate then generate,
//! and generated hours with injected defects loaded by `ghbench ingest` into both
//! real servers with exactly the counts the manifest records.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::ingest_report;
use ghbench_testkit::*;
use serde_json::Value;

fn gen(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ghbench")).arg("gen").args(args).output().expect("run ghbench");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn fails_with(args: &[&str], message: &str) {
    let out = gen(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "ghbench gen {args:?} succeeded");
    assert!(stderr.contains(message), "ghbench gen {args:?}: expected '{message}' in: {stderr}");
    assert!(!stderr.contains("panicked"), "ghbench gen {args:?} panicked: {stderr}");
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("gen-manifest.json")).expect("gen writes its manifest")).unwrap()
}

#[test]
fn gen_refuses_bad_input_with_clear_errors() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let out = out.to_str().unwrap();
    let hour = ["--from", "2015-01-01T00"];
    fails_with(&["--calibrate", "/nonexistent/2015-01-01-0.json.gz"], "cannot read /nonexistent/2015-01-01-0.json.gz");
    let bad = work.path().join("bad.json");
    std::fs::write(&bad, "{ not a profile").unwrap();
    fails_with(&[&hour[..], &["--data-dir", out, "--profile", bad.to_str().unwrap()]].concat(), "is not a ghbench profile");
    fails_with(&[&hour[..], &["--data-dir", out, "--events", "0"]].concat(), "--events must be at least 1");
    fails_with(&[&hour[..], &["--data-dir", out, "--defects", "2"]].concat(), "--defects must be a probability");
    fails_with(&[&hour[..], &["--data-dir", "/proc/ghbench-gen-test"]].concat(), "cannot write /proc/ghbench-gen-test");
    // The cause is said once, not once by the message and again as its source.
    let in_the_way = bad.to_str().unwrap();
    fails_with(&[&hour[..], &["--data-dir", in_the_way]].concat(), &format!("cannot write {in_the_way}: File exists (os error 17)\n"));
    fails_with(&[&hour[..], &["--data-dir", out, "--profile", in_the_way]].concat(), "is not a ghbench profile: key must be a string at line 1 column 3\n");
    fails_with(&["--data-dir", out], "choose the hours");
}

#[test]
fn calibrate_writes_a_profile_that_gen_uses() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile.json");
    let out = gen(&["--calibrate", real.to_str().unwrap(), "--json", profile.to_str().unwrap()]);
    assert!(out.status.success());
    let dir = work.path().join("hours");
    let args = ["--from", "2015-01-01T22", "--to", "2015-01-02T01", "--events", "300", "--data-dir", dir.to_str().unwrap()];
    let out = gen(&[&args[..], &["--profile", profile.to_str().unwrap()]].concat());
    assert!(out.status.success());
    for name in ["2015-01-01-22.json.gz", "2015-01-01-23.json.gz", "2015-01-02-0.json.gz", "2015-01-02-1.json.gz"] {
        assert_eq!(real_lines(&dir.join(name)).len(), 300, "{name}");
    }
    let m = manifest(&dir);
    assert_eq!(m["profile"], profile.to_str().unwrap());
    assert_eq!(m["totals"]["expected"]["events"], 1200);
}

#[tokio::test]
async fn generated_hours_with_defects_load_exactly_as_the_manifest_says() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    let dir_s = dir.to_str().unwrap();
    let args = ["--from", "2015-01-01T00", "--hours", "4", "--events", "1500", "--seed", "7"];
    let out = gen(&[&args[..], &["--defects", "0.02", "--truncate-prob", "0.5", "--data-dir", dir_s]].concat());
    assert!(out.status.success());
    let m = manifest(&dir);
    let hours = m["hours"].as_array().unwrap();
    let truncated = hours.iter().filter(|h| h["injected"]["truncated_file"] == true).count();
    assert!(truncated > 0 && truncated < 4, "seed 7 should give whole and cut files, got {truncated} cut of 4; pick another seed");
    let injected = &m["totals"];
    for kind in ["corrupt_lines", "nul_escapes", "invalid_utf8"] {
        assert!(injected[kind].as_u64().unwrap() > 0, "no {kind} injected");
    }
    let expected = &m["totals"]["expected"];

    let table = table("gen");
    drop_table(&table).await;
    let report = ingest_report(&table, work.path(), &["--source", dir_s, "--from", "2015-01-01T00", "--hours", "4"]);
    assert_exact(&table, expected["events"].as_u64().unwrap()).await;
    let totals = &report["totals"];
    assert_eq!(totals["lines"], expected["lines"]);
    assert_eq!(totals["events"], expected["events"]);
    assert_eq!(totals["sanitized"], expected["sanitized"]);
    assert_eq!(totals["quarantined"], expected["quarantined"]);
    assert_eq!(totals["file_defects"].as_u64().unwrap(), truncated as u64);
    for (loaded, made) in report["hours"].as_array().unwrap().iter().zip(hours) {
        assert_eq!(loaded["hour"], made["hour"]);
        assert_eq!(loaded["decode"]["events"], made["expected"]["events"], "hour {}", made["hour"]);
    }
    drop_table(&table).await;
}

#[test]
fn a_gen_that_fails_part_way_leaves_no_manifest_of_files_it_replaced() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    let out = dir.to_str().unwrap();
    let hours = ["--from", "2015-01-01T00", "--hours", "2", "--events", "50", "--threads", "1", "--data-dir", out];
    assert!(gen(&[&hours[..], &["--seed", "1"]].concat()).status.success());
    assert_eq!(manifest(&dir)["seed"], 1);
    // The second hour cannot be written now: a folder stands in its file's place.
    let second = dir.join("2015-01-01-1.json.gz");
    std::fs::remove_file(&second).unwrap();
    std::fs::create_dir(&second).unwrap();
    let before = std::fs::read(dir.join(REAL_HOUR_FILE)).unwrap();
    fails_with(&[&hours[..], &["--seed", "2"]].concat(), "cannot write");
    assert_ne!(std::fs::read(dir.join(REAL_HOUR_FILE)).unwrap(), before, "the first hour was made again, from seed 2");
    assert!(!dir.join("gen-manifest.json").exists(), "no manifest says seed 1 made the first hour");
}

#[test]
fn the_manifest_lists_every_hour_generated_into_its_folder() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    let out = dir.to_str().unwrap();
    let files = |m: &Value| m["hours"].as_array().unwrap().iter().map(|h| h["file"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let settings = ["--events", "50", "--seed", "1", "--data-dir", out];
    assert!(gen(&[&["--from", "2015-01-01T00", "--hours", "2"][..], &settings].concat()).status.success());
    // A later hour with the same settings joins the earlier ones.
    assert!(gen(&[&["--from", "2015-01-01T02"][..], &settings].concat()).status.success());
    let all = manifest(&dir);
    assert_eq!(files(&all), ["2015-01-01-0.json.gz", "2015-01-01-1.json.gz", "2015-01-01-2.json.gz"]);
    assert_eq!(all["totals"]["hours"], 3);
    for hour in all["hours"].as_array().unwrap() {
        let written = std::fs::read(dir.join(hour["file"].as_str().unwrap())).unwrap();
        assert_eq!(hour["digest"].as_str().unwrap(), ghbench_core::digest::of_bytes(&written), "{hour}");
    }

    // Other settings beside hours they would not replace: refused, nothing written.
    let middle = dir.join("2015-01-01-1.json.gz");
    let before = std::fs::read(&middle).unwrap();
    fails_with(
        &["--from", "2015-01-01T01", "--events", "50", "--seed", "2", "--data-dir", out],
        "lists hours this run would not make again (2015-01-01T00, 2015-01-01T02), made with other settings (seed 1,",
    );
    assert_eq!(std::fs::read(&middle).unwrap(), before);
    assert_eq!(manifest(&dir), all);
    // Making every listed hour again replaces them all.
    assert!(gen(&["--from", "2015-01-01T00", "--hours", "3", "--events", "50", "--seed", "2", "--data-dir", out]).status.success());
    assert_eq!((files(&manifest(&dir)), manifest(&dir)["seed"].as_u64()), (files(&all), Some(2)));
}

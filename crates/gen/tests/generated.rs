//! Generated hours look like GH Archive 2015 files, are the same for a seed on any
//! thread count, and the shipped profile holds no real text.

use std::io::Read;
use std::path::PathBuf;

use ghbench_core::HourRange;
use ghbench_gen::{calibrate, generate_hour_gzip, run, DefectOptions, Generator, Profile, RunOptions};
use ghbench_testkit::{lines_of, real_hour};
use serde_json::Value;

fn events(gzip: &[u8]) -> Vec<Value> {
    lines_of(gzip).iter().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn events_have_the_2015_envelope_and_payload_shapes() {
    let hour = "2015-01-01T05".parse().unwrap();
    let all = events(&generate_hour_gzip(Profile::default_profile(), 7, hour, 3000).unwrap());
    assert_eq!(all.len(), 3000);
    let mut org = 0;
    let mut last_id = 0u64;
    let mut decreasing = 0;
    for e in &all {
        let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        let base = ["id", "type", "actor", "repo", "payload", "public", "created_at"];
        assert!(keys == base || keys[..7] == base && keys[7..] == ["org"], "keys {keys:?}");
        org += usize::from(keys.len() == 8);
        let id: u64 = e["id"].as_str().expect("id is a string").parse().unwrap();
        decreasing += usize::from(id < last_id);
        last_id = id;
        let created = e["created_at"].as_str().unwrap();
        assert!(created.starts_with("2015-01-01T05:") && created.ends_with('Z') && created.len() == 20, "{created}");
        let actor: Vec<&str> = e["actor"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(actor, ["id", "login", "gravatar_id", "url", "avatar_url"]);
        let repo = e["repo"]["name"].as_str().unwrap();
        assert_eq!(repo.split('/').count(), 2, "{repo}");
        assert_eq!(e["repo"]["url"], format!("https://api.github.com/repos/{repo}"));
        if let Some(o) = e.get("org") {
            assert_eq!(o["login"].as_str().unwrap(), repo.split('/').next().unwrap(), "org owns the repository");
        }
        match e["type"].as_str().unwrap() {
            "PushEvent" => {
                let commits = e["payload"]["commits"].as_array().expect("PushEvent has commits");
                assert_eq!(e["payload"]["size"], commits.len());
            }
            "IssuesEvent" | "IssueCommentEvent" => {
                assert!(e["payload"]["issue"]["comments"].is_u64(), "{}", e["payload"]);
            }
            _ => {}
        }
    }
    assert_eq!(decreasing, 0, "ids grow through the hour");
    let share = org as f64 / all.len() as f64;
    assert!((0.2..0.45).contains(&share), "org on {share:.2} of events, real: about a third");
}

#[test]
fn the_same_seed_gives_the_same_bytes_on_any_thread_count() {
    let hour = "2015-01-01T03".parse().unwrap();
    let one = generate_hour_gzip(Profile::default_profile(), 42, hour, 500).unwrap();
    assert_eq!(one, generate_hour_gzip(Profile::default_profile(), 42, hour, 500).unwrap());
    assert_ne!(one, generate_hour_gzip(Profile::default_profile(), 43, hour, 500).unwrap());

    let gen = Generator::new(Profile::default_profile(), 42).unwrap();
    let range = HourRange::starting_at(hour, 3).unwrap();
    let defects = DefectOptions { rate: 0.01, truncate_prob: 0.5 };
    let write = |threads| {
        let dir = tempfile::tempdir().unwrap();
        let options = RunOptions { out: dir.path().into(), range, events: Some(500), defects, threads, profile_name: "default".into() };
        let manifest = run(&gen, &options, &|_| {}).unwrap();
        let files: Vec<Vec<u8>> = range.iter().map(|h| std::fs::read(dir.path().join(h.file_name())).unwrap()).collect();
        (files, serde_json::to_string(&manifest.hours).unwrap())
    };
    let (serial, serial_manifest) = write(1);
    let (parallel, parallel_manifest) = write(3);
    assert!(serial == parallel, "files differ between 1 and 3 threads");
    assert_eq!(serial_manifest, parallel_manifest);
    // Without defects the events are the same ones: damage draws from its own stream.
    let clean = generate_hour_gzip(Profile::default_profile(), 42, hour, 500).unwrap();
    assert_eq!(events(&clean).len(), 500);
}

#[test]
fn bad_options_are_refused_with_clear_errors() {
    let gen = Generator::new(Profile::default_profile(), 1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let range = HourRange::starting_at("2015-01-01T00".parse().unwrap(), 1).unwrap();
    let base = RunOptions { out: dir.path().into(), range, events: Some(0), defects: DefectOptions::default(), threads: 1, profile_name: "x".into() };
    assert!(run(&gen, &base, &|_| {}).unwrap_err().to_string().contains("--events"));
    let rate = RunOptions { events: Some(5), defects: DefectOptions { rate: 1.5, truncate_prob: 0.0 }, ..base.clone() };
    assert!(run(&gen, &rate, &|_| {}).unwrap_err().to_string().contains("--defects"));
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, b"x").unwrap();
    let unwritable = RunOptions { out: blocked.join("sub"), events: Some(5), ..base.clone() };
    assert!(run(&gen, &unwritable, &|_| {}).unwrap_err().to_string().contains("cannot write"));
    let missing = calibrate(&[dir.path().join("nope.json.gz")]).unwrap_err().to_string();
    assert!(missing.contains("cannot read") && missing.contains("nope.json.gz"), "{missing}");
}

/// The shipped profile is what calibrating the shared real hour gives today, and
/// it carries none of that hour's text: no login, repository name, title, body,
/// message or description of a real event.
#[test]
fn the_default_profile_is_calibrated_from_the_real_hour_and_holds_no_real_text() {
    let Some(real) = real_hour() else { return };
    let shipped = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/default.json")).unwrap();
    let fresh = calibrate(std::slice::from_ref(&real)).unwrap().profile.to_json();
    assert!(
        fresh == shipped,
        "profiles/default.json is stale: regenerate it with `ghbench gen --calibrate {} --json crates/gen/profiles/default.json`",
        real.display()
    );
    let mut gzip = Vec::new();
    std::fs::File::open(&real).unwrap().read_to_end(&mut gzip).unwrap();
    // Keys, vocabularies and template segments are structure, shared by many
    // events (`published`, `comments`): a real value equal to one is no leak.
    let mut structure = std::collections::HashSet::new();
    let mut stack = vec![serde_json::from_str::<Value>(&shipped).unwrap()];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    structure.insert(k);
                    stack.push(v);
                }
            }
            Value::Array(a) => stack.extend(a),
            Value::String(s) => structure.extend(s.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_string).chain([s.clone()])),
            _ => {}
        }
    }
    let mut leaked = Vec::new();
    let mut checked = 0;
    for e in events(&gzip) {
        let mut stack = vec![(String::new(), &e)];
        while let Some((key, v)) = stack.pop() {
            match v {
                Value::Object(m) => stack.extend(m.iter().map(|(k, v)| (k.clone(), v))),
                Value::Array(a) => stack.extend(a.iter().map(|v| (key.clone(), v))),
                Value::String(s)
                    if s.len() >= 8 && ["login", "name", "full_name", "title", "body", "message", "description", "email"].contains(&key.as_str()) =>
                {
                    checked += 1;
                    if !structure.contains(s) && shipped.contains(s.as_str()) {
                        leaked.push(format!("{key}: {s}"));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(checked > 10_000, "checked only {checked} strings");
    leaked.sort();
    leaked.dedup();
    assert!(leaked.is_empty(), "the profile contains real text: {leaked:?}");
}

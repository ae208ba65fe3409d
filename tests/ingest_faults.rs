//! Bad input never stops the run and never silently loses data: each defect's
//! policy, with counts checked against what the test itself put in the files.

use std::io::Read;

use crate::util::{ingest, ingest_report};
use ghbench_testkit::*;
use mongodb::bson::doc;

#[tokio::test]
async fn defective_lines_are_quarantined_or_sanitized_and_the_rest_loads() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let lines = real_lines(&real);
    let mut hour: Vec<Vec<u8>> = lines[..300].to_vec();
    // Line numbers are 1-based: the injected lines sit at 101, 151, 201 and 251.
    hour.insert(100, br#"{"id":"x","type":"PushEvent","#.to_vec());
    hour.insert(150, br#"{"id":"nul","type":"PushEvent","actor":{"login":"a\u0000b"},"note":"keep \\u0000 literal"}"#.to_vec());
    hour.insert(200, b"{\"id\":\"utf\",\"type\":\"\xff\xfe\"}".to_vec());
    hour.insert(250, b"".to_vec());
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    write_hour(&dir, "2015-01-01-0.json.gz", &hour);
    let table = table("faults");
    drop_table(&table).await;

    let report = ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"]);
    let expected = 300 + 1; // the real lines plus the sanitized one
    assert_exact(&table, expected).await;
    let totals = &report["totals"];
    assert_eq!(totals["lines"], 304);
    assert_eq!(totals["events"], expected);
    assert_eq!(totals["sanitized"], 1);
    assert_eq!(totals["quarantined_total"], 3);
    assert_eq!(totals["quarantined"]["invalid_json"], 1);
    assert_eq!(totals["quarantined"]["invalid_utf8"], 1);
    assert_eq!(totals["quarantined"]["empty_line"], 1);

    // Quarantine keeps each rejected line with its number, reason and bytes.
    let file = work.path().join("quarantine").join(&table).join("2015-01-01-0.jsonl");
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seen: Vec<(u64, &str)> = records.iter().map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap())).collect();
    assert_eq!(seen, [(101, "invalid_json"), (201, "invalid_utf8"), (251, "empty_line")]);
    assert_eq!(records[0]["text"], r#"{"id":"x","type":"PushEvent","#);
    assert!(records[1]["base64"].is_string());

    // The sanitized event is identical in both engines: escape gone, escaped backslash kept.
    let pg_login: String = pg()
        .await
        .query_one(&format!("SELECT data->'actor'->>'login' || '|' || (data->>'note') FROM {table} WHERE data->>'id' = 'nul'"), &[])
        .await
        .unwrap()
        .get(0);
    let doc = mongo().await.collection::<mongodb::bson::Document>(&table).find_one(doc! {"id": "nul"}).await.unwrap().unwrap();
    let mongo_login = format!("{}|{}", doc.get_document("actor").unwrap().get_str("login").unwrap(), doc.get_str("note").unwrap());
    assert_eq!(pg_login, r"ab|keep \u0000 literal");
    assert_eq!(pg_login, mongo_login);
    assert_eq!(doc.get_str("_id").unwrap(), "2015-01-01-0/151");
    drop_table(&table).await;
}

#[tokio::test]
async fn truncated_and_empty_files_load_what_they_hold() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let lines = real_lines(&real);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    // Hour 00: a gzip cut in the middle, as an interrupted download leaves it.
    let full = write_hour(&dir, "2015-01-01-0.json.gz", &lines[..2000]);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(&full, &bytes[..bytes.len() / 2]).unwrap();
    // Independently: how many complete lines can be recovered from the cut file.
    let mut recovered = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(&bytes[..bytes.len() / 2]).read_to_end(&mut recovered);
    let complete = recovered.iter().filter(|b| **b == b'\n').count() as u64;
    let partial = u64::from(!recovered.ends_with(b"\n") && !recovered.is_empty());
    assert!(complete > 100 && complete < 2000, "cut point gave {complete} lines");
    // Hour 01: an empty file. Hour 02: a good one.
    std::fs::write(dir.join("2015-01-01-1.json.gz"), b"").unwrap();
    write_hour(&dir, "2015-01-01-2.json.gz", &lines[..50]);
    let table = table("truncated");
    drop_table(&table).await;

    let report = ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "3"]);
    assert_exact(&table, complete + 50).await;
    let hours = report["hours"].as_array().unwrap();
    assert_eq!(hours[0]["decode"]["events"], complete);
    assert_eq!(hours[0]["decode"]["quarantined"]["truncated_line"].as_u64().unwrap_or(0), partial);
    assert!(hours[0]["decode"]["file_defect"].as_str().unwrap().contains("truncated or corrupt gzip"));
    assert_eq!(hours[1]["decode"]["events"], 0);
    assert!(hours[1]["decode"]["file_defect"].as_str().unwrap().contains("empty file"));
    assert_eq!(report["totals"]["hours_loaded"], 3);
    assert_eq!(report["totals"]["file_defects"], 2);

    // Damaged hours are recorded as loaded with what they held: a rerun keeps the counts.
    ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--hours", "3"]);
    assert_exact(&table, complete + 50).await;
    drop_table(&table).await;
}

#[tokio::test]
async fn numbers_bson_cannot_hold_and_deep_documents_are_refused_alike_by_both_engines() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let mut hour: Vec<Vec<u8>> = real_lines(&real)[..50].to_vec();
    let deep = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
    hour.extend([
        br#"{"id":"beyond_u64","n":18446744073709551617}"#.to_vec(),
        br#"{"id":"beyond_i64","n":10000000000000000000}"#.to_vec(),
        br#"{"id":"two_to_the_63","n":9223372036854775808}"#.to_vec(),
        br#"{"id":"beyond_f64","n":1e400}"#.to_vec(),
        br#"{"id":"fits","n":9223372036854775807,"m":-9223372036854775808}"#.to_vec(),
        deep.into_bytes(),
        br#"{"id":"literal","note":"keep \\u0000 as text"}"#.to_vec(),
    ]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    write_hour(&dir, "2015-01-01-0.json.gz", &hour);
    let table = table("numbers");
    drop_table(&table).await;

    let report = ingest_report(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"]);
    let totals = &report["totals"];
    assert_eq!(totals["quarantined"]["integer_out_of_range"], 3, "{totals}");
    assert_eq!(totals["quarantined"]["number_out_of_range"], 1, "{totals}");
    assert_eq!(totals["quarantined"]["too_deep"], 1, "{totals}");
    assert_eq!(totals["sanitized"], 0, "an escaped backslash before u0000 removes nothing");
    assert_exact(&table, 52).await;
    // What both engines hold is the same number, exactly.
    let pg_n: String = pg().await.query_one(&format!("SELECT data->>'n' FROM {table} WHERE data->>'id' = 'fits'"), &[]).await.unwrap().get(0);
    let doc = mongo().await.collection::<mongodb::bson::Document>(&table).find_one(doc! {"id": "fits"}).await.unwrap().unwrap();
    assert_eq!(pg_n, doc.get_i64("n").unwrap().to_string());
    assert_eq!(doc.get_i64("m").unwrap(), i64::MIN);
    let records = std::fs::read_to_string(work.path().join("quarantine").join(&table).join("2015-01-01-0.jsonl")).unwrap();
    // Said as it is: 2^63 fits in 64 bits, only not in BSON's signed integers.
    assert!(
        records.contains("integer 9223372036854775808 is outside the signed 64-bit range of BSON's integers (-9223372036854775808 to 9223372036854775807)"),
        "{records}"
    );
    assert!(records.contains("number 1e400 is beyond a double's range"), "{records}");
    drop_table(&table).await;
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_is_loaded() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let empty = work.path().to_str().unwrap();
    // ghbench's own bookkeeping and the server's catalogs are not data tables.
    for (name, why) in [("ghbench_ledger", "is reserved"), ("pg_class", "is reserved"), ("user", "reserved word in PostgreSQL")] {
        let out = ingest(name, work.path(), &["--engines", "postgres", "--source", empty, "--from", "2015-01-01T00"]);
        assert!(!out.status.success() && text(&out).contains(why), "{name}: {}", text(&out));
    }
    // Checked on every engine before any engine changes anything: MongoDB's
    // collection survives a --drop that PostgreSQL's reserved word refuses.
    let user = mongo().await.collection::<mongodb::bson::Document>("user");
    user.insert_one(doc! {"kept": true}).await.unwrap();
    let out = ingest("user", work.path(), &["--engines", "mongo,postgres", "--drop", "--source", empty, "--from", "2015-01-01T00"]);
    let kept = user.count_documents(doc! {"kept": true}).await.unwrap();
    user.drop().await.unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(kept, 1, "the refused run dropped MongoDB's collection");

    // A quarantine folder that cannot be one is said with its path before any
    // hour is read, not as every hour failing at its first bad line.
    let in_the_way = tempfile::tempdir().unwrap();
    let quarantine = in_the_way.path().join("quarantine");
    std::fs::write(&quarantine, "a file, not a folder").unwrap();
    write_hour(in_the_way.path(), "2015-01-01-0.json.gz", &[b"not json".to_vec()]);
    let hours = in_the_way.path().to_str().unwrap();
    let out = ingest("t_quarantine", in_the_way.path(), &["--source", hours, "--from", "2015-01-01T00", "--dry-run"]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains(&format!("--quarantine-dir {} is a file, not a folder; give a folder", quarantine.display())), "{said}");
    assert!(!said.contains("loading "), "refused before loading: {said}");

    // A name too long for the index names made from it is refused before
    // loading, with the limit and the name that would pass it; a name too
    // long in itself is said to be that, not to have the wrong characters.
    let long = format!("t{}", "x".repeat(49));
    let out = ingest(&long, work.path(), &["--engines", "postgres", "--source", empty, "--from", "2015-01-01T00"]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains(&format!("'{long}_idx_issue_comments' would be 69 bytes, more than the 63")), "{said}");
    assert!(said.contains("choose a --table of at most 44 characters") && !said.contains("loading "), "{said}");
    let out = ingest(&"x".repeat(64), work.path(), &["--engines", "postgres", "--source", empty, "--from", "2015-01-01T00"]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains("is 64 bytes, more than the 63") && !said.contains("lower-case"), "{said}");

    // --hours and --to count from --from: without it they are refused, with
    // --reload as alone, not dropped without a word; an error exits 2.
    for args in [&["--hours", "6", "--dry-run"][..], &["--engines", "postgres", "--reload", "2015-01-01T03", "--to", "2015-01-01T05"][..]] {
        let out = ingest("t_from", work.path(), &[&["--source", empty][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("count from --from: add --from"), "{args:?}: {}", text(&out));
    }

    // A year of missing hours is summarised, not listed hour by hour.
    let out = ingest("t_dry", work.path(), &["--source", empty, "--year", "0", "--dry-run"]);
    let said = text(&out);
    let line = said.lines().find(|l| l.starts_with("missing hours")).unwrap_or_else(|| panic!("{said}"));
    assert_eq!(line, "missing hours (8784): 0000-01-01T00 .. 0000-12-31T23 (8784 hours)");
}

#[tokio::test]
async fn the_report_goes_into_a_folder_made_for_it() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    write_hour(&dir, "2015-01-01-0.json.gz", &real_lines(&real)[..20]);
    let table = table("report_dir");
    drop_table(&table).await;
    let report = work.path().join("not/yet/there/report.json");
    let out = ingest(&table, work.path(), &["--source", dir.to_str().unwrap(), "--from", "2015-01-01T00", "--json", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["totals"]["events"], 20);
    assert_eq!(json["schema"], "ghbench-ingest/1", "the summary names its schema");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.lines().last(), Some(format!("wrote {}", report.display()).as_str()), "the last line names the file: {said}");
    drop_table(&table).await;
}

/// A role of the user's own that may not create what an engine needs: the
/// load stops before any hour with PostgreSQL's refusal and what to grant,
/// not a bare "permission denied" (`doctor`, which makes nothing, cannot tell).
#[tokio::test]
async fn a_role_without_the_right_to_create_is_told_what_to_grant() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let role = format!("ghbench_norights_{}", std::process::id());
    let url = pg_url().replacen("://ghbench@", &format!("://{role}@"), 1);
    if url == pg_url() {
        eprintln!("skipped: DATABASE_URL is not the one `just setup` writes");
        return;
    }
    let admin = pg().await;
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN")).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hours");
    std::fs::create_dir(&dir).unwrap();
    write_hour(&dir, "2015-01-01-0.json.gz", &real_lines(&real)[..5]);
    let table = table("norights");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", "postgres-tuned", "--table", &table, "--pg-url", &url, "--source", dir.to_str().unwrap(), "--from", "2015-01-01T00"])
        .arg("--quarantine-dir")
        .arg(work.path().join("q"))
        .output()
        .unwrap();
    let said = text(&out);
    admin.batch_execute(&format!("DROP ROLE {role}")).await.unwrap();
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("permission denied") && said.contains("GRANT CREATE ON DATABASE"), "says what to grant: {said}");
}

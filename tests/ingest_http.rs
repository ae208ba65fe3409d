//! The real hour through the HTTP path, served from a folder by a local server.

use crate::util::{ingest, ingest_report, SmallDisk};
use ghbench_ingest::serve::StaticServer;
use ghbench_testkit::*;

#[tokio::test]
async fn loads_the_real_hour_over_http_exactly_once_and_reports_missing_hours() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let expected = real_lines(&real).len() as u64;
    assert_eq!(expected, 7702, "the shared real hour");
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::copy(&real, served.join(REAL_HOUR_FILE)).unwrap();
    let server = StaticServer::start(&served, "127.0.0.1:0").unwrap();
    let table = table("http");
    drop_table(&table).await;

    // Hour 01 is not served: a 404, reported as missing, not an error.
    let args = ["--source", &server.url(), "--from", "2015-01-01T00", "--to", "2015-01-01T01"];
    let first = ingest_report(&table, work.path(), &args);
    assert_exact(&table, expected).await;
    assert_eq!(first["totals"]["hours_loaded"], 1);
    assert_eq!(first["totals"]["hours_missing"], 1);
    let missing: Vec<&str> = first["hours"].as_array().unwrap().iter().filter(|h| h["status"] == "missing").map(|h| h["hour"].as_str().unwrap()).collect();
    assert_eq!(missing, ["2015-01-01T01"]);
    for engine in ["postgres", "mongo"] {
        assert_eq!(first["totals"]["engines"][engine]["stored"], expected, "{engine}");
        assert_eq!(first["totals"]["engines"][engine]["table_events"], expected, "{engine}");
    }
    let products: Vec<&str> = first["servers"].as_array().unwrap().iter().map(|s| s["product"].as_str().unwrap()).collect();
    assert_eq!(products[0], "PostgreSQL");
    assert!(products[1] == "MongoDB" || products[1] == "SecantusDB", "{products:?}");

    // A rerun skips the loaded hour and still looks for the missing one.
    let second = ingest_report(&table, work.path(), &args);
    assert_exact(&table, expected).await;
    assert_eq!(second["totals"]["hours_skipped"], 1);
    assert_eq!(second["totals"]["hours_missing"], 1);
    assert_eq!(second["totals"]["engines"]["postgres"]["stored"], 0);
    drop_table(&table).await;
}

#[tokio::test]
async fn fails_with_a_clear_message_when_nothing_can_be_loaded() {
    let _servers = shared_servers();
    let work = tempfile::tempdir().unwrap();
    let table = table("nothing");
    let out = ingest(&table, work.path(), &["--source", work.path().to_str().unwrap(), "--from", "2015-01-01T00"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no hour could be loaded"));
    drop_table(&table).await;

    let out = ingest(&table, work.path(), &["--source", "/no/such/dir", "--from", "2015-01-01T00"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither an http(s) URL nor an existing directory"));
}

#[test]
fn refuses_unreachable_servers_without_printing_passwords() {
    let work = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ghbench"))
        .args(["ingest", "--engines", "postgres", "--pg-url", "postgres://u:hunter2@127.0.0.1:1/x"])
        .args(["--source", work.path().to_str().unwrap(), "--from", "2015-01-01T00"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot reach postgres") && stderr.contains("just setup"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// An http source's hours are sized by HEAD before anything loads: a load
/// that fits says its estimate; one too big for the polars folder's file
/// system is refused with the numbers before it writes anything, as a local
/// folder's is (an http source was not checked before).
#[test]
fn an_http_load_is_sized_by_head_and_refused_when_it_would_not_fit() {
    let Some(real) = real_hour() else { return };
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir(&served).unwrap();
    for h in 0..4 {
        std::fs::copy(&real, served.join(format!("2015-01-01-{h}.json.gz"))).unwrap();
    }
    let server = StaticServer::start(&served, "127.0.0.1:0").unwrap();
    let url = server.url();
    let quarantine = work.path().join("q");
    let load = |polars: &std::path::Path| {
        let args = ["ingest", "--engines", "polars", "--polars-dir", polars.to_str().unwrap(), "--source", &url, "--from", "2015-01-01T00", "--hours", "4", "--quarantine-dir", quarantine.to_str().unwrap()];
        let out = output_within(std::process::Command::new(env!("CARGO_BIN_EXE_ghbench")).args(args), std::time::Duration::from_secs(600));
        eprintln!("ghbench {}:\n{}", args.join(" "), text(&out));
        out
    };
    let out = load(&work.path().join("polars"));
    assert!(out.status.success(), "{}", text(&out));
    let gzip = std::fs::metadata(&real).unwrap().len();
    assert!(text(&out).contains(&format!("the hours' sizes estimated from 4 of 4 by HEAD (Content-Length), {} each on average", ghbench_ingest::space::size_text(gzip))), "{}", text(&out));
    // 4 hours of 17.8 MB of JSON each, with nothing stored yet to measure on, on 16 MB.
    let Some(disk) = SmallDisk::mount("http-space", 16) else { return };
    let out = load(&disk.dir.join("polars"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("not enough free space for this load"), "{}", text(&out));
    assert!(!disk.dir.join("polars/github2015").read_dir().is_ok_and(|mut d| d.any(|f| f.is_ok_and(|f| f.file_name().to_string_lossy().ends_with(".parquet")))), "nothing written");
}

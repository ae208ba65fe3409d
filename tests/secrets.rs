//! No secret leaks (issue 50): every secret a driver documents, in the forms
//! a user writes a connection string in, is absent from what ghbench says,
//! from its records and from its reports, run against the real servers.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ghbench_testkit::*;

const SECRET: &str = "S3cr:et";

/// Every file under `dir`, read as text.
fn all_text_under(dir: &Path) -> String {
    let mut text = String::new();
    let Ok(listing) = std::fs::read_dir(dir) else { return text };
    for entry in listing.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&all_text_under(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()));
        }
    }
    text
}

fn assert_hidden(what: &str, text: &str) {
    for shown in [SECRET, "S3cr", "cr:et"] {
        assert!(!text.contains(shown), "{what} shows the secret ({shown:?}):\n{text}");
    }
}

/// A libpq key=value string with a password holding a colon (the server
/// trusts the user, so it connects), secret TLS and proxy options on the
/// MongoDB URI, and a MySQL password: a load, a query run with its record
/// and report, and `doctor` say none of them.
#[tokio::test]
async fn secrets_in_every_form_are_absent_from_messages_records_and_reports() {
    let _servers = shared_servers();
    let Some(real) = real_hour() else { return };
    let table = table("secrets");
    let work = tempfile::tempdir().unwrap();
    // postgres://USER@HOST:PORT/DB (as `just setup` writes it), as key=value words.
    let pg = pg_url();
    let rest = pg.split_once("://").unwrap().1;
    let (user, rest) = rest.split_once('@').unwrap();
    let (address, db) = rest.split_once('/').unwrap();
    let (host, port) = address.rsplit_once(':').unwrap();
    let db = db.split('?').next().unwrap();
    // The password first: a reader that stops at the first colon would show its head.
    let libpq = format!("password='{SECRET}' host={host} port={port} user={user} dbname={db} application_name=x");
    let mongo = format!("{}&proxyPassword={SECRET}&tlsCertificateKeyFilePassword={SECRET}", mongo_url());
    let run = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ghbench"));
        command.args(args).args(["--pg-url", &libpq]).env("MONGODB_URI", &mongo).env_remove("GHBENCH_SERVERS");
        let out = output_within(&mut command, Duration::from_secs(300));
        (out.status.code(), text(&out))
    };
    let (code, said) = run(&["ingest", "--engines", "postgres", "--table", &table, "--from", "2015-01-01T00", "--to", "2015-01-01T00", "--source", real.parent().unwrap().to_str().unwrap(), "--quarantine-dir", work.path().join("q").to_str().unwrap()]);
    assert_eq!(code, Some(0), "{said}");
    assert_hidden("ingest", &said);
    let results = work.path().join("results");
    let (code, said) = run(&["query", "A", "--repeat", "1", "--engines", "postgres", "--table", &table, "--output", results.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{said}");
    assert_hidden("query", &said);
    let records = all_text_under(&results);
    assert!(records.contains("\"server\"") || records.contains("url"), "the record names its server");
    assert_hidden("the query's record and report", &records);
    // doctor on both: the MongoDB driver may refuse the proxy without a
    // host, and its refusal must not say the secret either.
    let (_, said) = run(&["doctor", "--engines", "postgres,mongo"]);
    assert!(said.contains("postgres") && said.contains("host="), "{said}");
    assert_hidden("doctor", &said);
    drop_table(&table).await;
}

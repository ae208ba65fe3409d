//! The mapping over every document of the real GH Archive hour: each one comes
//! back from its rows exactly (values and types; key order aside), and the
//! tables the paper's queries read are there under the names the rules give.

use std::io::BufRead;

use ghbench_normalize::{rebuild, Schema};
use ghbench_testkit::real_hour;
use serde_json::Value;

#[test]
fn every_real_document_comes_back_from_its_rows() {
    let Some(path) = real_hour() else { return };
    let reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()));
    let mut schema = Schema::new("github2015");
    let (mut documents, mut rows) = (0, 0);
    for (line, text) in reader.lines().enumerate() {
        let doc: Value = serde_json::from_str(&text.unwrap()).unwrap();
        let derived = schema.derive(line as i64, doc.as_object().unwrap());
        rows += derived.rows.len();
        assert_eq!(rebuild(&schema, &derived.rows).as_ref(), Some(&doc), "line {}", line + 1);
        documents += 1;
    }
    assert_eq!(documents, 7702);
    let names: Vec<&str> = schema.tables().iter().map(|t| t.name.as_str()).collect();
    for needed in ["github2015", "github2015_actor", "github2015_repo", "github2015_payload", "github2015_payload_issue"] {
        assert!(names.contains(&needed), "{needed} in {names:?}");
    }
    let root = &schema.tables()[0];
    assert!(root.columns.iter().any(|c| c.name == "type_s"));
    let issue = schema.tables().iter().find(|t| t.name == "github2015_payload_issue").unwrap();
    assert!(issue.columns.iter().any(|c| c.name == "comments_i"), "{:?}", issue.columns.iter().map(|c| &c.name).collect::<Vec<_>>());
    assert!(schema.tables().iter().all(|t| t.name.len() <= 63));
    eprintln!("{documents} documents, {rows} rows in {} tables", names.len());
}

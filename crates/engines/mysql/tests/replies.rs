//! The MySQL 8 and TiDB behaviour only their servers could show, checked on
//! replies shaped as their documentation and test suites show them
//! (`tests/replies/README.md` names each file's source), beside MariaDB's
//! own replies captured from the server `just setup` starts.

use std::path::PathBuf;

use ghbench_mysql::explain::index_use;
use ghbench_mysql::product::{identify, Product};
use serde_json::Value;

fn reply(path: &str) -> Value {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/replies").join(path);
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))).unwrap()
}

fn said<'a>(reply: &'a Value, key: &str) -> &'a str {
    reply[key].as_str().unwrap_or("")
}

#[test]
fn each_product_is_told_by_what_its_server_says_of_itself() {
    let mysql = reply("mysql_8/version.json");
    let found = identify(said(&mysql, "version"), said(&mysql, "version_comment"), None);
    assert_eq!(found.product, Product::MySql);
    assert!(found.version.starts_with("8.0."), "{found:?}");
    let tidb = reply("tidb/version.json");
    let found = identify(said(&tidb, "version"), "", Some(said(&tidb, "tidb_version")));
    assert_eq!((found.product, found.version.as_str()), (Product::TiDb, "v7.5.1"));
    assert!(found.build.contains("Store: tikv"), "the build is TIDB_VERSION()'s text: {}", found.build);
    let maria = reply("mariadb_10_11/version.json");
    let found = identify(said(&maria, "version"), said(&maria, "version_comment"), None);
    assert_eq!(found.product, Product::MariaDb);
    assert!(found.version.starts_with("10.11."), "{found:?}");
}

#[test]
fn mysql_8_plans_in_both_formats_name_the_index_and_say_covering() {
    let covering = index_use(&reply("mysql_8/explain_v1_covering.json"));
    assert_eq!((covering.indexes.as_slice(), covering.covering), (["github2015_type".to_string()].as_slice(), true));
    let lookup = index_use(&reply("mysql_8/explain_v1_grouping_filesort.json"));
    assert!(!lookup.indexes.is_empty() && !lookup.covering, "{lookup:?}");
    let loose = index_use(&reply("mysql_8/explain_v1_loose_index_group_by.json"));
    assert!(loose.covering, "a loose index scan for GROUP BY reads the index alone: {loose:?}");
    let v2 = index_use(&reply("mysql_8/explain_v2.json"));
    assert_eq!((v2.indexes.as_slice(), v2.covering), (["github2015_type".to_string()].as_slice(), true));
    let wrapped = index_use(&reply("mysql_8/explain_v2_docs_query_plan.json"));
    let flat = index_use(&reply("mysql_8/explain_v2_docs_analyze_flat.json"));
    assert_eq!(wrapped.indexes, flat.indexes, "format 2 with and without its query_plan wrapper");
    let joined = index_use(&reply("mysql_8/explain_v2_test_covering_semijoin.json"));
    assert_eq!((joined.indexes.as_slice(), joined.covering), (["i1".to_string(), "PRIMARY".to_string()].as_slice(), true));
}

#[test]
fn tidb_plans_name_the_index_and_an_index_reader_alone_covers() {
    let reader = index_use(&reply("tidb/explain_tidb_json_index_reader.json"));
    assert_eq!((reader.indexes.as_slice(), reader.covering), (["github2015_type".to_string()].as_slice(), true));
    let docs = index_use(&reply("tidb/explain_tidb_json_docs_example.json"));
    assert_eq!((docs.indexes.as_slice(), docs.covering), (["a".to_string()].as_slice(), true));
    let table = index_use(&reply("tidb/explain_tidb_json_table_reader.json"));
    assert!(table.indexes.is_empty() && !table.covering, "{table:?}");
}

#[test]
fn mariadbs_own_plans_name_every_index_they_use_and_the_tuned_ones_cover() {
    // Paper A: an index merge of two single-column indexes, named below the table.
    let a = index_use(&reply("mariadb_10_11/explain_paper_A.json"));
    assert_eq!(a.indexes.len(), 2, "{a:?}");
    assert!(!a.covering);
    for q in ["B", "C"] {
        let paper = index_use(&reply(&format!("mariadb_10_11/explain_paper_{q}.json")));
        assert!(paper.covering && paper.indexes.len() == 1, "paper {q} reads one index alone: {paper:?}");
    }
    for q in ["A", "B", "C", "D"] {
        let tuned = index_use(&reply(&format!("mariadb_10_11/explain_tuned_{q}.json")));
        assert!(tuned.covering && tuned.indexes.len() == 1, "tuned {q}: {tuned:?}");
    }
}

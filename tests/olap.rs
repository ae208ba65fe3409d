//! The OLAP runner against the real servers and the real hour: the corrected
//! queries' exact answers (computed here independently, by scanning the file),
//! agreement of the published queries, and verification catching a perturbed
//! engine.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use ghbench_core::Engine;
use ghbench_olap::record::{QueryRecord, VerificationStatus};
use ghbench_olap::rows::{Cell, Row};
use ghbench_olap::runner::{check_data, create_indexes, describe_engine, run_queries, ClearCaches, QueryOptions, Silent};
use ghbench_olap::{Backend, Catalog};
use ghbench_testkit::{real_hour, shared_servers, LoadedTable};
use mongodb::bson::doc;
use serde_json::Value;

/// A key and its value, as the test computes them from the file.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Count(i64),
    Average(f64),
}

type Answer = Vec<(Option<String>, Expected)>;

fn events(path: &Path) -> Vec<Value> {
    let file = std::fs::File::open(path).unwrap();
    let lines = BufReader::new(flate2::read::GzDecoder::new(file)).lines();
    lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect()
}

fn text(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).map(str::to_string)
}

/// Count per key, ordered by count descending, then key ascending (None first).
fn counts<'a>(events: impl Iterator<Item = &'a Value>, key: &str) -> Answer {
    let mut counts: BTreeMap<Option<String>, i64> = BTreeMap::new();
    for e in events {
        *counts.entry(text(e, key)).or_default() += 1;
    }
    let mut answer: Vec<_> = counts.into_iter().collect();
    answer.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    answer.into_iter().map(|(k, n)| (k, Expected::Count(n))).collect()
}

/// The corrected queries' answers, straight from the file.
fn expected_answers(events: &[Value]) -> BTreeMap<&'static str, Answer> {
    let is = |e: &Value, t: &str| text(e, "/type").as_deref() == Some(t);
    let a = counts(
        events.iter().filter(|e| is(e, "IssuesEvent") && text(e, "/payload/action").as_deref() == Some("opened")),
        "/repo/name",
    );
    let b = counts(events.iter(), "/type");
    let c = counts(events.iter(), "/actor/login").into_iter().take(10).collect();
    let mut sums: BTreeMap<Option<String>, (f64, u32)> = BTreeMap::new();
    for e in events.iter().filter(|e| is(e, "IssueCommentEvent")) {
        if let Some(n) = e.pointer("/payload/issue/comments").and_then(Value::as_f64).filter(|n| *n > 2.0) {
            let s = sums.entry(text(e, "/repo/name")).or_default();
            *s = (s.0 + n, s.1 + 1);
        }
    }
    let mut d: Vec<(Option<String>, f64)> = sums.into_iter().map(|(k, (sum, n))| (k, sum / f64::from(n))).collect();
    d.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let d = d.into_iter().map(|(k, avg)| (k, Expected::Average(avg))).collect();
    BTreeMap::from([("A", a), ("B", b), ("C", c), ("D", d)])
}

/// Row by row: keys exactly, counts exactly, averages to 1e-9 relative.
fn assert_answer(engine: &Engine, query: &str, rows: &[Row], expected: &Answer) {
    assert_eq!(rows.len(), expected.len(), "{engine} {query}: row count");
    for (i, (row, (key, value))) in rows.iter().zip(expected).enumerate() {
        let got_key = match &row[0] {
            Cell::Text(s) => Some(s.clone()),
            Cell::Null => None,
            other => panic!("{engine} {query} row {i}: key {other:?} is not text"),
        };
        assert_eq!(&got_key, key, "{engine} {query} row {i}: key");
        match (value, &row[1]) {
            (Expected::Count(n), Cell::Int(got)) => assert_eq!(got, n, "{engine} {query} row {i} ({key:?}): count"),
            (Expected::Average(x), Cell::Float(got)) => {
                assert!((got - x).abs() <= 1e-9 * x.abs(), "{engine} {query} row {i} ({key:?}): average {got} vs {x}")
            }
            (want, got) => panic!("{engine} {query} row {i}: {got:?} where {want:?} was expected"),
        }
    }
}

fn options(variant: &str, queries: &[&str]) -> QueryOptions {
    QueryOptions {
        variants: vec![variant.into()],
        queries: queries.iter().map(|q| q.to_string()).collect(),
        repeat: 1,
        cold: false,
        cold_repeat: 1,
        rounds: false,
        reconnect_limit: ghbench_olap::runner::RECONNECT_LIMIT,
        query_timeout: None,
        analyze_plans: false,
        server_memory: None,
        skip: Vec::new(),
    }
}

/// The cleaning policy `ghbench ingest` loads with: every registered engine's.
fn policy() -> ghbench_ingest::clean::Policy {
    ghbench::registry::builtin().policy()
}

async fn backends(fixture: &LoadedTable) -> Vec<Box<dyn Backend>> {
    let mut backends = Vec::new();
    for (plugin, config) in fixture.servers.engines() {
        backends.push(plugin.backend(&config, &fixture.table).await.expect("connect"));
    }
    backends
}

fn status_of(records: &[QueryRecord]) -> Vec<(String, VerificationStatus)> {
    records.iter().map(|q| (q.query.clone(), q.verification.status)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn corrected_queries_give_the_exact_answers_on_both_engines() {
    let _servers = shared_servers();
    let Some(path) = real_hour() else { return };
    let expected = expected_answers(&events(&path));
    assert!(expected["D"].len() > 10, "the real hour has IssueCommentEvents with more than two comments");
    let fixture = LoadedTable::load("exact", policy()).await;
    let catalog = Catalog::embedded().unwrap();
    let mut backends = backends(&fixture).await;
    for backend in &backends {
        let built = create_indexes(backend.as_ref(), &catalog, &|_| {}).await.expect("indexes");
        assert_eq!(built.len(), 5, "{}: the paper's five indexes", backend.engine());
        for (query, answer) in &expected {
            let file = catalog.query(backend.dialect(), "corrected", query).unwrap();
            let prepared = backend.prepare(&file).await.unwrap_or_else(|e| panic!("{} {query}: {e:#}", backend.engine()));
            let rows = backend.execute(&prepared).await.unwrap_or_else(|e| panic!("{} {query}: {e:#}", backend.engine()));
            assert_answer(backend.engine(), query, &rows, answer);
        }
    }
    let (records, _) = run_queries(&mut backends, &catalog, &options("corrected", &[]), &Silent, &ClearCaches).await.unwrap();
    let agree = ["A", "B", "C", "D"].map(|q| (q.to_string(), VerificationStatus::Agree));
    assert_eq!(status_of(&records), agree);
    for result in records.iter().flat_map(|q| &q.engines) {
        assert_eq!(result.verified, Some(true));
        let plan = result.plan.as_ref().expect("a plan is captured");
        assert!(plan.text.is_some() || plan.json.is_some() || plan.error.is_some());
    }
    // PostgreSQL's plan for A reads the type or action expression index.
    let a_pg = records[0].engines.iter().find(|e| e.engine == *"postgres").unwrap();
    assert_eq!(a_pg.index_used, Some(true), "{:?}", a_pg.plan);
}

#[tokio::test(flavor = "multi_thread")]
async fn published_variants_agree_across_engines() {
    let _servers = shared_servers();
    let Some(path) = real_hour() else { return };
    let expected = expected_answers(&events(&path));
    let fixture = LoadedTable::load("published", policy()).await;
    let catalog = Catalog::embedded().unwrap();
    let (records, _) = run_queries(&mut backends(&fixture).await, &catalog, &options("published", &[]), &Silent, &ClearCaches).await.unwrap();
    let agree = ["A", "B", "C", "D"].map(|q| (q.to_string(), VerificationStatus::Agree));
    assert_eq!(status_of(&records), agree, "{:#?}", records.iter().map(|q| &q.verification).collect::<Vec<_>>());
    let rows = |q: usize| records[q].engines.iter().map(|e| e.rows).collect::<Vec<_>>();
    let n = |q: &str| Some(expected[q].len() as u64);
    assert_eq!(rows(0), [n("A"), n("A")]);
    assert_eq!(rows(2), [Some(10), Some(10)]);
    // The paper's D asks for PushEvents with issue comments: there are none.
    assert_eq!(rows(3), [Some(0), Some(0)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn verification_fails_when_one_engine_has_an_extra_row() {
    let _servers = shared_servers();
    if real_hour().is_none() {
        return;
    }
    let fixture = LoadedTable::load("perturbed", policy()).await;
    let db = fixture.servers.mongo().await.unwrap();
    let extra = doc! {"_id": "perturbed", "type": "IssuesEvent", "payload": {"action": "opened"}, "repo": {"name": "zz-only-in/mongo"}};
    db.collection(fixture.table.as_str()).insert_one(extra).await.unwrap();

    let catalog = Catalog::embedded().unwrap();
    let mut backends = backends(&fixture).await;
    // The ledgers agree, but MongoDB's collection no longer holds what its ledger lists.
    let mut described = Vec::new();
    for backend in &backends {
        described.push(describe_engine(backend.as_ref()).await);
    }
    let data = check_data(&described);
    assert!(!data.agree);
    assert_eq!(data.differences.len(), 1, "{data:?}");
    assert!(data.differences[0].starts_with("mongo's table holds 7703 rows but its ingest ledger lists 7702 events"), "{data:?}");
    // The extra event adds a row to A (compared in order, then as a multiset)
    // and changes a count in B.
    for (variant, queries) in [("corrected", &["A", "B"][..]), ("published", &["A"][..])] {
        let (records, _) = run_queries(&mut backends, &catalog, &options(variant, queries), &Silent, &ClearCaches).await.unwrap();
        let mismatch = queries.iter().map(|q| (q.to_string(), VerificationStatus::Mismatch)).collect::<Vec<_>>();
        assert_eq!(status_of(&records), mismatch, "{variant}");
        let a = &records[0];
        assert_eq!(a.verification.reference.as_ref().map(|e| e.name()), Some("postgres"));
        let mismatch = &a.verification.mismatches[0];
        assert_eq!(mismatch.engine.name(), "mongo");
        assert!(
            mismatch.first_differences.iter().any(|d| d.contains("zz-only-in/mongo")),
            "{variant}: the differing row is shown: {mismatch:?}"
        );
        assert!(a.engines.iter().all(|e| e.verified == Some(false) && !e.iterations.is_empty()), "timings are kept");
    }
}

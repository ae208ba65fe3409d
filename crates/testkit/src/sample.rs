//! A run record as `ghbench query` writes one, built from the record's own
//! types: three engines (PostgreSQL, a MongoDB-wire server with its caveat,
//! the normalized layout), Queries A–D, the MongoDB-wire server ~30x slower
//! (so its charts need a log axis), normalized disagreeing on B and failing on
//! D, one engine without a load time and one without sizes, and the paper's
//! numbers from the embedded catalog. For the tests of the views
//! (`crates/report/tests`) and of `ghbench report` (the workspace's tests).

use std::collections::BTreeMap;

use ghbench_record::catalog::Compare;
use ghbench_record::run::*;

pub const ENGINES: [&str; 3] = ["postgres", "mongo", "normalized"];
pub const QUERIES: [&str; 4] = ["A", "B", "C", "D"];
pub const CAVEAT: &str = "SecantusDB is a MongoDB-wire server written in Python, not MongoDB: its timings say nothing about MongoDB's speed";

/// Seconds of engine `e`'s runs of query `q`: MongoDB-wire about 30x slower.
fn runs(q: usize, e: usize) -> Vec<f64> {
    let base = 0.01 * (q + 1) as f64 * [1.0, 31.0, 1.6][e];
    vec![base * 1.1, base, base * 0.95]
}

fn server(e: usize) -> ServerRecord {
    let (product, version, label) = [
        ("PostgreSQL", "16.4", "PostgreSQL 16.4".to_string()),
        ("SecantusDB", "0.7.0b3", "SecantusDB 0.7.0b3 (MongoDB-wire, reports 8.2.11)".to_string()),
        ("PostgreSQL", "16.4", "PostgreSQL 16.4 (normalized tables)".to_string()),
    ][e]
        .clone();
    ServerRecord {
        product: product.into(),
        version: version.into(),
        label,
        build: format!("{product} {version} on x86_64-pc-linux-gnu"),
        url: format!("db://ghbench:***@localhost/{}", ENGINES[e]),
        settings: BTreeMap::from([("shared_buffers".to_string(), "128MB".to_string())]),
        caveat: (e == 1).then(|| CAVEAT.to_string()),
    }
}

fn engine(e: usize) -> EngineRecord {
    let events = 7702;
    EngineRecord {
        engine: ENGINES[e].into(),
        capabilities: None,
        setup: None,
        server: Some(server(e)),
        server_error: None,
        data: Some(DataLoaded {
            hours: 1,
            events,
            first_hour: Some("2015-01-01T00".into()),
            last_hour: Some("2015-01-01T00".into()),
            // The MongoDB-wire server's ledger predates load timing.
            load_seconds: [Some(0.70), None, Some(2.48)][e],
            wall_seconds: [Some(0.70), None, Some(2.48)][e],
            upkeep_seconds: None,
            load_retries: 0,
        }),
        data_error: None,
        storage: (e != 1).then(|| Storage {
            rows: events,
            rows_exact: true,
            table_bytes: [11_034_624, 0, 19_357_696][e],
            index_bytes: [753_664, 0, 4_554_752][e],
            indexes: vec![IndexSize { name: "events_type_idx".into(), bytes: 753_664 }],
            ..Storage::default()
        }),
        storage_error: (e == 1).then(|| "collStats refused: not authorised".to_string()),
        memory: None,
        disk_limit: None,
    }
}

fn result(q: usize, e: usize) -> EngineResult {
    let failed = q == 3 && e == 2;
    let seconds = if failed { vec![] } else { runs(q, e) };
    EngineResult {
        engine: ENGINES[e].into(),
        file: format!("{}/corrected/{}.sql", ENGINES[e], QUERIES[q]),
        cold_run: None,
        cold_runs: Vec::new(),
        iterations: seconds.iter().map(|s| Iteration { seconds: *s, rows: 10 }).collect(),
        stats: Stats::of(&seconds),
        rows: (!failed).then_some(10),
        // On B normalized disagrees with the rest (postgres and mongo agree).
        verified: Some(!matches!((q, e), (3, 2) | (1, 2))),
        error: failed.then(|| "relation \"normalized.events_payload\" does not exist".to_string()),
        plan: None,
        index_used: None,
        head: vec![],
        answer_digest: None,
        reconnects: vec![],
        connection_gone: false,
        timed_out: None,
        read: None,
        oom_kills: None,
    }
}

fn query(q: usize) -> QueryRecord {
    let agreeing = if q == 1 { vec!["postgres".into(), "mongo".into()] } else { vec![] };
    let (status, mismatches) = match q {
        1 => (
            VerificationStatus::Mismatch,
            vec![Mismatch {
                engine: "normalized".into(),
                reason: "row 3 differs".into(),
                first_differences: vec!["row 3: [\"rails/rails\", 7] vs [\"rails/rails\", 6]".into()],
            }],
        ),
        3 => (VerificationStatus::Error, vec![]),
        _ => (VerificationStatus::Agree, vec![]),
    };
    QueryRecord {
        query: QUERIES[q].into(),
        variant: "corrected".into(),
        title: format!("Query {} of the paper", QUERIES[q]),
        compare: Compare::Ordered,
        verification: Verification { status, reference: Some("postgres".into()), agreeing, mismatches, cause: None },
        engines: (0..ENGINES.len()).map(|e| result(q, e)).collect(),
    }
}

pub fn record() -> RunRecord {
    RunRecord {
        schema: SCHEMA.into(),
        context: Context {
            ghbench_version: "0.1.0".into(),
            git_commit: Some("021f662".into()),
            git_dirty: Some(false),
            git_changes: None,
            started_at: "2026-11-22T12:00:00Z".into(),
            arguments: vec!["ghbench".into(), "query".into(), "--all".into()],
            table: "github2015".into(),
            catalog: "embedded".into(),
            repeat: 3,
            cold: ColdRecord { label: "hot (no cache dropped)".into(), ..ColdRecord::default() },
            machine: Machine {
                cpu_model: Some("Test CPU".into()),
                logical_cores: Some(2),
                memory_bytes: Some(8 << 30),
                os_release: Some("Debian GNU/Linux 12".into()),
                disk: None,
            },
            engines: (0..ENGINES.len()).map(engine).collect(),
            baseline: Some("postgres".into()),
            data_consistency: Some(DataConsistency { agree: true, differences: vec![] }),
            query_timeout_seconds: None,
            catalog_digest: None,
            analyze_plans: false,
            resumed: None,
        },
        queries: (0..QUERIES.len()).map(query).collect(),
        published: Some(serde_json::from_str(include_str!("../../../queries/paper.json")).expect("queries/paper.json is the paper's results")),
        concurrency: None,
        finished: true,
    }
}

//! Criterion microbenchmarks of the ingest client's stages, on a slice of the
//! real hour from ../shared (or, when it is absent, generated events calibrated
//! on it). Throughput is reported in JSON bytes, comparable across stages.

use std::hint::black_box;
use std::io::{BufRead, Write};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ghbench_core::Hour;
use ghbench_ingest::clean::strip_nul_escapes;
use ghbench_ingest::decode::{decode_hour, gz_lines};
use ghbench_mongo::encode::{check_bson, document_id, to_bson};
use ghbench_ingest::quarantine::Quarantine;
use ghbench_postgres::sink::JsonbText;
use ghbench_ingest::source::HourBytes;
use tokio_postgres::types::{ToSql, Type};

const SLICE: usize = 500;

/// A few hundred events: the real hour's first lines, or generated ones
/// (`ghbench gen`'s default profile, calibrated on that hour) when it is absent.
fn slice() -> Vec<String> {
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gharchive/2015-01-01-0.json.gz");
    let compressed = match std::fs::read(&real) {
        Ok(bytes) => bytes,
        Err(_) => {
            eprintln!("{} not found: benchmarking generated events", real.display());
            let profile = ghbench_gen::Profile::default_profile();
            ghbench_gen::generate_hour_gzip(profile, 42, "2015-01-01T00".parse().unwrap(), SLICE as u64).unwrap()
        }
    };
    gz_lines(compressed.as_slice()).lines().take(SLICE).map(|l| l.expect("hour decodes")).collect()
}

fn gzip(lines: &[String]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for line in lines {
        gz.write_all(line.as_bytes()).unwrap();
        gz.write_all(b"\n").unwrap();
    }
    gz.finish().unwrap()
}

fn stages(c: &mut Criterion) {
    let lines = slice();
    let bytes: u64 = lines.iter().map(|l| l.len() as u64 + 1).sum();
    let compressed = gzip(&lines);
    let mut group = c.benchmark_group("ingest_client");
    group.throughput(Throughput::Bytes(bytes));

    group.bench_function("gunzip_and_split_lines", |b| {
        b.iter(|| {
            let mut reader = gz_lines(compressed.as_slice());
            let mut line = Vec::new();
            let mut n = 0;
            while reader.read_until(b'\n', &mut line).unwrap() > 0 {
                n += 1;
                line.clear();
            }
            black_box(n)
        })
    });
    group.bench_function("validate_json_only", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(serde_json::from_str::<serde::de::IgnoredAny>(l).unwrap());
            }
        })
    });
    group.bench_function("sanitize_nul_escapes", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(strip_nul_escapes(l));
            }
        })
    });
    group.bench_function("bson_conversion", |b| {
        b.iter(|| {
            for (i, l) in lines.iter().enumerate() {
                black_box(to_bson(l, &document_id("2015-01-01-0", i as u64)).unwrap());
            }
        })
    });
    // What a run that does not load MongoDB pays to keep its policy: the
    // verdict alone, one lexical pass per line.
    group.bench_function("bson_check", |b| {
        b.iter(|| {
            for (i, l) in lines.iter().enumerate() {
                black_box(check_bson(l, &document_id("2015-01-01-0", i as u64))).unwrap();
            }
        })
    });
    // The normalized layout's row extraction (ToroDB's mapping), from parsed
    // documents into a schema grown on the first pass.
    let documents: Vec<serde_json::Map<String, serde_json::Value>> =
        lines.iter().map(|l| serde_json::from_str(l).expect("an object")).collect();
    let mut schema = ghbench_normalize::Schema::new("bench");
    group.bench_function("normalize_rows", |b| {
        b.iter(|| {
            let mut rows = 0;
            for (did, doc) in documents.iter().enumerate() {
                rows += schema.derive(did as i64, doc).rows.len();
            }
            black_box(rows)
        })
    });
    group.bench_function("postgres_copy_encoding", |b| {
        let mut out = BytesMut::with_capacity(bytes as usize * 2);
        b.iter(|| {
            out.clear();
            for l in &lines {
                JsonbText(l).to_sql(&Type::JSONB, &mut out).unwrap();
            }
            black_box(out.len())
        })
    });
    // The policy of the engines ghbench is built with: validation, then each
    // engine's encoding (BSON).
    let policy = ghbench::registry::builtin().policy();
    group.bench_function("clean_line_full_policy", |b| {
        b.iter(|| {
            for (i, l) in lines.iter().enumerate() {
                black_box(policy.clean_line(i as u64, l.as_bytes()).unwrap());
            }
        })
    });

    // The whole client stage of one hour: file -> gunzip -> policy -> each
    // engine's encoding (BSON for the MongoDB-wire engine) -> batches.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("2015-01-01-0.json.gz");
    std::fs::write(&path, &compressed).unwrap();
    let hour: Hour = "2015-01-01T00".parse().unwrap();
    let table = "bench".parse().unwrap();
    group.bench_function("decode_hour_end_to_end", |b| {
        b.iter(|| {
            let mut quarantine = Quarantine::for_hour(dir.path(), &table, hour).unwrap();
            let file = HourBytes::File(std::fs::File::open(&path).unwrap());
            black_box(decode_hour(hour, file, &policy, &[], &mut quarantine, Arc::new(AtomicU64::new(0))).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);

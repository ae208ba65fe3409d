//! `ghbench normalize --verify N`: N random documents rebuilt from the derived
//! tables and compared with their originals, values and types (key order
//! aside: objects are maps). The original is the line of the hour's file a
//! document was loaded from (read again from the source, cleaned by the same
//! policy) or the `jsonb` row it was derived from; its id says which.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{anyhow, Context as _};
use ghbench_core::{Hour, TableName};
use ghbench_engine::load::{HourBytes, Policy, Source};
use ghbench_normalize::{rebuild, Cell, Kind, Row, Schema};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_postgres::Client;

use crate::did::{self, Origin};
use crate::meta::{self, linking_columns, qualified};
use crate::SPEC;

/// Documents fetched from the derived tables at a time.
const CHUNK: usize = 1000;

/// A rebuilt document that differs from its original.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Mismatch {
    pub did: i64,
    /// Where the original is: `2015-01-01T00 line 17`, or `jsonb row (0,3)`.
    pub original: String,
    /// The first path that differs, and how.
    pub difference: String,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Verification {
    pub requested: u64,
    pub checked: u64,
    pub mismatches: Vec<Mismatch>,
}

/// Checks `n` random documents of `table` (all of them when it has fewer).
pub async fn verify(url: &str, table: &TableName, n: u64, source: &Source, policy: &Policy) -> anyhow::Result<Verification> {
    let client = ghbench_postgres::connect::connect(&SPEC, url).await?;
    let schema = meta::load(&client, table.as_str()).await?;
    if meta::table_names(&client, table.as_str()).await?.is_empty() {
        return Err(anyhow!("no normalized tables for '{table}': load them first (ghbench ingest --engines normalized, or ghbench normalize)"));
    }
    let sql = format!("SELECT did FROM {} ORDER BY random() LIMIT $1", qualified(table.as_str()));
    let limit = i64::try_from(n).unwrap_or(i64::MAX);
    let dids: Vec<i64> = client.query(&sql, &[&limit]).await?.iter().map(|r| r.get(0)).collect();
    let mut report = Verification { requested: n, ..Verification::default() };
    for chunk in dids.chunks(CHUNK) {
        let rows = fetch_rows(&client, &schema, chunk).await?;
        let originals = originals(&client, table, chunk, source, policy).await?;
        for &did in chunk {
            let place = describe(did);
            let original = originals.get(&did).ok_or_else(|| anyhow!("the original of document {did} ({place}) was not found"))?;
            let rebuilt = rows.get(&did).and_then(|rows| rebuild(&schema, rows)).unwrap_or(Value::Null);
            let expected: Value = serde_json::from_str(original).with_context(|| format!("the original at {place}"))?;
            if let Some(difference) = first_difference("$", &expected, &rebuilt) {
                report.mismatches.push(Mismatch { did, original: place, difference });
            }
            report.checked += 1;
        }
    }
    Ok(report)
}

fn describe(did: i64) -> String {
    match did::origin(did) {
        Some(Origin::Line { hour, line }) => format!("{hour} line {line}"),
        Some(origin @ Origin::Jsonb { .. }) => format!("jsonb row {}", origin.ctid().unwrap_or_default()),
        None => format!("unknown origin of id {did}"),
    }
}

/// Every derived row of the documents `dids`, by document.
async fn fetch_rows(client: &Client, schema: &Schema, dids: &[i64]) -> anyhow::Result<HashMap<i64, Vec<Row>>> {
    let mut by_did: HashMap<i64, Vec<Row>> = HashMap::new();
    for (t, def) in schema.tables().iter().enumerate() {
        let links = linking_columns(def);
        let mut columns: Vec<String> = links.iter().map(|c| c.to_string()).collect();
        columns.extend(def.columns.iter().map(|c| format!("\"{}\"", c.name)));
        let sql = format!("SELECT {} FROM {} WHERE did = ANY($1)", columns.join(", "), qualified(&def.name));
        for row in client.query(&sql, &[&dids]).await.with_context(|| format!("reading {}", def.name))? {
            let link = |name: &str| links.iter().position(|c| *c == name).map(|i| row.get::<_, i32>(i));
            let mut cells = Vec::new();
            for (c, column) in def.columns.iter().enumerate() {
                let i = links.len() + c;
                let cell = match column.kind {
                    Kind::Text => row.get::<_, Option<String>>(i).map(Cell::Text),
                    Kind::Int => row.get::<_, Option<i32>>(i).map(Cell::Int),
                    Kind::Long => row.get::<_, Option<i64>>(i).map(Cell::Long),
                    Kind::Double => row.get::<_, Option<f64>>(i).map(Cell::Double),
                    Kind::Bool | Kind::Null | Kind::Child => row.get::<_, Option<bool>>(i).map(Cell::Bool),
                };
                if let Some(cell) = cell {
                    cells.push((c, cell));
                }
            }
            let did: i64 = row.get(0);
            let derived = Row { table: t, did, rid: link("rid"), pid: link("pid"), seq: link("seq"), cells };
            by_did.entry(did).or_default().push(derived);
        }
    }
    Ok(by_did)
}

/// The original JSON text of each document, from wherever it came.
async fn originals(client: &Client, table: &TableName, dids: &[i64], source: &Source, policy: &Policy) -> anyhow::Result<HashMap<i64, String>> {
    let mut found = HashMap::new();
    let mut ctids: HashMap<String, i64> = HashMap::new();
    let mut lines: BTreeMap<Hour, BTreeMap<u64, i64>> = BTreeMap::new();
    for &did in dids {
        match did::origin(did) {
            Some(origin @ Origin::Jsonb { .. }) => {
                ctids.insert(origin.ctid().unwrap_or_default(), did);
            }
            Some(Origin::Line { hour, line }) => {
                lines.entry(hour).or_default().insert(line, did);
            }
            None => {}
        }
    }
    if !ctids.is_empty() {
        let wanted: Vec<&String> = ctids.keys().collect();
        let sql = format!("SELECT ctid::text, data::text FROM {table} WHERE ctid = ANY($1::text[]::tid[])");
        for row in client.query(&sql, &[&wanted]).await.context("reading the jsonb originals")? {
            let (ctid, json): (String, String) = (row.get(0), row.get(1));
            if let Some(&did) = ctids.get(&ctid) {
                found.insert(did, json);
            }
        }
    }
    for (hour, wanted) in lines {
        let read = read_lines(source, hour, &wanted.keys().copied().collect()).await?;
        for (line, raw) in read {
            let clean = policy.clean_line(line, &raw).map_err(|r| anyhow!("{hour} line {line} is not a document any more: {r:?}"))?;
            if let Some(&did) = wanted.get(&line) {
                found.insert(did, clean.json);
            }
        }
    }
    Ok(found)
}

/// Lines `wanted` (1-based, without their `\n`) of the hour's file.
async fn read_lines(source: &Source, hour: Hour, wanted: &BTreeSet<u64>) -> anyhow::Result<Vec<(u64, Vec<u8>)>> {
    let shown = source.describe();
    let bytes = source.open(hour).await.with_context(|| format!("opening {hour} at {shown}"))?;
    let bytes = bytes.ok_or_else(|| anyhow!("{hour} is not at {shown}: pass --source where its file is"))?;
    let compressed = match bytes {
        HourBytes::File(file) => {
            let mut file = tokio::fs::File::from_std(file);
            let mut all = Vec::new();
            file.read_to_end(&mut all).await?;
            all
        }
        HourBytes::Stream(mut stream) => {
            let mut all = Vec::new();
            stream.read_to_end(&mut all).await?;
            all
        }
    };
    let wanted = wanted.clone();
    tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut reader = ghbench_engine::load::gz_lines(std::io::Cursor::new(compressed));
        let (mut out, mut line, mut number) = (Vec::new(), Vec::new(), 0u64);
        while wanted.last().is_some_and(|&last| number < last) {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            if wanted.contains(&number) {
                out.push((number, line.strip_suffix(b"\n").unwrap_or(&line).to_vec()));
            }
        }
        Ok::<_, std::io::Error>(out)
    })
    .await?
    .with_context(|| format!("reading {hour} from {shown}"))
}

/// The first place where `got` differs from `expected`, as `$.a.b[2]: ...`.
pub fn first_difference(path: &str, expected: &Value, got: &Value) -> Option<String> {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let here = format!("{path}.{key}");
                match b.get(key) {
                    None => return Some(format!("{here}: missing from the rebuilt document")),
                    Some(other) => {
                        if let Some(d) = first_difference(&here, value, other) {
                            return Some(d);
                        }
                    }
                }
            }
            b.keys().find(|k| !a.contains_key(*k)).map(|k| format!("{path}.{k}: in the rebuilt document only"))
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
        }
        (Value::Array(a), Value::Array(b)) => Some(format!("{path}: {} elements, rebuilt with {}", a.len(), b.len())),
        // serde_json tells integers from floats: 1 and 1.0 differ, as types.
        _ if expected == got => None,
        _ => Some(format!("{path}: expected {}, rebuilt {}", shown(expected), shown(got))),
    }
}

fn shown(value: &Value) -> String {
    let text = value.to_string();
    let text = if text.chars().count() > 80 { format!("{}...", text.chars().take(77).collect::<String>()) } else { text };
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    format!("{text} ({kind})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_first_path_that_differs() {
        let a = json!({"a": {"b": [1, 2.5, "x"]}, "c": true});
        assert_eq!(first_difference("$", &a, &a.clone()), None);
        let d = first_difference("$", &a, &json!({"a": {"b": [1, 2.5, "y"]}, "c": true})).unwrap();
        assert!(d.starts_with("$.a.b[2]: expected \"x\" (string), rebuilt \"y\""), "{d}");
        let d = first_difference("$", &json!({"n": 1}), &json!({"n": 1.0})).unwrap();
        assert!(d.contains("(integer)") && d.contains("(float)"), "types count: {d}");
        assert!(first_difference("$", &a, &json!({"a": {"b": [1, 2.5, "x"]}})).unwrap().contains("$.c: missing"));
        assert!(first_difference("$", &json!({}), &json!({"z": 1})).unwrap().contains("$.z: in the rebuilt document only"));
    }
}

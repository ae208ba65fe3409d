//! Derived rows waiting for COPY, as COPY's text, table by table. A table's
//! columns can grow while rows wait (a key first seen mid-hour): rows written
//! after that go in a new segment with the longer column list, so no row is
//! rewritten. Names are looked up only when the rows are sent, after the
//! database has named every new table and column (see `meta::extend`).

use std::fmt::Write as _;

use bytes::Bytes;
use futures_util::SinkExt;
use ghbench_normalize::{Cell, Row, Schema};
use tokio_postgres::{Client, Error};

use crate::meta::{in_lock_order, linking_columns, qualified};

/// Bytes sent to the server per message.
const CHUNK: usize = 1 << 20;

#[derive(Debug, Default)]
struct Segment {
    /// The table's first `columns` columns (those it had when the segment began).
    columns: usize,
    text: Vec<u8>,
    rows: u64,
}

/// Rows by table, waiting to be sent.
#[derive(Debug, Default)]
pub struct PendingRows {
    tables: Vec<Vec<Segment>>,
    documents: u64,
}

impl PendingRows {
    /// Documents (root rows) waiting.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    pub fn clear(&mut self) {
        self.tables.clear();
        self.documents = 0;
    }

    /// Adds one document's rows (derived with `schema`).
    pub fn add(&mut self, schema: &Schema, rows: &[Row]) {
        if self.tables.len() < schema.tables().len() {
            self.tables.resize_with(schema.tables().len(), Vec::new);
        }
        let mut values: Vec<Option<&Cell>> = Vec::new();
        for row in rows {
            let def = &schema.tables()[row.table];
            let segments = &mut self.tables[row.table];
            // A new segment when the table has gained columns since the last one began.
            let behind = match segments.last() {
                Some(last) => last.columns < def.columns.len(),
                None => true,
            };
            if behind {
                segments.push(Segment { columns: def.columns.len(), ..Segment::default() });
            }
            let segment = segments.last_mut().expect("pushed above");
            values.clear();
            values.resize(segment.columns, None);
            for (column, cell) in &row.cells {
                values[*column] = Some(cell);
            }
            write_row(&mut segment.text, row, &linking_columns(def), &values);
            segment.rows += 1;
            if def.is_root() {
                self.documents += 1;
            }
        }
    }

    /// Sends every waiting row with COPY, inside the caller's transaction; the
    /// rows each table took, by table index.
    pub async fn send(&self, client: &Client, schema: &Schema) -> Result<Vec<(usize, u64)>, SendError> {
        let mut stored = Vec::new();
        for table in in_lock_order(schema).into_iter().filter(|t| *t < self.tables.len()) {
            let (segments, def) = (&self.tables[table], &schema.tables()[table]);
            let mut rows = 0;
            for segment in segments.iter().filter(|s| s.rows > 0) {
                let mut columns: Vec<String> = linking_columns(def).into_iter().map(str::to_string).collect();
                columns.extend(def.columns[..segment.columns].iter().map(|c| format!("\"{}\"", c.name)));
                let sql = format!("COPY {} ({}) FROM STDIN", qualified(&def.name), columns.join(", "));
                let sink = client.copy_in::<_, Bytes>(&sql).await?;
                futures_util::pin_mut!(sink);
                for chunk in segment.text.chunks(CHUNK) {
                    sink.send(Bytes::copy_from_slice(chunk)).await?;
                }
                let took = sink.finish().await?;
                if took != segment.rows {
                    return Err(SendError::Count { table: def.name.clone(), sent: segment.rows, took });
                }
                rows += took;
            }
            if rows > 0 {
                stored.push((table, rows));
            }
        }
        Ok(stored)
    }
}

#[derive(Debug)]
pub enum SendError {
    Db(Error),
    Count { table: String, sent: u64, took: u64 },
}

impl From<Error> for SendError {
    fn from(e: Error) -> Self {
        SendError::Db(e)
    }
}

/// One row in COPY's text format: its `links` (the table's linking columns),
/// then its values; tab-separated, `\N` for NULL.
fn write_row(out: &mut Vec<u8>, row: &Row, links: &[&str], values: &[Option<&Cell>]) {
    let mut line = String::new();
    for (i, link) in links.iter().enumerate() {
        let value = match *link {
            "did" => row.did,
            "rid" => i64::from(row.rid.unwrap_or(0)),
            "pid" => i64::from(row.pid.unwrap_or(0)),
            _ => i64::from(row.seq.unwrap_or(0)),
        };
        let _ = write!(line, "{}{value}", if i == 0 { "" } else { "\t" });
    }
    out.extend_from_slice(line.as_bytes());
    for value in values {
        out.push(b'\t');
        match value {
            None => out.extend_from_slice(b"\\N"),
            Some(Cell::Text(s)) => escape(out, s),
            Some(Cell::Int(i)) => out.extend_from_slice(i.to_string().as_bytes()),
            Some(Cell::Long(i)) => out.extend_from_slice(i.to_string().as_bytes()),
            // Rust prints the shortest text that reads back as the same double.
            Some(Cell::Double(x)) => out.extend_from_slice(format!("{x:?}").as_bytes()),
            Some(Cell::Bool(b)) => out.push(if *b { b't' } else { b'f' }),
        }
    }
    out.push(b'\n');
}

/// Text in COPY's escaping: backslash, tab, newline and carriage return.
fn escape(out: &mut Vec<u8>, s: &str) {
    if !s.bytes().any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r')) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    for b in s.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_become_copy_text_with_escapes_and_nulls() {
        let mut schema = Schema::new("t");
        let mut pending = PendingRows::default();
        let first = schema.derive(1, json!({"a": "x\ty\\z\n", "n": 2.5}).as_object().unwrap());
        pending.add(&schema, &first.rows);
        // A key first seen in the second document starts a new segment.
        let second = schema.derive(2, json!({"a": "plain", "late": true}).as_object().unwrap());
        pending.add(&schema, &second.rows);
        let root = &pending.tables[0];
        assert_eq!(root.len(), 2);
        assert_eq!(String::from_utf8_lossy(&root[0].text), "1\tx\\ty\\\\z\\n\t2.5\n");
        assert_eq!(String::from_utf8_lossy(&root[1].text), "2\tplain\t\\N\tt\n");
        assert_eq!(pending.documents(), 2);
    }
}

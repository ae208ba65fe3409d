//! Documents back from their rows: the proof that the mapping loses nothing
//! (`ghbench normalize --verify` compares rebuilt documents with the
//! originals; key order aside, since objects are maps).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use crate::mapping::{Cell, ColumnKey, Kind, Row, Schema, ROOT};

/// The document whose rows (of every table) are `rows`; None without a root row.
pub fn rebuild(schema: &Schema, rows: &[Row]) -> Option<Value> {
    let root = rows.iter().find(|r| r.table == ROOT)?;
    let mut children: HashMap<(usize, Option<i32>), Vec<&Row>> = HashMap::new();
    for row in rows.iter().filter(|r| r.table != ROOT) {
        children.entry((row.table, row.pid)).or_default().push(row);
    }
    for list in children.values_mut() {
        list.sort_by_key(|r| r.seq);
    }
    Some(Value::Object(Rebuild { schema, children: &children }.object(root)))
}

struct Rebuild<'a> {
    schema: &'a Schema,
    /// Rows by (table, parent row id).
    children: &'a HashMap<(usize, Option<i32>), Vec<&'a Row>>,
}

impl Rebuild<'_> {
    /// The object a row holds: its keys' values (an element's `v_*` aside).
    fn object(&self, row: &Row) -> Map<String, Value> {
        let mut obj = Map::new();
        for (column, cell) in &row.cells {
            let def = &self.schema.tables()[row.table].columns[*column];
            if let ColumnKey::Key(key) = &def.key {
                obj.insert(key.clone(), self.value(row, &def.key, def.kind, cell));
            }
        }
        obj
    }

    fn value(&self, row: &Row, key: &ColumnKey, kind: Kind, cell: &Cell) -> Value {
        match (kind, cell) {
            (Kind::Null, _) => Value::Null,
            (Kind::Child, Cell::Bool(is_array)) => {
                let child = self.schema.tables()[row.table].child_of(key, *is_array);
                let rows = child.and_then(|c| self.children.get(&(c, row.rid))).map(Vec::as_slice).unwrap_or(&[]);
                if *is_array {
                    Value::Array(rows.iter().map(|r| self.element(r)).collect())
                } else {
                    rows.first().map_or(Value::Null, |r| Value::Object(self.object(r)))
                }
            }
            (_, Cell::Text(s)) => Value::String(s.clone()),
            (_, Cell::Int(i)) => Value::Number((*i).into()),
            (_, Cell::Long(i)) => Value::Number((*i).into()),
            (_, Cell::Double(x)) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
            (_, Cell::Bool(b)) => Value::Bool(*b),
        }
    }

    /// An array element: a scalar or nested array in `v_*`, else an object.
    fn element(&self, row: &Row) -> Value {
        let table = &self.schema.tables()[row.table];
        for (column, cell) in &row.cells {
            let def = &table.columns[*column];
            if def.key == ColumnKey::Element {
                return self.value(row, &def.key, def.kind, cell);
            }
        }
        Value::Object(self.object(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_shape_comes_back_as_it_was() {
        let doc = json!({
            "type": "IssuesEvent", "n": 1, "big": 5000000000_i64, "x": 2.5, "ok": true, "gone": null,
            "actor": {"login": "a", "id": 3},
            "payload": {"commits": [{"sha": "x"}, {}, {"sha": "y", "files": ["a", "b"]}], "labels": ["bug", 3, null, 1.5]},
            "m": [[1, [2, 3]], [], "s", {"k": [true]}],
            "empty": {}, "none": [],
            "shape": {"a": 1}, "shapes": [{"shape": [1, {"a": 2}]}, {"shape": {"b": 3}}]
        });
        let mut schema = Schema::new("t");
        let derived = schema.derive(9, doc.as_object().unwrap());
        assert_eq!(rebuild(&schema, &derived.rows), Some(doc));
    }
}

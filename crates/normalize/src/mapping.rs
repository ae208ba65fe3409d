//! Documents as relational rows, by ToroDB's rules, derived from the documents
//! themselves (any JSON collection, no schema given in advance).
//!
//! - The root table is named after the collection; every nested object or
//!   array path gets its own table, named by joining the path with `_`
//!   (`github2015_actor`, `github2015_payload_commits`; see [`crate::names`]).
//! - Linking columns: `did` (the document, in every table), `rid` (the row,
//!   numbered per document and table, so `(did, rid)` is the key and loading
//!   needs no sequence), `pid` (the parent row's `rid`; absent when the parent
//!   is the root, which `did` alone names), `seq` (position in an array).
//! - Columns are `<key>_<type>` ([`Kind`]); a key seen with two types gets
//!   two columns. `_e` marks a child: `false` an object, `true` an array.
//! - An array is a child table with a row per element: an object element's
//!   keys are its columns, a scalar element sits in `v_<type>`, an array
//!   element is `v_e` and a child table `<table>__<depth>` (ToroDB's `$2`,
//!   with `$` made `_` like any other character).
//! - Strings stay `_s`: JSON has no timestamp type, and guessing one from a
//!   string's look would type the same key differently from value to value.
//!
//! Example: `{"type": "IssuesEvent", "actor": {"login": "a"}, "payload":
//! {"labels": ["bug", 3]}}`, document 7 of collection `t`, gives the rows
//! `t (did 7, type_s 'IssuesEvent', actor_e false, payload_e false)`,
//! `t_actor (did 7, rid 0, login_s 'a')`, `t_payload (did 7, rid 0, labels_e true)`,
//! `t_payload_labels (did 7, rid 0, pid 0, seq 0, v_s 'bug')` and
//! `t_payload_labels (did 7, rid 1, pid 0, seq 1, v_i 3)`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::names::{distinct, fit, sanitize};

/// A value's type, as its column's suffix says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `_s` text
    Text,
    /// `_i` a 32-bit integer
    Int,
    /// `_l` a 64-bit integer
    Long,
    /// `_d` a double
    Double,
    /// `_b` a boolean
    Bool,
    /// `_n` an explicit null (the column holds `true`)
    Null,
    /// `_e` a child object (`false`) or array (`true`) in its own table
    Child,
}

impl Kind {
    pub fn suffix(self) -> &'static str {
        match self {
            Kind::Text => "s",
            Kind::Int => "i",
            Kind::Long => "l",
            Kind::Double => "d",
            Kind::Bool => "b",
            Kind::Null => "n",
            Kind::Child => "e",
        }
    }

    /// The kind a column suffix names (`s`, `i`, ...).
    pub fn from_suffix(suffix: &str) -> Option<Kind> {
        [Kind::Text, Kind::Int, Kind::Long, Kind::Double, Kind::Bool, Kind::Null, Kind::Child].into_iter().find(|k| k.suffix() == suffix)
    }

    /// The PostgreSQL type of its column.
    pub fn sql_type(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Int => "integer",
            Kind::Long => "bigint",
            Kind::Double => "double precision",
            Kind::Bool | Kind::Null | Kind::Child => "boolean",
        }
    }

    fn of_number(n: &serde_json::Number) -> (Kind, Cell) {
        match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => match i32::try_from(i) {
                Ok(small) => (Kind::Int, Cell::Int(small)),
                Err(_) => (Kind::Long, Cell::Long(i)),
            },
            // Beyond i64 (the cleaning policy keeps these out when an engine needs it).
            (None, Some(x)) => (Kind::Double, Cell::Double(x)),
            (None, None) => (Kind::Text, Cell::Text(n.to_string())),
        }
    }
}

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i32),
    Long(i64),
    Double(f64),
    Bool(bool),
}

/// What a column holds: a key's values of one kind, or an array's scalar
/// elements (`v_<type>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnKey {
    Key(String),
    Element,
}

#[derive(Debug, Clone)]
pub struct ColumnDef {
    pub name: String,
    pub key: ColumnKey,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: String,
    /// Dotted path from the root, e.g. `payload.commits`; `$2` for an array in an array.
    pub path: String,
    pub parent: Option<usize>,
    /// What it holds in its parent: a key's value, or an array's nested arrays
    /// ([`ColumnKey::Element`]); None for the root.
    pub key: Option<ColumnKey>,
    /// Rows are array elements (they have `seq`).
    pub array: bool,
    pub columns: Vec<ColumnDef>,
    index: HashMap<(ColumnKey, Kind), usize>,
    /// The child table of each key (or of an array's nested arrays), by
    /// shape: a key that holds an object in one document and an array in
    /// another gets a table for each (an array's rows have `seq`).
    children: HashMap<(ColumnKey, bool), usize>,
}

impl TableDef {
    /// Has a `pid` column: its parent is not the root.
    pub fn has_pid(&self) -> bool {
        self.parent.is_some_and(|p| p != ROOT)
    }

    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// The child table of `key` (or of the nested arrays, for
    /// [`ColumnKey::Element`]) holding an object, or an array's elements.
    pub fn child_of(&self, key: &ColumnKey, array: bool) -> Option<usize> {
        self.children.get(&(key.clone(), array)).copied()
    }
}

/// The root table's index.
pub const ROOT: usize = 0;

/// One derived row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub table: usize,
    pub did: i64,
    /// None in the root table (one row per document: `did` is its key).
    pub rid: Option<i32>,
    pub pid: Option<i32>,
    pub seq: Option<i32>,
    /// (column index in its table, value)
    pub cells: Vec<(usize, Cell)>,
}

/// What deriving one document found: its rows, and the tables and columns
/// first seen in it (the schema grows as documents come).
#[derive(Debug, Default)]
pub struct Derived {
    pub rows: Vec<Row>,
    pub new_tables: Vec<usize>,
    /// (table, column)
    pub new_columns: Vec<(usize, usize)>,
}

/// The derived tables of one collection, grown document by document.
#[derive(Debug, Clone)]
pub struct Schema {
    collection: String,
    tables: Vec<TableDef>,
    table_names: HashSet<String>,
}

impl Schema {
    /// An empty schema: the root table alone, named `collection`.
    pub fn new(collection: &str) -> Schema {
        let root = TableDef {
            name: collection.to_string(),
            path: String::new(),
            parent: None,
            key: None,
            array: false,
            columns: Vec::new(),
            index: HashMap::new(),
            children: HashMap::new(),
        };
        Schema { collection: collection.to_string(), table_names: HashSet::from([root.name.clone()]), tables: vec![root] }
    }

    pub fn tables(&self) -> &[TableDef] {
        &self.tables
    }

    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Adds a table known already (from the database's metadata), under its
    /// recorded name; its parent must be there.
    pub fn restore_table(&mut self, parent: usize, key: ColumnKey, array: bool, path: String, name: String) -> usize {
        self.push_table(parent, key, array, path, name)
    }

    /// Adds a column known already, under its recorded name.
    pub fn restore_column(&mut self, table: usize, key: ColumnKey, kind: Kind, name: String) -> usize {
        self.push_column(table, key, kind, name)
    }

    /// Gives a table the name the database chose for it (another loader may
    /// have named the same path first).
    pub fn rename_table(&mut self, table: usize, name: String) {
        let old = std::mem::replace(&mut self.tables[table].name, name.clone());
        self.table_names.remove(&old);
        self.table_names.insert(name);
    }

    /// Gives a column the name the database chose for it.
    pub fn rename_column(&mut self, table: usize, column: usize, name: String) {
        self.tables[table].columns[column].name = name;
    }


    /// The column of `key` values of `kind` in `table`, if known.
    pub fn find_column(&self, table: usize, key: &ColumnKey, kind: Kind) -> Option<usize> {
        self.tables[table].index.get(&(key.clone(), kind)).copied()
    }

    /// The rows of document `did`.
    pub fn derive(&mut self, did: i64, doc: &Map<String, Value>) -> Derived {
        let mut walk = Walk { did, next_rid: HashMap::new(), out: Derived::default() };
        let root_cells = self.object_cells(ROOT, doc, None, &mut walk);
        walk.out.rows.push(Row { table: ROOT, did, rid: None, pid: None, seq: None, cells: root_cells });
        walk.out
    }

    /// The cells of an object's row in `table` (its scalars and child markers),
    /// deriving its children's rows on the way; `rid` is the row's own id.
    fn object_cells(&mut self, table: usize, obj: &Map<String, Value>, rid: Option<i32>, walk: &mut Walk) -> Vec<(usize, Cell)> {
        let mut cells = Vec::with_capacity(obj.len());
        for (key, value) in obj {
            let key = ColumnKey::Key(key.clone());
            let cell = self.value(table, key, value, rid, 1, walk);
            cells.push(cell);
        }
        cells
    }

    /// A value's cell in its row, and, for objects and arrays, their rows.
    /// `depth` counts arrays in arrays (for their tables' names).
    fn value(&mut self, table: usize, key: ColumnKey, value: &Value, rid: Option<i32>, depth: u32, walk: &mut Walk) -> (usize, Cell) {
        let (kind, cell) = match value {
            Value::Null => (Kind::Null, Cell::Bool(true)),
            Value::Bool(b) => (Kind::Bool, Cell::Bool(*b)),
            Value::Number(n) => Kind::of_number(n),
            Value::String(s) => (Kind::Text, Cell::Text(s.clone())),
            Value::Object(obj) => {
                let child = self.child(table, &key, false, depth, walk);
                let child_rid = walk.rid(child);
                let cells = self.object_cells(child, obj, Some(child_rid), walk);
                walk.out.rows.push(Row { table: child, did: walk.did, rid: Some(child_rid), pid: rid, seq: None, cells });
                (Kind::Child, Cell::Bool(false))
            }
            Value::Array(items) => {
                let child = self.child(table, &key, true, depth, walk);
                self.elements(child, items, rid, depth, walk);
                (Kind::Child, Cell::Bool(true))
            }
        };
        (self.column(table, key, kind, walk), cell)
    }

    /// An array's elements as rows of `table`, children of row `pid`.
    fn elements(&mut self, table: usize, items: &[Value], pid: Option<i32>, depth: u32, walk: &mut Walk) {
        for (seq, item) in items.iter().enumerate() {
            let rid = walk.rid(table);
            let cells = match item {
                Value::Object(obj) => self.object_cells(table, obj, Some(rid), walk),
                // Arrays in arrays go one level deeper, to `<table>__<depth + 1>`.
                other => vec![self.value(table, ColumnKey::Element, other, Some(rid), depth + 1, walk)],
            };
            let seq = i32::try_from(seq).unwrap_or(i32::MAX);
            walk.out.rows.push(Row { table, did: walk.did, rid: Some(rid), pid, seq: Some(seq), cells });
        }
    }

    /// The child table of `key` in `table`, created on first sight.
    fn child(&mut self, table: usize, key: &ColumnKey, array: bool, depth: u32, walk: &mut Walk) -> usize {
        if let Some(child) = self.tables[table].child_of(key, array) {
            return child;
        }
        let segment = match key {
            ColumnKey::Key(k) => k.clone(),
            ColumnKey::Element => format!("${depth}"),
        };
        let parent = &self.tables[table];
        let path = if parent.path.is_empty() { segment.clone() } else { format!("{}.{segment}", parent.path) };
        let joined: Vec<String> = std::iter::once(self.collection.clone()).chain(path.split('.').map(sanitize)).collect();
        let name = fit(joined.join("_"), &format!("{}/{path}", self.collection));
        let name = distinct(name, &format!("{}/{path}", self.collection), |n| self.table_names.contains(n));
        let child = self.push_table(table, key.clone(), array, path, name);
        walk.out.new_tables.push(child);
        child
    }

    fn push_table(&mut self, parent: usize, key: ColumnKey, array: bool, path: String, name: String) -> usize {
        self.table_names.insert(name.clone());
        let def = TableDef {
            name,
            path,
            parent: Some(parent),
            key: Some(key.clone()),
            array,
            columns: Vec::new(),
            index: HashMap::new(),
            children: HashMap::new(),
        };
        self.tables.push(def);
        let child = self.tables.len() - 1;
        self.tables[parent].children.insert((key, array), child);
        child
    }

    /// The column of `key` values of `kind` in `table`, created on first sight.
    fn column(&mut self, table: usize, key: ColumnKey, kind: Kind, walk: &mut Walk) -> usize {
        let def = &mut self.tables[table];
        if let Some(&column) = def.index.get(&(key.clone(), kind)) {
            return column;
        }
        let base = match &key {
            ColumnKey::Key(k) => sanitize(k),
            ColumnKey::Element => "v".to_string(),
        };
        let origin = column_origin(&def.path, &key, kind);
        let name = fit(format!("{base}_{}", kind.suffix()), &origin);
        // The linking columns have no suffix, so no key's column can take them.
        let name = distinct(name, &origin, |n| def.columns.iter().any(|c| c.name == n));
        let column = self.push_column(table, key, kind, name);
        walk.out.new_columns.push((table, column));
        column
    }

    /// What a table's name stands for, which makes its suffix when shortened
    /// or told apart (see [`crate::names`]).
    pub fn table_origin(&self, table: usize) -> String {
        format!("{}/{}", self.collection, self.tables[table].path)
    }

    /// What a column's name stands for (see [`Schema::table_origin`]).
    pub fn column_origin(&self, table: usize, column: usize) -> String {
        let (def, col) = (&self.tables[table], &self.tables[table].columns[column]);
        column_origin(&def.path, &col.key, col.kind)
    }

    fn push_column(&mut self, table: usize, key: ColumnKey, kind: Kind, name: String) -> usize {
        let def = &mut self.tables[table];
        def.columns.push(ColumnDef { name, key: key.clone(), kind });
        let column = def.columns.len() - 1;
        def.index.insert((key, kind), column);
        column
    }
}

fn column_origin(path: &str, key: &ColumnKey, kind: Kind) -> String {
    match key {
        ColumnKey::Key(k) => format!("{path}/{k}/{}", kind.suffix()),
        ColumnKey::Element => format!("{path}/$v/{}", kind.suffix()),
    }
}

/// One document's derivation under way.
struct Walk {
    did: i64,
    next_rid: HashMap<usize, i32>,
    out: Derived,
}

impl Walk {
    /// The next row id in `table` for this document (0, 1, 2, ...).
    fn rid(&mut self, table: usize) -> i32 {
        let next = self.next_rid.entry(table).or_insert(0);
        let rid = *next;
        *next += 1;
        rid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn derive(schema: &mut Schema, did: i64, doc: Value) -> Derived {
        schema.derive(did, doc.as_object().expect("an object"))
    }

    /// `table.column = value` for every cell, for readable assertions.
    fn cells(schema: &Schema, rows: &[Row]) -> Vec<String> {
        let mut out = Vec::new();
        for row in rows {
            let t = &schema.tables()[row.table];
            let link = format!("{}[rid {:?} pid {:?} seq {:?}]", t.name, row.rid, row.pid, row.seq);
            for (c, v) in &row.cells {
                out.push(format!("{link}.{} = {v:?}", t.columns[*c].name));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn nested_objects_get_tables_of_their_own() {
        let mut schema = Schema::new("t");
        let d = derive(&mut schema, 7, json!({"type": "IssuesEvent", "actor": {"login": "a"}, "payload": {"issue": {"comments": 3}}}));
        let names: Vec<&str> = schema.tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t", "t_actor", "t_payload", "t_payload_issue"]);
        assert_eq!(d.new_tables, [1, 2, 3]);
        let got = cells(&schema, &d.rows);
        assert!(got.contains(&"t[rid None pid None seq None].type_s = Text(\"IssuesEvent\")".to_string()), "{got:#?}");
        assert!(got.contains(&"t[rid None pid None seq None].actor_e = Bool(false)".to_string()));
        assert!(got.contains(&"t_actor[rid Some(0) pid None seq None].login_s = Text(\"a\")".to_string()), "the root's child has no pid");
        assert!(got.contains(&"t_payload_issue[rid Some(0) pid Some(0) seq None].comments_i = Int(3)".to_string()), "{got:#?}");
        assert!(!schema.tables()[1].has_pid() && schema.tables()[3].has_pid());
        assert!(d.rows.iter().all(|r| r.did == 7));
    }

    #[test]
    fn arrays_of_objects_and_of_scalars_get_a_row_per_element() {
        let mut schema = Schema::new("t");
        let doc = json!({"payload": {"commits": [{"sha": "x"}, {"sha": "y", "distinct": true}], "labels": ["bug", 3, null]}});
        let d = derive(&mut schema, 1, doc);
        let got = cells(&schema, &d.rows);
        assert!(got.contains(&"t_payload_commits[rid Some(0) pid Some(0) seq Some(0)].sha_s = Text(\"x\")".to_string()), "{got:#?}");
        assert!(got.contains(&"t_payload_commits[rid Some(1) pid Some(0) seq Some(1)].distinct_b = Bool(true)".to_string()));
        assert!(got.contains(&"t_payload_labels[rid Some(0) pid Some(0) seq Some(0)].v_s = Text(\"bug\")".to_string()));
        assert!(got.contains(&"t_payload_labels[rid Some(1) pid Some(0) seq Some(1)].v_i = Int(3)".to_string()));
        assert!(got.contains(&"t_payload_labels[rid Some(2) pid Some(0) seq Some(2)].v_n = Bool(true)".to_string()), "an explicit null");
        assert!(got.contains(&"t_payload[rid Some(0) pid None seq None].commits_e = Bool(true)".to_string()));
    }

    #[test]
    fn arrays_in_arrays_go_one_table_deeper() {
        let mut schema = Schema::new("t");
        let d = derive(&mut schema, 1, json!({"m": [[1, 2], ["a"]]}));
        let names: Vec<&str> = schema.tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t", "t_m", "t_m__2"]);
        assert_eq!(schema.tables()[2].path, "m.$2");
        let got = cells(&schema, &d.rows);
        assert!(got.contains(&"t_m[rid Some(1) pid None seq Some(1)].v_e = Bool(true)".to_string()), "{got:#?}");
        assert!(got.contains(&"t_m__2[rid Some(2) pid Some(1) seq Some(0)].v_s = Text(\"a\")".to_string()), "{got:#?}");
        assert_eq!(d.rows.iter().filter(|r| r.table == 2).count(), 3);
    }

    #[test]
    fn a_key_with_two_types_gets_two_columns() {
        let mut schema = Schema::new("t");
        derive(&mut schema, 1, json!({"n": 1}));
        let d = derive(&mut schema, 2, json!({"n": "one", "big": 5000000000_i64, "x": 2.5}));
        let columns: Vec<&str> = schema.tables()[ROOT].columns.iter().map(|c| c.name.as_str()).collect();
        // In the order met, which depends on serde_json's features (sorted keys,
        // or the text's order): compared as a set.
        let mut sorted = columns.clone();
        sorted.sort();
        assert_eq!(sorted, ["big_l", "n_i", "n_s", "x_d"]);
        assert_eq!(columns[0], "n_i", "the first document's column comes first");
        assert_eq!(d.new_columns, [(ROOT, 1), (ROOT, 2), (ROOT, 3)], "only the new ones");
        let type_of = |name: &str| schema.tables()[ROOT].columns.iter().find(|c| c.name == name).map(|c| c.kind.sql_type());
        assert_eq!([type_of("n_i"), type_of("big_l"), type_of("n_s"), type_of("x_d")], [Some("integer"), Some("bigint"), Some("text"), Some("double precision")]);
    }

    #[test]
    fn long_and_colliding_keys_get_distinct_valid_names() {
        let mut schema = Schema::new("t");
        let long = "k".repeat(70);
        derive(&mut schema, 1, json!({ long.clone(): 1, "A-b": 1, "a_b": 2, "did": "x", "user": {"rid": 1}}));
        let columns: Vec<&str> = schema.tables()[ROOT].columns.iter().map(|c| c.name.as_str()).collect();
        assert!(columns.iter().all(|c| c.len() <= 63 && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')), "{columns:?}");
        assert_eq!(columns.iter().collect::<HashSet<_>>().len(), columns.len(), "distinct: {columns:?}");
        assert!(columns.contains(&"did_s"), "a key named like a linking column keeps its suffix");
        assert!(schema.tables()[1].columns.iter().any(|c| c.name == "rid_i"));
        assert_eq!(schema.tables()[1].name, "t_user", "a reserved word is fine after the collection's name");
        // The same keys in another schema get the same names.
        let mut again = Schema::new("t");
        derive(&mut again, 1, json!({ long: 1, "A-b": 1, "a_b": 2, "did": "x", "user": {"rid": 1}}));
        let again: Vec<&str> = again.tables()[ROOT].columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(again, columns);
    }

    #[test]
    fn a_key_holding_an_object_here_and_an_array_there_gets_a_table_for_each() {
        let mut schema = Schema::new("t");
        derive(&mut schema, 1, json!({"x": {"a": 1}}));
        let d = derive(&mut schema, 2, json!({"x": [1, 2]}));
        let names: Vec<(&str, bool)> = schema.tables().iter().map(|t| (t.name.as_str(), t.array)).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(names[1], ("t_x", false));
        assert!(names[2].0.starts_with("t_x_") && names[2].1, "the array's table is told apart: {names:?}");
        assert!(d.rows.iter().filter(|r| r.table == 2).all(|r| r.seq.is_some()), "array rows keep their order");
    }

    #[test]
    fn a_key_first_seen_late_extends_the_schema() {
        let mut schema = Schema::new("t");
        for did in 0..100 {
            let d = derive(&mut schema, did, json!({"type": "PushEvent"}));
            assert!(d.new_columns.is_empty() || did == 0);
        }
        let d = derive(&mut schema, 100, json!({"type": "PushEvent", "org": {"login": "o"}}));
        assert_eq!(d.new_tables.len(), 1);
        assert_eq!(d.new_columns.len(), 2, "org_e in the root, login_s in t_org");
    }
}

//! The engine's table: flat, typed, top-level columns for the JSON paths
//! declared in `queries/polars/columns.json`, beside the whole event as JSON
//! text, built from ghbench's decoded documents.
//!
//! | column            | type                 | from the event                      |
//! |-------------------|----------------------|-------------------------------------|
//! | `line`            | UInt32               | line in the hour's file             |
//! | one per path, named by it (`repo.name`) | String (`text`) or Float64 (`number`) | that path |
//! | `event`           | String               | the whole event, JSON text          |
//!
//! Why flat: polars reads a struct column whole, through its nested decoder
//! (no projection into one field, pola-rs/polars#23503), and its writer does
//! not dictionary-encode strings inside structs (#19803); the same fields as
//! top-level columns read as fast as DuckDB reads them. Columnar systems store
//! known hot JSON paths so (ClickHouse's typed JSON paths).
//!
//! Not polars' NDJSON reader: it infers a schema from the first rows and
//! silently drops keys it first meets later (pola-rs/polars#29330). Here every
//! column is declared, and every document is read the same way:
//!
//! - `text` reads like PostgreSQL's `->>`: a string is its text, `null` or a
//!   missing key (anywhere along the path) is null, any other value is its JSON
//!   text as written (jsonb would print it normalised, e.g. `1e2` as `100`; the
//!   queries group by strings);
//! - `number` keeps JSON numbers only (as the corrected Query D counts them);
//!   anything else is null.
//!
//! Nothing is lost: `event` holds the document as it was stored.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use polars::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Where the layout is declared, in the query catalog.
pub const LAYOUT_FILE: &str = "polars/columns.json";

/// The name of the format the layout's columns are written in, part of each
/// hour's [`Layout::signature`]. Hours written before it kept the fields in
/// struct columns and recorded no layout (see [`crate::store::HourEntry::layout`]).
const FORMAT: &str = "flat-1";

/// Columns every layout has, which a path may not be named.
const LINE: &str = "line";
const EVENT: &str = "event";

/// How a path's values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathType {
    /// String, read as `->>` reads it.
    Text,
    /// Float64, JSON numbers only.
    Number,
}

impl PathType {
    fn dtype(self) -> DataType {
        match self {
            PathType::Text => DataType::String,
            PathType::Number => DataType::Float64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            PathType::Text => "text",
            PathType::Number => "number",
        }
    }
}

/// One flattened path: its column is named by the path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatPath {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: PathType,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutFile {
    #[allow(dead_code)]
    about: String,
    columns: Vec<FlatPath>,
}

/// The declared layout: which paths have columns of their own, and how to
/// find them in a document.
#[derive(Debug, Clone)]
pub struct Layout {
    paths: Vec<FlatPath>,
    tree: PathTree,
}

impl Layout {
    /// The layout compiled in (`queries/polars/columns.json`, not a `--catalog`
    /// folder's: files are written in it); this module's tests read it, so an
    /// error here means a binary built from a broken file.
    pub fn declared() -> Result<&'static Layout, String> {
        static DECLARED: LazyLock<Result<Layout, String>> = LazyLock::new(|| {
            let catalog = ghbench_engine::query::compiled_in()?;
            let file = catalog.file(LAYOUT_FILE).ok_or_else(|| format!("the query catalog has no {LAYOUT_FILE}"))?;
            Layout::parse(&file.text).map_err(|e| format!("{LAYOUT_FILE}: {e}"))
        });
        DECLARED.as_ref().map_err(Clone::clone)
    }

    /// A layout from the text of a `columns.json`.
    pub fn parse(text: &str) -> Result<Layout, String> {
        let file: LayoutFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Layout::new(file.columns)
    }

    pub fn new(paths: Vec<FlatPath>) -> Result<Layout, String> {
        if paths.is_empty() {
            return Err("no columns: declare at least the paths the queries read".into());
        }
        let mut tree = PathTree::default();
        for (column, flat) in paths.iter().enumerate() {
            let segments: Vec<&str> = flat.path.split('.').collect();
            // No commas: the layout's signature lists paths separated by them.
            if segments.iter().any(|s| s.is_empty() || s.chars().any(|c| c.is_control() || c == '"' || c == ',')) {
                return Err(format!("path {:?}: keys joined by dots, none empty, no quotes, commas or control characters", flat.path));
            }
            if [LINE, EVENT].contains(&flat.path.as_str()) {
                return Err(format!("path {:?}: `{LINE}` and `{EVENT}` are the table's own columns", flat.path));
            }
            tree.insert(&segments, column).map_err(|()| format!("path {:?} is declared twice", flat.path))?;
        }
        Ok(Layout { paths, tree })
    }

    pub fn paths(&self) -> &[FlatPath] {
        &self.paths
    }

    /// The Arrow schema of a table of this layout (see the module's table).
    pub fn schema(&self) -> Schema {
        let mut fields = vec![Field::new(LINE.into(), DataType::UInt32)];
        fields.extend(self.paths.iter().map(|p| Field::new(p.path.as_str().into(), p.kind.dtype())));
        fields.push(Field::new(EVENT.into(), DataType::String));
        Schema::from_iter(fields)
    }

    /// What the layout is, in one line a person reads and files are tagged
    /// with: `flat-1: type text, repo.name text, …`. Two layouts store the
    /// same columns exactly when their signatures are equal.
    pub fn signature(&self) -> String {
        let columns: Vec<String> = self.paths.iter().map(|p| format!("{} {}", p.path, p.kind.name())).collect();
        format!("{FORMAT}: {}", columns.join(", "))
    }

    /// The values of the layout's paths in one document (valid JSON: ingest
    /// checked it), in the layout's order.
    pub fn read(&self, json: &str) -> Result<Vec<Value>, serde_json::Error> {
        let mut found = vec![None; self.paths.len()];
        self.tree.visit(Some(json), &mut found)?;
        self.paths.iter().zip(found).map(|(flat, raw)| flat.kind.value(raw)).collect()
    }
}

/// A path's value in one document.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Option<String>),
    Number(Option<f64>),
}

impl PathType {
    fn value(self, raw: Option<&str>) -> Result<Value, serde_json::Error> {
        Ok(match self {
            PathType::Text => Value::Text(text(raw)?),
            PathType::Number => Value::Number(number(raw)),
        })
    }
}

/// The declared paths as a tree of keys, so that each object on the way is
/// parsed once per document however many paths pass through it.
#[derive(Debug, Clone, Default)]
struct PathTree {
    /// The column of the path that ends here.
    column: Option<usize>,
    children: Vec<(String, PathTree)>,
}

impl PathTree {
    fn insert(&mut self, segments: &[&str], column: usize) -> Result<(), ()> {
        let Some((first, rest)) = segments.split_first() else {
            return match self.column.replace(column) {
                Some(_) => Err(()),
                None => Ok(()),
            };
        };
        let at = match self.children.iter().position(|(key, _)| key == first) {
            Some(at) => at,
            None => {
                self.children.push((first.to_string(), PathTree::default()));
                self.children.len() - 1
            }
        };
        self.children[at].1.insert(rest, column)
    }

    /// Fills `found[column]` with the JSON text at each path below `json`.
    fn visit<'a>(&self, json: Option<&'a str>, found: &mut [Option<&'a str>]) -> Result<(), serde_json::Error> {
        if let Some(column) = self.column {
            found[column] = json;
        }
        if self.children.is_empty() {
            return Ok(());
        }
        // A missing path, or one through something that is not an object, reads as nothing.
        let members = match json {
            Some(json) => members(json)?.unwrap_or_default(),
            None => Members::new(),
        };
        for (key, child) in &self.children {
            child.visit(members.get(key.as_str()).map(|raw| raw.get()), found)?;
        }
        Ok(())
    }
}

/// An object's members, each still JSON text.
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

/// An object's members (the last of duplicate keys wins, as in jsonb), or
/// None when the JSON is not an object.
fn members(json: &str) -> Result<Option<Members<'_>>, serde_json::Error> {
    if !json.trim_start().starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str(json).map(Some)
}

/// `->>`: a string's text, null for null or nothing, else the JSON text.
fn text(raw: Option<&str>) -> Result<Option<String>, serde_json::Error> {
    let Some(json) = raw.map(str::trim) else { return Ok(None) };
    Ok(match json.as_bytes().first() {
        Some(b'"') => Some(serde_json::from_str::<String>(json)?),
        _ if json == "null" => None,
        _ => Some(json.to_string()),
    })
}

/// A JSON number as f64; anything else is null.
fn number(raw: Option<&str>) -> Option<f64> {
    let json = raw?.trim();
    match json.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => json.parse::<f64>().ok(),
        _ => None,
    }
}

/// One column being filled.
enum Filling {
    Text(Vec<Option<String>>),
    Number(Vec<Option<f64>>),
}

/// Columns being filled, a document at a time, until they become a frame.
pub struct Columns {
    layout: &'static Layout,
    line: Vec<u32>,
    paths: Vec<Filling>,
    event: Vec<String>,
}

impl Columns {
    pub fn new(layout: &'static Layout) -> Columns {
        let paths = layout
            .paths
            .iter()
            .map(|p| match p.kind {
                PathType::Text => Filling::Text(Vec::new()),
                PathType::Number => Filling::Number(Vec::new()),
            })
            .collect();
        Columns { layout, line: Vec::new(), paths, event: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.event.len()
    }

    pub fn is_empty(&self) -> bool {
        self.event.is_empty()
    }

    /// Adds line `line` of the hour, whose JSON text is `json`.
    pub fn push(&mut self, line: u64, json: &str) -> Result<(), String> {
        let values = self.layout.read(json).map_err(|e| format!("line {line}: {e}"))?;
        let line = u32::try_from(line).map_err(|_| format!("line {line}: more lines than a Parquet hour file numbers"))?;
        self.line.push(line);
        for (column, value) in self.paths.iter_mut().zip(values) {
            match (column, value) {
                (Filling::Text(column), Value::Text(value)) => column.push(value),
                (Filling::Number(column), Value::Number(value)) => column.push(value),
                _ => unreachable!("columns and values both follow the layout's types"),
            }
        }
        self.event.push(json.to_string());
        Ok(())
    }

    /// The rows so far as a frame of the layout's schema; the columns start empty again.
    pub fn take_frame(&mut self) -> PolarsResult<DataFrame> {
        let taken = std::mem::replace(self, Columns::new(self.layout));
        let n = taken.len();
        let mut columns = vec![Series::new(LINE.into(), taken.line)];
        for (flat, filled) in taken.layout.paths.iter().zip(taken.paths) {
            let name = flat.path.as_str().into();
            columns.push(match filled {
                Filling::Text(values) => Series::new(name, values),
                Filling::Number(values) => Series::new(name, values),
            });
        }
        columns.push(Series::new(EVENT.into(), taken.event));
        let frame = DataFrame::new(n, columns.into_iter().map(Column::from).collect())?;
        // The declared schema is the contract the queries are written against.
        let schema = taken.layout.schema();
        polars_ensure!(frame.schema().as_ref() == &schema, SchemaMismatch: "the built frame's schema is {:?}, not the declared one", frame.schema());
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> &'static Layout {
        Layout::declared().unwrap()
    }

    /// The declared layout's value of `path` in `json`.
    fn at(json: &str, path: &str) -> Value {
        let column = layout().paths.iter().position(|p| p.path == path).unwrap_or_else(|| panic!("{path} is not declared"));
        layout().read(json).unwrap().swap_remove(column)
    }

    fn text_at(json: &str, path: &str) -> Option<String> {
        match at(json, path) {
            Value::Text(text) => text,
            other => panic!("{path} is not text: {other:?}"),
        }
    }

    #[test]
    fn the_declared_layout_has_the_queried_and_indexed_paths() {
        let paths: Vec<&str> = layout().paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["type", "repo.name", "actor.login", "payload.action", "payload.issue.comments", "created_at"]);
        assert_eq!(
            layout().signature(),
            "flat-1: type text, repo.name text, actor.login text, payload.action text, payload.issue.comments number, created_at text"
        );
        let names: Vec<String> = layout().schema().iter_names().map(|n| n.to_string()).collect();
        assert_eq!(names.first().map(String::as_str), Some("line"));
        assert_eq!(names.last().map(String::as_str), Some("event"));
    }

    #[test]
    fn fields_read_like_jsonb_arrows() {
        let doc = r#"{"type":"IssuesEvent","actor":{"login":"a\u00e9"},"repo":{"name":"o/r","id":1},
            "payload":{"action":"opened","issue":{"comments":3}},"created_at":"2015-01-01T00:00:01Z","public":true}"#;
        let values = layout().read(doc).unwrap();
        assert_eq!(
            values,
            [
                Value::Text(Some("IssuesEvent".into())),
                Value::Text(Some("o/r".into())),
                Value::Text(Some("aé".into())),
                Value::Text(Some("opened".into())),
                Value::Number(Some(3.0)),
                Value::Text(Some("2015-01-01T00:00:01Z".into())),
            ],
            "escapes decoded"
        );
    }

    #[test]
    fn missing_null_and_other_types_read_as_postgres_arrows_read_them() {
        let doc = r#"{"type":7,"actor":"x","repo":[1],"payload":{"issue":{"comments":"5"}},"created_at":null}"#;
        assert_eq!(text_at(doc, "type").as_deref(), Some("7"), "a number's JSON text, as ->> gives");
        assert_eq!(text_at(doc, "actor.login"), None, "through a string: nothing");
        assert_eq!(text_at(doc, "repo.name"), None, "through an array: nothing");
        assert_eq!(text_at(doc, "payload.action"), None, "missing");
        assert_eq!(text_at(doc, "created_at"), None, "JSON null is SQL null");
        assert_eq!(at(doc, "payload.issue.comments"), Value::Number(None), "a string is not a count");
        let doc = r#"{"payload":{"issue":{"comments":-2.5e1}},"repo":{"name":{"a":1}},"actor":{"login":true}}"#;
        assert_eq!(at(doc, "payload.issue.comments"), Value::Number(Some(-25.0)));
        assert_eq!(text_at(doc, "repo.name").as_deref(), Some(r#"{"a":1}"#), "an object's JSON text");
        assert_eq!(text_at(doc, "actor.login").as_deref(), Some("true"));
        assert_eq!(at(r#"{"payload":{"issue":null}}"#, "payload.issue.comments"), Value::Number(None));
        assert_eq!(text_at(r#"{"type":"A","type":"B"}"#, "type").as_deref(), Some("B"), "last key wins");
        assert!(layout().read("[1]").unwrap().iter().all(|v| matches!(v, Value::Text(None) | Value::Number(None))), "a non-object: all null");
    }

    #[test]
    fn a_path_through_another_path_reads_both() {
        let layout = Layout::new(vec![
            FlatPath { path: "payload".into(), kind: PathType::Text },
            FlatPath { path: "payload.size".into(), kind: PathType::Number },
        ])
        .unwrap();
        assert_eq!(
            layout.read(r#"{"payload":{"size":2}}"#).unwrap(),
            [Value::Text(Some(r#"{"size":2}"#.into())), Value::Number(Some(2.0))]
        );
    }

    #[test]
    fn bad_layouts_are_refused_saying_why() {
        let refused = |text: &str| Layout::parse(text).unwrap_err();
        assert!(refused(r#"{"about":"","columns":[]}"#).contains("no columns"));
        let one = |path: &str, kind: &str| format!(r#"{{"about":"","columns":[{{"path":"{path}","type":"{kind}"}}]}}"#);
        assert!(refused(&one("a..b", "text")).contains("none empty"));
        assert!(refused(&one("a text, b", "number")).contains("commas"), "a comma would make two layouts' signatures alike");
        assert!(refused(&one("event", "text")).contains("the table's own columns"));
        assert!(refused(&one("a", "date")).contains("unknown variant"), "{}", refused(&one("a", "date")));
        let twice = r#"{"about":"","columns":[{"path":"a.b","type":"text"},{"path":"a.b","type":"number"}]}"#;
        assert!(refused(twice).contains("declared twice"));
        assert!(refused(r#"{"about":"","columns":[{"path":"a","type":"text","as":"x"}]}"#).contains("unknown field"));
    }

    #[test]
    fn frames_have_the_declared_schema_and_every_row() {
        let mut columns = Columns::new(layout());
        columns.push(1, r#"{"type":"PushEvent","actor":{"login":"a"}}"#).unwrap();
        columns.push(2, r#"{"late_key":{"deep":[1,2]},"payload":{"issue":{"comments":4}}}"#).unwrap();
        let frame = columns.take_frame().unwrap();
        assert!(columns.is_empty());
        assert_eq!(frame.height(), 2);
        assert_eq!(frame.schema().as_ref(), &layout().schema());
        assert_eq!(frame.column("actor.login").unwrap().str().unwrap().get(0), Some("a"));
        assert_eq!(frame.column("payload.issue.comments").unwrap().f64().unwrap().get(1), Some(4.0));
        let event = frame.column("event").unwrap().str().unwrap().get(1).unwrap().to_string();
        assert!(event.contains("late_key"), "a key first seen late is kept in the event text");
        assert!(columns.push(1, "[1]").is_ok(), "a non-object reads as all nulls");
    }
}

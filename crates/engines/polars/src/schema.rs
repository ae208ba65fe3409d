//! The engine's table: an explicit Arrow schema, and its columns built from
//! ghbench's decoded documents.
//!
//! Not polars' NDJSON reader: it infers a schema from the first rows and
//! silently drops keys it first meets later (pola-rs/polars#29330). Here every
//! column is declared, and every document is read the same way:
//!
//! | column      | type                                           | from the event       |
//! |-------------|------------------------------------------------|----------------------|
//! | `line`      | UInt32                                         | line in the hour's file |
//! | `type`      | String                                         | `type`               |
//! | `actor`     | Struct{`login`: String}                        | `actor.login`        |
//! | `repo`      | Struct{`name`: String}                         | `repo.name`          |
//! | `payload`   | Struct{`action`: String, `issue`: Struct{`comments`: Float64}} | `payload.action`, `payload.issue.comments` |
//! | `created_at`| String                                         | `created_at`         |
//! | `event`     | String                                         | the whole event, JSON text |
//!
//! Text fields read like PostgreSQL's `->>`: a string is its text, `null` or a
//! missing key is null, any other value is its JSON text as written (jsonb
//! would print it normalised, e.g. `1e2` as `100`; the queries group by strings). `comments` keeps JSON
//! numbers only (as the corrected Query D counts them); anything else is null.
//! A struct is always present, its fields null where the document lacks them,
//! so `repo.name` is null whether `repo` or `name` is missing, as with jsonb
//! and MongoDB. Nothing is lost: `event` holds the document as it was stored.

use std::borrow::Cow;
use std::collections::HashMap;

use polars::prelude::*;
use serde_json::value::RawValue;

/// A document's fields as the table stores them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EventFields {
    pub kind: Option<String>,
    pub actor_login: Option<String>,
    pub repo_name: Option<String>,
    pub payload_action: Option<String>,
    pub issue_comments: Option<f64>,
    pub created_at: Option<String>,
}

impl EventFields {
    /// The fields of one clean document (valid JSON: ingest checked it).
    pub fn read(json: &str) -> Result<EventFields, serde_json::Error> {
        let top = members(json)?.unwrap_or_default();
        let (actor, repo, payload) = (object_at(&top, "actor")?, object_at(&top, "repo")?, object_at(&top, "payload")?);
        let issue = object_at(&payload, "issue")?;
        Ok(EventFields {
            kind: text(top.get("type"))?,
            actor_login: text(actor.get("login"))?,
            repo_name: text(repo.get("name"))?,
            payload_action: text(payload.get("action"))?,
            issue_comments: number(issue.get("comments")),
            created_at: text(top.get("created_at"))?,
        })
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

/// The members of the object under `key`; none when it is missing or not an object.
fn object_at<'a>(of: &Members<'a>, key: &str) -> Result<Members<'a>, serde_json::Error> {
    Ok(match of.get(key) {
        Some(raw) => members(raw.get())?.unwrap_or_default(),
        None => Members::new(),
    })
}

/// `->>`: a string's text, null for null or nothing, else the JSON text.
fn text(raw: Option<&&RawValue>) -> Result<Option<String>, serde_json::Error> {
    let Some(raw) = raw else { return Ok(None) };
    let json = raw.get().trim();
    Ok(match json.as_bytes().first() {
        Some(b'"') => Some(serde_json::from_str::<String>(json)?),
        _ if json == "null" => None,
        _ => Some(json.to_string()),
    })
}

/// A JSON number as f64; anything else is null.
fn number(raw: Option<&&RawValue>) -> Option<f64> {
    let json = raw?.get().trim();
    match json.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => json.parse::<f64>().ok(),
        _ => None,
    }
}

/// The table's schema, declared (see the module's table).
pub fn table_schema() -> Schema {
    let string = |name: &str| Field::new(name.into(), DataType::String);
    let structure = |name: &str, fields: Vec<Field>| Field::new(name.into(), DataType::Struct(fields));
    Schema::from_iter([
        Field::new("line".into(), DataType::UInt32),
        string("type"),
        structure("actor", vec![string("login")]),
        structure("repo", vec![string("name")]),
        structure(
            "payload",
            vec![string("action"), structure("issue", vec![Field::new("comments".into(), DataType::Float64)])],
        ),
        string("created_at"),
        string("event"),
    ])
}

/// Columns being filled, a document at a time, until they become a frame.
#[derive(Default)]
pub struct Columns {
    line: Vec<u32>,
    kind: Vec<Option<String>>,
    actor_login: Vec<Option<String>>,
    repo_name: Vec<Option<String>>,
    payload_action: Vec<Option<String>>,
    issue_comments: Vec<Option<f64>>,
    created_at: Vec<Option<String>>,
    event: Vec<String>,
}

impl Columns {
    pub fn len(&self) -> usize {
        self.event.len()
    }

    pub fn is_empty(&self) -> bool {
        self.event.is_empty()
    }

    /// Adds line `line` of the hour, whose JSON text is `json`.
    pub fn push(&mut self, line: u64, json: &str) -> Result<(), String> {
        let fields = EventFields::read(json).map_err(|e| format!("line {line}: {e}"))?;
        let line = u32::try_from(line).map_err(|_| format!("line {line}: more lines than a Parquet hour file numbers"))?;
        self.line.push(line);
        self.kind.push(fields.kind);
        self.actor_login.push(fields.actor_login);
        self.repo_name.push(fields.repo_name);
        self.payload_action.push(fields.payload_action);
        self.issue_comments.push(fields.issue_comments);
        self.created_at.push(fields.created_at);
        self.event.push(json.to_string());
        Ok(())
    }

    /// The rows so far as a frame of [`table_schema`]; the columns start empty again.
    pub fn take_frame(&mut self) -> PolarsResult<DataFrame> {
        let taken = std::mem::take(self);
        let n = taken.len();
        let strings = |name: &str, values: Vec<Option<String>>| Series::new(name.into(), values);
        let structure = |name: &str, fields: &[Series]| -> PolarsResult<Series> {
            Ok(StructChunked::from_series(name.into(), n, fields.iter())?.into_series())
        };
        let issue = structure("issue", &[Series::new("comments".into(), taken.issue_comments)])?;
        let columns = vec![
            Series::new("line".into(), taken.line),
            strings("type", taken.kind),
            structure("actor", &[strings("login", taken.actor_login)])?,
            structure("repo", &[strings("name", taken.repo_name)])?,
            structure("payload", &[strings("action", taken.payload_action), issue])?,
            strings("created_at", taken.created_at),
            Series::new("event".into(), taken.event),
        ];
        let frame = DataFrame::new(n, columns.into_iter().map(Column::from).collect())?;
        // The declared schema is the contract the queries are written against.
        polars_ensure!(frame.schema().as_ref() == &table_schema(), SchemaMismatch: "the built frame's schema is {:?}, not the declared one", frame.schema());
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_like_jsonb_arrows() {
        let doc = r#"{"type":"IssuesEvent","actor":{"login":"a\u00e9"},"repo":{"name":"o/r","id":1},
            "payload":{"action":"opened","issue":{"comments":3}},"created_at":"2015-01-01T00:00:01Z","public":true}"#;
        let f = EventFields::read(doc).unwrap();
        assert_eq!(f.kind.as_deref(), Some("IssuesEvent"));
        assert_eq!(f.actor_login.as_deref(), Some("aé"), "escapes decoded");
        assert_eq!(f.repo_name.as_deref(), Some("o/r"));
        assert_eq!(f.payload_action.as_deref(), Some("opened"));
        assert_eq!(f.issue_comments, Some(3.0));
        assert_eq!(f.created_at.as_deref(), Some("2015-01-01T00:00:01Z"));
    }

    #[test]
    fn odd_shapes_become_nulls_or_json_text_never_errors() {
        let f = EventFields::read(r#"{"type":7,"actor":"x","repo":[1],"payload":{"issue":{"comments":"5"}},"created_at":null}"#).unwrap();
        assert_eq!(f.kind.as_deref(), Some("7"), "a number's JSON text, as ->> gives");
        assert_eq!((f.actor_login, f.repo_name, f.payload_action, f.created_at), (None, None, None, None));
        assert_eq!(f.issue_comments, None, "a string is not a count");
        let f = EventFields::read(r#"{"payload":{"issue":{"comments":-2.5e1}},"repo":{"name":{"a":1}}}"#).unwrap();
        assert_eq!(f.issue_comments, Some(-25.0));
        assert_eq!(f.repo_name.as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(EventFields::read(r#"{"type":"A","type":"B"}"#).unwrap().kind.as_deref(), Some("B"), "last key wins");
    }

    #[test]
    fn frames_have_the_declared_schema_and_every_row() {
        let mut columns = Columns::default();
        columns.push(1, r#"{"type":"PushEvent","actor":{"login":"a"}}"#).unwrap();
        columns.push(2, r#"{"late_key":{"deep":[1,2]},"payload":{"issue":{"comments":4}}}"#).unwrap();
        let frame = columns.take_frame().unwrap();
        assert!(columns.is_empty());
        assert_eq!(frame.height(), 2);
        assert_eq!(frame.schema().as_ref(), &table_schema());
        let event = frame.column("event").unwrap().str().unwrap().get(1).unwrap().to_string();
        assert!(event.contains("late_key"), "a key first seen late is kept in the event text");
        assert!(columns.push(1, "[1]").is_ok(), "a non-object reads as all nulls");
    }
}

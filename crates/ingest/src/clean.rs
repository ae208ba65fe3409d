//! One policy per defect, applied to every line before any engine sees it, so
//! all engines receive exactly the same documents:
//!
//! | defect                                  | policy                                  |
//! |-----------------------------------------|-----------------------------------------|
//! | `\u0000` escape (jsonb refuses it)      | sanitize: the escape is removed (as the usual `sed 's/\\u0000//g'` does, but only real escapes), line kept and counted |
//! | invalid UTF-8                           | quarantine                              |
//! | not valid JSON (incl. lone surrogates, numbers beyond f64) | quarantine           |
//! | valid JSON but not an object            | quarantine                              |
//! | empty line                              | quarantine                              |
//! | carries its own `_id`                   | quarantine (ids are ghbench's, see below) |
//! | larger than MongoDB's 16 MiB document limit | quarantine                          |
//! | nested more than 100 levels (MongoDB's limit) | quarantine                        |
//!
//! MongoDB documents get a deterministic `_id` of `<hour stem>/<line number>`, so a
//! retried hour can never duplicate. The event `id` is not used: GH Archive repeats
//! some events across hours, and both engines must keep every line.

use std::borrow::Cow;

use mongodb::bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use serde::ser::Error as _;

/// MongoDB refuses documents above 16 MiB.
pub const MAX_BSON_BYTES: usize = 16 * 1024 * 1024;
/// MongoDB refuses documents nested more than 100 levels deep (PostgreSQL takes them).
pub const MAX_NESTING: usize = 100;

/// A line both engines will receive.
#[derive(Debug, Clone)]
pub struct CleanDoc {
    /// 1-based line number in the hour's file.
    pub line: u64,
    /// The JSON text as PostgreSQL receives it (sanitized when `sanitized`).
    pub json: String,
    /// The same document as MongoDB receives it, with its `_id`.
    pub bson: RawDocumentBuf,
    pub sanitized: bool,
}

/// Why a line was quarantined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Defect {
    InvalidUtf8,
    InvalidJson,
    NotAnObject,
    EmptyLine,
    HasOwnId,
    TooLarge,
    TooDeep,
    /// The last, incomplete line of a truncated or corrupt gzip stream.
    TruncatedLine,
}

impl Defect {
    pub const ALL: [Defect; 8] = [
        Defect::InvalidUtf8,
        Defect::InvalidJson,
        Defect::NotAnObject,
        Defect::EmptyLine,
        Defect::HasOwnId,
        Defect::TooLarge,
        Defect::TooDeep,
        Defect::TruncatedLine,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Defect::InvalidUtf8 => "invalid_utf8",
            Defect::InvalidJson => "invalid_json",
            Defect::NotAnObject => "not_an_object",
            Defect::EmptyLine => "empty_line",
            Defect::HasOwnId => "has_own_id",
            Defect::TooLarge => "too_large",
            Defect::TooDeep => "too_deep",
            Defect::TruncatedLine => "truncated_line",
        }
    }
}

/// A quarantined line: the reason, with detail for a person.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub defect: Defect,
    pub detail: String,
}

impl Rejected {
    fn new(defect: Defect, detail: impl Into<String>) -> Self {
        Rejected { defect, detail: detail.into() }
    }
}

/// The `_id` of line `line` of the hour with stem `stem`.
pub fn document_id(stem: &str, line: u64) -> String {
    format!("{stem}/{line}")
}

/// Applies the policy to one line (without its `\n`).
pub fn clean_line(stem: &str, line: u64, raw: &[u8]) -> Result<CleanDoc, Rejected> {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Err(Rejected::new(Defect::EmptyLine, "empty line"));
    }
    let text = std::str::from_utf8(raw)
        .map_err(|e| Rejected::new(Defect::InvalidUtf8, format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    let (text, sanitized) = match strip_nul_escapes(text) {
        Cow::Borrowed(t) => (t.to_string(), false),
        Cow::Owned(t) => (t, true),
    };
    let bson = to_bson(&text, &document_id(stem, line))?;
    Ok(CleanDoc { line, json: text, bson, sanitized })
}

/// Transcodes JSON text straight into BSON bytes (no tree in between) and adds `_id`.
/// This is also the JSON validation: what fails here is refused for every engine.
pub fn to_bson(text: &str, id: &str) -> Result<RawDocumentBuf, Rejected> {
    let mut json = serde_json::Deserializer::from_str(text);
    let transcoded = mongodb::bson::to_vec(&serde_transcode::Transcoder::new(&mut json)).and_then(|bytes| {
        json.end().map_err(mongodb::bson::ser::Error::custom)?;
        Ok(bytes)
    });
    let bytes = transcoded.map_err(|e| {
        // Only on the error path: tell "valid JSON, wrong kind" from "not JSON".
        let object = text.trim_start().starts_with('{');
        if !object && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            Rejected::new(Defect::NotAnObject, "JSON value is not an object")
        } else {
            Rejected::new(Defect::InvalidJson, e.to_string())
        }
    })?;
    let parsed = RawDocumentBuf::from_bytes(bytes).map_err(|e| Rejected::new(Defect::InvalidJson, e.to_string()))?;
    if parsed.get("_id").ok().flatten().is_some() {
        return Err(Rejected::new(Defect::HasOwnId, "document has its own _id"));
    }
    // `_id` first, as MongoDB itself stores it: servers find it without a scan
    // of the document (measured ~15% faster inserts on SecantusDB).
    let mut doc = RawDocumentBuf::new();
    doc.append("_id", id);
    narrow_into(&parsed, &mut doc, 1)?;
    if doc.as_bytes().len() > MAX_BSON_BYTES {
        return Err(Rejected::new(Defect::TooLarge, format!("{} bytes as BSON", doc.as_bytes().len())));
    }
    Ok(doc)
}

/// Copies `from`'s elements into `into`, storing integers that fit as Int32,
/// as mongoimport and the drivers do with JSON numbers (the transcoder writes
/// every integer as Int64, which servers store and compare more slowly).
/// `depth` is `from`'s nesting level, the top-level document being 1.
fn narrow_into(from: &RawDocument, into: &mut RawDocumentBuf, depth: usize) -> Result<(), Rejected> {
    for element in from.iter() {
        let (key, value) = element.map_err(malformed)?;
        match narrow(value, depth)? {
            Some(owned) => into.append(key, owned),
            None => into.append_ref(key, value),
        }
    }
    Ok(())
}

/// The narrowed copy of `value` (an element at nesting level `depth`), or
/// `None` when it is kept as it is.
fn narrow(value: RawBsonRef<'_>, depth: usize) -> Result<Option<RawBson>, Rejected> {
    let nested = matches!(value, RawBsonRef::Document(_) | RawBsonRef::Array(_));
    if nested && depth >= MAX_NESTING {
        return Err(Rejected::new(Defect::TooDeep, format!("nested deeper than {MAX_NESTING} levels")));
    }
    Ok(match value {
        RawBsonRef::Int64(n) => i32::try_from(n).ok().map(RawBson::Int32),
        RawBsonRef::Document(d) => {
            let mut copy = RawDocumentBuf::new();
            narrow_into(d, &mut copy, depth + 1)?;
            Some(RawBson::Document(copy))
        }
        RawBsonRef::Array(a) => {
            let mut copy = RawArrayBuf::new();
            for item in a {
                let item = item.map_err(malformed)?;
                copy.push(narrow(item, depth + 1)?.unwrap_or_else(|| item.to_raw_bson()));
            }
            Some(RawBson::Array(copy))
        }
        _ => None,
    })
}

fn malformed(e: mongodb::bson::raw::Error) -> Rejected {
    Rejected::new(Defect::InvalidJson, e.to_string())
}

/// Removes every `\u0000` escape from JSON text. Only real escapes count: in
/// `\\u0000` the backslash is itself escaped and the text stays.
pub fn strip_nul_escapes(text: &str) -> Cow<'_, str> {
    if !text.contains("\\u0000") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied_to = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes[i + 1..].starts_with(b"u0000") {
            out.push_str(&text[copied_to..i]);
            i += 6;
            copied_to = i;
        } else {
            // Skip the escaped character too, so `\\` never starts a new escape.
            i += 2;
        }
    }
    out.push_str(&text[copied_to.min(text.len())..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_only_real_nul_escapes() {
        assert_eq!(strip_nul_escapes(r#"{"a":"x\u0000y"}"#), r#"{"a":"xy"}"#);
        assert_eq!(strip_nul_escapes(r#"{"a":"x\\u0000y"}"#), r#"{"a":"x\\u0000y"}"#);
        assert_eq!(strip_nul_escapes(r#"{"a":"\\\u0000"}"#), r#"{"a":"\\"}"#);
        assert!(matches!(strip_nul_escapes(r#"{"a":"plain"}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn classifies_each_defect() {
        let defect = |raw: &[u8]| clean_line("2015-01-01-0", 1, raw).unwrap_err().defect;
        assert_eq!(defect(b""), Defect::EmptyLine);
        assert_eq!(defect(b"{\"a\":\xff}"), Defect::InvalidUtf8);
        assert_eq!(defect(b"{\"a\":"), Defect::InvalidJson);
        assert_eq!(defect(br#"{"a":"\ud800"}"#), Defect::InvalidJson);
        assert_eq!(defect(b"[1,2]"), Defect::NotAnObject);
        assert_eq!(defect(br#"{"_id":1}"#), Defect::HasOwnId);
        let nested = |levels: usize| format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        assert_eq!(defect(nested(MAX_NESTING + 1).as_bytes()), Defect::TooDeep);
        assert!(clean_line("2015-01-01-0", 1, nested(MAX_NESTING).as_bytes()).is_ok());
    }

    #[test]
    fn keeps_documents_identical_for_both_engines() {
        let doc = clean_line("2015-01-01-0", 7, br#"{"id":"1","n":"a\u0000b","x":[1,2.5]}"#).unwrap();
        assert!(doc.sanitized);
        assert_eq!(doc.json, r#"{"id":"1","n":"ab","x":[1,2.5]}"#);
        let back = doc.bson.to_document().unwrap();
        assert_eq!(back.get_str("_id").unwrap(), "2015-01-01-0/7");
        assert_eq!(back.get_str("n").unwrap(), "ab");
        let x = back.get_array("x").unwrap();
        assert_eq!((x[0].clone(), x[1].clone()), (mongodb::bson::Bson::Int32(1), mongodb::bson::Bson::Double(2.5)));
        assert_eq!(back.keys().next().unwrap(), "_id");
    }
}

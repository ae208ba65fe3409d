//! One policy per defect, applied to every line before any engine sees it, so
//! all engines receive exactly the same documents:
//!
//! | defect                                  | policy                                  |
//! |-----------------------------------------|-----------------------------------------|
//! | `\u0000` escape (jsonb refuses it)      | sanitize: the escape is removed (as the usual `sed 's/\\u0000//g'` does, but only real escapes), line kept and counted |
//! | invalid UTF-8                           | quarantine                              |
//! | not valid JSON (incl. lone surrogates, numbers beyond f64) | quarantine           |
//! | an integer beyond 64 bits (PostgreSQL would keep it exactly, MongoDB only as a double) | quarantine |
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
/// 2^63: doubles this large may be integers serde_json could not read as integers.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

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
    /// An integer outside the signed 64-bit range: PostgreSQL's `numeric` keeps
    /// it exactly, MongoDB can store it only as a rounded double.
    IntegerOutOfRange,
    /// The last, incomplete line of a truncated or corrupt gzip stream.
    TruncatedLine,
}

impl Defect {
    pub const ALL: [Defect; 9] = [
        Defect::InvalidUtf8,
        Defect::InvalidJson,
        Defect::NotAnObject,
        Defect::EmptyLine,
        Defect::HasOwnId,
        Defect::TooLarge,
        Defect::TooDeep,
        Defect::IntegerOutOfRange,
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
            Defect::IntegerOutOfRange => "integer_out_of_range",
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
    let bytes = transcoded.map_err(|e| classify_refusal(text, e.to_string()))?;
    let parsed = RawDocumentBuf::from_bytes(bytes).map_err(|e| Rejected::new(Defect::InvalidJson, e.to_string()))?;
    if parsed.get("_id").ok().flatten().is_some() {
        return Err(Rejected::new(Defect::HasOwnId, "document has its own _id"));
    }
    // `_id` first, as MongoDB itself stores it: servers find it without a scan
    // of the document (measured ~15% faster inserts on SecantusDB).
    let mut doc = RawDocumentBuf::new();
    doc.append("_id", id);
    let mut huge_double = false;
    narrow_into(&parsed, &mut doc, 1, &mut huge_double)?;
    // serde_json reads an integer beyond u64 as a double: look at the text to
    // tell such an integer from a genuinely huge float (rare, so rarely looked at).
    if huge_double {
        if let Some(integer) = scan_json(text).integer_out_of_range {
            return Err(out_of_range(&integer));
        }
    }
    if doc.as_bytes().len() > MAX_BSON_BYTES {
        return Err(Rejected::new(Defect::TooLarge, format!("{} bytes as BSON", doc.as_bytes().len())));
    }
    Ok(doc)
}

/// Why a line that did not transcode is refused. Only on the error path, so
/// the common path never pays for a second look at the text.
fn classify_refusal(text: &str, error: String) -> Rejected {
    let shape = scan_json(text);
    if shape.max_depth > MAX_NESTING {
        // serde_json stops at 128 levels with a parse error; it is a depth problem.
        return Rejected::new(Defect::TooDeep, format!("nested {} levels, deeper than {MAX_NESTING}", shape.max_depth));
    }
    let valid = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    match shape.integer_out_of_range {
        // e.g. 10000000000000000000: a u64 that BSON's signed integers cannot hold.
        Some(integer) if valid => out_of_range(&integer),
        _ if valid && !text.trim_start().starts_with('{') => Rejected::new(Defect::NotAnObject, "JSON value is not an object"),
        _ => Rejected::new(Defect::InvalidJson, error),
    }
}

fn out_of_range(integer: &str) -> Rejected {
    let shown = if integer.len() > 40 { format!("{}… ({} digits)", &integer[..40], integer.len()) } else { integer.to_string() };
    Rejected::new(Defect::IntegerOutOfRange, format!("integer {shown} is beyond 64 bits: MongoDB could only store it rounded"))
}

/// What a lexical pass over JSON text finds outside its strings.
#[derive(Debug, Default, PartialEq)]
struct JsonShape {
    max_depth: usize,
    /// The first integer literal outside the signed 64-bit range.
    integer_out_of_range: Option<String>,
}

/// Nesting depth and integer literals of (possibly invalid) JSON text, without
/// parsing it: strings are skipped with their escapes.
fn scan_json(text: &str) -> JsonShape {
    let bytes = text.as_bytes();
    let mut shape = JsonShape::default();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' | b'[' => {
                depth += 1;
                shape.max_depth = shape.max_depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let is_float = matches!(bytes.get(i), Some(b'.' | b'e' | b'E'));
                let literal = &text[start..i];
                if !is_float && shape.integer_out_of_range.is_none() && literal.parse::<i64>().is_err() && literal != "-" {
                    shape.integer_out_of_range = Some(literal.to_string());
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    shape
}

/// Copies `from`'s elements into `into`, storing integers that fit as Int32,
/// as mongoimport and the drivers do with JSON numbers (the transcoder writes
/// every integer as Int64, which servers store and compare more slowly).
/// `depth` is `from`'s nesting level, the top-level document being 1.
/// `huge_double` is set when a double reaches the 64-bit integer range.
fn narrow_into(from: &RawDocument, into: &mut RawDocumentBuf, depth: usize, huge_double: &mut bool) -> Result<(), Rejected> {
    for element in from.iter() {
        let (key, value) = element.map_err(malformed)?;
        match narrow(value, depth, huge_double)? {
            Some(owned) => into.append(key, owned),
            None => into.append_ref(key, value),
        }
    }
    Ok(())
}

/// The narrowed copy of `value` (an element at nesting level `depth`), or
/// `None` when it is kept as it is.
fn narrow(value: RawBsonRef<'_>, depth: usize, huge_double: &mut bool) -> Result<Option<RawBson>, Rejected> {
    let nested = matches!(value, RawBsonRef::Document(_) | RawBsonRef::Array(_));
    if nested && depth >= MAX_NESTING {
        return Err(Rejected::new(Defect::TooDeep, format!("nested deeper than {MAX_NESTING} levels")));
    }
    Ok(match value {
        RawBsonRef::Int64(n) => i32::try_from(n).ok().map(RawBson::Int32),
        RawBsonRef::Double(d) => {
            *huge_double |= d.abs() >= I64_RANGE_END;
            None
        }
        RawBsonRef::Document(d) => {
            let mut copy = RawDocumentBuf::new();
            narrow_into(d, &mut copy, depth + 1, huge_double)?;
            Some(RawBson::Document(copy))
        }
        RawBsonRef::Array(a) => {
            let mut copy = RawArrayBuf::new();
            for item in a {
                let item = item.map_err(malformed)?;
                copy.push(narrow(item, depth + 1, huge_double)?.unwrap_or_else(|| item.to_raw_bson()));
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
    if copied_to == 0 {
        // Only escaped backslashes followed by `u0000`: nothing was removed.
        return Cow::Borrowed(text);
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
        // A literal backslash before `u0000` removes nothing, so nothing is counted as sanitized.
        assert!(matches!(strip_nul_escapes(r#"{"a":"x\\u0000y"}"#), Cow::Borrowed(_)));
        assert!(!clean_line("2015-01-01-0", 1, br#"{"a":"x\\u0000y"}"#).unwrap().sanitized);
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
        // Beyond serde_json's own limit of 128 levels too.
        assert_eq!(defect(nested(200).as_bytes()), Defect::TooDeep);
        assert!(clean_line("2015-01-01-0", 1, nested(MAX_NESTING).as_bytes()).is_ok());
    }

    #[test]
    fn integers_beyond_64_bits_are_refused_whatever_their_size() {
        let defect = |raw: &str| clean_line("2015-01-01-0", 1, raw.as_bytes()).map(|_| ()).map_err(|r| r.defect);
        // Beyond u64 (serde_json reads it as a double), beyond i64, and below i64.
        for big in ["18446744073709551617", "10000000000000000000", "9223372036854775808", "-9223372036854775809", &"9".repeat(400)] {
            assert_eq!(defect(&format!(r#"{{"n":{big}}}"#)), Err(Defect::IntegerOutOfRange), "{big}");
            assert_eq!(defect(&format!(r#"{{"a":[1,{{"n":{big}}}]}}"#)), Err(Defect::IntegerOutOfRange), "{big} nested");
        }
        // The ends of the range, huge floats and digits inside strings are fine.
        for ok in ["9223372036854775807", "-9223372036854775808", "1e300", "18446744073709551617.0", r#""18446744073709551617""#] {
            assert_eq!(defect(&format!(r#"{{"n":{ok}}}"#)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn scanning_skips_strings_and_escapes() {
        let shape = scan_json(r#"{"s":"[[[\"99999999999999999999","a":[[1]]}"#);
        assert_eq!(shape, JsonShape { max_depth: 3, integer_out_of_range: None });
        assert_eq!(scan_json("[-12345678901234567890]").integer_out_of_range.as_deref(), Some("-12345678901234567890"));
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

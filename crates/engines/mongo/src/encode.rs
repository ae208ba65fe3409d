//! Documents as this engine stores them: the clean JSON transcoded straight
//! into BSON (no tree in between), on the decode thread, with a deterministic
//! `_id` of `<hour stem>/<line number>` first, so a retried hour can never
//! duplicate. The event `id` is not used: GH Archive repeats some events across
//! hours, and every engine keeps every line.
//!
//! BSON's limits are this engine's to check, and it checks them here: 16 MiB,
//! 100 levels of nesting, signed 64-bit integers, numbers a double holds, and
//! `_id` being ghbench's.
//! The encoder runs on every line of every run (see `ghbench_engine::load::Policy`),
//! so a line BSON cannot hold is quarantined for every engine alike.

use std::sync::Arc;

use ghbench_engine::load::{out_of_range, CleanDoc, Defect, Encoded, Encoder, Rejected};
use mongodb::bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use serde::ser::Error as _;

/// MongoDB refuses documents above 16 MiB (as BSON).
pub const MAX_BSON_BYTES: usize = 16 * 1024 * 1024;
/// MongoDB refuses documents nested more than 100 levels deep.
pub const MAX_NESTING: usize = 100;
/// 2^63: doubles this large may be integers serde_json could not read as integers.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

/// The `_id` of line `line` of the hour with stem `stem`.
pub fn document_id(stem: &str, line: u64) -> String {
    format!("{stem}/{line}")
}

/// Encodes clean documents as BSON.
pub struct BsonEncoder;

impl BsonEncoder {
    pub fn shared() -> Arc<dyn Encoder> {
        Arc::new(BsonEncoder)
    }
}

impl Encoder for BsonEncoder {
    fn encode(&self, stem: &str, doc: &CleanDoc) -> Result<Encoded, Rejected> {
        Ok(Box::new(to_bson(&doc.json, &document_id(stem, doc.line))?))
    }

    /// One lexical pass (see [`check_bson`]) instead of three over the line.
    fn check(&self, stem: &str, doc: &CleanDoc) -> Result<(), Rejected> {
        check_bson(&doc.json, &document_id(stem, doc.line))
    }
}

/// Whether [`to_bson`] would refuse `text` (with `_id` `id`), with the same verdict, mostly
/// without building the BSON: one lexical pass ([`scan_json`]) tells that
/// the nesting and numbers are within BSON's limits. Every other line is
/// encoded in full, so its verdict and its words are [`to_bson`]'s: one whose
/// pass finds something (rare), one that may hold its own `_id` (the text
/// has the string `"_id"`, or escapes one of its letters; every event's
/// `gravatar_id` must not count), and one long enough that its
/// BSON could pass 16 MiB (no JSON value grows more than 8-fold as BSON:
/// `[0,0,…]` at most 6.5-fold, each element with a type byte and an index key).
pub fn check_bson(text: &str, id: &str) -> Result<(), Rejected> {
    let names_id = ["\"_id\"", "\\u005", "\\u006"].iter().any(|needle| memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some());
    let could_be_too_large = text.len().saturating_mul(8) + 64 > MAX_BSON_BYTES;
    if names_id || could_be_too_large || !scan_json(text).fits_bson() {
        return to_bson(text, id).map(drop);
    }
    Ok(())
}

/// Transcodes (valid) JSON text straight into BSON bytes (no tree in between)
/// and adds `_id` first, as MongoDB itself stores it: servers find it without a
/// scan of the document (measured ~15% faster inserts on SecantusDB). BSON's
/// limits are checked on the way, at no extra pass.
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
    // The cleaning policy let only valid JSON objects through: a number is what failed.
    // e.g. 10000000000000000000, a u64 that BSON's signed integers cannot
    // hold; 1e400, which serde_json refuses as no double holds it.
    match shape.integer_out_of_range.or(shape.number_out_of_range) {
        Some(literal) => out_of_range(&literal),
        None => Rejected::new(Defect::InvalidJson, error),
    }
}

/// What a lexical pass over JSON text finds outside its strings.
#[derive(Debug, Default, PartialEq)]
struct JsonShape {
    max_depth: usize,
    /// The first integer literal outside the signed 64-bit range.
    integer_out_of_range: Option<String>,
    /// The first number literal with a fraction or exponent beyond a double's range.
    number_out_of_range: Option<String>,
}

impl JsonShape {
    /// Nothing BSON cannot hold: nesting and every number within its limits.
    fn fits_bson(&self) -> bool {
        self.max_depth <= MAX_NESTING && self.integer_out_of_range.is_none() && self.number_out_of_range.is_none()
    }
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
                let integer_end = i;
                // A fraction or an exponent makes it a float: read them too.
                while i < bytes.len() && matches!(bytes[i], b'.' | b'e' | b'E' | b'+' | b'-' | b'0'..=b'9') {
                    i += 1;
                }
                let literal = &text[start..i];
                if i == integer_end {
                    if shape.integer_out_of_range.is_none() && literal.parse::<i64>().is_err() && literal != "-" {
                        shape.integer_out_of_range = Some(literal.to_string());
                    }
                } else if shape.number_out_of_range.is_none() && literal.parse::<f64>().is_ok_and(f64::is_infinite) {
                    shape.number_out_of_range = Some(literal.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn defect(json: &str) -> Result<(), Defect> {
        to_bson(json, "x").map(|_| ()).map_err(|r| r.defect)
    }

    #[test]
    fn documents_get_their_id_first_and_small_integers_as_int32() {
        let back = to_bson(r#"{"id":"1","n":"ab","x":[1,2.5,{"big":5000000000}]}"#, "2015-01-01-0/7").unwrap().to_document().unwrap();
        assert_eq!(back.keys().next().unwrap(), "_id");
        assert_eq!(back.get_str("_id").unwrap(), "2015-01-01-0/7");
        assert_eq!(back.get_str("n").unwrap(), "ab");
        let x = back.get_array("x").unwrap();
        assert_eq!((x[0].clone(), x[1].clone()), (mongodb::bson::Bson::Int32(1), mongodb::bson::Bson::Double(2.5)));
        assert_eq!(x[2].as_document().unwrap().get("big"), Some(&mongodb::bson::Bson::Int64(5_000_000_000)));
    }

    #[test]
    fn what_bson_cannot_hold_is_refused() {
        assert_eq!(defect(r#"{"_id":1}"#), Err(Defect::HasOwnId));
        assert_eq!(defect(r#"{"a":{"_id":1}}"#), Ok(()), "only the document's own _id is ghbench's");
        let nested = |levels: usize| format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        assert_eq!(defect(&nested(MAX_NESTING + 1)), Err(Defect::TooDeep));
        // Beyond serde_json's own limit of 128 levels too.
        assert_eq!(defect(&nested(200)), Err(Defect::TooDeep));
        assert_eq!(defect(&nested(MAX_NESTING)), Ok(()));
        // Beyond u64 (serde_json reads it as a double), beyond i64, below i64, beyond f64.
        for big in ["18446744073709551617", "10000000000000000000", "9223372036854775808", "-9223372036854775809", &"9".repeat(400)] {
            assert_eq!(defect(&format!(r#"{{"n":{big}}}"#)), Err(Defect::IntegerOutOfRange), "{big}");
            assert_eq!(defect(&format!(r#"{{"a":[1,{{"n":{big}}}]}}"#)), Err(Defect::IntegerOutOfRange), "{big} nested");
        }
        // Beyond a double, either way.
        for huge in ["1e400", "-1e400", "1.5E+309", "2.0e308"] {
            assert_eq!(defect(&format!(r#"{{"a":[1,{{"n":{huge}}}]}}"#)), Err(Defect::NumberOutOfRange), "{huge}");
        }
        // The ends of the range, huge floats and digits inside strings are fine.
        for ok in ["9223372036854775807", "-9223372036854775808", "1e300", "1.7e308", "18446744073709551617.0", r#""18446744073709551617""#, r#""1e400""#] {
            assert_eq!(defect(&format!(r#"{{"n":{ok}}}"#)), Ok(()), "{ok}");
        }
        // Many tiny values: a little JSON, more BSON (each element carries a type and an index key).
        let values = vec!["1"; MAX_BSON_BYTES / 8].join(",");
        assert_eq!(defect(&format!(r#"{{"a":[{values}]}}"#)), Err(Defect::TooLarge));
    }

    #[test]
    fn the_check_gives_the_encoder_s_verdict_in_its_words() {
        let nested = |levels: usize| format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        let values = vec!["1"; MAX_BSON_BYTES / 8].join(",");
        let mut cases: Vec<String> = [
            r#"{"_id":1}"#, r#"{"\u005fid":1}"#, r#"{"a":{"_id":1}}"#, r#"{"n":10000000000000000000}"#, r#"{"n":18446744073709551617}"#,
            r#"{"a":[1,{"n":-9223372036854775809}]}"#, r#"{"n":1.7e308}"#, r#"{"s":"99999999999999999999","t":"_id"}"#, r#"{"ok":[1,2.5,{"x":"y"}]}"#,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        cases.extend([nested(MAX_NESTING), nested(MAX_NESTING + 1), nested(120), nested(200), format!(r#"{{"a":[{values}]}}"#)]);
        let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/data/gharchive/2015-01-01-0.json.gz");
        if let Ok(file) = std::fs::File::open(&real) {
            let lines = std::io::BufRead::lines(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file)));
            cases.extend(lines.map_while(Result::ok));
        }
        for text in &cases {
            let verdict = |r: Result<(), Rejected>| r.map_err(|r| (r.defect, r.detail));
            assert_eq!(verdict(check_bson(text, "x")), verdict(to_bson(text, "x").map(drop)), "{}", &text[..text.len().min(200)]);
        }
    }

    #[test]
    fn scanning_skips_strings_and_escapes() {
        let shape = scan_json(r#"{"s":"[[[\"99999999999999999999","a":[[1]]}"#);
        assert_eq!(shape, JsonShape { max_depth: 3, integer_out_of_range: None, number_out_of_range: None });
        assert_eq!(scan_json("[-12345678901234567890]").integer_out_of_range.as_deref(), Some("-12345678901234567890"));
        let shape = scan_json("[1.5e400,-9223372036854775809,2e5]");
        assert_eq!((shape.integer_out_of_range.as_deref(), shape.number_out_of_range.as_deref()), (Some("-9223372036854775809"), Some("1.5e400")));
    }
}

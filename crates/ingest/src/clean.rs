//! One policy per defect, applied to every line before any engine sees it, so
//! all engines receive exactly the same documents. The limits are the
//! strictest of every registered engine's [`DocumentLimits`], whichever engines
//! a run loads: the data never depends on the engines chosen.
//!
//! | defect                                  | policy                                  |
//! |-----------------------------------------|-----------------------------------------|
//! | `\u0000` escape (an engine refuses it)  | sanitize: the escape is removed (as the usual `sed 's/\\u0000//g'` does, but only real escapes), line kept and counted |
//! | invalid UTF-8                           | quarantine                              |
//! | not valid JSON (incl. lone surrogates, numbers beyond f64) | quarantine           |
//! | an integer beyond 64 bits (an engine could only round it) | quarantine            |
//! | valid JSON but not an object            | quarantine                              |
//! | empty line                              | quarantine                              |
//! | carries a key an engine keeps for itself (`_id`) | quarantine                     |
//! | larger than an engine's document limit  | quarantine                              |
//! | nested deeper than an engine's limit    | quarantine                              |
//!
//! Each engine then encodes the clean document its own way (see
//! `sink::Encoder`), every registered engine on every line whether it loads
//! this run or not: an engine that cannot encode a document refuses it, and
//! the line is quarantined for every engine all the same.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use std::sync::Arc;

use ghbench_core::{DocumentLimits, Engine};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::sink::{Encoded, Encoder};

/// serde_json reads at most this many levels of nesting.
const SERDE_JSON_MAX_DEPTH: usize = 128;
/// 2^63: doubles this large may be integers serde_json could not read as integers.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

/// A line every engine will receive.
#[derive(Debug, Clone)]
pub struct CleanDoc {
    /// 1-based line number in the hour's file.
    pub line: u64,
    /// The JSON text, validated (sanitized when `sanitized`).
    pub json: String,
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
    pub fn new(defect: Defect, detail: impl Into<String>) -> Self {
        Rejected { defect, detail: detail.into() }
    }
}

/// The cleaning policy: the strictest limits of the engines it serves, and
/// their encoders.
#[derive(Clone, Default)]
pub struct Policy {
    max_bytes: Option<usize>,
    max_depth: Option<usize>,
    integers_fit_i64: bool,
    reserved_keys: Vec<&'static str>,
    strip_nul: bool,
    encoders: Vec<(Engine, Arc<dyn Encoder>)>,
}

impl Policy {
    /// What every one of these engines can store.
    pub fn strictest<'a>(limits: impl IntoIterator<Item = &'a DocumentLimits>) -> Policy {
        let min = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut policy = Policy::default();
        for l in limits {
            policy.max_bytes = min(policy.max_bytes, l.max_bytes);
            policy.max_depth = min(policy.max_depth, l.max_depth);
            policy.integers_fit_i64 |= l.integers_fit_i64;
            policy.strip_nul |= l.refuses_nul;
            for key in l.reserved_keys {
                if !policy.reserved_keys.contains(key) {
                    policy.reserved_keys.push(key);
                }
            }
        }
        policy
    }

    /// Also runs `engine`'s encoder on every line (see [`Policy::encode`]).
    pub fn with_encoder(mut self, engine: Engine, encoder: Arc<dyn Encoder>) -> Policy {
        self.encoders.push((engine, encoder));
        self
    }

    /// Every engine's encoding of a clean document, whether or not the engine
    /// loads this run: any refusal refuses the line for all, so the data never
    /// depends on the engines a run loads.
    pub fn encode(&self, stem: &str, doc: &CleanDoc) -> Result<Vec<(&Engine, Encoded)>, Rejected> {
        self.encoders.iter().map(|(engine, encoder)| Ok((engine, encoder.encode(stem, doc)?))).collect()
    }

    /// Applies the policy to one line (without its `\n`).
    pub fn clean_line(&self, line: u64, raw: &[u8]) -> Result<CleanDoc, Rejected> {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Err(Rejected::new(Defect::EmptyLine, "empty line"));
        }
        let text = std::str::from_utf8(raw)
            .map_err(|e| Rejected::new(Defect::InvalidUtf8, format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
        let (text, sanitized) = match if self.strip_nul { strip_nul_escapes(text) } else { Cow::Borrowed(text) } {
            Cow::Borrowed(t) => (t.to_string(), false),
            Cow::Owned(t) => (t, true),
        };
        if let Some(max) = self.max_bytes.filter(|max| text.len() > *max) {
            return Err(Rejected::new(Defect::TooLarge, format!("{} bytes of JSON, more than {max}", text.len())));
        }
        self.validate(&text)?;
        Ok(CleanDoc { line, json: text, sanitized })
    }

    /// One pass of serde_json over the text, keeping nothing: valid JSON, an
    /// object, no reserved key, nesting and integers within the limits.
    fn validate(&self, text: &str) -> Result<(), Rejected> {
        let found = RefCell::new(Found::default());
        let mut json = serde_json::Deserializer::from_str(text);
        let checked = Check { policy: self, depth: 1, found: &found }.deserialize(&mut json).and_then(|()| json.end());
        let found = found.into_inner();
        if let Some(rejected) = found.rejected {
            return Err(rejected);
        }
        if let Err(e) = checked {
            return Err(self.classify_refusal(text, e.to_string()));
        }
        if found.not_object {
            return Err(Rejected::new(Defect::NotAnObject, "JSON value is not an object"));
        }
        // serde_json reads an integer beyond u64 as a double: look at the text to
        // tell such an integer from a genuinely huge float (rare, so rarely looked at).
        if found.huge_double && self.integers_fit_i64 {
            if let Some(integer) = scan_json(text).integer_out_of_range {
                return Err(out_of_range(&integer));
            }
        }
        Ok(())
    }

    /// Why a line serde_json refused is refused. Only on the error path, so the
    /// common path never pays for a second look at the text.
    fn classify_refusal(&self, text: &str, error: String) -> Rejected {
        let shape = scan_json(text);
        // serde_json stops at 128 levels with a parse error; it is a depth problem.
        let max = self.max_depth.unwrap_or(SERDE_JSON_MAX_DEPTH).min(SERDE_JSON_MAX_DEPTH);
        if shape.max_depth > max {
            return Rejected::new(Defect::TooDeep, format!("nested {} levels, deeper than {max}", shape.max_depth));
        }
        match shape.integer_out_of_range {
            // Valid JSON, but an integer beyond even f64's range, which serde_json
            // refuses to read as a number (skipping it, as IgnoredAny does, is fine).
            Some(integer) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => out_of_range(&integer),
            _ => Rejected::new(Defect::InvalidJson, error),
        }
    }
}

/// What the validating pass found besides a parse error.
#[derive(Default)]
struct Found {
    rejected: Option<Rejected>,
    huge_double: bool,
    /// Valid JSON so far, but not an object: refused once the text proves valid.
    not_object: bool,
}

/// Validates one value at nesting level `depth` (the document being 1).
struct Check<'p> {
    policy: &'p Policy,
    depth: usize,
    found: &'p RefCell<Found>,
}

impl Check<'_> {
    fn reject<E: serde::de::Error>(&self, rejected: Rejected) -> E {
        let message = rejected.detail.clone();
        self.found.borrow_mut().rejected.get_or_insert(rejected);
        E::custom(message)
    }

    fn nested(&self) -> Check<'_> {
        Check { policy: self.policy, depth: self.depth + 1, found: self.found }
    }

    fn enter<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.policy.max_depth {
            Some(max) if self.depth > max => {
                Err(self.reject(Rejected::new(Defect::TooDeep, format!("nested deeper than {max} levels"))))
            }
            _ => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Check<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.enter()?;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if self.depth == 1 && self.policy.reserved_keys.contains(&key.as_ref()) {
                return Err(self.reject(Rejected::new(Defect::HasOwnId, format!("document has its own {key}"))));
            }
            map.next_value_seed(self.nested())?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.not_an_object::<A::Error>()?;
        self.enter()?;
        while seq.next_element_seed(self.nested())?.is_some() {}
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<(), E> {
        if self.policy.integers_fit_i64 && n > i64::MAX as u64 {
            return Err(self.reject(out_of_range(&n.to_string())));
        }
        self.not_an_object()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.not_an_object()
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<(), E> {
        self.found.borrow_mut().huge_double |= x.abs() >= I64_RANGE_END;
        self.not_an_object()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.not_an_object()
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.not_an_object()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.not_an_object()
    }
}

impl Check<'_> {
    /// Anything but an object is fine anywhere but as the whole document.
    fn not_an_object<E: serde::de::Error>(&self) -> Result<(), E> {
        if self.depth == 1 {
            self.found.borrow_mut().not_object = true;
        }
        Ok(())
    }
}

fn out_of_range(integer: &str) -> Rejected {
    let shown = if integer.len() > 40 { format!("{}… ({} digits)", &integer[..40], integer.len()) } else { integer.to_string() };
    Rejected::new(Defect::IntegerOutOfRange, format!("integer {shown} is beyond 64 bits: an engine would round it"))
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

    const MAX_NESTING: usize = 100;

    /// Limits like the engines' (a jsonb-like one and a BSON-like one).
    fn policy() -> Policy {
        let text_engine = DocumentLimits { max_bytes: Some(255 << 20), refuses_nul: true, ..DocumentLimits::default() };
        let binary_engine = DocumentLimits {
            max_bytes: Some(16 << 20),
            max_depth: Some(MAX_NESTING),
            integers_fit_i64: true,
            reserved_keys: &["_id"],
            refuses_nul: false,
        };
        Policy::strictest([&text_engine, &binary_engine])
    }

    fn clean_line(_stem: &str, line: u64, raw: &[u8]) -> Result<CleanDoc, Rejected> {
        policy().clean_line(line, raw)
    }

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
    fn only_engines_that_refuse_nul_get_it_removed() {
        let keeps = Policy::strictest([&DocumentLimits::default()]);
        let doc = keeps.clean_line(1, br#"{"a":"x\u0000y"}"#).unwrap();
        assert!(!doc.sanitized && doc.json.contains("\\u0000"));
    }

    #[test]
    fn classifies_each_defect() {
        let defect = |raw: &[u8]| clean_line("2015-01-01-0", 1, raw).unwrap_err().defect;
        assert_eq!(defect(b""), Defect::EmptyLine);
        assert_eq!(defect(b"{\"a\":\xff}"), Defect::InvalidUtf8);
        assert_eq!(defect(b"{\"a\":"), Defect::InvalidJson);
        assert_eq!(defect(b"{\"a\":1} x"), Defect::InvalidJson);
        assert_eq!(defect(br#"{"a":"\ud800"}"#), Defect::InvalidJson);
        assert_eq!(defect(b"[1,2]"), Defect::NotAnObject);
        assert_eq!(defect(b"[1,"), Defect::InvalidJson, "invalid before it is anything else");
        assert_eq!(defect(b"\"text\""), Defect::NotAnObject);
        assert_eq!(defect(b"17"), Defect::NotAnObject);
        assert_eq!(defect(br#"{"_id":1}"#), Defect::HasOwnId);
        assert!(clean_line("2015-01-01-0", 1, br#"{"a":{"_id":1}}"#).is_ok(), "only the top level's keys are reserved");
        let nested = |levels: usize| format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        assert_eq!(defect(nested(MAX_NESTING + 1).as_bytes()), Defect::TooDeep);
        // Beyond serde_json's own limit of 128 levels too.
        assert_eq!(defect(nested(200).as_bytes()), Defect::TooDeep);
        assert!(clean_line("2015-01-01-0", 1, nested(MAX_NESTING).as_bytes()).is_ok());
        let unlimited = Policy::strictest([&DocumentLimits::default()]);
        assert_eq!(unlimited.clean_line(1, nested(200).as_bytes()).unwrap_err().defect, Defect::TooDeep, "deeper than ghbench reads");
        assert!(unlimited.clean_line(1, nested(120).as_bytes()).is_ok());
        let arrays = |levels: usize| format!("{{\"a\":{}1{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1));
        assert_eq!(defect(arrays(MAX_NESTING + 1).as_bytes()), Defect::TooDeep);
        assert!(clean_line("2015-01-01-0", 1, arrays(MAX_NESTING).as_bytes()).is_ok());
        let big = format!(r#"{{"s":"{}"}}"#, "x".repeat(16 << 20));
        assert_eq!(defect(big.as_bytes()), Defect::TooLarge);
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
        // An engine set that keeps any integer keeps them.
        let exact = Policy::strictest([&DocumentLimits::default()]);
        assert!(exact.clean_line(1, br#"{"n":18446744073709551617}"#).is_ok());
    }

    #[test]
    fn scanning_skips_strings_and_escapes() {
        let shape = scan_json(r#"{"s":"[[[\"99999999999999999999","a":[[1]]}"#);
        assert_eq!(shape, JsonShape { max_depth: 3, integer_out_of_range: None });
        assert_eq!(scan_json("[-12345678901234567890]").integer_out_of_range.as_deref(), Some("-12345678901234567890"));
    }

    #[test]
    fn clean_documents_keep_their_text() {
        let doc = clean_line("2015-01-01-0", 7, br#"{"id":"1","n":"a\u0000b","x":[1,2.5]}"#).unwrap();
        assert!(doc.sanitized);
        assert_eq!(doc.json, r#"{"id":"1","n":"ab","x":[1,2.5]}"#);
        assert_eq!(doc.line, 7);
    }
}

//! One policy per defect, applied to every line before any engine sees it, so
//! all engines receive exactly the same documents:
//!
//! | defect                                  | policy                                  |
//! |-----------------------------------------|-----------------------------------------|
//! | `\u0000` escape (an engine refuses it)  | sanitize: the escape is removed (as the usual `sed 's/\\u0000//g'` does, but only real escapes), line kept and counted |
//! | invalid UTF-8                           | quarantine                              |
//! | not valid JSON (incl. lone surrogates)  | quarantine                              |
//! | valid JSON but not an object            | quarantine                              |
//! | an object with a key twice (`{"type":"A","type":"B"}`) | quarantine: `jsonb` would keep the last value, BSON both (and MongoDB read the first), so the engines would hold different data |
//! | empty line                              | quarantine                              |
//! | larger than an engine's document limit  | quarantine                              |
//! | nested deeper than an engine's limit (MariaDB's 31 levels) | quarantine |
//! | what an engine cannot encode (e.g. BSON's nesting, integer and `_id` rules) | quarantine |
//!
//! The first five are every engine's; the limits are the strictest of every
//! registered engine's [`DocumentLimits`]. Each engine then encodes the clean
//! document its own way (see `sink::Encoder`), every registered engine on
//! every line whether it loads this run or not: an engine that cannot encode a
//! document refuses it with its defect, and the line is quarantined for every
//! engine all the same. So the data never depends on the engines a run loads.

use std::borrow::Cow;

use std::sync::Arc;

use ghbench_core::{DocumentLimits, Engine};
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::sink::{Encoded, Encoder};


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
    /// it exactly, MongoDB can store it only as a double, not as that integer.
    IntegerOutOfRange,
    /// A number beyond a double's range (`1e400`): PostgreSQL's `numeric`
    /// keeps it, MongoDB cannot store it at all.
    NumberOutOfRange,
    /// The last, incomplete line of a truncated or corrupt gzip stream.
    TruncatedLine,
    /// An object with more keys than an engine can store (the normalized
    /// layout's columns per table).
    TooManyKeys,
    /// An object with the same key twice: engines disagree on which value it has.
    DuplicateKey,
}

impl Defect {
    pub const ALL: [Defect; 12] = [
        Defect::InvalidUtf8,
        Defect::InvalidJson,
        Defect::NotAnObject,
        Defect::EmptyLine,
        Defect::HasOwnId,
        Defect::TooLarge,
        Defect::TooDeep,
        Defect::IntegerOutOfRange,
        Defect::NumberOutOfRange,
        Defect::TruncatedLine,
        Defect::TooManyKeys,
        Defect::DuplicateKey,
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
            Defect::NumberOutOfRange => "number_out_of_range",
            Defect::TruncatedLine => "truncated_line",
            Defect::TooManyKeys => "too_many_keys",
            Defect::DuplicateKey => "duplicate_key",
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
    max_object_keys: Option<usize>,
    max_depth: Option<usize>,
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
            policy.max_object_keys = min(policy.max_object_keys, l.max_object_keys);
            policy.max_depth = min(policy.max_depth, l.max_depth);
            policy.strip_nul |= l.refuses_nul;
        }
        policy
    }

    /// Also runs `engine`'s encoder on every line (see [`Policy::encode`]).
    pub fn with_encoder(mut self, engine: Engine, encoder: Arc<dyn Encoder>) -> Policy {
        self.encoders.push((engine, encoder));
        self
    }

    /// The encodings of a clean document for the engines `loading` keeps,
    /// and every other engine's verdict on it ([`Encoder::check`]): any
    /// refusal refuses the line for all, so the data never depends on the
    /// engines a run loads, and no run builds what it does not send.
    pub fn encode(&self, stem: &str, doc: &CleanDoc, loading: impl Fn(&Engine) -> bool) -> Result<Vec<(&Engine, Encoded)>, Rejected> {
        let mut encoded = Vec::new();
        for (engine, encoder) in &self.encoders {
            match loading(engine) {
                true => encoded.push((engine, encoder.encode(stem, doc)?)),
                false => encoder.check(stem, doc)?,
            }
        }
        Ok(encoded)
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

    /// Valid JSON and an object, each object's keys once and no more of them
    /// than the limit: serde_json reads the text keeping only each object's
    /// keys. Every string is decoded on the way, so a `\u` escape that is no
    /// character (a lone surrogate) is refused too.
    fn validate(&self, text: &str) -> Result<(), Rejected> {
        // Every key takes at least 4 bytes (`"":0`) and is followed by a `:`,
        // so a line shorter than that many, or with fewer colons than the
        // limit, has no object over it: the limit is counted only on such rare lines.
        let could_exceed = |max: usize| text.len() >= 4 * (max + 1) && memchr::memchr_iter(b':', text.as_bytes()).nth(max).is_some();
        let max_keys = self.max_object_keys.filter(|&max| could_exceed(max));
        let mut reader = serde_json::Deserializer::from_str(text);
        let mut keys = Vec::new();
        let max_depth = self.max_depth.map(|d| u32::try_from(d).unwrap_or(u32::MAX));
        let checked = ObjectRules { max_keys, max_depth, depth: 0, keys: &mut keys }.deserialize(&mut reader).and_then(|()| reader.end());
        if let Err(e) = checked {
            // The rules' own errors are data errors, saying which; anything else is the JSON's.
            return Err(match e.classify() {
                serde_json::error::Category::Data if e.to_string().starts_with(DUPLICATE) => Rejected::new(Defect::DuplicateKey, e.to_string()),
                serde_json::error::Category::Data if e.to_string().starts_with(TOO_DEEP) => Rejected::new(Defect::TooDeep, e.to_string()),
                serde_json::error::Category::Data => Rejected::new(Defect::TooManyKeys, e.to_string()),
                // Valid JSON all the same, only no double holds it.
                _ if e.to_string().starts_with(NUMBER_OUT_OF_RANGE) => out_of_range(number_ending_at(text, e.column())),
                _ => Rejected::new(Defect::InvalidJson, e.to_string()),
            });
        }
        if !text.trim_start().starts_with('{') {
            return Err(Rejected::new(Defect::NotAnObject, "JSON value is not an object"));
        }
        Ok(())
    }
}

/// How a duplicate key's error begins (told apart from the key limit's).
const DUPLICATE: &str = "duplicate key";
/// How the nesting limit's error begins.
const TOO_DEEP: &str = "nested more than";
/// How serde_json's error for a number beyond a double's range begins.
const NUMBER_OUT_OF_RANGE: &str = "number out of range";

/// A number literal BSON cannot hold, said once for the policy and for every
/// encoder that finds one: an integer outside the signed 64-bit range (which
/// MongoDB could store only as a double), or a number beyond a double's range
/// (`1e400`, which it cannot store at all). PostgreSQL's numeric keeps both.
pub fn out_of_range(literal: &str) -> Rejected {
    let shown = match literal.len() > 40 {
        true => format!("{}… ({} characters)", &literal[..40], literal.len()),
        false => literal.to_string(),
    };
    match literal.bytes().all(|b| b == b'-' || b.is_ascii_digit()) {
        true => Rejected::new(
            Defect::IntegerOutOfRange,
            format!(
                "integer {shown} is outside the signed 64-bit range of BSON's integers ({} to {}): MongoDB could store it only as a double, not as the integer PostgreSQL's numeric keeps",
                i64::MIN,
                i64::MAX
            ),
        ),
        false => Rejected::new(
            Defect::NumberOutOfRange,
            format!("number {shown} is beyond a double's range (±1.8e308), BSON's widest numbers: MongoDB cannot store it, PostgreSQL's numeric would"),
        ),
    }
}

/// The number literal whose last character is at 1-based `column` of `text`
/// (where serde_json reports an error in it).
fn number_ending_at(text: &str, column: usize) -> &str {
    let end = column.min(text.len());
    let start = text[..end].rfind(|c: char| !matches!(c, '0'..='9' | '.' | 'e' | 'E' | '+' | '-')).map_or(0, |i| i + 1);
    &text[start..end]
}

/// Reads JSON keeping only each object's keys (borrowed from the text where
/// they have no escape), and refuses an object with a key twice, or with more
/// than `max_keys`. Below [`ObjectRules::DEEPEST`] it skips values unread:
/// serde_json's depth limit (128) would call a deep but valid document
/// invalid, and BSON's nesting limit (100 levels) refuses such documents anyway.
struct ObjectRules<'k, 'de> {
    max_keys: Option<usize>,
    /// Deepest container level allowed, the document being level 1.
    max_depth: Option<u32>,
    /// How many containers hold the value being read (0: the document).
    depth: u32,
    /// The keys of the objects being read, outermost first: one stack for the
    /// whole line, so reading an object allocates nothing.
    keys: &'k mut Vec<Cow<'de, str>>,
}

impl<'de> ObjectRules<'_, 'de> {
    const DEEPEST: u32 = 100;

    fn deeper(&mut self) -> ObjectRules<'_, 'de> {
        ObjectRules { max_keys: self.max_keys, max_depth: self.max_depth, depth: self.depth + 1, keys: &mut *self.keys }
    }

    /// Refuses a container at this depth if it is past the nesting limit.
    fn check_depth<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.max_depth.filter(|&max| self.depth + 1 > max) {
            Some(max) => Err(E::custom(format!("{TOO_DEEP} {max} levels deep (objects and arrays within each other): past an engine's nesting limit"))),
            None => Ok(()),
        }
    }
}

/// An object's key, as the text has it (decoded when it has escapes, so
/// `"a"` and `"\u0061"` are the same key, as every engine reads them).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<Cow<'de, str>, D::Error> {
        reader.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(key))
    }
    fn visit_str<E>(self, key: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key.to_string()))
    }
}

impl<'de> DeserializeSeed<'de> for ObjectRules<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ObjectRules<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut items: A) -> Result<(), A::Error> {
        self.check_depth()?;
        if self.depth >= Self::DEEPEST {
            while items.next_element::<IgnoredAny>()?.is_some() {}
        } else {
            while items.next_element_seed(self.deeper())?.is_some() {}
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut entries: A) -> Result<(), A::Error> {
        // This object's keys are the stack's top; objects are small (GH
        // Archive's largest have ~100 keys): a linear search beats hashing.
        self.check_depth()?;
        let base = self.keys.len();
        while let Some(key) = entries.next_key_seed(Key)? {
            if self.keys[base..].contains(&key) {
                return Err(A::Error::custom(format!("{DUPLICATE} \"{key}\": an object has it twice")));
            }
            self.keys.push(key);
            if let Some(max) = self.max_keys.filter(|&max| self.keys.len() - base > max) {
                return Err(A::Error::custom(format!("an object with more than {max} keys (a table has at most that many columns)")));
            }
            if self.depth >= Self::DEEPEST {
                entries.next_value::<IgnoredAny>()?;
            } else {
                entries.next_value_seed(self.deeper())?;
            }
        }
        self.keys.truncate(base);
        Ok(())
    }
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

    /// Limits like the built-in engines' (jsonb's, and BSON's, whose other
    /// rules its encoder applies).
    fn policy() -> Policy {
        let text_engine = DocumentLimits { max_bytes: Some(255 << 20), refuses_nul: true, max_object_keys: None, max_depth: None };
        let binary_engine = DocumentLimits { max_bytes: Some(16 << 20), refuses_nul: false, max_object_keys: None, max_depth: None };
        Policy::strictest([&text_engine, &binary_engine])
    }

    fn clean_line(line: u64, raw: &[u8]) -> Result<CleanDoc, Rejected> {
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
        assert!(!clean_line(1, br#"{"a":"x\\u0000y"}"#).unwrap().sanitized);
    }

    #[test]
    fn only_engines_that_refuse_nul_get_it_removed() {
        let keeps = Policy::strictest([&DocumentLimits::default()]);
        let doc = keeps.clean_line(1, br#"{"a":"x\u0000y"}"#).unwrap();
        assert!(!doc.sanitized && doc.json.contains("\\u0000"));
    }

    #[test]
    fn classifies_each_defect() {
        let defect = |raw: &[u8]| clean_line(1, raw).unwrap_err().defect;
        assert_eq!(defect(b""), Defect::EmptyLine);
        assert_eq!(defect(b"{\"a\":\xff}"), Defect::InvalidUtf8);
        assert_eq!(defect(b"{\"a\":"), Defect::InvalidJson);
        assert_eq!(defect(b"{\"a\":1} x"), Defect::InvalidJson);
        assert_eq!(defect(br#"{"a":"\ud800"}"#), Defect::InvalidJson, "a lone surrogate");
        assert!(clean_line(1, br#"{"a":"\ud83d\ude00"}"#).is_ok(), "a surrogate pair");
        assert_eq!(defect(b"[1,2]"), Defect::NotAnObject);
        assert_eq!(defect(b"[1,"), Defect::InvalidJson, "invalid before it is anything else");
        assert_eq!(defect(b"\"text\""), Defect::NotAnObject);
        assert_eq!(defect(b"17"), Defect::NotAnObject);
        let big = format!(r#"{{"s":"{}"}}"#, "x".repeat(16 << 20));
        assert_eq!(defect(big.as_bytes()), Defect::TooLarge);
    }

    #[test]
    fn numbers_no_double_holds_are_out_of_range_not_invalid() {
        let refused = |raw: &str| clean_line(1, raw.as_bytes()).unwrap_err();
        let beyond = refused(r#"{"id":"a","n":[1,-1.5e400],"m":2}"#);
        assert_eq!((beyond.defect, beyond.detail.split(" is ").next()), (Defect::NumberOutOfRange, Some("number -1.5e400")));
        let digits = "9".repeat(400);
        let integer = refused(&format!(r#"{{"n":{digits}}}"#));
        assert_eq!(integer.defect, Defect::IntegerOutOfRange, "an integer, however long, is one: {}", integer.detail);
        assert!(integer.detail.starts_with("integer 9999999999999999999999999999999999999999… (400 characters) is outside the signed 64-bit range"), "{}", integer.detail);
    }

    #[test]
    fn an_object_with_too_many_keys_is_refused_at_any_depth() {
        let columns = DocumentLimits { max_object_keys: Some(3), ..DocumentLimits::default() };
        let policy = Policy::strictest([&DocumentLimits::default(), &columns]);
        let object = |n: usize| format!("{{{}}}", (0..n).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(","));
        assert!(policy.clean_line(1, object(3).as_bytes()).is_ok());
        assert_eq!(policy.clean_line(1, object(4).as_bytes()).unwrap_err().defect, Defect::TooManyKeys);
        let nested = format!(r#"{{"a":[1,{{"b":{}}}],"s":"x"}}"#, object(4));
        assert_eq!(policy.clean_line(1, nested.as_bytes()).unwrap_err().defect, Defect::TooManyKeys);
        // Without the limit, the same lines are clean; broken JSON stays invalid_json.
        assert!(Policy::strictest([&DocumentLimits::default()]).clean_line(1, nested.as_bytes()).is_ok());
        assert_eq!(policy.clean_line(1, b"{\"a\":1,}").unwrap_err().defect, Defect::InvalidJson);
        assert_eq!(policy.clean_line(1, b"{\"a\":1} x").unwrap_err().defect, Defect::InvalidJson);
        // Deeper than serde_json's own limit, and many colons: still valid JSON here
        // (BSON's encoder refuses the depth, as too_deep).
        let deep = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
        assert!(policy.clean_line(1, deep.as_bytes()).is_ok());
    }

    #[test]
    fn nesting_past_the_strictest_limit_is_too_deep_and_the_limit_itself_is_kept() {
        let shallow = DocumentLimits { max_depth: Some(3), ..DocumentLimits::default() };
        let policy = Policy::strictest([&DocumentLimits::default(), &shallow]);
        // `{}` is level 1: three levels pass, a fourth (object or array) does not.
        assert!(policy.clean_line(1, br#"{"a":{"b":[1,2]}}"#).is_ok());
        assert!(policy.clean_line(1, br#"{"a":{"b":[1,[]]}, "s":"[[[[["}"#).is_err());
        for four in [r#"{"a":{"b":[[1]]}}"#, r#"{"a":[{"b":{}}]}"#] {
            let refused = policy.clean_line(1, four.as_bytes()).unwrap_err();
            assert_eq!(refused.defect, Defect::TooDeep, "{four}");
            assert!(refused.detail.contains("3 levels"), "{}", refused.detail);
        }
        assert!(policy.clean_line(1, br#"{"s":"[[[[[{{{{"}"#).is_ok(), "brackets in strings are no nesting");
        assert!(Policy::strictest([&DocumentLimits::default()]).clean_line(1, br#"{"a":{"b":[[1]]}}"#).is_ok());
    }

    #[test]
    fn a_key_twice_in_any_object_is_refused_as_the_engines_would_disagree() {
        let defect = |raw: &str| clean_line(1, raw.as_bytes()).map(|_| ()).map_err(|r| r.defect);
        assert_eq!(defect(r#"{"type":"A","type":"B"}"#), Err(Defect::DuplicateKey));
        assert_eq!(defect(r#"{"a":[{"x":1},{"y":{"k":1,"k":2}}]}"#), Err(Defect::DuplicateKey), "nested in an array");
        // The same key written with an escape is the same key to every engine.
        assert_eq!(defect(r#"{"a":1,"\u0061":2}"#), Err(Defect::DuplicateKey));
        // The same key in sibling objects, and keys that differ only in case, are fine.
        assert_eq!(defect(r#"{"a":{"k":1},"b":{"k":2},"K":3,"k":4}"#), Ok(()));
        let said = clean_line(1, br#"{"type":"A","type":"B"}"#).unwrap_err().detail;
        assert!(said.contains("\"type\""), "{said}");
    }

    #[test]
    fn encoders_refuse_for_every_engine() {
        /// An engine that cannot store the key `bad`.
        struct NoBad;
        impl Encoder for NoBad {
            fn encode(&self, _: &str, doc: &CleanDoc) -> Result<Encoded, Rejected> {
                match doc.json.contains("\"bad\"") {
                    true => Err(Rejected::new(Defect::HasOwnId, "bad")),
                    false => Ok(Box::new(())),
                }
            }
        }
        let policy = policy().with_encoder(Engine::named("picky"), Arc::new(NoBad));
        // Loading the engine or not, the same verdict; its encoding only when it loads.
        for loads in [true, false] {
            let doc = policy.clean_line(1, br#"{"bad":1}"#).unwrap();
            assert_eq!(policy.encode("2015-01-01-0", &doc, |_| loads).unwrap_err().defect, Defect::HasOwnId);
            let doc = policy.clean_line(2, br#"{"good":1}"#).unwrap();
            assert_eq!(policy.encode("2015-01-01-0", &doc, |_| loads).unwrap().len(), usize::from(loads));
        }
    }

    #[test]
    fn clean_documents_keep_their_text() {
        let doc = clean_line(7, br#"{"id":"1","n":"a\u0000b","x":[1,2.5]}"#).unwrap();
        assert!(doc.sanitized);
        assert_eq!(doc.json, r#"{"id":"1","n":"ab","x":[1,2.5]}"#);
        assert_eq!(doc.line, 7);
    }
}

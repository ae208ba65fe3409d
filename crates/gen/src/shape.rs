//! The shape of JSON values seen at one place in many events: which kinds occur
//! there and how often, object keys in their real order, array lengths, string
//! lengths and formats. Only aggregates and structure are kept, never a value that
//! belongs to a single event: strings are reduced to a length, a format, a
//! template of the parts most values share, or a small vocabulary of frequent
//! identifier-like values (such as action names).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A vocabulary is kept only when a field takes few distinct values, each seen
/// this often: an action name qualifies, a repository's description never does.
const VOCAB_MAX_DISTINCT: usize = 12;
const VOCAB_MIN_EACH: u64 = 3;
const VOCAB_MIN_TOTAL: u64 = 20;
/// A template keeps a path segment only when this share of values (and at least
/// `TEMPLATE_MIN_VALUES`) contain it: structure like `repos` or `issues`, not names.
const TEMPLATE_MIN_SHARE: f64 = 0.2;
const TEMPLATE_MIN_VALUES: u64 = 5;
/// Values kept per field while calibrating, to find its template.
const TEMPLATE_SAMPLES: usize = 2000;

/// Where a string came from, in the generator's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrKind {
    /// `2015-01-01T00:00:00Z`
    Timestamp,
    /// 40 hex digits, as git commit ids.
    Sha,
    /// Contains `@`, no spaces.
    Email,
    /// `/`-separated and without spaces: URLs, `refs/heads/...`.
    Path,
    /// Anything else: names, titles, bodies.
    Text,
}

impl StrKind {
    pub fn of(s: &str) -> StrKind {
        let b = s.as_bytes();
        if b.len() == 20 && b[10] == b'T' && b[19] == b'Z' && b[4] == b'-' {
            StrKind::Timestamp
        } else if b.len() == 40 && b.iter().all(u8::is_ascii_hexdigit) {
            StrKind::Sha
        } else if s.contains(' ') {
            StrKind::Text
        } else if s.contains('@') && !s.contains('/') {
            StrKind::Email
        } else if s.contains('/') {
            StrKind::Path
        } else {
            StrKind::Text
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BoolStat {
    pub n: u64,
    pub true_n: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumStat<T> {
    pub n: u64,
    pub min: T,
    pub max: T,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StrStat {
    pub n: u64,
    pub mean_len: f64,
    pub kind: Option<StrKind>,
    /// Frequent identifier-like values and their counts (see `VOCAB_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<Vec<(String, u64)>>,
    /// For `Path` strings: the most common form, with `{n}` for digits, `{sha}` for
    /// commit ids and `*` for a segment most values do not share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    // Calibration state, dropped by `finish`.
    #[serde(skip)]
    total_len: u64,
    #[serde(skip)]
    kinds: BTreeMap<StrKind, u64>,
    #[serde(skip)]
    distinct: HashMap<String, u64>,
    #[serde(skip)]
    samples: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ArrayStat {
    pub n: u64,
    /// Length → how many arrays had it.
    pub lens: BTreeMap<u64, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<Box<Node>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ObjectStat {
    pub n: u64,
    /// Keys in the order they first appeared; a key's `n` over this `n` is how often it is present.
    #[serde(with = "ordered_fields")]
    pub fields: Vec<(String, Node)>,
}

/// Everything seen at one place of the JSON tree.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Node {
    pub n: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub null: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bool: Option<BoolStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<NumStat<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub float: Option<NumStat<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<StrStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<ArrayStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectStat>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Node {
    /// Adds one value seen at this place.
    pub fn observe(&mut self, value: &Value) {
        self.n += 1;
        match value {
            Value::Null => self.null += 1,
            Value::Bool(b) => {
                let s = self.bool.get_or_insert_with(BoolStat::default);
                s.n += 1;
                s.true_n += u64::from(*b);
            }
            Value::Number(num) => match num.as_i64() {
                Some(i) => observe_num(&mut self.int, i),
                None => observe_num(&mut self.float, num.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => self.string.get_or_insert_with(StrStat::default).observe(s),
            Value::Array(items) => {
                let a = self.array.get_or_insert_with(ArrayStat::default);
                a.n += 1;
                *a.lens.entry(items.len() as u64).or_default() += 1;
                for item in items {
                    a.item.get_or_insert_with(Default::default).observe(item);
                }
            }
            Value::Object(map) => {
                let o = self.object.get_or_insert_with(ObjectStat::default);
                o.n += 1;
                for (key, v) in map {
                    let slot = match o.fields.iter().position(|(k, _)| k == key) {
                        Some(i) => i,
                        None => {
                            o.fields.push((key.clone(), Node::default()));
                            o.fields.len() - 1
                        }
                    };
                    o.fields[slot].1.observe(v);
                }
            }
        }
    }

    /// Turns calibration state into the stored aggregates (vocabularies, templates).
    pub fn finish(&mut self) {
        if let Some(s) = &mut self.string {
            s.finish();
        }
        if let Some(item) = self.array.as_mut().and_then(|a| a.item.as_mut()) {
            item.finish();
        }
        if let Some(o) = &mut self.object {
            for (_, node) in &mut o.fields {
                node.finish();
            }
        }
    }

    /// The child at `key`, when this place holds objects with it.
    pub fn field(&self, key: &str) -> Option<&Node> {
        self.object.as_ref()?.fields.iter().find(|(k, _)| k == key).map(|(_, n)| n)
    }

    /// Strings this node and its descendants hold, with their paths, for tests
    /// and for choosing where generated events put their bulk text.
    pub fn visit_strings<'a>(&'a self, path: &mut Vec<String>, f: &mut dyn FnMut(&[String], &'a StrStat)) {
        if let Some(s) = &self.string {
            f(path, s);
        }
        if let Some(item) = self.array.as_ref().and_then(|a| a.item.as_ref()) {
            path.push("[]".into());
            item.visit_strings(path, f);
            path.pop();
        }
        if let Some(o) = &self.object {
            for (key, node) in &o.fields {
                path.push(key.clone());
                node.visit_strings(path, f);
                path.pop();
            }
        }
    }
}

fn observe_num<T: PartialOrd + Copy>(slot: &mut Option<NumStat<T>>, v: T) {
    match slot {
        Some(s) => {
            s.n += 1;
            if v < s.min {
                s.min = v;
            }
            if v > s.max {
                s.max = v;
            }
        }
        None => *slot = Some(NumStat { n: 1, min: v, max: v }),
    }
}

impl StrStat {
    fn observe(&mut self, s: &str) {
        self.n += 1;
        self.total_len += s.len() as u64;
        let kind = StrKind::of(s);
        *self.kinds.entry(kind).or_default() += 1;
        // Past the vocabulary limit the field is free text: stop counting values.
        if self.distinct.len() <= VOCAB_MAX_DISTINCT {
            *self.distinct.entry(s.to_string()).or_default() += 1;
        }
        if kind == StrKind::Path && self.samples.len() < TEMPLATE_SAMPLES {
            self.samples.push(s.to_string());
        }
    }

    fn finish(&mut self) {
        if self.n == 0 {
            return;
        }
        self.mean_len = self.total_len as f64 / self.n as f64;
        self.kind = self.kinds.iter().max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k))).map(|(k, _)| *k);
        let identifier_like = |v: &str| !v.is_empty() && v.len() <= 30 && !v.contains(' ') && !v.contains('/');
        if self.distinct.len() <= VOCAB_MAX_DISTINCT
            && self.n >= VOCAB_MIN_TOTAL
            && self.distinct.iter().all(|(v, n)| *n >= VOCAB_MIN_EACH && identifier_like(v))
        {
            let mut vocab: Vec<(String, u64)> = self.distinct.drain().collect();
            vocab.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            self.vocab = Some(vocab);
        }
        if self.kind == Some(StrKind::Path) && self.vocab.is_none() {
            self.template = template(&self.samples);
        }
        self.distinct = HashMap::new();
        self.samples = Vec::new();
        self.kinds.clear();
    }
}

/// The most common form of `values` once digits, commit ids and rare segments are masked.
fn template(values: &[String]) -> Option<String> {
    let normalized: Vec<Vec<String>> = values.iter().map(|v| v.split('/').map(normalize_segment).collect()).collect();
    let mut segment_values: HashMap<&str, u64> = HashMap::new();
    for segments in &normalized {
        let mut seen: Vec<&str> = segments.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for s in seen {
            *segment_values.entry(s).or_default() += 1;
        }
    }
    let min = (TEMPLATE_MIN_SHARE * values.len() as f64).max(TEMPLATE_MIN_VALUES as f64);
    let mut forms: HashMap<String, u64> = HashMap::new();
    for segments in &normalized {
        let masked: Vec<&str> =
            segments.iter().map(|s| if segment_values[s.as_str()] as f64 >= min { s.as_str() } else { "*" }).collect();
        *forms.entry(masked.join("/")).or_default() += 1;
    }
    forms.into_iter().max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0))).map(|(form, _)| form)
}

/// `1020536?v=3` → `{n}?v=3`; a 40-digit hex id → `{sha}`.
fn normalize_segment(segment: &str) -> String {
    if segment.len() == 40 && segment.bytes().all(|b| b.is_ascii_hexdigit()) {
        return "{sha}".into();
    }
    let mut out = String::with_capacity(segment.len());
    let mut in_digits = false;
    for c in segment.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("{n}");
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Serialises `Vec<(key, node)>` as a JSON object, keeping the order.
mod ordered_fields {
    use serde::de::{Deserializer, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};

    use super::Node;

    pub fn serialize<S: Serializer>(fields: &[(String, Node)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (k, v) in fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Node)>, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Vec<(String, Node)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of field shapes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_presence_and_kinds() {
        let mut node = Node::default();
        for v in [r#"{"b":1,"a":"x y"}"#, r#"{"b":null,"c":[1,2]}"#] {
            node.observe(&serde_json::from_str(v).unwrap());
        }
        node.finish();
        let o = node.object.as_ref().unwrap();
        let keys: Vec<&str> = o.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        let b = node.field("b").unwrap();
        assert_eq!((b.n, b.null, b.int.as_ref().unwrap().n), (2, 1, 1));
        assert_eq!(node.field("c").unwrap().array.as_ref().unwrap().lens[&2], 1);
        let back: Node = serde_json::from_str(&serde_json::to_string(&node).unwrap()).unwrap();
        assert_eq!(back.object.unwrap().fields.len(), 3);
    }

    #[test]
    fn vocabularies_only_for_frequent_identifiers() {
        let mut action = Node::default();
        let mut title = Node::default();
        for i in 0..30 {
            action.observe(&Value::from(if i % 3 == 0 { "closed" } else { "opened" }));
            title.observe(&Value::from(if i % 2 == 0 { "Fix the build" } else { "Add docs" }));
        }
        action.finish();
        title.finish();
        assert_eq!(action.string.unwrap().vocab.unwrap(), [("opened".to_string(), 20), ("closed".to_string(), 10)]);
        assert!(title.string.unwrap().vocab.is_none(), "text with spaces is never a vocabulary");
    }

    #[test]
    fn templates_keep_shared_segments_only() {
        let mut url = Node::default();
        for (user, n) in [("alice", 1), ("bob", 22), ("carol", 333), ("dave", 4), ("erin", 5), ("frank", 6)] {
            url.observe(&Value::from(format!("https://api.github.com/repos/{user}/{user}s-tool/issues/{n}")));
        }
        url.finish();
        let s = url.string.unwrap();
        assert_eq!(s.kind, Some(StrKind::Path));
        assert_eq!(s.template.as_deref(), Some("https://api.github.com/repos/*/*/issues/{n}"));
    }
}

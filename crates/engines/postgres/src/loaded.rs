//! Columns the loader fills from each document, where the server cannot
//! compute them itself: Citus routes a row to its shard by the distribution
//! column's value on the coordinator, before any shard could compute it, and
//! refuses a generated column as the distribution column. The value is the
//! string PostgreSQL's `->>` reads at the path; the setup's DDL may check it
//! (`queries/citus-tuned/table.sql` does), so a value read otherwise than the
//! server would read it fails its hour instead of being grouped under
//! another name.
//!
//! Only the path is read: every other value of the document is skipped
//! unparsed (as the cleaning step skips them), so a number no `f64` holds
//! elsewhere in it does not fail the line, and no tree is built per event.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a path of keys leads to in a document.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// A key of the path is missing, or a value on the way is no object.
    Missing,
    Null,
    Text(String),
    /// A number, boolean, object or array: its kind.
    Other(&'static str),
}

/// The value at `path` of the JSON text `json` (the last of keys given twice,
/// as `jsonb` keeps the last).
pub fn at(json: &str, path: &[&str]) -> Result<Found, serde_json::Error> {
    AtPath(path).deserialize(&mut serde_json::Deserializer::from_str(json))
}

/// Every loaded column's value for the document `json`, in `columns`' order;
/// Err says which path a document lacks or holds no string at: a
/// distribution column has no row without its value, and a number's text as
/// `->>` prints it (`1e2` reads `100`) is PostgreSQL's to say, not ours.
pub fn values(json: &str, columns: &[(&str, Vec<&str>)]) -> Result<Vec<String>, String> {
    columns
        .iter()
        .map(|(column, path)| {
            // The path's name is made only for an error: this runs on every event.
            let path_said = || path.join(".");
            match at(json, path).map_err(|e| format!("cannot read {} of the document: {e}", path_said()))? {
                Found::Text(text) => Ok(text),
                Found::Missing | Found::Null => Err(format!(
                    "the document has no {} (missing or null), from which the column {column} is loaded: this setup cannot keep it (Citus keeps no row without its distribution column)",
                    path_said()
                )),
                Found::Other(kind) => Err(format!("the document's {} is a JSON {kind}, not a string, and the column {column} is loaded only from strings", path_said())),
            }
        })
        .collect()
}

/// Reads the value at the path it holds, skipping everything else.
struct AtPath<'p>(&'p [&'p str]);

impl<'de> DeserializeSeed<'de> for AtPath<'_> {
    type Value = Found;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl AtPath<'_> {
    /// A value that is not an object: the path's end, or a dead end on the way.
    fn leaf(&self, found: Found) -> Found {
        if self.0.is_empty() {
            found
        } else {
            Found::Missing
        }
    }
}

impl<'de> Visitor<'de> for AtPath<'_> {
    type Value = Found;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let Some((key, rest)) = self.0.split_first() else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Found::Other("object"));
        };
        let mut found = Found::Missing;
        while let Some(is_key) = map.next_key_seed(KeyIs(key))? {
            match is_key {
                true => found = map.next_value_seed(AtPath(rest))?,
                false => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.leaf(Found::Other("array")))
    }

    fn visit_str<E>(self, text: &str) -> Result<Found, E> {
        Ok(self.leaf(Found::Text(text.to_string())))
    }

    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(self.leaf(Found::Null))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
        Ok(self.leaf(Found::Other("boolean")))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
        Ok(self.leaf(Found::Other("number")))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
        Ok(self.leaf(Found::Other("number")))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
        Ok(self.leaf(Found::Other("number")))
    }
}

/// Whether an object's key is the one wanted, compared without copying it.
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object's key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_as_the_arrow_operator_reads_it_and_nothing_else_is_parsed() {
        let doc = r#"{"big":1e400,"repo":{"id":7,"fork":false,"x":null,"name":"a/b","list":[1,{"name":"no"}]},"list":[1]}"#;
        assert_eq!(at(doc, &["repo", "name"]).unwrap(), Found::Text("a/b".into()), "a number no f64 holds elsewhere is skipped unread");
        assert_eq!(at(doc, &["repo", "id"]).unwrap(), Found::Other("number"));
        assert_eq!(at(doc, &["repo", "fork"]).unwrap(), Found::Other("boolean"));
        assert_eq!(at(doc, &["repo", "x"]).unwrap(), Found::Null);
        assert_eq!(at(doc, &["repo", "none"]).unwrap(), Found::Missing);
        assert_eq!(at(doc, &["repo", "name", "deeper"]).unwrap(), Found::Missing, "a string has no keys");
        assert_eq!(at(doc, &["list", "0"]).unwrap(), Found::Missing, "a key of an array is no path ->> follows");
        assert_eq!(at(doc, &["repo"]).unwrap(), Found::Other("object"));
        assert_eq!(at(r#"{"repo":{"name":"first"},"repo":{"name":"last"}}"#, &["repo", "name"]).unwrap(), Found::Text("last".into()), "jsonb keeps the last of a key given twice");
        assert_eq!(at(r#"{"repo":{"name":"a\u002fb\n"}}"#, &["repo", "name"]).unwrap(), Found::Text("a/b\n".into()), "escapes read");

        let columns = [("repo_name", vec!["repo", "name"])];
        assert_eq!(values(r#"{"repo":{"name":"a/b"}}"#, &columns).unwrap(), ["a/b"]);
        let lacking = values(r#"{"repo":{}}"#, &columns).unwrap_err();
        assert!(lacking.contains("no repo.name") && lacking.contains("repo_name"), "{lacking}");
        let number = values(r#"{"repo":{"name":1e2}}"#, &columns).unwrap_err();
        assert!(number.contains("repo.name is a JSON number, not a string"), "{number}");
    }
}

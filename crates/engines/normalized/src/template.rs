//! Query and index files name derived tables and columns by what they hold,
//! and the recorded metadata gives their names, so no file guesses one:
//!
//! - `{table}`: the collection's root table;
//! - `{table:PATH}`: the table of a nested object or array, e.g. `{table:payload.issue}`;
//! - `{column:PATH:T}`: the column of key PATH's values of type T (`s`, `i`,
//!   `l`, `d`, `b`, `n`, `e`), e.g. `{column:payload.issue.comments:i}`; its
//!   table is PATH without the last key;
//! - `{text:PATH}`: PATH's value as text, as `jsonb`'s `->>` gives it: read
//!   from every scalar column the key has (a key seen as a string in one
//!   document and a number in another has a column of each);
//! - `{number:PATH}`: PATH's value where it is a JSON number, from every
//!   number column the key has (as the jsonb queries keep numbers only).
//!
//! A column placeholder may follow a table alias (`r.{text:repo.name}`): the
//! expression it stands for then reads each column through that alias.
//!
//! Names are unqualified: the backend's session reads schema `normalized` first.
//!
//! A path no loaded document has yet: in a query ([`Missing::ReadsNull`]) its
//! table is an empty one and its columns read NULL, so a query answers as
//! over `jsonb`, where `->>` of a missing key is NULL; an index over it
//! ([`Missing::IsError`]) is an error, for the caller to skip it and say so.

use ghbench_normalize::{ColumnKey, Kind, Schema, ROOT};

/// What a placeholder naming a path the data does not have becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// An empty table, or NULL: what the path reads in a query.
    ReadsNull,
    /// An error naming what is missing (an index cannot be built on nothing).
    IsError,
}

/// The columns of a table that holds no rows: what a join to a path's table
/// needs (`did`, `rid`, `pid`, `seq`), each NULL, and no row.
const EMPTY_TABLE: &str = "(SELECT NULL::bigint AS did, NULL::integer AS rid, NULL::integer AS pid, NULL::integer AS seq WHERE false)";

/// A key's scalar kinds, in the order `{text:…}` tries them: one value has
/// one kind, so at most one of its columns is not NULL.
const TEXT_KINDS: [Kind; 5] = [Kind::Text, Kind::Int, Kind::Long, Kind::Double, Kind::Bool];
const NUMBER_KINDS: [Kind; 3] = [Kind::Int, Kind::Long, Kind::Double];

/// `text` with every placeholder replaced, or what it names that the data does
/// not have (with [`Missing::IsError`]) or that no placeholder can mean.
pub fn resolve(text: &str, schema: &Schema, missing: Missing) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        let alias = alias_before(&rest[..open]);
        match expression(inner, alias, schema, missing)? {
            Some(expr) => {
                // The expression reads through the alias itself.
                let keep = open - alias.map_or(0, |a| a.len() + 1);
                out.push_str(&rest[..keep]);
                out.push_str(&expr);
            }
            None => out.push_str(&rest[..open + close + 2]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The alias in `… r.` just before a placeholder, if any.
fn alias_before(text: &str) -> Option<&str> {
    let before_dot = text.strip_suffix('.')?;
    let start = before_dot.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let alias = &before_dot[start..];
    (!alias.is_empty() && !alias.starts_with(|c: char| c.is_ascii_digit())).then_some(alias)
}

/// What a placeholder stands for (read through `alias` when given); None
/// when `inner` is no placeholder.
fn expression(inner: &str, alias: Option<&str>, schema: &Schema, missing: Missing) -> Result<Option<String>, String> {
    let absent = |what: String, null: &str| match missing {
        Missing::ReadsNull => Ok(Some(null.to_string())),
        Missing::IsError => Err(format!(
            "{what} does not exist: no loaded document of '{}' has it (load data with --engines normalized first)",
            schema.collection()
        )),
    };
    let read = |column: &str| match alias {
        Some(a) => format!("{a}.{column}"),
        None => column.to_string(),
    };
    if inner == "table" {
        return Ok(Some(schema.tables()[ROOT].name.clone()));
    }
    if let Some(path) = inner.strip_prefix("table:") {
        return match table_at(schema, path) {
            Some(table) => Ok(Some(schema.tables()[table].name.clone())),
            None => absent(format!("the table of path '{path}'"), EMPTY_TABLE),
        };
    }
    if let Some(spec) = inner.strip_prefix("column:") {
        let (path, kind) = spec.rsplit_once(':').ok_or_else(|| format!("{{{inner}}}: expected {{column:PATH:TYPE}}"))?;
        let kind = Kind::from_suffix(kind).ok_or_else(|| format!("{{{inner}}}: unknown type '{kind}' (expected s, i, l, d, b, n or e)"))?;
        return match column_of(schema, path, kind) {
            Some(name) => Ok(Some(read(&name))),
            None => absent(format!("a column of '{path}' values of type {}", kind.suffix()), &format!("NULL::{}", kind.sql_type())),
        };
    }
    let (path, kinds, cast, only_as_is) = if let Some(path) = inner.strip_prefix("text:") {
        (path, &TEXT_KINDS[..], "text", Kind::Text)
    } else if let Some(path) = inner.strip_prefix("number:") {
        (path, &NUMBER_KINDS[..], "numeric", Kind::Int)
    } else {
        return Ok(None);
    };
    let columns: Vec<(Kind, String)> = kinds.iter().filter_map(|&k| Some((k, column_of(schema, path, k)?))).collect();
    Ok(Some(match &columns[..] {
        [] => return absent(format!("a column of '{path}' values"), &format!("NULL::{cast}")),
        // The usual case, one column of the expected kind: the column itself,
        // so its index serves the query.
        [(kind, name)] if *kind == only_as_is => read(name),
        _ => format!("coalesce({})", columns.iter().map(|(_, name)| format!("{}::{cast}", read(name))).collect::<Vec<_>>().join(", ")),
    }))
}

/// The column of `path`'s values of `kind`, by its recorded name.
fn column_of(schema: &Schema, path: &str, kind: Kind) -> Option<String> {
    let (table_path, key) = path.rsplit_once('.').unwrap_or(("", path));
    let table = table_at(schema, table_path)?;
    let column = schema.find_column(table, &ColumnKey::Key(key.to_string()), kind)?;
    Some(schema.tables()[table].columns[column].name.clone())
}

fn table_at(schema: &Schema, path: &str) -> Option<usize> {
    schema.tables().iter().position(|t| t.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema_of(docs: &[serde_json::Value]) -> Schema {
        let mut schema = Schema::new("gh");
        for (did, doc) in docs.iter().enumerate() {
            schema.derive(did as i64, doc.as_object().unwrap());
        }
        schema
    }

    #[test]
    fn placeholders_take_the_recorded_names() {
        let schema = schema_of(&[json!({"type": "x", "payload": {"issue": {"comments": 3}}})]);
        let sql = "SELECT i.{column:payload.issue.comments:i} FROM {table} e JOIN {table:payload.issue} i USING (did) -- {note}";
        assert_eq!(resolve(sql, &schema, Missing::IsError).unwrap(), "SELECT i.comments_i FROM gh e JOIN gh_payload_issue i USING (did) -- {note}");
        assert_eq!(resolve("{column:type:s}", &schema, Missing::IsError).unwrap(), "type_s");
        assert_eq!(resolve("e.{text:type}, i.{number:payload.issue.comments}", &schema, Missing::IsError).unwrap(), "e.type_s, i.comments_i");
        let err = resolve("{table:repo}", &schema, Missing::IsError).unwrap_err();
        assert!(err.contains("path 'repo'") && err.contains("no loaded document"), "{err}");
        assert!(resolve("{column:type:q}", &schema, Missing::IsError).unwrap_err().contains("unknown type"));
    }

    #[test]
    fn a_missing_path_reads_null_in_a_query() {
        let schema = schema_of(&[json!({"type": "PushEvent", "payload": {"size": 1}})]);
        let sql = "SELECT count(*) FROM {table} e JOIN {table:payload.issue} i ON i.did = e.did WHERE p.{column:payload.action:s} = 'opened' AND i.{number:payload.issue.comments} > 2 AND {column:actor:e}";
        assert_eq!(
            resolve(sql, &schema, Missing::ReadsNull).unwrap(),
            format!("SELECT count(*) FROM gh e JOIN {EMPTY_TABLE} i ON i.did = e.did WHERE NULL::text = 'opened' AND NULL::numeric > 2 AND NULL::boolean")
        );
        assert!(resolve("{text:payload.action}", &schema, Missing::IsError).unwrap_err().contains("payload.action"));
    }

    #[test]
    fn a_key_of_several_types_is_read_from_each_column() {
        let schema = schema_of(&[
            json!({"repo": {"name": "a/b"}, "n": 3}),
            json!({"repo": {"name": 12}, "n": 3.5}),
            json!({"repo": {"name": true}, "n": 1_099_511_627_776_i64}),
        ]);
        assert_eq!(resolve("r.{text:repo.name}", &schema, Missing::IsError).unwrap(), "coalesce(r.name_s::text, r.name_i::text, r.name_b::text)");
        assert_eq!(resolve("{number:n}", &schema, Missing::IsError).unwrap(), "coalesce(n_i::numeric, n_l::numeric, n_d::numeric)");
        // A key that is never a string is still read as text.
        let numbers_only = schema_of(&[json!({"type": 7})]);
        assert_eq!(resolve("e.{text:type}", &numbers_only, Missing::IsError).unwrap(), "coalesce(e.type_i::text)");
    }

    #[test]
    fn an_alias_is_only_a_name_before_a_dot() {
        assert_eq!(alias_before("SELECT r."), Some("r"));
        assert_eq!(alias_before("x(e_1."), Some("e_1"));
        assert_eq!(alias_before("SELECT "), None);
        assert_eq!(alias_before("1."), None);
    }
}

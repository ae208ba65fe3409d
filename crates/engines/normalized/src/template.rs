//! Query and index files name derived tables and columns by what they hold,
//! and the recorded metadata gives their names, so no file guesses one:
//!
//! - `{table}`: the collection's root table;
//! - `{table:PATH}`: the table of a nested object or array, e.g. `{table:payload.issue}`;
//! - `{column:PATH:T}`: the column of key PATH's values of type T (`s`, `i`,
//!   `l`, `d`, `b`, `n`, `e`), e.g. `{column:payload.issue.comments:i}`; its
//!   table is PATH without the last key.
//!
//! Names are unqualified: the backend's session reads schema `normalized` first.

use ghbench_normalize::{ColumnKey, Kind, Schema, ROOT};

/// `text` with every placeholder replaced, or what it names that the data does not have.
pub fn resolve(text: &str, schema: &Schema) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Ok(out);
        };
        let inner = &after[..close];
        match name_of(inner, schema)? {
            Some(name) => out.push_str(&name),
            None => out.push_str(&rest[open..open + close + 2]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The name a placeholder stands for; None when `inner` is no placeholder.
fn name_of(inner: &str, schema: &Schema) -> Result<Option<String>, String> {
    let missing = |what: String| {
        format!("{what} does not exist: no loaded document of '{}' has it (load data with --engines normalized first)", schema.collection())
    };
    if inner == "table" {
        return Ok(Some(schema.tables()[ROOT].name.clone()));
    }
    if let Some(path) = inner.strip_prefix("table:") {
        let table = table_at(schema, path).ok_or_else(|| missing(format!("the table of path '{path}'")))?;
        return Ok(Some(schema.tables()[table].name.clone()));
    }
    if let Some(spec) = inner.strip_prefix("column:") {
        let (path, kind) = spec.rsplit_once(':').ok_or_else(|| format!("{{{inner}}}: expected {{column:PATH:TYPE}}"))?;
        let kind = Kind::from_suffix(kind).ok_or_else(|| format!("{{{inner}}}: unknown type '{kind}' (expected s, i, l, d, b, n or e)"))?;
        let (table_path, key) = path.rsplit_once('.').unwrap_or(("", path));
        let table = table_at(schema, table_path).ok_or_else(|| missing(format!("the table of path '{table_path}'")))?;
        let column = schema
            .find_column(table, &ColumnKey::Key(key.to_string()), kind)
            .ok_or_else(|| missing(format!("a column of '{path}' values of type {}", kind.suffix())))?;
        return Ok(Some(schema.tables()[table].columns[column].name.clone()));
    }
    Ok(None)
}

fn table_at(schema: &Schema, path: &str) -> Option<usize> {
    schema.tables().iter().position(|t| t.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_take_the_recorded_names() {
        let mut schema = Schema::new("gh");
        schema.derive(1, json!({"type": "x", "payload": {"issue": {"comments": 3}}}).as_object().unwrap());
        let sql = "SELECT i.{column:payload.issue.comments:i} FROM {table} e JOIN {table:payload.issue} i USING (did) -- {note}";
        assert_eq!(resolve(sql, &schema).unwrap(), "SELECT i.comments_i FROM gh e JOIN gh_payload_issue i USING (did) -- {note}");
        assert_eq!(resolve("{column:type:s}", &schema).unwrap(), "type_s");
        let err = resolve("{table:repo}", &schema).unwrap_err();
        assert!(err.contains("path 'repo'") && err.contains("no loaded document"), "{err}");
        assert!(resolve("{column:type:q}", &schema).unwrap_err().contains("unknown type"));
    }
}

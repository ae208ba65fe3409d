//! Columns the loader fills from each document, where the server cannot
//! compute them itself: Citus routes a row to its shard by the distribution
//! column's value on the coordinator, before any shard could compute it, and
//! refuses a generated column as the distribution column. The value is what
//! PostgreSQL's `->>` reads at the path, and the setup's DDL may check it
//! (`queries/citus-tuned/table.sql` does), so a value read otherwise than the
//! server would read it fails its hour instead of being grouped under
//! another name.

use serde_json::Value;

/// The text `->>` reads at `path` of the JSON object `doc` (`data->'repo'->>'name'`
/// for `["repo", "name"]`): a string as it is, a number or boolean as its JSON
/// text; None where the path is missing or JSON null. Objects and arrays read
/// as their compact JSON text, which `jsonb` prints with spaces: a DDL that
/// checks the column refuses them.
pub fn text_at(doc: &Value, path: &[&str]) -> Option<String> {
    let found = path.iter().try_fold(doc, |value, key| value.as_object()?.get(*key))?;
    match found {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// Every loaded column's value for the document `json`, in `columns`' order;
/// Err says which path a document lacks (every document must have each: a
/// distribution column has no row without its value).
pub fn values(json: &str, columns: &[(&str, Vec<&str>)]) -> Result<Vec<String>, String> {
    let doc: Value = serde_json::from_str(json).map_err(|e| format!("cannot read the document for the loaded columns: {e}"))?;
    columns
        .iter()
        .map(|(column, path)| {
            text_at(&doc, path).ok_or_else(|| {
                format!("the document has no {} (missing or null), from which the column {column} is loaded: this setup cannot keep it (Citus keeps no row without its distribution column)", path.join("."))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_as_the_arrow_operator_reads_it() {
        let doc: Value = serde_json::from_str(r#"{"repo":{"name":"a/b","id":7,"fork":false,"x":null},"list":[1]}"#).unwrap();
        assert_eq!(text_at(&doc, &["repo", "name"]).as_deref(), Some("a/b"));
        assert_eq!(text_at(&doc, &["repo", "id"]).as_deref(), Some("7"));
        assert_eq!(text_at(&doc, &["repo", "fork"]).as_deref(), Some("false"));
        assert_eq!(text_at(&doc, &["repo", "x"]), None, "JSON null reads NULL");
        assert_eq!(text_at(&doc, &["repo", "none"]), None);
        assert_eq!(text_at(&doc, &["list", "0"]), None, "a key of an array is no path ->> follows");
        let columns = [("repo_name", vec!["repo", "name"])];
        assert_eq!(values(r#"{"repo":{"name":"a/b"}}"#, &columns).unwrap(), ["a/b"]);
        let lacking = values(r#"{"repo":{}}"#, &columns).unwrap_err();
        assert!(lacking.contains("no repo.name") && lacking.contains("repo_name"), "{lacking}");
    }
}

//! Which indexes a plan uses, and whether it answers from them alone, read
//! from each product's JSON plan by walking the whole tree (the nesting
//! differs between products and versions):
//!
//! - MariaDB and MySQL's format 1 (`EXPLAIN FORMAT=JSON`): a `table` node
//!   names its index in `key`, and `"using_index": true` when the index
//!   covers the query;
//! - MySQL 8.3+'s format 2 (`explain_json_format_version=2`, with or
//!   without its `query_plan` wrapper): every node has an `operation`, a
//!   table read its `table_name`, `index_name` and `"covering": true`;
//! - TiDB (`EXPLAIN FORMAT='tidb_json'`): operators whose `id` starts with
//!   `IndexReader`/`IndexFullScan`/`IndexRangeScan`, the index in
//!   `accessObject` (`table:t, index:name(col)`); an `IndexReader` with no
//!   `TableReader`/`IndexLookUp` reads the index alone.

use serde_json::Value;

/// What a plan says of index use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexUse {
    /// Index names, in the order the walk meets them, once each.
    pub indexes: Vec<String>,
    /// Every table read is answered from an index alone.
    pub covering: bool,
}

/// Reads index use from a JSON plan of any of the three products.
pub fn index_use(plan: &Value) -> IndexUse {
    let mut found = IndexUse::default();
    let (mut reads, mut covered) = (0, 0);
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(fields) => {
                if fields.contains_key("operation") {
                    // MySQL format 2: every node says its operation; a table
                    // read names its table, its index and whether it covers.
                    if fields.contains_key("table_name") {
                        reads += 1;
                        covered += usize::from(fields.get("covering") == Some(&Value::Bool(true)));
                    }
                    if let Some(Value::String(name)) = fields.get("index_name") {
                        add(&mut found.indexes, name);
                    }
                } else if fields.contains_key("table_name") && (fields.contains_key("access_type") || fields.contains_key("key")) {
                    // MariaDB / MySQL format 1: a table access; its index in
                    // `key`, covering when read from the index alone (or by a
                    // loose index scan for GROUP BY).
                    reads += 1;
                    if let Some(Value::String(key)) = fields.get("key") {
                        add(&mut found.indexes, key);
                    }
                    let alone = ["using_index", "using_index_for_group_by"].iter().any(|k| fields.get(*k) == Some(&Value::Bool(true)));
                    covered += usize::from(alone);
                }
                // MariaDB: an index merge's or a rowid filter's indexes sit
                // in `range` nodes below the table, each with its `key`.
                if !fields.contains_key("table_name") {
                    if let Some(Value::String(key)) = fields.get("key") {
                        add(&mut found.indexes, key);
                    }
                }
                // TiDB: operators named by id.
                if let Some(Value::String(id)) = fields.get("id") {
                    if id.starts_with("IndexReader") {
                        covered += 1;
                        reads += 1;
                    } else if id.starts_with("TableReader") || id.starts_with("IndexLookUp") || id.starts_with("IndexMerge") {
                        reads += 1;
                    }
                    if let Some(Value::String(object)) = fields.get("accessObject") {
                        if let Some(name) = object.split("index:").nth(1) {
                            add(&mut found.indexes, name.split(['(', ',']).next().unwrap_or(name).trim());
                        }
                    }
                }
                stack.extend(fields.values().rev());
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
    found.covering = reads > 0 && covered == reads;
    found
}

fn add(names: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
}

/// Index names in a text plan (MySQL's and TiDB's `EXPLAIN ANALYZE`):
/// `using <index>` (MySQL's tree) and `index:<name>(` (TiDB's table).
pub fn indexes_in_text(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        for marker in ["using ", "index:"] {
            for rest in line.split(marker).skip(1) {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                // MySQL's tree also says `using temporary`, `using filesort`.
                if !matches!(name.as_str(), "" | "temporary" | "filesort" | "where" | "index" | "join") {
                    add(&mut names, &name);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mariadb_and_mysql_format_1_name_the_key_and_say_covering() {
        let covering = json!({"query_block": {"select_id": 1, "filesort": {"temporary_table": {"table": {
            "table_name": "t", "access_type": "index", "key": "t_actor_login", "using_index": true}}}}});
        assert_eq!(index_use(&covering), IndexUse { indexes: vec!["t_actor_login".into()], covering: true });
        let lookup = json!({"query_block": {"table": {"table_name": "t", "access_type": "ref", "key": "t_type", "attached_condition": "x"}}});
        assert_eq!(index_use(&lookup), IndexUse { indexes: vec!["t_type".into()], covering: false });
        let merged = json!({"query_block": {"table": {"table_name": "t", "access_type": "index_merge", "index_merge": {"intersect": [
            {"range": {"key": "t_type", "used_key_parts": ["event_type"]}}, {"range": {"key": "t_payload_action"}}]}}}});
        assert_eq!(index_use(&merged), IndexUse { indexes: vec!["t_type".into(), "t_payload_action".into()], covering: false });
        let scan = json!({"query_block": {"table": {"table_name": "t", "access_type": "ALL"}}});
        assert_eq!(index_use(&scan), IndexUse::default());
    }

    #[test]
    fn tidb_operators_say_index_reads_by_name() {
        let plan = json!([{"id": "Projection_4", "subOperators": [{"id": "IndexReader_12", "subOperators": [
            {"id": "IndexFullScan_11", "accessObject": "table:t, index:t_actor_login(actor_login)"}]}]}]);
        assert_eq!(index_use(&plan), IndexUse { indexes: vec!["t_actor_login".into()], covering: true });
        let table = json!([{"id": "TableReader_7", "subOperators": [{"id": "TableFullScan_6", "accessObject": "table:t"}]}]);
        assert_eq!(index_use(&table), IndexUse::default());
    }

    #[test]
    fn text_plans_name_their_indexes() {
        let tree = "-> Group aggregate: count(0)\n    -> Covering index scan on t using t_actor_login  (cost=1 rows=2)\n    -> Sort: using filesort";
        assert_eq!(indexes_in_text(tree), ["t_actor_login"]);
    }
}

//! A setup: how an engine is configured for the benchmark, written down change
//! by change with its source, so every number can say which setup produced
//! it. The paper's setup replays the 2019 paper; a tuned setup is an engine of
//! its own (`postgres-tuned`), with its data apart from the paper's, so
//! neither benefits from the other's indexes (see `queries/<engine>/setup.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One setup, as `queries/<engine>/setup.json` writes it down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// `paper`, `tuned`, ...: the label every report shows beside the engine.
    pub name: String,
    /// ClickBench's flag: anything beyond the paper's setup and the servers'
    /// defaults is tuned, and listed apart.
    pub tuned: bool,
    /// The engine whose setup this one changes (`postgres` for
    /// `postgres-tuned`): reports compare the two query by query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// One line: what the setup is.
    pub about: String,
    /// Where its data lives apart from other setups on the same server: a
    /// PostgreSQL schema, a prefix of MongoDB collection names (`tuned.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The folder of `queries/` whose indexes and queries it runs where
    /// that is another setup's: a setup on Citus runs the single server's
    /// texts (`citus-tuned` runs `postgres-tuned`'s). None: its own folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<String>,
    /// Columns the loader fills from each document, column → dotted path,
    /// each read as PostgreSQL's `->>` reads it, where the server cannot
    /// compute them itself (Citus refuses a generated column as the
    /// distribution column). Every document must have the path. Empty: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub loaded_columns: BTreeMap<String, String>,
    /// Every change from the paper's setup, with why and where it is documented.
    pub changes: Vec<Change>,
}

/// One change of a setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// What was changed, e.g. `stored generated columns for the paths the queries read`.
    pub what: String,
    /// What it is for.
    pub why: String,
    /// The vendor's documentation (or the benchmark) that recommends it.
    pub source: String,
}

impl Setup {
    /// Reads a `setup.json`; `path` names it in errors.
    pub fn parse(path: &str, text: &str) -> anyhow::Result<Setup> {
        let setup: Setup = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        // They go into SQL and collection names unquoted: plain lower-case identifiers only.
        let plain = |name: &str| {
            name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                && name.len() <= 30
        };
        if let Some(namespace) = setup.namespace.as_deref().filter(|n| !plain(n)) {
            anyhow::bail!("{path}: namespace '{namespace}' must be a lower-case identifier (a-z, 0-9, _; at most 30 bytes)");
        }
        for (column, from) in &setup.loaded_columns {
            if !plain(column) {
                anyhow::bail!("{path}: loaded column '{column}' must be a lower-case identifier (a-z, 0-9, _; at most 30 bytes)");
            }
            if from.split('.').any(str::is_empty) {
                anyhow::bail!("{path}: loaded column {column} reads '{from}', which is not a dotted path of keys (repo.name)");
            }
        }
        if setup.tuned && setup.changes.is_empty() {
            anyhow::bail!("{path}: a tuned setup lists its changes, each with its source");
        }
        Ok(setup)
    }

    /// `tuned setup: PostgreSQL jsonb with ... (5 changes)`: one line for reports.
    pub fn label(&self) -> String {
        match self.changes.len() {
            0 => format!("{} setup", self.name),
            1 => format!("{} setup, 1 change", self.name),
            n => format!("{} setup, {n} changes", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setup_names_a_plain_namespace_and_a_tuned_one_lists_its_changes() {
        let tuned = r#"{"name":"tuned","tuned":true,"of":"postgres","about":"x","namespace":"tuned",
            "changes":[{"what":"a","why":"b","source":"https://example.org"}]}"#;
        let setup = Setup::parse("t/setup.json", tuned).unwrap();
        assert_eq!((setup.namespace.as_deref(), setup.label()), (Some("tuned"), "tuned setup, 1 change".to_string()));
        let odd = tuned.replace("\"namespace\":\"tuned\"", "\"namespace\":\"tu ned; drop\"");
        assert!(Setup::parse("t/setup.json", &odd).unwrap_err().to_string().contains("lower-case identifier"));
        let bare = r#"{"name":"tuned","tuned":true,"about":"x","changes":[]}"#;
        assert!(Setup::parse("t/setup.json", bare).unwrap_err().to_string().contains("lists its changes"));
        let typo = r#"{"name":"paper","tuned":false,"about":"x","changes":[],"namspace":"x"}"#;
        assert!(Setup::parse("t/setup.json", typo).unwrap_err().to_string().contains("unknown field"));
    }

    #[test]
    fn a_loaded_column_is_a_plain_name_read_from_a_dotted_path() {
        let with = |loaded: &str| format!(r#"{{"name":"tuned","tuned":true,"about":"x","loaded_columns":{loaded},"changes":[{{"what":"a","why":"b","source":"c"}}]}}"#);
        let setup = Setup::parse("t/setup.json", &with(r#"{"repo_name":"repo.name"}"#)).unwrap();
        assert_eq!(setup.loaded_columns["repo_name"], "repo.name");
        assert!(Setup::parse("t/setup.json", &with(r#"{"repo name; drop":"repo.name"}"#)).unwrap_err().to_string().contains("lower-case identifier"));
        assert!(Setup::parse("t/setup.json", &with(r#"{"repo_name":"repo..name"}"#)).unwrap_err().to_string().contains("dotted path"));
    }
}

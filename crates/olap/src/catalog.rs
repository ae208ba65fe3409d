//! The query catalog: every query text, index definition and variant lives in a
//! file under `queries/`, read once at start; the runner never contains query text.
//!
//! ```text
//! queries/variants/<variant>.json          which queries a variant has, how to compare them
//! queries/<dialect>/indexes.<ext>          the dialect's index definitions
//! queries/<dialect>/<variant>/<Q>.<ext>    one query in one dialect (sql, json, ...)
//! queries/paper.json                       the paper's published numbers
//! ```
//!
//! A dialect is the folder an engine reads (its name, e.g. `postgres`). Adding a
//! variant or a dialect means adding files here, nothing in code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ghbench_core::{Setup, TableName};
use include_dir::{include_dir, Dir};
use serde::{Deserialize, Serialize};

/// What the catalog says that a run record keeps.
pub use ghbench_record::catalog::{Compare, PaperResults};

/// The repository's `queries/` folder, compiled into the binary (build.rs makes
/// cargo rebuild when it changes).
static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../queries");

/// Each engine folder's written-down setup (see [`Setup`]).
pub const SETUP_FILE: &str = "setup.json";

/// The placeholder for the table (collection) name in every query file.
pub const TABLE_PLACEHOLDER: &str = "{table}";

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("reading {path}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}")]
    Json { path: String, source: serde_json::Error },
    #[error("no query file for {dialect}/{variant}/{query} in the catalog")]
    MissingQuery { dialect: String, variant: String, query: String },
    #[error("no index file for {dialect} in the catalog")]
    MissingIndexes { dialect: String },
    #[error("unknown variant '{0}' (the catalog has: {1})")]
    UnknownVariant(String, String),
    #[error("the catalog has no variants (queries/variants/*.json)")]
    Empty,
    #[error("{path}: {what} {name:?} is not a name ghbench can use: write 1 to 64 letters, digits, '_' or '-' (it names files and records)")]
    BadName { path: String, what: &'static str, name: String },
}

/// Whether a variant's or query's name may name files (answers, records,
/// charts): letters, digits, `_` and `-`, as a table name is checked, so a
/// catalog of the user's cannot reach outside the results folder (`../x`).
fn usable_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}


/// One query of a variant, as `queries/variants/<variant>.json` describes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuerySpec {
    pub title: String,
    pub compare: Compare,
}

#[derive(Debug, Clone, Deserialize)]
struct VariantFile {
    queries: BTreeMap<String, QuerySpec>,
}

/// A query's text for one dialect, with its table placeholder still in it.
#[derive(Debug, Clone)]
pub struct QueryFile {
    /// Path inside the catalog, e.g. `postgres/corrected/A.sql`.
    pub path: String,
    pub text: String,
}

impl QueryFile {
    /// The text with the (validated, hence safe to splice) table name in place.
    pub fn for_table(&self, table: &TableName) -> String {
        self.text.replace(TABLE_PLACEHOLDER, table.as_str())
    }
}


#[derive(Debug, Clone)]
pub struct Catalog {
    /// Where it came from: `embedded` or a folder.
    pub origin: String,
    files: BTreeMap<String, String>,
    variants: BTreeMap<String, BTreeMap<String, QuerySpec>>,
}

impl Catalog {
    /// The catalog compiled into the binary.
    pub fn embedded() -> Result<Catalog, CatalogError> {
        let mut files = BTreeMap::new();
        collect_embedded(&EMBEDDED, &mut files);
        Catalog::from_files("embedded".into(), files)
    }

    /// A catalog read from a folder laid out like `queries/` (to try edited
    /// queries without rebuilding).
    pub fn from_dir(dir: &Path) -> Result<Catalog, CatalogError> {
        let mut files = BTreeMap::new();
        collect_dir(dir, dir, &mut files)?;
        Catalog::from_files(dir.display().to_string(), files)
    }

    /// `files`: path relative to the catalog root (with `/`) -> contents.
    pub fn from_files(origin: String, files: BTreeMap<String, String>) -> Result<Catalog, CatalogError> {
        let mut variants = BTreeMap::new();
        for (path, text) in &files {
            let Some(name) = path.strip_prefix("variants/").and_then(|n| n.strip_suffix(".json")) else { continue };
            let file: VariantFile = parse_json(path, text)?;
            let bad = |what, name: &str| CatalogError::BadName { path: path.clone(), what, name: name.to_string() };
            if !usable_name(name) {
                return Err(bad("the variant", name));
            }
            if let Some(query) = file.queries.keys().find(|q| !usable_name(q)) {
                return Err(bad("the query", query));
            }
            variants.insert(name.to_string(), file.queries);
        }
        if variants.is_empty() {
            return Err(CatalogError::Empty);
        }
        Ok(Catalog { origin, files, variants })
    }

    pub fn variant_names(&self) -> Vec<String> {
        self.variants.keys().cloned().collect()
    }

    /// The queries of a variant, by name (`A`, `B`, ...), in name order.
    pub fn variant(&self, name: &str) -> Result<&BTreeMap<String, QuerySpec>, CatalogError> {
        self.variants
            .get(name)
            .ok_or_else(|| CatalogError::UnknownVariant(name.to_string(), self.variant_names().join(", ")))
    }

    /// `<dialect>/<variant>/<query>.<any extension>`.
    pub fn query(&self, dialect: &str, variant: &str, query: &str) -> Result<QueryFile, CatalogError> {
        self.find(&format!("{dialect}/{variant}/{query}.")).ok_or_else(|| CatalogError::MissingQuery {
            dialect: dialect.into(),
            variant: variant.into(),
            query: query.into(),
        })
    }

    /// `<dialect>/indexes.<any extension>`.
    pub fn indexes(&self, dialect: &str) -> Result<QueryFile, CatalogError> {
        self.find(&format!("{dialect}/indexes."))
            .ok_or_else(|| CatalogError::MissingIndexes { dialect: dialect.into() })
    }

    /// `<dialect>/setup.json`: the engine's setup, written down (None if the
    /// folder has none).
    pub fn setup(&self, dialect: &str) -> anyhow::Result<Option<Setup>> {
        let path = format!("{dialect}/{SETUP_FILE}");
        self.files.get(&path).map(|text| Setup::parse(&path, text)).transpose()
    }

    /// Any file of the catalog by its path (`postgres-tuned/table.sql`).
    pub fn file(&self, path: &str) -> Option<QueryFile> {
        self.files.get(path).map(|text| QueryFile { path: path.to_string(), text: text.clone() })
    }

    /// The longest name any dialect's index file derives from the table, past
    /// the table's own name (`{table}_idx_issue_comments`: 19): a table name
    /// must leave that much room below [`TableName::MAX_LEN`], or its indexes
    /// cannot be named.
    pub fn longest_derived_suffix(&self) -> usize {
        self.longest_derived_tail().len()
    }

    /// What that longest derived name adds to the table's (`_idx_issue_comments`),
    /// for messages that name it.
    pub fn longest_derived_tail(&self) -> &str {
        let tail = |after: &str| after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        self.files
            .iter()
            .filter(|(path, _)| path.split('/').nth(1).is_some_and(|name| name.starts_with("indexes.")))
            .flat_map(|(_, text)| text.split(TABLE_PLACEHOLDER).skip(1).map(|after| &after[..tail(after)]))
            .max_by_key(|t| t.len())
            .unwrap_or("")
    }

    /// The paper's numbers, if the catalog has them.
    pub fn paper(&self) -> Option<PaperResults> {
        let text = self.files.get("paper.json")?;
        parse_json("paper.json", text).ok()
    }

    fn find(&self, prefix: &str) -> Option<QueryFile> {
        let (path, text) = self.files.range(prefix.to_string()..).next().filter(|(p, _)| p.starts_with(prefix))?;
        Some(QueryFile { path: path.clone(), text: text.clone() })
    }
}

/// The catalog compiled in, read once for the process: every engine's setup
/// comes from it (the registry's, and each report's).
pub fn compiled_in() -> Result<&'static Catalog, &'static str> {
    static READ: LazyLock<Result<Catalog, String>> = LazyLock::new(|| Catalog::embedded().map_err(|e| format!("{:#}", anyhow::Error::from(e))));
    READ.as_ref().map_err(String::as_str)
}

/// The setup written down for `engine` in the catalog compiled in (None if
/// there is none, or it does not read: the catalog's tests read every one).
pub fn embedded_setup(engine: &str) -> Option<Setup> {
    compiled_in().ok()?.setup(engine).ok().flatten()
}

pub fn parse_json<T: serde::de::DeserializeOwned>(path: &str, text: &str) -> Result<T, CatalogError> {
    serde_json::from_str(text).map_err(|source| CatalogError::Json { path: path.into(), source })
}

fn collect_embedded(dir: &Dir<'_>, files: &mut BTreeMap<String, String>) {
    for file in dir.files() {
        if let Some(text) = file.contents_utf8() {
            files.insert(slash_path(file.path()), text.to_string());
        }
    }
    for sub in dir.dirs() {
        collect_embedded(sub, files);
    }
}

fn collect_dir(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>) -> Result<(), CatalogError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| CatalogError::Io { path, source }
    };
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path: PathBuf = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            collect_dir(root, &path, files)?;
        } else {
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            files.insert(slash_path(path.strip_prefix(root).unwrap_or(&path)), text);
        }
    }
    Ok(())
}

fn slash_path(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_has_every_query_for_every_dialect() {
        let catalog = Catalog::embedded().unwrap();
        assert_eq!(catalog.variant_names(), ["corrected", "published"]);
        for variant in catalog.variant_names() {
            let queries = catalog.variant(&variant).unwrap();
            assert_eq!(queries.keys().cloned().collect::<Vec<_>>(), ["A", "B", "C", "D"]);
            for query in queries.keys() {
                for dialect in ["postgres", "mongo"] {
                    let file = catalog.query(dialect, &variant, query).unwrap();
                    assert!(file.text.contains(if dialect == "postgres" { "{table}" } else { "pipeline" }), "{}", file.path);
                }
            }
        }
        assert!(catalog.indexes("postgres").is_ok() && catalog.indexes("mongo").is_ok());
        assert_eq!(catalog.paper().unwrap().seconds["D"][&"mongo".into()], 8624.0);
        assert!(catalog.query("postgres", "corrected", "E").is_err());
        assert!(catalog.variant("fast").is_err());
    }

    #[test]
    fn every_engine_folder_writes_its_setup_down_and_a_tuned_one_says_what_it_changes() {
        let catalog = Catalog::embedded().unwrap();
        let folders: std::collections::BTreeSet<&str> =
            catalog.files.keys().filter(|p| p.contains("/corrected/")).filter_map(|p| p.split('/').next()).collect();
        assert!(folders.len() >= 6, "{folders:?}");
        for folder in folders {
            let setup = catalog.setup(folder).unwrap().unwrap_or_else(|| panic!("{folder} has no setup.json"));
            assert!(setup.changes.iter().all(|c| !c.source.is_empty() && !c.why.is_empty()), "{folder}");
            if let Some(of) = &setup.of {
                assert!(setup.tuned && catalog.setup(of).unwrap().is_some(), "{folder} changes {of}, a written-down setup");
                for variant in catalog.variant_names() {
                    for query in catalog.variant(&variant).unwrap().keys() {
                        assert!(catalog.query(folder, &variant, query).is_ok(), "{folder} answers {query} {variant}");
                    }
                }
            }
        }
        assert_eq!(embedded_setup("postgres-tuned").unwrap().of.as_deref(), Some("postgres"));
        assert!(embedded_setup("no-such-engine").is_none());
    }

    #[test]
    fn the_table_placeholder_takes_the_validated_name() {
        let file = QueryFile { path: "x.sql".into(), text: "SELECT 1 FROM {table} t".into() };
        assert_eq!(file.for_table(&"t_1".parse().unwrap()), "SELECT 1 FROM t_1 t");
    }

    #[test]
    fn a_variant_or_query_name_that_could_reach_outside_a_folder_is_refused() {
        let variant = r#"{"queries": {"A": {"title": "t", "compare": "ordered"}}}"#;
        let catalog = |path: &str, text: &str| Catalog::from_files("test".into(), BTreeMap::from([(path.to_string(), text.to_string())]));
        assert!(catalog("variants/mine.json", variant).is_ok());
        for (path, text) in [
            ("variants/mine.json", variant.replace("\"A\"", "\"../../x\"")),
            ("variants/mine.json", variant.replace("\"A\"", "\"\"")),
            ("variants/a b.json", variant.to_string()),
        ] {
            let said = catalog(path, &text).unwrap_err().to_string();
            assert!(said.contains("is not a name ghbench can use"), "{said}");
        }
    }

    #[test]
    fn a_folder_catalog_reads_the_same_layout() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../queries");
        let from_dir = Catalog::from_dir(&dir).unwrap();
        let embedded = Catalog::embedded().unwrap();
        assert_eq!(from_dir.files, embedded.files);
    }

    #[test]
    fn a_table_name_that_leaves_the_derived_room_names_every_index() {
        let catalog = Catalog::embedded().unwrap();
        let room = catalog.longest_derived_suffix();
        assert!(room > 0, "the index files name their indexes after the table");
        // The longest derived name of a table `room` bytes short of the limit
        // is exactly at the limit.
        let longest_derived = |table_len: usize| {
            let table: TableName = format!("t{}", "x".repeat(table_len - 1)).parse().unwrap();
            ["postgres", "normalized"]
                .iter()
                .flat_map(|dialect| catalog.indexes(dialect).unwrap().for_table(&table).split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map(str::len).collect::<Vec<_>>())
                .max()
                .unwrap()
        };
        assert_eq!(longest_derived(TableName::MAX_LEN - room), TableName::MAX_LEN);
    }
}

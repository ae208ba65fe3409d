//! The setups of the collection layout: the paper's (`mongo`: one collection
//! named as the table, the paper's five single-field indexes) and any other
//! written down under `queries/<engine>/` (`mongo-tuned`): its `setup.json`
//! (the changes with their sources; the namespace its collection lives in,
//! `tuned.<table>`, apart from the paper's), its `collection.json` (how the
//! collection is created, the server parameters its queries run with), its
//! `indexes.json` and its pipelines (which may carry a `hint`). A further
//! setup is such a folder and one registry line,
//! `.with(ghbench_mongo::setup_plugin("<engine>"))`.

use std::sync::{Arc, LazyLock, Mutex};

use anyhow::{bail, Context as _};
use ghbench_core::changes::{self, Entry, Kind, Made, Parameter, ServerRef};
use ghbench_core::{EngineSpec, Setup, TableName};
use ghbench_engine::query::{parse_json, Catalog};
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde::Deserialize;

use crate::error::refusal;
use crate::SPEC;

/// How a setup other than the paper's creates its collection, beside its `setup.json`.
pub const COLLECTION_FILE: &str = "collection.json";

/// One setup of the collection layout, as the engine runs it.
#[derive(Debug)]
pub struct MongoSetup {
    pub spec: EngineSpec,
    /// As written down in the catalog (None if the folder has no `setup.json`).
    pub setup: Option<Setup>,
    /// Options of the collection's `create` command (e.g. its block compressor).
    pub create: Document,
    /// Server parameters set for this setup's queries only (restored after each).
    pub parameters: Document,
}

/// `collection.json`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectionFile {
    #[allow(dead_code)]
    comment: Vec<String>,
    #[serde(default)]
    create: serde_json::Map<String, serde_json::Value>,
    #[serde(default, rename = "setParameter")]
    set_parameter: serde_json::Map<String, serde_json::Value>,
}

/// The paper's setup: the `mongo` engine.
pub static PAPER: LazyLock<MongoSetup> = LazyLock::new(|| {
    let setup = ghbench_engine::query::embedded_setup(SPEC.engine.name());
    MongoSetup { spec: SPEC.clone(), setup, create: Document::new(), parameters: Document::new() }
});

impl MongoSetup {
    /// The setup the catalog writes down for `engine` (`mongo-tuned`).
    pub fn from_catalog(catalog: &Catalog, engine: &str) -> anyhow::Result<MongoSetup> {
        let setup = catalog.setup(engine)?.with_context(|| format!("the catalog has no {engine}/setup.json"))?;
        if setup.namespace.is_none() {
            bail!("{engine}/setup.json: a setup beside the paper's names its namespace (its collections' prefix)");
        }
        let path = format!("{engine}/{COLLECTION_FILE}");
        let file = catalog.file(&path).with_context(|| format!("the catalog has no {path}"))?;
        let file: CollectionFile = parse_json(&path, &file.text)?;
        let document = |map: serde_json::Map<String, serde_json::Value>| match Bson::try_from(serde_json::Value::Object(map)) {
            Ok(Bson::Document(d)) => Ok(d),
            _ => Err(anyhow::anyhow!("{path}: not extended JSON")),
        };
        let (create, parameters) = (document(file.create)?, document(file.set_parameter)?);
        Ok(MongoSetup { spec: SPEC.for_setup(engine, &setup.about), setup: Some(setup), create, parameters })
    }

    /// The collection of `table` in this setup: `tuned.<table>`, or the
    /// table's own name for the paper's.
    pub fn collection(&self, table: &TableName) -> String {
        match self.setup.as_ref().and_then(|s| s.namespace.as_deref()) {
            Some(namespace) => format!("{namespace}.{table}"),
            None => table.to_string(),
        }
    }

    /// Creates `collection` with the setup's options; Ok if another run created it first.
    pub async fn create_collection(&self, db: &Database, collection: &str) -> Result<(), mongodb::error::Error> {
        let mut command = doc! {"create": collection};
        command.extend(self.create.clone());
        match db.run_command(command).await {
            // NamespaceExists: another run created it between our look and our create.
            Err(e) if crate::error::code(&e) == Some(48) => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

/// The server parameters a setup sets for its own queries: what the server
/// had, and whether it lets ghbench change them (a server may not know a
/// parameter, or refuse the user `setParameter`: then the queries run
/// without it, and the record says so).
#[derive(Debug, Clone)]
pub struct ServerParameters {
    /// Name, the value the setup wants, the value the server had (None: refused, with why).
    each: Vec<(String, Bson, Result<Bson, String>)>,
    /// The server's address (or its URL, password hidden, where it has no
    /// one address) and the engine, for the journal of server changes.
    server: (String, String),
    /// The journal's entries of the parameters set now, until they are restored.
    set_now: Arc<Mutex<Vec<Made>>>,
}

impl ServerParameters {
    /// Reads each parameter's value and sets it to that same value, to learn
    /// whether the server lets it be set, changing nothing.
    /// `server`: its address and the engine's name, for the journal.
    pub async fn probe(db: &Database, wanted: &Document, server: (String, String)) -> ServerParameters {
        let admin = db.client().database("admin");
        let mut each = Vec::new();
        for (name, value) in wanted {
            let had = match admin.run_command(doc! {"getParameter": 1, name: 1}).await {
                Ok(reply) => match reported(&reply, name) {
                    Ok(had) => match admin.run_command(doc! {"setParameter": 1, name: had.clone()}).await {
                        // Another ghbench (a bench in another terminal) may
                        // have it set now: the server's own value is the one
                        // its journal entry says it had.
                        Ok(_) => Ok(set_by_another(&server.0, name).unwrap_or(had)),
                        Err(e) => Err(format!("setParameter refused: {}", refusal("setParameter", &e))),
                    },
                    Err(why) => Err(why),
                },
                Err(e) => Err(format!("getParameter refused: {}", refusal("getParameter", &e))),
            };
            each.push((name.clone(), value.clone(), had));
        }
        ServerParameters { each, server, set_now: Arc::default() }
    }

    /// Sets each parameter the server lets ghbench set to the setup's value,
    /// each written to the journal of server changes first: a ghbench killed
    /// before [`ServerParameters::restore`] leaves it for the next one.
    pub async fn apply(&self, db: &Database) -> anyhow::Result<()> {
        for (name, wanted, had) in &self.each {
            let Ok(had) = had else { continue };
            let (address, engine) = &self.server;
            let mut entry = Entry::new(ServerRef { name: None, address: address.clone() }, Some(engine), Kind::Parameter, format!("setParameter {name} set to {wanted} (it was {had})"));
            entry.parameter = Some(Parameter { name: name.clone(), value: wanted.clone().into_relaxed_extjson(), had: had.clone().into_relaxed_extjson() });
            let made = changes::record(&entry).map_err(anyhow::Error::msg)?;
            lock(&self.set_now).push(made);
        }
        Ok(self.set(db, |wanted, _| wanted.clone()).await?)
    }

    /// Puts back each parameter's value from before [`ServerParameters::apply`].
    pub async fn restore(&self, db: &Database) -> Result<(), mongodb::error::Error> {
        self.set(db, |_, had| had.clone()).await?;
        for made in std::mem::take(&mut *lock(&self.set_now)) {
            made.undone();
        }
        Ok(())
    }

    async fn set(&self, db: &Database, pick: impl Fn(&Bson, &Bson) -> Bson) -> Result<(), mongodb::error::Error> {
        let admin = db.client().database("admin");
        for (name, wanted, had) in &self.each {
            if let Ok(had) = had {
                admin.run_command(doc! {"setParameter": 1, name: pick(wanted, had)}).await?;
            }
        }
        Ok(())
    }

    /// For the server's settings in the record: each parameter and what was done.
    pub fn settings(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.each.iter().map(|(name, wanted, had)| {
            let said = match had {
                Ok(had) => format!("{wanted} for this setup's queries only (the server's value, {had}, restored after each)"),
                Err(why) => format!("wanted {wanted}; {why}"),
            };
            (format!("setParameter {name}"), said)
        })
    }
}

/// Puts back a parameter a ghbench that ended left set (its journal entry),
/// on the server `db` is connected to: what was done, for people.
pub async fn undo_parameter(db: &Database, entry: &Entry) -> Result<String, String> {
    let parameter = entry.parameter.as_ref().ok_or("the entry names no parameter")?;
    let had = Bson::try_from(parameter.had.clone()).map_err(|e| format!("the value to put back is not BSON: {e}"))?;
    let admin = db.client().database("admin");
    admin.run_command(doc! {"setParameter": 1, parameter.name.as_str(): had.clone()}).await.map_err(|e| refusal("setParameter", &e))?;
    Ok(format!("setParameter {} put back to {had}", parameter.name))
}

/// The value parameter `name` had on the server at `address` before another
/// ghbench, still running, set it (its journal entry), if one has.
fn set_by_another(address: &str, name: &str) -> Option<Bson> {
    changes::left_by_others().into_iter().find_map(|(found, _)| {
        let entry = found.entry.ok()?;
        let parameter = entry.parameter.filter(|p| p.name == name)?;
        if !ghbench_core::place::same_address(&entry.server.address, address) {
            return None;
        }
        Bson::try_from(parameter.had).ok()
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value a `getParameter` reply gives for `name`: MongoDB answers it
/// beside `ok`; a server that does not know the parameter answers without it
/// (SecantusDB 0.7) or fails the command.
fn reported(reply: &Document, name: &str) -> Result<Bson, String> {
    reply.get(name).cloned().ok_or_else(|| "the server does not report it (getParameter answered without it): not set".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tuned_setup_has_its_own_collection_and_its_creation_options() {
        let table: TableName = "github2015".parse().unwrap();
        assert_eq!(PAPER.collection(&table), "github2015");
        assert!(PAPER.create.is_empty() && PAPER.parameters.is_empty());
        let tuned = MongoSetup::from_catalog(&Catalog::embedded().unwrap(), "mongo-tuned").unwrap();
        assert_eq!(tuned.collection(&table), "tuned.github2015");
        let config = tuned.create.get_document("storageEngine").unwrap().get_document("wiredTiger").unwrap();
        assert_eq!(config.get_str("configString").unwrap(), "block_compressor=zstd");
        assert!(tuned.parameters.get_bool("internalQueryPlannerGenerateCoveredWholeIndexScans").unwrap());
    }

    /// A reply shaped as MongoDB's documentation shows it (see tests/replies/README.md).
    fn reply(name: &str) -> Document {
        let path = format!("{}/tests/replies/get_parameter/{name}.json", env!("CARGO_MANIFEST_DIR"));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        mongodb::bson::to_document(&json).unwrap()
    }

    #[test]
    fn a_parameter_the_server_reports_is_set_and_restored_and_one_it_does_not_is_said() {
        const NAME: &str = "internalQueryPlannerGenerateCoveredWholeIndexScans";
        assert_eq!(reported(&reply("mongodb_8"), NAME), Ok(Bson::Boolean(false)), "the server's own value, restored after each query");
        let unknown = reported(&reply("secantusdb"), NAME).unwrap_err();
        assert!(unknown.contains("does not report it") && unknown.contains("not set"), "{unknown}");
        let wanted = Bson::Boolean(true);
        let parameters = ServerParameters { each: vec![(NAME.into(), wanted.clone(), Ok(Bson::Boolean(false))), ("other".into(), wanted, Err(unknown))], server: ("127.0.0.1:27017".into(), "mongo-tuned".into()), set_now: Arc::default() };
        let said: Vec<(String, String)> = parameters.settings().collect();
        assert_eq!(said[0], (format!("setParameter {NAME}"), "true for this setup's queries only (the server's value, false, restored after each)".to_string()));
        assert!(said[1].1.starts_with("wanted true; the server does not report it"), "{said:?}");
    }
}

//! The derived tables in PostgreSQL: schema `normalized`, one table per path
//! of each collection, and two metadata tables that record every path ↔ table
//! and key/type ↔ column, so nothing (queries included) guesses a name.
//!
//! New paths found while loading extend the tables in a short transaction of
//! their own under ghbench's DDL lock, before the hour's data goes in: every
//! loader reads what the others recorded and takes their names for the same
//! paths, so hours loading side by side agree on one schema. The DDL never
//! runs inside an hour's transaction, which would hold the table's strongest
//! lock until the hour commits and could wait on another hour forever.

use std::collections::{HashMap, HashSet};

use ghbench_normalize::names::distinct;
use ghbench_normalize::{ColumnKey, Kind, Schema, TableDef, ROOT};
use ghbench_postgres::ledger::SERIALIZE_DDL;
use tokio_postgres::{Client, Error};

/// The PostgreSQL schema of every derived table.
pub const SCHEMA: &str = "normalized";
const TABLES: &str = "normalized.ghbench_tables";
const COLUMNS: &str = "normalized.ghbench_columns";

/// Creates the schema and the metadata tables. Run after [`SERIALIZE_DDL`].
pub fn create_sql() -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
         CREATE TABLE IF NOT EXISTS {TABLES} (
            table_name text PRIMARY KEY, collection text NOT NULL, path text NOT NULL,
            parent_table text REFERENCES {TABLES} ON DELETE CASCADE,
            key text,        -- its key in the parent; NULL: the nested arrays of an array
            is_array boolean NOT NULL, ord bigserial);
         CREATE TABLE IF NOT EXISTS {COLUMNS} (
            table_name text NOT NULL REFERENCES {TABLES} ON DELETE CASCADE, column_name text NOT NULL,
            collection text NOT NULL,
            key text,        -- NULL: an array's scalar elements (v_<type>)
            kind text NOT NULL, ord bigserial, PRIMARY KEY (table_name, column_name));"
    )
}

/// `normalized."name"` (names are `[0-9a-z_]`, quoted all the same).
pub fn qualified(name: &str) -> String {
    format!("{SCHEMA}.\"{name}\"")
}

/// Drops the collection's derived tables and their metadata. Run after [`SERIALIZE_DDL`].
pub async fn drop_collection(client: &Client, collection: &str) -> Result<(), Error> {
    for table in table_names(client, collection).await? {
        client.batch_execute(&format!("DROP TABLE IF EXISTS {}", qualified(&table))).await?;
    }
    client.execute(&format!("DELETE FROM {TABLES} WHERE collection = $1"), &[&collection]).await?;
    Ok(())
}

/// Creates the collection's root table (named as the collection) when missing;
/// refuses a name another collection's derived table already has. Run after
/// [`SERIALIZE_DDL`]. True when it was created (it holds nothing yet).
pub async fn create_root(client: &Client, collection: &str) -> Result<Result<bool, String>, Error> {
    let owner: Option<String> =
        client.query_opt(&format!("SELECT collection FROM {TABLES} WHERE table_name = $1"), &[&collection]).await?.map(|r| r.get(0));
    match owner.as_deref() {
        Some(c) if c == collection => {}
        Some(other) => {
            return Ok(Err(format!(
                "'{collection}' already names a derived table of collection '{other}' in schema {SCHEMA}: choose another --table"
            )))
        }
        None => {
            let taken: bool = client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&qualified(collection)]).await?.get(0);
            if taken {
                return Ok(Err(format!("'{collection}' already names something else in schema {SCHEMA} (an index or sequence): choose another --table")));
            }
            client.batch_execute(&format!("CREATE TABLE {} (did bigint PRIMARY KEY)", qualified(collection))).await?;
            let sql = format!("INSERT INTO {TABLES} (table_name, collection, path, parent_table, key, is_array) VALUES ($1, $1, '', NULL, NULL, false)");
            client.execute(&sql, &[&collection]).await?;
            return Ok(Ok(true));
        }
    }
    Ok(Ok(false))
}

/// The collection's derived tables, root first.
pub async fn table_names(client: &Client, collection: &str) -> Result<Vec<String>, Error> {
    let rows = client.query(&format!("SELECT table_name FROM {TABLES} WHERE collection = $1 ORDER BY ord"), &[&collection]).await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

fn key_text(key: &ColumnKey) -> Option<&str> {
    match key {
        ColumnKey::Key(k) => Some(k),
        ColumnKey::Element => None,
    }
}

fn column_key(key: Option<String>) -> ColumnKey {
    key.map_or(ColumnKey::Element, ColumnKey::Key)
}

/// The collection's schema as recorded (an empty one when nothing is).
pub async fn load(client: &Client, collection: &str) -> Result<Schema, Error> {
    let mut schema = Schema::new(collection);
    let mut index: HashMap<String, usize> = HashMap::from([(collection.to_string(), ROOT)]);
    let sql = format!("SELECT table_name, path, parent_table, key, is_array FROM {TABLES} WHERE collection = $1 AND parent_table IS NOT NULL ORDER BY ord");
    for row in client.query(&sql, &[&collection]).await? {
        let (name, path, parent, key, array): (String, String, String, Option<String>, bool) = (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        let Some(&parent) = index.get(&parent) else { continue };
        let table = schema.restore_table(parent, column_key(key), array, path, name.clone());
        index.insert(name, table);
    }
    let sql = format!("SELECT table_name, column_name, key, kind FROM {COLUMNS} WHERE collection = $1 ORDER BY ord");
    for row in client.query(&sql, &[&collection]).await? {
        let (table, name, key, kind): (String, String, Option<String>, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
        if let (Some(&table), Some(kind)) = (index.get(&table), Kind::from_suffix(&kind)) {
            schema.restore_column(table, column_key(key), kind, name);
        }
    }
    Ok(schema)
}

/// How much of a local schema the database has: its first `tables` tables and,
/// per table, its first `columns[t]` columns (a schema only grows).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    tables: usize,
    columns: Vec<usize>,
}

impl Known {
    /// All of `schema` (just loaded from the database).
    pub fn all(schema: &Schema) -> Known {
        Known { tables: schema.tables().len(), columns: schema.tables().iter().map(|t| t.columns.len()).collect() }
    }

    fn is_all(&self, schema: &Schema) -> bool {
        *self == Known::all(schema)
    }
}

/// Gives the database the tables and columns `schema` has found since `known`,
/// taking the names other loaders recorded for the same paths, in a short
/// transaction of its own (see the module's documentation).
///
/// Its DDL waits for its locks as long as another session holds them (a
/// query of hours, an index build on a derived table): no lock limit of
/// ghbench's own cuts `ghbench normalize`, an hours-long step, at its next
/// new path. A load's extension is bounded by the step's `--timeout` like
/// the rest of the hour; a deadlock PostgreSQL ends itself.
pub async fn extend(client: &Client, schema: &mut Schema, known: &mut Known) -> Result<(), Error> {
    if known.is_all(schema) {
        return Ok(());
    }
    if let Err(e) = client.batch_execute(&format!("BEGIN; {SERIALIZE_DDL}")).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(e);
    }
    match extend_in(client, schema, known).await {
        Ok(()) => {
            client.batch_execute("COMMIT").await?;
            *known = Known::all(schema);
            Ok(())
        }
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e)
        }
    }
}

async fn extend_in(client: &Client, schema: &mut Schema, known: &Known) -> Result<(), Error> {
    let collection = schema.collection().to_string();
    // Every name in the schema `normalized` is taken: tables, indexes, sequences.
    let taken_sql = format!("SELECT relname::text FROM pg_class WHERE relnamespace = '{SCHEMA}'::regnamespace");
    let mut taken: HashSet<String> = client.query(&taken_sql, &[]).await?.iter().map(|r| r.get(0)).collect();
    let recorded_sql = format!("SELECT parent_table, key, is_array, table_name FROM {TABLES} WHERE collection = $1 AND parent_table IS NOT NULL");
    let recorded: HashMap<(String, Option<String>, bool), String> =
        client.query(&recorded_sql, &[&collection]).await?.iter().map(|r| ((r.get(0), r.get(1), r.get(2)), r.get(3))).collect();

    for table in known.tables..schema.tables().len() {
        let def = &schema.tables()[table];
        let parent = &schema.tables()[def.parent.unwrap_or(ROOT)];
        let key = def.key.as_ref().and_then(|k| key_text(k).map(str::to_string));
        if let Some(name) = recorded.get(&(parent.name.clone(), key.clone(), def.array)) {
            schema.rename_table(table, name.clone());
            continue;
        }
        let name = distinct(def.name.clone(), &schema.table_origin(table), |n| taken.contains(n));
        taken.insert(name.clone());
        schema.rename_table(table, name.clone());
        let def = &schema.tables()[table];
        client.batch_execute(&create_table_sql(def)).await?;
        let parent_name = schema.tables()[def.parent.unwrap_or(ROOT)].name.clone();
        let sql = format!("INSERT INTO {TABLES} (table_name, collection, path, parent_table, key, is_array) VALUES ($1, $2, $3, $4, $5, $6)");
        client.execute(&sql, &[&name, &collection, &def.path, &parent_name, &key, &def.array]).await?;
    }

    for table in in_lock_order(schema) {
        let from = known.columns.get(table).copied().unwrap_or(0);
        if from == schema.tables()[table].columns.len() {
            continue;
        }
        let table_name = schema.tables()[table].name.clone();
        let sql = format!("SELECT key, kind, column_name FROM {COLUMNS} WHERE table_name = $1");
        let rows = client.query(&sql, &[&table_name]).await?;
        let recorded: HashMap<(Option<String>, String), String> = rows.iter().map(|r| ((r.get(0), r.get(1)), r.get(2))).collect();
        let mut names: HashSet<String> = recorded.values().cloned().collect();
        for column in from..schema.tables()[table].columns.len() {
            let def = &schema.tables()[table].columns[column];
            let (key, kind) = (key_text(&def.key).map(str::to_string), def.kind);
            if let Some(name) = recorded.get(&(key.clone(), kind.suffix().to_string())) {
                schema.rename_column(table, column, name.clone());
                continue;
            }
            let name = distinct(def.name.clone(), &schema.column_origin(table, column), |n| names.contains(n));
            names.insert(name.clone());
            schema.rename_column(table, column, name.clone());
            client.batch_execute(&format!("ALTER TABLE {} ADD COLUMN \"{name}\" {}", qualified(&table_name), kind.sql_type())).await?;
            let sql = format!("INSERT INTO {COLUMNS} (table_name, column_name, collection, key, kind) VALUES ($1, $2, $3, $4, $5)");
            client.execute(&sql, &[&table_name, &name, &collection, &key, &kind.suffix()]).await?;
        }
    }
    Ok(())
}

/// The schema's tables in the order every transaction that writes several of
/// them takes them (by name): schema changes (`extend`) and each hour's COPY
/// (`rows`) never wait on each other's tables crosswise.
pub fn in_lock_order(schema: &Schema) -> Vec<usize> {
    let mut order: Vec<usize> = (0..schema.tables().len()).collect();
    order.sort_by(|a, b| schema.tables()[*a].name.cmp(&schema.tables()[*b].name));
    order
}

/// A derived table's linking columns; its key columns are added one by one.
/// `(did, rid)` is the key: `rid` counts a document's rows in the table.
fn create_table_sql(def: &TableDef) -> String {
    let columns: Vec<String> =
        linking_columns(def).iter().map(|c| format!("{c} {} NOT NULL", if *c == "did" { "bigint" } else { "integer" })).collect();
    format!("CREATE TABLE {} ({}, PRIMARY KEY (did, rid))", qualified(&def.name), columns.join(", "))
}

/// The linking columns of a table's rows, in COPY's order.
pub fn linking_columns(def: &TableDef) -> Vec<&'static str> {
    if def.is_root() {
        return vec!["did"];
    }
    let mut columns = vec!["did", "rid"];
    if def.has_pid() {
        columns.push("pid");
    }
    if def.array {
        columns.push("seq");
    }
    columns
}

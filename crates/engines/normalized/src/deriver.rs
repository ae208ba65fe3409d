//! Documents to derived rows to COPY, for the sink (an hour at a time) and for
//! `ghbench normalize` (a chunk of the `jsonb` table at a time).

use ghbench_normalize::Schema;
use serde_json::{Map, Value};
use tokio_postgres::{Client, Error};

use crate::meta::{self, Known};
use crate::rows::{PendingRows, SendError};

pub struct Deriver {
    schema: Schema,
    /// What of `schema` the database has.
    known: Known,
    pending: PendingRows,
}

impl Deriver {
    /// Starts from the collection's schema as the database records it.
    pub async fn load(client: &Client, collection: &str) -> Result<Deriver, Error> {
        let schema = meta::load(client, collection).await?;
        Ok(Deriver { known: Known::all(&schema), schema, pending: PendingRows::default() })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Documents waiting to be sent.
    pub fn documents(&self) -> u64 {
        self.pending.documents()
    }

    /// Derives document `did` from its (clean) JSON text.
    pub fn add(&mut self, did: i64, json: &str) -> Result<(), String> {
        let doc: Map<String, Value> = serde_json::from_str(json).map_err(|e| format!("document {did} is not a JSON object: {e}"))?;
        let derived = self.schema.derive(did, &doc);
        self.pending.add(&self.schema, &derived.rows);
        Ok(())
    }

    /// Creates the tables and columns first seen since the last call, in a
    /// transaction of its own; call outside any transaction, before [`Deriver::send`].
    pub async fn extend(&mut self, client: &Client) -> Result<(), Error> {
        meta::extend(client, &mut self.schema, &mut self.known).await
    }

    /// Sends the waiting rows inside the caller's transaction; rows per table index.
    pub async fn send(&self, client: &Client) -> Result<Vec<(usize, u64)>, SendError> {
        self.pending.send(client, &self.schema).await
    }

    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

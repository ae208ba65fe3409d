//! What a collection's statistics and an index build's reply say, read from
//! replies in every shape a MongoDB deployment gives them: one document per
//! shard from `$collStats`, a `raw` map of shard replies from `createIndexes`
//! on `mongos`. Pure functions over reply documents, so each shape is tested
//! (tests/replies/) without the server that answers it.

use std::collections::BTreeMap;

use mongodb::bson::{Bson, Document};

use crate::ledger::number;

/// What `serverStatus` says bounds concurrent clients: the connections the
/// server has and may still take, and its read and write tickets (how many
/// operations run in the storage engine at once; under `queues.execution`
/// from MongoDB 7.0, `wiredTiger.concurrentTransactions` before). A section
/// the reply lacks is said to be missing, not guessed.
pub fn concurrency_limits(reply: &Document) -> BTreeMap<String, String> {
    let mut limits = BTreeMap::new();
    let said = match reply.get_document("connections") {
        Ok(c) => match (number(c, "current"), number(c, "available")) {
            (Some(current), Some(available)) => format!("{current} open, {available} more available"),
            _ => "in the reply without current and available".into(),
        },
        Err(_) => "not in serverStatus".into(),
    };
    limits.insert("connections".into(), said);
    let tickets = reply
        .get_document("queues")
        .and_then(|q| q.get_document("execution"))
        .map(|t| (t, "queues.execution"))
        .or_else(|_| reply.get_document("wiredTiger").and_then(|w| w.get_document("concurrentTransactions")).map(|t| (t, "wiredTiger.concurrentTransactions")));
    match tickets {
        Ok((tickets, from)) => {
            for kind in ["read", "write"] {
                if let Some(total) = tickets.get_document(kind).ok().and_then(|t| number(t, "totalTickets")) {
                    limits.insert(format!("{kind} tickets"), format!("{total} ({from}.{kind}.totalTickets)"));
                }
            }
        }
        Err(_) => {
            limits.insert("tickets".into(), "not in serverStatus (neither queues.execution nor wiredTiger.concurrentTransactions)".into());
        }
    }
    limits
}

/// WiredTiger's `bytes read into cache` and `pages read into cache` from a
/// `serverStatus` reply, or why they are not there.
pub fn cache_reads(reply: &Document) -> Result<BTreeMap<String, u64>, String> {
    let cache = reply.get_document("wiredTiger").and_then(|w| w.get_document("cache")).map_err(|_| "the server's serverStatus has no wiredTiger.cache (SecantusDB 0.7 reports none)".to_string())?;
    let counters: BTreeMap<String, u64> = ["bytes read into cache", "pages read into cache"]
        .iter()
        .filter_map(|name| Some((name.to_string(), number(cache, name)?)))
        .collect();
    match counters.is_empty() {
        true => Err("wiredTiger.cache has no read counters".into()),
        false => Ok(counters),
    }
}

/// A collection's sizes, summed over its shards.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CollectionSizes {
    /// `storageSize`: bytes the data takes on disk (compressed by WiredTiger).
    pub on_disk: u64,
    /// `size`: the documents' uncompressed BSON bytes.
    pub logical: u64,
    /// `totalIndexSize`: the indexes' bytes on disk.
    pub indexes_total: u64,
    /// Each index's bytes on disk, by name, summed over shards.
    pub indexes: BTreeMap<String, u64>,
    /// The reply documents summed (one per shard).
    pub shards: usize,
}

impl CollectionSizes {
    /// `$collStats: {storageStats: {}}` answers one document per shard, each
    /// with its own `storageStats`; a document without them adds nothing.
    pub fn from_coll_stats_stage(replies: &[Document]) -> CollectionSizes {
        let mut sizes = CollectionSizes::default();
        for reply in replies {
            if let Ok(stats) = reply.get_document("storageStats") {
                sizes.add(stats);
            }
        }
        sizes
    }

    /// The deprecated `collStats` command's reply: the same fields at the top
    /// (on `mongos`, already summed over the shards).
    pub fn from_coll_stats_command(reply: &Document) -> CollectionSizes {
        let mut sizes = CollectionSizes::default();
        sizes.add(reply);
        sizes
    }

    fn add(&mut self, stats: &Document) {
        self.shards += 1;
        self.on_disk += number(stats, "storageSize").unwrap_or(0);
        self.logical += number(stats, "size").unwrap_or(0);
        self.indexes_total += number(stats, "totalIndexSize").unwrap_or(0);
        if let Ok(indexes) = stats.get_document("indexSizes") {
            for name in indexes.keys() {
                *self.indexes.entry(name.clone()).or_default() += number(indexes, name).unwrap_or(0);
            }
        }
    }

    /// Every size zero: nothing measured (a server that answers the stage
    /// without its statistics, as SecantusDB does), unless the collection is
    /// empty, which `rows` tells.
    pub fn unmeasured(&self, rows: u64) -> bool {
        rows > 0 && self.on_disk == 0 && self.logical == 0 && self.indexes_total == 0
    }
}

/// What a `createIndexes` reply says about the build.
#[derive(Debug, Default, PartialEq)]
pub struct IndexReply {
    /// Whether the index was built now: None when the reply does not say
    /// (no `numIndexesBefore`/`numIndexesAfter` anywhere in it).
    pub created: Option<bool>,
    /// The commit quorum the build waited for on a replica set (each shard's, once).
    pub commit_quorum: Option<String>,
}

impl IndexReply {
    /// Reads a standalone's or a replica set's reply, or `mongos`'s (each
    /// shard's under `raw`): built when any of them has more indexes after.
    pub fn read(reply: &Document) -> IndexReply {
        let mut parts: Vec<&Document> = vec![reply];
        if let Ok(raw) = reply.get_document("raw") {
            parts.extend(raw.values().filter_map(|shard| match shard {
                Bson::Document(d) => Some(d),
                _ => None,
            }));
        }
        let mut read = IndexReply::default();
        for part in parts {
            if let (Some(before), Some(after)) = (number(part, "numIndexesBefore"), number(part, "numIndexesAfter")) {
                read.created = Some(read.created.unwrap_or(false) || after > before);
            }
            if let Some(quorum) = part.get("commitQuorum") {
                let quorum = match quorum {
                    Bson::String(s) => s.clone(),
                    other => other.to_string(),
                };
                read.commit_quorum.get_or_insert(quorum);
            }
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_status(name: &str) -> Document {
        reply(&format!("server_status/{name}")).as_document().cloned().unwrap()
    }

    #[test]
    fn server_status_says_connections_and_tickets_in_either_place() {
        let v8 = concurrency_limits(&server_status("mongodb_8"));
        assert_eq!(v8["connections"], "12 open, 838848 more available");
        assert_eq!(v8["read tickets"], "128 (queues.execution.read.totalTickets)");
        let v6 = concurrency_limits(&server_status("mongodb_6"));
        assert_eq!(v6["write tickets"], "128 (wiredTiger.concurrentTransactions.write.totalTickets)");
        let bare = concurrency_limits(&mongodb::bson::doc! {"ok": 1});
        assert_eq!(bare["connections"], "not in serverStatus");
        assert!(bare["tickets"].starts_with("not in serverStatus"));
    }

    #[test]
    fn wiredtiger_cache_reads_come_from_server_status_or_are_said_missing() {
        let reads = cache_reads(&server_status("mongodb_8")).unwrap();
        assert_eq!(reads["bytes read into cache"], 52_428_800_000);
        assert_eq!(reads["pages read into cache"], 1_600_000);
        assert_eq!(reads.len(), 2, "only the read counters: {reads:?}");
        let none = cache_reads(&server_status("mongodb_6")).unwrap_err();
        assert!(none.contains("no wiredTiger.cache"), "{none}");
    }

    /// A reply shaped as MongoDB's documentation shows it (see tests/replies/README.md).
    fn reply(path: &str) -> Bson {
        let path = format!("{}/tests/replies/{path}.json", env!("CARGO_MANIFEST_DIR"));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        Bson::try_from(json).unwrap()
    }

    fn documents(path: &str) -> Vec<Document> {
        match reply(path) {
            Bson::Array(items) => items.into_iter().filter_map(|d| d.as_document().cloned()).collect(),
            other => panic!("{path}: not an array: {other}"),
        }
    }

    #[test]
    fn a_standalone_s_sizes_are_on_disk_with_the_logical_size_beside() {
        let sizes = CollectionSizes::from_coll_stats_stage(&documents("collstats/standalone"));
        assert_eq!((sizes.on_disk, sizes.logical, sizes.indexes_total, sizes.shards), (9_121_792, 31_457_280, 499_712, 1));
        assert_eq!(sizes.indexes["type_1"], 126_976);
        assert!(!sizes.unmeasured(7702));
    }

    #[test]
    fn a_sharded_collection_s_sizes_are_summed_over_its_shards() {
        let sizes = CollectionSizes::from_coll_stats_stage(&documents("collstats/sharded"));
        assert_eq!(sizes.shards, 2);
        assert_eq!(sizes.on_disk, 4_800_000 + 4_500_000);
        assert_eq!(sizes.logical, 16_000_000 + 15_000_000);
        assert_eq!(sizes.indexes_total, 300_000 + 280_000);
        assert_eq!(sizes.indexes["_id_"], 390_000);
        assert_eq!(sizes.indexes["type_1"], 190_000);
    }

    #[test]
    fn zero_sizes_for_documents_are_unmeasured_not_empty() {
        let zeros = mongodb::bson::doc! {"storageStats": {"size": 0, "count": 50, "storageSize": 0, "totalIndexSize": 0, "indexSizes": {"_id_": 0}}};
        let sizes = CollectionSizes::from_coll_stats_stage(&[zeros]);
        assert!(sizes.unmeasured(50));
        assert!(!sizes.unmeasured(0), "an empty collection's zeros are its sizes");
    }

    #[test]
    fn index_replies_say_whether_the_index_was_built_in_every_topology() {
        let read = |name: &str| IndexReply::read(reply(&format!("create_indexes/{name}")).as_document().unwrap());
        assert_eq!(read("standalone_created"), IndexReply { created: Some(true), commit_quorum: None });
        assert_eq!(read("standalone_existing"), IndexReply { created: Some(false), commit_quorum: None });
        assert_eq!(read("replica_set_created"), IndexReply { created: Some(true), commit_quorum: Some("votingMembers".into()) });
        // Built on one shard, already there on the other: built.
        assert_eq!(read("sharded_created"), IndexReply { created: Some(true), commit_quorum: Some("votingMembers".into()) });
        assert_eq!(IndexReply::read(&mongodb::bson::doc! {"ok": 1}), IndexReply::default());
    }
}

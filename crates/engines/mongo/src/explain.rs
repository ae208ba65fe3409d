//! Reading an explain reply: what the winning plan (each shard's, on a sharded
//! cluster) does, never what a rejected plan would have done.
//!
//! The reply's shape varies by version, query engine and topology (MongoDB's
//! "Explain Results" page): the classic engine's `winningPlan` is a tree of
//! `stage`s; the slot-based engine (7.0+) puts that tree under
//! `winningPlan.queryPlan` beside a `slotBasedPlan` of its own stages; an
//! aggregation that is not pushed down wraps it in a `$cursor` stage of
//! `stages`; `mongos` lists each shard's plan under `shards` (an array of
//! `winningPlan`s for a find, a map of whole replies for an aggregation).
//! Everywhere, `rejectedPlans` (and `allPlansExecution`) name indexes the
//! winning plan did not use, and `executionStats.executionStages` repeats the
//! winning plan in the executor's own (for the slot-based engine: lower-level)
//! stage names: neither is read.

use serde_json::Value;

/// The plan stages that read an index.
pub const INDEX_STAGES: [&str; 4] = ["IXSCAN", "COUNT_SCAN", "DISTINCT_SCAN", "IDHACK"];

/// What the winning plans of one explain reply do.
#[derive(Debug, Default, PartialEq)]
pub struct WinningPlans {
    /// How many winning plans the reply holds (one per shard on a sharded cluster).
    pub plans: usize,
    /// Their stages, in the order met.
    pub stages: Vec<String>,
    /// The indexes they read, each once.
    pub indexes: Vec<String>,
}

impl WinningPlans {
    /// Read from a reply in any of the shapes above.
    pub fn read(reply: &Value) -> WinningPlans {
        let mut plans = WinningPlans::default();
        plans.find(reply);
        plans
    }

    /// Whether a winning plan reads an index; None when the reply holds no
    /// winning plan this reader knows (a shape it cannot read is "unknown").
    pub fn index_used(&self) -> Option<bool> {
        (self.plans > 0 && !self.stages.is_empty()).then(|| self.stages.iter().any(|s| INDEX_STAGES.contains(&s.as_str())))
    }

    /// Looks for `winningPlan`s anywhere but in what names other plans.
    fn find(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match key.as_str() {
                        "winningPlan" => {
                            self.plans += 1;
                            self.read_plan(value);
                        }
                        "rejectedPlans" | "allPlansExecution" | "executionStats" | "slotBasedPlan" => {}
                        _ => self.find(value),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.find(item)),
            _ => {}
        }
    }

    /// One winning plan's tree: its `stage`s and `indexName`s, any depth
    /// (`inputStage`, `inputStages`, `queryPlan`, a `SHARD_MERGE`'s `shards`,
    /// where each shard's own `winningPlan` counts as a plan of its own).
    fn read_plan(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("stage", Value::String(stage)) => self.stages.push(stage.clone()),
                        ("indexName", Value::String(name)) if !self.indexes.contains(name) => self.indexes.push(name.clone()),
                        ("winningPlan", _) => {
                            self.plans += 1;
                            self.read_plan(value);
                        }
                        ("rejectedPlans" | "allPlansExecution" | "executionStats" | "slotBasedPlan", _) => {}
                        _ => self.read_plan(value),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.read_plan(item)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply shaped as MongoDB's documentation shows it (see tests/replies/README.md).
    fn reply(name: &str) -> Value {
        let path = format!("{}/tests/replies/explain/{name}.json", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn classic_aggregation_reads_the_cursor_stage_winning_plan_only() {
        let plans = WinningPlans::read(&reply("v6_classic_aggregate"));
        assert_eq!(plans.plans, 1);
        assert_eq!(plans.stages, ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]);
        // payload.action_1 is only in a rejected plan.
        assert_eq!(plans.indexes, ["type_1"]);
        assert_eq!(plans.index_used(), Some(true));
    }

    #[test]
    fn slot_based_plans_are_read_from_query_plan_not_the_executor_stages() {
        let plans = WinningPlans::read(&reply("v7_sbe_aggregate"));
        assert_eq!(plans.stages, ["GROUP", "FETCH", "IXSCAN"]);
        assert_eq!(plans.indexes, ["type_1"], "actor.login_1 is rejected");
        assert_eq!(plans.index_used(), Some(true));

        let scan = WinningPlans::read(&reply("v8_sbe_collscan"));
        assert_eq!(scan.stages, ["GROUP", "COLLSCAN"]);
        assert!(scan.indexes.is_empty());
        assert_eq!(scan.index_used(), Some(false));
    }

    #[test]
    fn every_shard_s_winning_plan_counts_and_no_rejected_one() {
        let aggregate = WinningPlans::read(&reply("v8_sharded_aggregate"));
        assert_eq!(aggregate.plans, 2, "one per shard");
        assert_eq!(aggregate.indexes, ["type_1"], "repo.name_1 and payload.action_1 are only rejected");
        assert_eq!(aggregate.index_used(), Some(true));

        let find = WinningPlans::read(&reply("v7_sharded_find"));
        // The mongos SHARD_MERGE plan and each shard's own.
        assert_eq!(find.plans, 3);
        assert_eq!(find.indexes, ["repo.name_1"], "actor.login_1 is only rejected");
        assert!(find.stages.contains(&"COLLSCAN".to_string()), "shard02 scans: {:?}", find.stages);
    }

    #[test]
    fn a_reply_without_a_winning_plan_is_unknown_not_unindexed() {
        let plans = WinningPlans::read(&reply("unknown_shape"));
        assert_eq!(plans, WinningPlans::default());
        assert_eq!(plans.index_used(), None);
    }
}

//! Operations a ghbench that ended left running. A server does not stop an
//! aggregation when its client goes: a SIGKILLed ghbench's query runs to its
//! end. Every command ghbench sends carries its owner in its `comment`
//! (`ghbench boot.ns.pid.start n`, see `ghbench_core::owner`), so the next
//! ghbench on that server finds them in `currentOp` and `killOp`s them.
//! SecantusDB 0.7 lists no comments: there nothing is found (and said so by
//! nothing: it has nothing to list).

use ghbench_core::owner::{abandoned, first_look_at};
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use crate::error::refusal;

/// The comments of operations in a `currentOp` reply whose ghbench ended,
/// each once, with why it is taken for ended.
pub fn abandoned_comments(reply: &Document) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    let ops = reply.get_array("inprog").map(|ops| ops.as_slice()).unwrap_or_default();
    for op in ops.iter().filter_map(Bson::as_document) {
        let Some(comment) = op.get_document("command").ok().and_then(|c| c.get_str("comment").ok()) else { continue };
        let Some(why) = abandoned(comment) else { continue };
        if !found.iter().any(|(c, _)| c == comment) {
            found.push((comment.to_string(), why));
        }
    }
    found
}

/// Once per server and run: `killOp`s the operations of ghbench processes
/// that ended, saying each on standard error.
pub async fn end_abandoned(db: &Database, url: &str, engine: &str) {
    let Some(address) = crate::address(url) else { return };
    if !first_look_at(&address) {
        return;
    }
    let admin = db.client().database("admin");
    let filter = doc! {"currentOp": 1, "$ownOps": true, "command.comment": {"$regex": "^ghbench "}};
    let node = crate::connect::queries_node(db);
    let reply = match admin.run_command(filter).selection_criteria(node).await {
        Ok(reply) => reply,
        Err(e) => {
            ghbench_core::note(&format!("note: {engine} at {address}: could not look for operations a ghbench that ended left running ({})", refusal("currentOp", &e)));
            return;
        }
    };
    for (comment, why) in abandoned_comments(&reply) {
        let done = match crate::backend::kill_by_comment(db, &comment).await {
            Ok(done) => done,
            Err(e) => format!("NOT ended ({e}): find it with db.currentOp({{\"command.comment\": \"{comment}\"}}) and end it with db.killOp(opid)"),
        };
        ghbench_core::note(&format!("note: {engine} at {address}: operations of {comment:?} were left running by a ghbench that ended ({why}): {done}"));
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_core::owner::{me, start_ticks, Owner};

    /// A `currentOp` reply shaped as MongoDB's documentation shows it (see
    /// tests/replies/README.md), its comments naming a ghbench that ended,
    /// this one (which runs) and another program.
    #[test]
    fn only_the_operations_of_a_ghbench_that_ended_are_chosen() {
        let mut ended = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let ticks = start_ticks(ended.id()).unwrap();
        let _ = ended.kill();
        let _ = ended.wait();
        let dead = Owner { pid: ended.id(), start_ticks: ticks, ..me().clone() }.tag();
        let path = format!("{}/tests/replies/current_op/mongodb_8.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap().replace("DEAD_OWNER", &dead).replace("LIVE_OWNER", &me().tag());
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let reply = mongodb::bson::to_document(&json).unwrap();
        let chosen = abandoned_comments(&reply);
        assert_eq!(chosen.len(), 1, "{chosen:?}");
        assert_eq!(chosen[0].0, format!("ghbench {dead} 4"));
        assert!(chosen[0].1.contains("ended"), "{chosen:?}");
    }
}

//! Statements a ghbench that ended left running. A closed socket does not
//! stop a statement on the family's servers: a SIGKILLed ghbench's query
//! runs to its end, holding its locks and the server's cores. Every
//! statement ghbench sends for a query or an index build carries its owner
//! at its head (`/* ghbench boot.ns.pid.start */`, see
//! `ghbench_core::owner`), so the next ghbench on that server finds them in
//! the process list and ends their connections (their client is gone).

use ghbench_core::owner::{first_look_at, me, Labelled, Liveness};
use ghbench_core::EngineSpec;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

/// `sql` with this ghbench's label at its head.
pub fn labelled(sql: &str) -> String {
    format!("/* {} */ {sql}", me().label())
}

/// The owner's label at the head of a statement, if ghbench's.
fn label_of(info: &str) -> Option<&str> {
    info.strip_prefix("/* ")?.split(" */").next()
}

/// Once per server and run: ends the connections of statements whose
/// ghbench ended, saying each on standard error; what could not be looked at
/// is said too (with the statement that does it by hand).
pub async fn end_abandoned(spec: &EngineSpec, url: &str, conn: &mut Conn) {
    let Some(address) = crate::address(url) else { return };
    if !first_look_at(&address) {
        return;
    }
    let listed: Result<Vec<(u64, String)>, _> =
        conn.query("SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE '/* ghbench %' AND ID <> CONNECTION_ID()").await;
    let listed = match listed {
        Ok(listed) => listed,
        Err(e) => {
            ghbench_core::note(&format!("note: {} at {address}: could not look for statements a ghbench that ended left running ({e})", spec.engine));
            return;
        }
    };
    for (id, info) in listed {
        let statement = ghbench_engine::sql::head(info.split_once(" */ ").map_or(info.as_str(), |(_, sql)| sql));
        let why = match label_of(&info).and_then(Labelled::parse).map(|owner| owner.liveness()) {
            Some(Liveness::Gone(why)) => why,
            Some(Liveness::Unknown(whose)) => {
                ghbench_core::note(&format!(
                    "note: {} at {address}: connection {id} runs {statement} for {whose}, which this ghbench cannot check: left as it is; if that ghbench has ended, end it with `KILL CONNECTION {id}`",
                    spec.engine
                ));
                continue;
            }
            Some(Liveness::Alive) | None => continue,
        };
        let done = match conn.query_drop(format!("KILL CONNECTION {id}")).await {
            Ok(()) => format!("ended (KILL CONNECTION {id})"),
            Err(e) => format!("NOT ended ({e}): run `KILL CONNECTION {id}` there"),
        };
        ghbench_core::note(&format!("note: {} at {address}: connection {id} was running {statement} for a ghbench that ended ({why}): {done}", spec.engine));
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_core::owner::abandoned;

    #[test]
    fn a_labelled_statement_names_its_owner_and_others_name_none() {
        let sql = labelled("SELECT 1");
        assert_eq!(label_of(&sql), Some(me().label().as_str()));
        assert_eq!(label_of(&sql).and_then(abandoned), None, "this process runs");
        assert_eq!(label_of("SELECT 1"), None);
    }
}

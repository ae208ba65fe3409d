//! Sessions a ghbench that ended left running. PostgreSQL 14 and later
//! notice a client gone during a long query where `client_connection_check_interval`
//! is set (ghbench sets it); before 14, or where the platform cannot, a
//! SIGKILLed ghbench's query runs to its end. Every ghbench session is named
//! by its owner (`application_name`, see `ghbench_core::owner`), so the
//! next ghbench on that server finds and ends those whose owner ended.

use ghbench_core::owner::{first_look_at, Labelled, Liveness};
use ghbench_core::EngineSpec;

/// Once per server and run: ends the busy sessions of ghbench processes
/// that ended, saying each on standard error.
pub async fn end_abandoned(spec: &EngineSpec, url: &str) {
    let Some(address) = crate::address(url) else { return };
    if !first_look_at(&address) {
        return;
    }
    let Ok(client) = crate::connect::connect(spec, url).await else { return };
    let sql = "SELECT pid, application_name, left(query, 200) FROM pg_stat_activity
               WHERE application_name LIKE 'ghbench %' AND state <> 'idle' AND pid <> pg_backend_pid()";
    let rows = match client.query(sql, &[]).await {
        Ok(rows) => rows,
        Err(e) => {
            ghbench_core::note(&format!("note: {} at {address}: could not look for sessions a ghbench that ended left running ({})", spec.engine, ghbench_core::error_chain(&e)));
            return;
        }
    };
    for row in rows {
        let (pid, label, query): (i32, String, String) = (row.get(0), row.get(1), row.get(2));
        let why = match Labelled::parse(&label).map(|owner| owner.liveness()) {
            Some(Liveness::Gone(why)) => why,
            Some(Liveness::Unknown(whose)) => {
                ghbench_core::note(&format!(
                    "note: {} at {address}: session {pid} runs {} for {whose}, which this ghbench cannot check: left as it is; if that ghbench has ended, end it with `SELECT pg_terminate_backend({pid})`",
                    spec.engine,
                    ghbench_engine::sql::head(&query)
                ));
                continue;
            }
            Some(Liveness::Alive) | None => continue,
        };
        let done = match client.query_one("SELECT pg_terminate_backend($1)", &[&pid]).await.map(|r| r.get::<_, bool>(0)) {
            Ok(true) => format!("ended (pg_terminate_backend({pid}))"),
            Ok(false) => format!("had already ended (session {pid})"),
            Err(e) => format!("NOT ended ({}): run `SELECT pg_terminate_backend({pid})` there", ghbench_core::error_chain(&e)),
        };
        ghbench_core::note(&format!("note: {} at {address}: session {pid} was running {} for a ghbench that ended ({why}): {done}", spec.engine, ghbench_engine::sql::head(&query)));
    }
}

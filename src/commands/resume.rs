//! `ghbench query --resume RECORD`: an unfinished run goes on from its record
//! (written after every query), the queries it finished kept, the rest run.
//! Only on what the record was made on: the same ghbench, data, servers and
//! their settings, query texts and timing options; anything else is refused,
//! saying what changed, since the kept numbers would not be about it.

use std::path::Path;

use anyhow::{bail, Context as _, Result};
use ghbench_olap::record::{Context, EngineRecord, RunRecord};

/// The record at `path`, if a run can go on from it.
pub fn unfinished(path: &Path) -> Result<RunRecord> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading --resume {}", path.display()))?;
    let record: RunRecord = serde_json::from_str(&text).with_context(|| format!("--resume {}: not a ghbench query record", path.display()))?;
    if record.finished {
        bail!("--resume {}: that run finished; there is nothing to resume (run the query again for new numbers)", path.display());
    }
    Ok(record)
}

/// What differs between the run a record was made by (`then`) and this one
/// (`now`), each said with both values; empty: the run may go on.
pub fn changes(then: &Context, now: &Context) -> Vec<String> {
    let mut changed = Vec::new();
    let mut differs = |what: &str, a: String, b: String| {
        if a != b {
            changed.push(format!("{what}: {a} then, {b} now"));
        }
    };
    differs("ghbench's commit", format!("{:?} (uncommitted changes: {:?})", then.git_commit, then.git_dirty), format!("{:?} (uncommitted changes: {:?})", now.git_commit, now.git_dirty));
    differs("the table", then.table.clone(), now.table.clone());
    differs("--repeat", then.repeat.to_string(), now.repeat.to_string());
    differs("--query-timeout (seconds)", format!("{:?}", then.query_timeout_seconds), format!("{:?}", now.query_timeout_seconds));
    differs("the query texts (digest)", format!("{:?}", then.catalog_digest), format!("{:?}", now.catalog_digest));
    let names = |c: &Context| c.engines.iter().map(|e| e.engine.to_string()).collect::<Vec<_>>().join(",");
    differs("the engines", names(then), names(now));
    for (a, b) in then.engines.iter().zip(&now.engines).filter(|(a, b)| a.engine == b.engine) {
        differs(&format!("{}'s data", a.engine), data(a), data(b));
        differs(&format!("{}'s server", a.engine), server(a), server(b));
        differs(&format!("{}'s settings", a.engine), settings(a), settings(b));
    }
    changed
}

fn data(e: &EngineRecord) -> String {
    match &e.data {
        Some(d) => format!("{} hours, {} events, {:?} to {:?}", d.hours, d.events, d.first_hour, d.last_hour),
        None => "unknown".into(),
    }
}

fn server(e: &EngineRecord) -> String {
    e.server.as_ref().map_or_else(|| "unknown".into(), |s| format!("{} {} ({})", s.product, s.version, s.build))
}

fn settings(e: &EngineRecord) -> String {
    e.server.as_ref().map_or_else(String::new, |s| s.settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
}

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
    differs("ghbench's build", build(then), build(now));
    differs("the table", then.table.clone(), now.table.clone());
    differs("--repeat", then.repeat.to_string(), now.repeat.to_string());
    let cold = |c: &ghbench_olap::record::ColdRecord| match (c.requested, &c.method) {
        (false, _) => "no cold run".to_string(),
        (true, Some(method)) => format!("--cold={method}"),
        (true, None) => "--cold".to_string(),
    };
    differs("--cold", cold(&then.cold), cold(&now.cold));
    differs("--cold-repeat", then.cold.runs_per_query().to_string(), now.cold.runs_per_query().to_string());
    differs("--rounds", then.cold.rounds.to_string(), now.cold.rounds.to_string());
    // A measured plan's extra run warms the caches the next query finds.
    differs("--analyze-plans", then.analyze_plans.to_string(), now.analyze_plans.to_string());
    differs("--query-timeout (seconds)", format!("{:?}", then.query_timeout_seconds), format!("{:?}", now.query_timeout_seconds));
    differs("the query texts (digest)", format!("{:?}", then.catalog_digest), format!("{:?}", now.catalog_digest));
    // What the data check found (hours only some engines hold, MongoDB rows of
    // hours a load began and did not finish), which the ledgers alone do not show.
    let found = |c: &Context| c.data_consistency.as_ref().map_or_else(|| "not checked".into(), |d| if d.agree { "nothing".into() } else { d.differences.join("; ") });
    differs("what the data check found", found(then), found(now));
    let names = |c: &Context| c.engines.iter().map(|e| e.engine.to_string()).collect::<Vec<_>>().join(",");
    differs("the engines", names(then), names(now));
    for (a, b) in then.engines.iter().zip(&now.engines).filter(|(a, b)| a.engine == b.engine) {
        differs(&format!("{}'s data", a.engine), data(a), data(b));
        differs(&format!("{}'s server", a.engine), server(a), server(b));
        differs(&format!("{}'s settings", a.engine), settings(a, &then.table), settings(b, &now.table));
        // A query timed with indexes and one without are no one run (`ingest --index` between).
        differs(&format!("{}'s indexes", a.engine), indexes(a), indexes(b));
        differs(&format!("{}'s memory", a.engine), memory(a), memory(b));
        // The rules as the kernel holds them, not as said (rounded to whole MB/s).
        let disk = |e: &EngineRecord| e.disk_limit.as_ref().map_or_else(|| "free".to_string(), |l| format!("{} on {}", ghbench_olap::throttle::setup_text(&l.rules), l.device));
        differs(&format!("{}'s disk limit", a.engine), disk(a), disk(b));
    }
    changed
}

/// The ghbench a record was made by: version, commit and uncommitted
/// changes (a build from no checkout is known by its version alone).
pub fn build(c: &Context) -> String {
    build_said(&c.ghbench_version, c.git_commit.as_deref(), c.git_dirty, c.git_changes.as_deref())
}

/// This ghbench, said as [`build`] says a record's.
pub fn this_build() -> String {
    build_said(env!("CARGO_PKG_VERSION"), crate::built::COMMIT, crate::built::DIRTY.map(|d| d == "true"), crate::built::CHANGES)
}

fn build_said(version: &str, commit: Option<&str>, dirty: Option<bool>, changes: Option<&str>) -> String {
    let changes = match (dirty, changes) {
        (Some(true), Some(digest)) => format!("uncommitted changes {digest}"),
        (Some(true), None) => "uncommitted changes".into(),
        (Some(false), _) => "no uncommitted changes".into(),
        (None, _) => "changes unknown".into(),
    };
    format!("{version} {} ({changes})", commit.unwrap_or("from no checkout"))
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

/// How many indexes the table has: their names are made from the table's
/// (a digest of it where it is long, the normalized layout's), so each bench
/// size names its own; what a resume must not mix is runs with and without them.
fn indexes(e: &EngineRecord) -> String {
    match &e.storage {
        Some(storage) if storage.indexes.is_empty() => "none".into(),
        Some(storage) if storage.indexes.len() == 1 => "1 index".into(),
        Some(storage) => format!("{} indexes", storage.indexes.len()),
        None => "unknown".into(),
    }
}

/// The memory the engine ran with, and whether a limit held it (`--memory`, `--regime`).
fn memory(e: &EngineRecord) -> String {
    match &e.memory {
        Some(m) if m.limit.is_some() => format!("a limit of {}", ghbench_core::size::said(m.bytes)),
        Some(m) => format!("{} with no limit", ghbench_core::size::said(m.bytes)),
        None => "unknown".into(),
    }
}

/// The settings, the table's own name in them (a setup's collection options
/// are keyed by it) said as `{table}`: a bench's sizes each have a table. A
/// setup's server parameter is compared by what it sets, not by the value it
/// found to restore: a run killed between setting and restoring leaves the
/// setup's own value there, which must not refuse the resume made for it.
fn settings(e: &EngineRecord, table: &str) -> String {
    let setting = |(k, v): (&String, &String)| match k.starts_with("setParameter ") {
        true => format!("{k}={}", v.split(" (the server's value").next().unwrap_or(v)),
        false => format!("{k}={v}"),
    };
    let said = e.server.as_ref().map_or_else(String::new, |s| s.settings.iter().map(setting).collect::<Vec<_>>().join(" "));
    replace_name(&said, table, "{table}")
}

/// `text` with `name` replaced where it stands as a whole name (not inside a
/// longer identifier: table `t` is not in `tuned`).
fn replace_name(text: &str, name: &str, with: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    for (at, _) in text.match_indices(name) {
        let (before, after) = (text[..at].chars().next_back(), text[at + name.len()..].chars().next());
        if at >= rest && !part(before) && !part(after) {
            out.push_str(&text[rest..at]);
            out.push_str(with);
            rest = at + name.len();
        }
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_olap::record::ServerRecord;

    fn context(table: &str, settings: &[(&str, &str)], events: u64) -> Context {
        let mut engine: EngineRecord = serde_json::from_value(serde_json::json!({
            "engine": "mongo-tuned", "server": null, "data": {"hours": 1, "events": events, "first_hour": null, "last_hour": null},
            "data_error": null, "storage": null, "storage_error": null
        }))
        .unwrap();
        engine.server = Some(ServerRecord {
            product: "MongoDB".into(),
            version: "8.0.4".into(),
            label: "MongoDB 8.0.4".into(),
            build: "8.0.4".into(),
            url: "mongodb://db".into(),
            settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            caveat: None,
        });
        let mut context = crate::commands::olap::context(table.into(), &ghbench_olap::Catalog::embedded().unwrap(), 3, vec![engine]);
        context.started_at = "2026-11-25T20:00:00Z".into();
        context
    }

    #[test]
    fn what_changed_is_said_and_what_a_killed_run_leaves_behind_is_not() {
        let param = "setParameter internalQueryFrameworkControl";
        let then = context("t", &[(param, "trySbeEngine for this setup's queries only (the server's value, forceClassicEngine, restored after each)"), ("collection tuned.t options", "{zstd}")], 7702);
        // Killed between setting and restoring: the setup's value is what was found.
        let found = "trySbeEngine for this setup's queries only (the server's value, trySbeEngine, restored after each)";
        assert!(changes(&then, &context("t", &[(param, found), ("collection tuned.t options", "{zstd}")], 7702)).is_empty());
        // A bench size's table of its own names the collection otherwise: the same setting.
        let size = context("u", &[(param, found), ("collection tuned.u options", "{zstd}")], 7702);
        assert_eq!(changes(&then, &size), ["the table: t then, u now"]);
        let more = context("t", &[(param, found), ("collection tuned.t options", "{snappy}")], 7752);
        let said = changes(&then, &more);
        assert!(said.iter().any(|c| c.starts_with("mongo-tuned's data: 1 hours, 7702 events")), "{said:?}");
        assert!(said.iter().any(|c| c.starts_with("mongo-tuned's settings:") && c.contains("{snappy}")), "{said:?}");
        let measured = Context { analyze_plans: true, ..then.clone() };
        assert_eq!(changes(&then, &measured), ["--analyze-plans: false then, true now"]);
    }
}

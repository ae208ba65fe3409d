//! `ghbench bench --resume RECORD`: an unfinished bench goes on from its
//! record (written after every query), the sizes it finished kept, the size
//! it stopped in going on at its next query, the rest measured; only on what
//! the record was made on.

use std::path::Path;

use anyhow::{bail, Context as _, Result};
use ghbench_olap::bench::{BenchRecord, LoadRecord};
use ghbench_olap::record::{Context, IndexEngineRecord, Resumed};

use crate::options::Selected;

/// The record at `path`, if this bench (`fresh`: its data; `sizes`, `engines`)
/// can go on from it, marked as resumed.
pub fn unfinished_bench(path: &Path, fresh: &BenchRecord, sizes: &[u32], engines: &[Selected], sweeps: bool) -> Result<BenchRecord> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading --resume {}", path.display()))?;
    let mut record: BenchRecord = serde_json::from_str(&text).with_context(|| format!("--resume {}: not a ghbench bench record", path.display()))?;
    if record.finished {
        bail!("--resume {}: that bench finished; there is nothing to resume (run it again for new numbers)", path.display());
    }
    let (then, now) = (serde_json::to_string(&record.data)?, serde_json::to_string(&fresh.data)?);
    if then != now {
        bail!("cannot resume {}: the data differs ({then} then, {now} now); start the bench anew", path.display());
    }
    // The whole setup: a preset narrowed to other points or texts is another run.
    let preset = |r: &BenchRecord| r.preset.as_ref().map_or_else(|| "none".to_string(), |p| format!("{} ({})", p.name, p.about));
    if record.preset != fresh.preset {
        bail!("cannot resume {}: its preset was {} then, {} now; give the same --preset, --regime-iops and --variant", path.display(), preset(&record), preset(fresh));
    }
    if record.regime.is_some() && !sweeps {
        bail!("cannot resume {}: it holds a --regime sweep this command does not ask for; give the same --regime", path.display());
    }
    if let Some(extra) = record.sizes.iter().chain(&record.measuring).find(|s| !sizes.contains(&s.hours)) {
        bail!("cannot resume {}: it holds a size of {} h this command does not ask for; give the same --scale", path.display(), extra.hours);
    }
    // Known before anything is loaded: not worth a size's time to find out.
    if let Some(first) = record.sizes.first().or(record.measuring.as_ref()) {
        let (then, now) = (crate::commands::resume::build(&first.run.context), crate::commands::resume::this_build());
        if then != now {
            bail!("cannot resume {}: ghbench's build was {then} then, {now} now; start the bench anew", path.display());
        }
    }
    let now: Vec<String> = engines.iter().map(|e| e.engine().to_string()).collect();
    for size in record.sizes.iter().chain(&record.measuring) {
        let then: Vec<String> = size.loads.iter().map(|l| l.engine.to_string()).collect();
        if then != now {
            bail!("cannot resume {}: the engines were {} then, {} now", path.display(), then.join(","), now.join(","));
        }
    }
    // The sizes kept, then the sweep's points: a bench stopped in its sweep
    // goes on with its size and points kept, and says so.
    let mut kept: Vec<String> = record.sizes.iter().map(|s| format!("{} h", s.hours)).collect();
    // With a disk axis, the free point says so: its heading alone reads as any point at its memory.
    let disk_axis = record.regime.as_ref().is_some_and(|r| r.iops_size.is_some() || r.points.iter().any(|p| p.disk.is_some()));
    let points = record.regime.iter().flat_map(|r| &r.points);
    kept.extend(points.map(|p| {
        let free = if disk_axis && p.disk.is_none() { ", the disk free" } else { "" };
        format!("the sweep's point under a {}{free}", ghbench_report::regime::point_heading(p))
    }));
    // When the bench this record was made by started: its first size's run
    // (a resumed one's first size of its own, the ones before kept from earlier).
    let earlier = record.resumed.as_ref().map(|r| r.kept.clone()).unwrap_or_default();
    let its_first = record.sizes.iter().zip(&kept).find(|(_, k)| !earlier.contains(k)).or(record.sizes.first().zip(kept.first()));
    if let Some((first, _)) = its_first {
        record.resumed = Some(Resumed::going_on_from(&first.run.context.started_at, record.resumed.as_ref(), kept));
    }
    Ok(record)
}

/// The tables a stopped size's queries were timed on are as they were: its
/// resumed load loaded nothing (every hour reused) and no index was built
/// anew. Else the kept queries and the ones to come would be about different
/// tables, however alike their data.
pub fn nothing_redone(loads: &[LoadRecord], indexes: &[IndexEngineRecord], hours: u32) -> Result<()> {
    let loaded = loads.iter().filter(|l| l.hours_loaded > 0).map(|l| format!("{} loaded {} hour(s) again", l.engine, l.hours_loaded));
    let built = indexes.iter().flat_map(|e| e.indexes.iter().filter(|i| i.created).map(move |i| format!("{} built index {} anew", e.engine, i.name)));
    let redone: Vec<String> = loaded.chain(built).collect();
    if !redone.is_empty() {
        bail!("cannot go on with the {hours} h size where it stopped: {} since its first queries were timed; start the bench anew", redone.join(", "));
    }
    Ok(())
}

/// A size measured now was measured as the kept ones were: the same ghbench,
/// timing options, query texts, engines, servers and settings (its data and
/// table are its own). Checked once the first new size ran: what it measured
/// is not kept when anything changed.
pub fn same_run(then: &Context, now: &Context) -> Result<()> {
    // Each size's data is its own, and so is what the check found of it and
    // the indexes it has (the normalized layout indexes only paths loaded).
    same_as_kept(then, now, "sizes", &["the table", "'s data", "what the data check found", "'s indexes"])
}

/// A `--regime` point measured now was measured as the kept ones were: the
/// same as [`same_run`] asks, on the same table and data; their memory,
/// memory settings and disk throttle differ with the point, by design.
pub fn same_sweep(then: &Context, now: &Context) -> Result<()> {
    same_as_kept(then, now, "points", &["'s settings", "'s memory", "'s disk limit"])
}

/// What changed from `then` to `now` refused, but the changes `expected`
/// names: each the end of what a line of [`crate::commands::resume::changes`]
/// says changed (`the table`, `'s data` for `postgres's data`).
fn same_as_kept(then: &Context, now: &Context, kept: &str, expected: &[&str]) -> Result<()> {
    let is_expected = |line: &str| line.split_once(": ").is_some_and(|(what, _)| expected.iter().any(|e| what.ends_with(e)));
    let changed: Vec<String> = crate::commands::resume::changes(then, now).into_iter().filter(|c| !is_expected(c)).collect();
    if !changed.is_empty() {
        bail!("cannot resume the bench of {}: {}; the {kept} it kept would not be comparable (start it anew)", then.started_at, changed.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghbench_record::bench::{DataSource, BENCH_SCHEMA};

    fn unfinished(preset: Option<ghbench_core::Setup>) -> BenchRecord {
        let data = DataSource { kind: "generated".into(), location: "gen".into(), first_hour: "2015-01-01T00".into(), seed: Some(42), events_per_hour: Some(100), identity: None, split: None, pools: None };
        BenchRecord { schema: BENCH_SCHEMA.into(), data, sizes: Vec::new(), growth: Vec::new(), engine_growth: Vec::new(), report_peak_bytes: None, measuring: None, finished: false, resumed: None, regime: None, preset }
    }

    #[test]
    fn a_preset_narrowed_otherwise_than_the_stopped_run_is_refused_saying_both() {
        let whole = ghbench_core::Setup { name: "paper2019".into(), tuned: false, of: None, about: "the paper's machine".into(), namespace: None, queries: None, loaded_columns: Default::default(), changes: Vec::new() };
        let narrowed = ghbench_core::Setup { about: "the paper's machine; NARROWED: --regime-iops 1000".into(), ..whole.clone() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        std::fs::write(&path, serde_json::to_string(&unfinished(Some(whole.clone()))).unwrap()).unwrap();
        let error = unfinished_bench(&path, &unfinished(Some(narrowed)), &[1], &[], true).unwrap_err().to_string();
        assert!(error.contains("the paper's machine) then") && error.contains("NARROWED: --regime-iops 1000) now"), "{error}");
        let error = unfinished_bench(&path, &unfinished(None), &[1], &[], true).unwrap_err().to_string();
        assert!(error.contains("none now"), "{error}");
        // The same setup resumes.
        let resumed = unfinished_bench(&path, &unfinished(Some(whole.clone())), &[1], &[], true).unwrap();
        assert_eq!(resumed.preset, Some(whole));
    }
}

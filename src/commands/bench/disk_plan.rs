//! Before a size of `--scale` loads anything: its whole need on disk, every
//! engine at once (tables and indexes, PostgreSQL's WAL once per server,
//! polars' merge beside its hours), against the free space of each file
//! system, refused with the numbers when it does not fit. The per-engine
//! load checks of `ingest` come after this one, engine by engine; this one
//! keeps a size from loading its first engines and then finding no room for
//! the last. Each engine's bytes per gzip byte come from the size before
//! (what it stored, indexes included). Where nothing was measured (the first
//! size, or an engine whose size the run could not read) the hours' JSON size
//! stands for it, which is no bound (PostgreSQL's jsonb and polars store less,
//! MariaDB's text JSON and the normalized layout more: 1.4× and 1.15× of it
//! with their indexes, measured): a shortfall resting on it is said, not
//! refused (each engine's own load check still decides). A measured engine's
//! load skips its own check, which only knows the JSON size. The
//! generated hours are made before any size loads and are on the disk when
//! each is checked.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use ghbench_core::{Engine, Hour, HourRange, TableName};
use ghbench_ingest::sink::{Sink, TableLock};
use ghbench_ingest::space::{self, EngineLoad, Free, Room};
use ghbench_ingest::Source;
use ghbench_olap::bench::{DiskPlan, EngineEstimate, SizeRecord};

use crate::options::Selected;

/// Every step on a server waits this long at most.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// The size's need against free space (see the module's note): the plan for
/// the record, or an error with the numbers when some file system is short
/// by what was measured. `fresh`: every hour loads again (`--fresh`);
/// `force`: a shortfall is said, not refused (`--force`).
#[allow(clippy::too_many_arguments)]
pub async fn check(engines: &[Selected], table: &TableName, source: &Source, range: HourRange, before: Option<(&SizeRecord, HourRange)>, fresh: bool, force: bool, server_folders: &[(String, PathBuf)]) -> Result<DiskPlan> {
    let hours: Vec<Hour> = range.iter().collect();
    let earlier = match before {
        Some((size, range)) => Some((size, space::source_sizes(source, &range.iter().collect::<Vec<_>>(), false).await.total())),
        None => None,
    };
    let mut found = Vec::new();
    let mut lines = Vec::new();
    for engine in engines {
        match room(engine, table).await {
            Ok((room, loaded)) => found.push((engine, room, if fresh { HashSet::new() } else { loaded })),
            Err(why) => lines.push(format!("{}: free space not checked ({why})", engine.engine())),
        }
    }
    // What each engine stored of the size before, per gzip byte of its hours.
    let measured = |name: &Engine| earlier.and_then(|(size, gzip)| Some((stored(size, name)?, gzip))).filter(|(bytes, gzip)| *bytes > 0 && *gzip > 0);
    let guessed = found.iter().any(|(engine, ..)| measured(engine.engine()).is_none());
    // The JSON size, read from the first hour, only where something is not measured.
    let sizes = space::source_sizes(source, &hours, guessed).await;
    let mut loads = Vec::new();
    let mut estimated = Vec::new();
    let mut measured_engines = Vec::new();
    for (engine, mut room, loaded) in found {
        let name = engine.engine().clone();
        if room.free.is_none() {
            let served_by = engine.loader().address();
            let folder = server_folders.iter().find(|(address, _)| served_by.as_deref().is_some_and(|a| ghbench_core::place::same_address(a, address)));
            room.free = folder.map(|(_, dir)| Free::Folder(dir.clone()));
        }
        let (ratio, basis) = match measured(&name) {
            Some((bytes, gzip)) => {
                measured_engines.push(name.clone());
                room.stored_bytes = bytes;
                let ratio = bytes as f64 / gzip as f64;
                (Some(ratio), format!("{ratio:.2} bytes per gzip byte, as it stored the {} h size", earlier.map_or(0, |(s, _)| s.hours)))
            }
            None => {
                // Nothing measured: space::check takes the JSON size.
                room.stored_bytes = 0;
                (sizes.json_ratio(), "the hours' JSON size, nothing measured before (a guess: MariaDB and the normalized layout store more)".to_string())
            }
        };
        if let Some(ratio) = ratio {
            estimated.push(EngineEstimate { engine: name.clone(), bytes: (sizes.total() as f64 * ratio) as u64, basis: basis.clone() });
        }
        if !loaded.is_empty() {
            lines.push(format!("{name}: {} of the size's hours already loaded (its ledger), not counted", loaded.len()));
        }
        lines.push(format!("{name}: {basis}"));
        let stored_source_bytes = measured(&name).map_or(0, |(_, gzip)| gzip);
        let to_load = hours.iter().copied().filter(|h| !loaded.contains(&h.stem())).collect();
        loads.push(EngineLoad { engine: name, room, stored_source_bytes, hours: to_load });
    }
    let verdict = space::check(&sizes, &loads);
    lines.extend(verdict.lines);
    if !verdict.short.is_empty() {
        let bases: Vec<String> = estimated.iter().map(|e| format!("{}: {}", e.engine, e.basis)).collect();
        if force {
            lines.push(format!("may not fit ({}): loading anyway, as --force asks (a full disk stops the load)", bases.join("; ")));
        } else if guessed {
            lines.push(format!("may not fit, by a guess ({}); each engine's load is checked again as it starts", bases.join("; ")));
        } else {
            bail!(
                "the {} h size would not fit: {} ({}); nothing of it was loaded. Free space, measure fewer sizes at once (--drop-measured drops each size's tables once measured), or give smaller --scale sizes",
                range.len(),
                verdict.short.join("; "),
                bases.join("; ")
            );
        }
    }
    // Past the refusal above, every measured engine's need fits (a guessed
    // shortfall is only said): their loads need no check of their own.
    if !verdict.short.is_empty() {
        measured_engines.clear();
    }
    if !measured_engines.is_empty() {
        let names: Vec<String> = measured_engines.iter().map(|e| e.to_string()).collect();
        lines.push(format!("{}: measured and found room, so each load skips its own check (which knows only the JSON size)", names.join(", ")));
    }
    Ok(DiskPlan { gzip_bytes: sizes.total(), lines, estimated, measured: measured_engines })
}

/// The engine's room for `table` and the hours its ledger lists as loaded,
/// read under the table's lock (as a load reads them), the table made
/// (empty) first so every engine can say where it would grow.
async fn room(engine: &Selected, table: &TableName) -> Result<(Room, HashSet<String>), String> {
    with_locked_table(engine, table, async |sink: &mut Sink| {
        sink.prepare(false).await.map_err(|e| e.detail())?;
        let room = sink.room().await.map_err(|e| e.detail())?;
        Ok((room.unwrap_or_default(), sink.completed_hours().await.map_err(|e| e.detail())?))
    })
    .await
}

/// `steps` on `engine`'s `table` through a connection holding the table's
/// lock, as a load holds it (no other run loads or cleans the table
/// meanwhile), every step bounded; the lock released and the connection
/// closed afterwards, whatever the steps gave.
pub async fn with_locked_table<T>(engine: &Selected, table: &TableName, steps: impl AsyncFnOnce(&mut Sink) -> Result<T, String>) -> Result<T, String> {
    let mut sink = Sink::connect(engine.loader().as_ref(), table, STEP_TIMEOUT, None).await.map_err(|e| e.to_string())?;
    let lock: TableLock = match sink.lock().await {
        Ok(lock) => lock,
        Err(e) => {
            sink.close().await;
            return Err(e.detail());
        }
    };
    let done = steps(&mut sink).await;
    lock.release().await;
    sink.close().await;
    done
}

/// The table and index bytes `engine` held at `size`, as its run recorded them.
fn stored(size: &SizeRecord, engine: &Engine) -> Option<u64> {
    let storage = size.run.context.engines.iter().find(|e| &e.engine == engine)?.storage.as_ref()?;
    Some(storage.table_bytes + storage.index_bytes)
}

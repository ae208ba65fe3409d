//! What an ingest run did, hour by hour and in total. Serialised as-is for
//! `--report FILE`; the CLI renders the same record for people.

use std::collections::BTreeMap;

use ghbench_core::{Engine, Hour, ServerInfo};

use crate::clean::Defect;
use crate::decode::DecodeReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HourStatus {
    /// Every engine that needed the hour stored it.
    Loaded,
    /// Some engines stored it, others failed (see `engines`).
    Partial,
    /// The source has no such hour (HTTP 404 or no file).
    Missing,
    /// No engine stored it.
    Failed,
}

/// One engine's result for one hour.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EngineOutcome {
    pub stored: u64,
    pub error: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct HourReport {
    pub hour: Hour,
    pub status: HourStatus,
    pub attempts: u32,
    pub seconds: f64,
    /// What reading the file found; absent when it could not be read.
    pub decode: Option<DecodeReport>,
    pub engines: BTreeMap<Engine, EngineOutcome>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EngineTotals {
    /// Documents stored by this run.
    pub stored: u64,
    pub hours_stored: u64,
    pub hours_failed: u64,
    /// `stored` over the load's wall time ([`IngestSummary::loading_seconds`]).
    pub events_per_second: f64,
    /// Events the engine's ledger lists for the table after the run (all runs);
    /// None when the server could not be asked at the end (see `warnings`).
    pub table_events: Option<u64>,
    /// Work on the whole table after this run loaded it, when the engine does any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upkeep: Option<crate::sink::Upkeep>,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Totals {
    pub hours_requested: usize,
    pub hours_loaded: usize,
    pub hours_partial: usize,
    pub hours_skipped: usize,
    /// Hours kept on an engine although the source holds another copy of
    /// their file (see `changed`): neither loaded nor skipped.
    pub hours_changed: usize,
    pub hours_missing: usize,
    pub hours_failed: usize,
    pub lines: u64,
    pub events: u64,
    pub sanitized: u64,
    pub quarantined: BTreeMap<Defect, u64>,
    pub quarantined_total: u64,
    /// Files that were empty, truncated or corrupt (their readable lines still load).
    pub file_defects: u64,
    /// Attempts made again after a fault (network, server, damaged download).
    pub retries: u64,
    pub hours_retried: usize,
    pub compressed_bytes: u64,
    pub json_bytes: u64,
    pub engines: BTreeMap<Engine, EngineTotals>,
}

/// Something about one engine's stored copy of an hour.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoredNotice {
    pub hour: Hour,
    pub engine: Engine,
    pub detail: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestSummary {
    pub ghbench_version: &'static str,
    pub started_at: String,
    pub elapsed_seconds: f64,
    /// From the first hour begun to the last hour's end: the load itself,
    /// without the checks before it and the upkeep after it. Every events/s
    /// of the summary is over this.
    pub loading_seconds: f64,
    pub table: String,
    pub source: String,
    pub first_hour: Hour,
    pub last_hour: Hour,
    pub concurrency: usize,
    pub servers: Vec<ServerInfo>,
    pub totals: Totals,
    /// Hours every engine kept as stored.
    pub skipped: Vec<Hour>,
    /// Hours an engine stores from another copy of their file than the
    /// source holds now, kept as they are: reload them with `--reload`.
    pub changed: Vec<StoredNotice>,
    /// Hours replaced on an engine (`--reload`, a stored copy not whole, a
    /// source file changed), and why.
    pub reloaded: Vec<StoredNotice>,
    /// Hours kept that an engine loaded from a damaged copy of their file.
    pub damaged_copies: Vec<StoredNotice>,
    /// Lines quarantined when the kept (`skipped`) hours were loaded, by an
    /// earlier run (the ledger's count; `totals` counts this run's reading).
    pub kept_quarantined: u64,
    pub hours: Vec<HourReport>,
    pub quarantine_dir: String,
    /// What went wrong beside the hours (e.g. the final count could not be made).
    pub warnings: Vec<String>,
    /// The load's need against the free space, checked before it began (see
    /// [`crate::space`]), one line per file system.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub space: Vec<String>,
    /// Why the run stopped taking hours before the last (an engine's storage
    /// full, its lock lost); the hours after it are failed, "not loaded".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl HourReport {
    /// An hour no attempt was made at.
    pub fn failed(hour: Hour, reason: String) -> HourReport {
        HourReport {
            hour,
            status: HourStatus::Failed,
            attempts: 0,
            seconds: 0.0,
            decode: None,
            engines: BTreeMap::new(),
            error: Some(reason),
        }
    }

    /// Every distinct reason this hour was not (fully) loaded, engine by engine.
    pub fn reasons(&self) -> Vec<String> {
        let mut reasons: Vec<String> = self.error.iter().cloned().collect();
        for (engine, outcome) in &self.engines {
            match &outcome.error {
                Some(e) if self.error.as_ref() != Some(e) => reasons.push(format!("{engine}: {e}")),
                _ => {}
            }
        }
        reasons
    }
}

impl IngestSummary {
    pub fn missing(&self) -> impl Iterator<Item = Hour> + '_ {
        self.hours.iter().filter(|h| h.status == HourStatus::Missing).map(|h| h.hour)
    }

    pub fn failed(&self) -> impl Iterator<Item = &HourReport> + '_ {
        self.hours.iter().filter(|h| matches!(h.status, HourStatus::Failed | HourStatus::Partial))
    }

    /// Fills `totals` from the hour reports.
    pub(crate) fn tally(&mut self, requested: usize) {
        let changed: std::collections::BTreeSet<Hour> = self.changed.iter().map(|c| c.hour).collect();
        let mut t = Totals { hours_requested: requested, hours_skipped: self.skipped.len(), hours_changed: changed.len(), ..Totals::default() };
        for server in &self.servers {
            t.engines.entry(server.engine.clone()).or_default();
        }
        for h in &self.hours {
            let again = u64::from(h.attempts.saturating_sub(1));
            t.retries += again;
            t.hours_retried += usize::from(again > 0);
            match h.status {
                HourStatus::Loaded => t.hours_loaded += 1,
                HourStatus::Partial => t.hours_partial += 1,
                HourStatus::Missing => t.hours_missing += 1,
                HourStatus::Failed => t.hours_failed += 1,
            }
            if let Some(d) = &h.decode {
                t.lines += d.lines;
                t.events += d.events;
                t.sanitized += d.sanitized;
                t.compressed_bytes += d.compressed_bytes;
                t.json_bytes += d.json_bytes;
                t.file_defects += u64::from(d.file_defect.is_some());
                for (defect, n) in &d.quarantined {
                    *t.quarantined.entry(*defect).or_default() += n;
                }
            }
            for (engine, outcome) in &h.engines {
                let e = t.engines.entry(engine.clone()).or_default();
                match outcome.error {
                    None => {
                        e.stored += outcome.stored;
                        e.hours_stored += 1;
                    }
                    Some(_) => e.hours_failed += 1,
                }
            }
        }
        t.quarantined_total = t.quarantined.values().sum();
        for e in t.engines.values_mut() {
            e.events_per_second = if self.loading_seconds > 0.0 { e.stored as f64 / self.loading_seconds } else { 0.0 };
        }
        self.totals = t;
    }
}

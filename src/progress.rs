//! Progress for ingest, fed by the pipeline's events: bars on a terminal;
//! off one (a log, CI), where indicatif draws nothing and drops what is
//! printed through its bars, a timestamped line for each hour loaded, each
//! retry and failure, and each tick of a long step (see [`Log`]).

use std::collections::BTreeMap;
use std::time::Instant;

use ghbench_core::Engine;
use ghbench_ingest::{Event, HourStatus, Observer};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// Lines worth keeping in a log: printed above the bars on a terminal, and
/// off one on standard error, each with the time of day (UTC) and the time
/// since the command started.
pub struct Log {
    multi: MultiProgress,
    started: Instant,
}

impl Log {
    pub fn new(multi: MultiProgress) -> Log {
        Log { multi, started: Instant::now() }
    }

    /// The bars are drawn (standard error is a terminal).
    pub fn on_terminal(&self) -> bool {
        !self.multi.is_hidden()
    }

    /// `line` on the terminal above the bars, or as a log line.
    pub fn line(&self, line: impl AsRef<str>) {
        if self.on_terminal() {
            let _ = self.multi.println(line.as_ref());
        } else {
            self.log_only(line);
        }
    }

    /// `line` only where no bar shows it (off a terminal).
    pub fn log_only(&self, line: impl AsRef<str>) {
        if !self.on_terminal() {
            eprintln!("{} {}", stamp(self.started.elapsed()), line.as_ref());
        }
    }
}

/// A log line's head: the time of day (UTC, dated: a load runs for days)
/// and how long the step has run, e.g. `2026-11-26T02:40:01Z (+63 s)`.
pub fn stamp(elapsed: std::time::Duration) -> String {
    format!("{} (+{:.0} s)", chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"), elapsed.as_secs_f64())
}

pub struct IngestProgress {
    log: Log,
    hours: ProgressBar,
    engines: BTreeMap<Engine, (ProgressBar, std::sync::atomic::AtomicU64)>,
    started: Instant,
}

impl IngestProgress {
    pub fn new(engines: &[Engine]) -> Self {
        let multi = MultiProgress::new();
        let hours = multi.add(ProgressBar::new(0));
        hours.set_style(
            ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} hours  {elapsed_precise} (eta {eta})  {msg}")
                .expect("template")
                .progress_chars("=> "),
        );
        hours.set_prefix("hours");
        let engines = engines
            .iter()
            .map(|engine| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{prefix:>9} {human_pos:>12} events  {msg}").expect("template"),
                );
                bar.set_prefix(engine.to_string());
                (engine.clone(), (bar, std::sync::atomic::AtomicU64::new(0)))
            })
            .collect();
        IngestProgress { log: Log::new(multi), hours, engines, started: Instant::now() }
    }

    pub fn finish(&self) {
        self.hours.finish();
        for (bar, _) in self.engines.values() {
            bar.finish();
        }
    }
}

impl Observer for IngestProgress {
    fn event(&self, event: Event<'_>) {
        match event {
            Event::Planned { to_load, skipped } => {
                self.hours.set_length(to_load as u64);
                if skipped > 0 {
                    self.hours.set_message(format!("{skipped} already loaded, skipped"));
                }
            }
            Event::Stored { engine, events, json_bytes } => {
                if let Some((bar, bytes)) = self.engines.get(&engine) {
                    bar.inc(events);
                    let total = bytes.fetch_add(json_bytes, std::sync::atomic::Ordering::Relaxed) + json_bytes;
                    let secs = self.started.elapsed().as_secs_f64().max(1e-3);
                    bar.set_message(format!("{:>8.0} events/s  {:>6.1} MB/s JSON", bar.position() as f64 / secs, total as f64 / 1e6 / secs));
                }
            }
            Event::WholeTable { engine, step, elapsed, progress } => {
                self.log.line(ghbench_core::ticking::so_far(&format!("{engine}: {step}"), elapsed, progress));
            }
            Event::Retrying { hour, attempt, reason } => {
                self.log.line(format!("retrying {hour} (attempt {attempt} failed: {reason})"));
            }
            Event::HourDone(report) => {
                self.hours.inc(1);
                let done = format!("{}/{} hours", self.hours.position(), self.hours.length().unwrap_or(0));
                match report.status {
                    HourStatus::Loaded => {
                        let engines: Vec<String> = report.engines.iter().map(|(engine, o)| format!("{engine} {}", o.stored)).collect();
                        self.log.log_only(format!("{} loaded in {:.1} s ({}); {done}", report.hour, report.seconds, engines.join(", ")));
                    }
                    HourStatus::Missing => self.log.line(format!("{}: missing at the source; {done}", report.hour)),
                    // A stopped run's untried hours: said once, in the summary.
                    HourStatus::Failed if report.attempts == 0 => {}
                    HourStatus::Failed | HourStatus::Partial => {
                        self.log.line(format!("{}: {:?}: {}; {done}", report.hour, report.status, report.reasons().join("; ")))
                    }
                }
            }
        }
    }
}

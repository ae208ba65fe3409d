//! Progress bars for ingest, fed by the pipeline's events. indicatif draws only
//! on a terminal, so logs and CI stay clean.

use std::collections::BTreeMap;
use std::time::Instant;

use ghbench_core::Engine;
use ghbench_ingest::{Event, HourStatus, Observer};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub struct IngestProgress {
    multi: MultiProgress,
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
        IngestProgress { multi, hours, engines, started: Instant::now() }
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
                let line = ghbench_core::ticking::so_far(&format!("{engine}: {step}"), elapsed, progress);
                // Off a terminal the bars are hidden and drop what is printed through them.
                if self.hours.is_hidden() {
                    eprintln!("{line}");
                } else {
                    let _ = self.multi.println(line);
                }
            }
            Event::Retrying { hour, attempt, reason } => {
                let _ = self.multi.println(format!("retrying {hour} (attempt {attempt} failed: {reason})"));
            }
            Event::HourDone(report) => {
                self.hours.inc(1);
                match report.status {
                    HourStatus::Loaded => {}
                    HourStatus::Missing => {
                        let _ = self.multi.println(format!("{}: missing at the source", report.hour));
                    }
                    HourStatus::Failed | HourStatus::Partial => {
                        let _ = self.multi.println(format!("{}: {:?}: {}", report.hour, report.status, report.reasons().join("; ")));
                    }
                }
            }
        }
    }
}

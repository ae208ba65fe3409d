//! The bench's data: generated hours (made once per seed and size of hour, in
//! a folder of their own, and reused while its manifest covers what is asked),
//! or real hours from a URL or a folder.

use std::path::Path;

use anyhow::{Context as _, Result};
use ghbench_core::{Hour, HourRange, TableName};
use ghbench_gen::{DefectOptions, Generator, Profile, RunOptions, MANIFEST};
use ghbench_ingest::Source;
use ghbench_olap::bench::DataSource;
use indicatif::{ProgressBar, ProgressStyle};

/// Where a size's hours come from.
pub enum Origin {
    /// `ghbench gen`'s realistic hours, made here.
    Generated { seed: u64, events_per_hour: Option<u64> },
    /// A URL or a folder of `YYYY-MM-DD-H.json.gz` files.
    Source(String),
}

/// The hours every size reads: the first `n` of them for a size of `n` hours.
pub struct Data {
    pub source: Source,
    pub first: Hour,
    pub record: DataSource,
    /// Names each size's table, so sizes and seeds never share one.
    table_tag: String,
}

impl Data {
    /// Makes (or finds) the data for `hours` hours from `first`.
    pub fn prepare(origin: &Origin, first: Hour, hours: u32, dir: &Path) -> Result<Data> {
        let range = HourRange::starting_at(first, hours)?;
        match origin {
            Origin::Source(location) => Ok(Data {
                source: Source::parse(location)?,
                first,
                record: DataSource { kind: "source".into(), location: location.clone(), first_hour: first.to_string(), seed: None, events_per_hour: None },
                table_tag: String::new(),
            }),
            Origin::Generated { seed, events_per_hour } => {
                let profile = Profile::default_profile();
                let events = events_per_hour.unwrap_or(profile.events_per_hour);
                let folder = dir.join(format!("gen-{events}-events-seed-{seed}"));
                if covers(&folder, *seed, events, &range) {
                    eprintln!("[bench] data: reusing the generated hours in {}", folder.display());
                } else {
                    generate(profile, *seed, events, range, &folder)?;
                }
                let location = folder.display().to_string();
                Ok(Data {
                    source: Source::parse(&location)?,
                    first,
                    record: DataSource { kind: "generated".into(), location, first_hour: first.to_string(), seed: Some(*seed), events_per_hour: Some(events) },
                    table_tag: format!("_e{events}_s{seed}"),
                })
            }
        }
    }

    /// The table of the size of `hours`, e.g. `bench_6h_e7702_s42`.
    pub fn table(&self, base: &TableName, hours: u32) -> Result<TableName> {
        Ok(base.with_suffix(&format!("{hours}h{}", self.table_tag))?)
    }
}

/// The folder's manifest lists every hour of `range`, made with this seed and
/// this many events (files are written before their manifest).
fn covers(folder: &Path, seed: u64, events: u64, range: &HourRange) -> bool {
    let Ok(text) = std::fs::read_to_string(folder.join(MANIFEST)) else { return false };
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    if manifest["seed"] != seed || manifest["events_per_hour"] != events {
        return false;
    }
    let listed: Vec<&str> = manifest["hours"].as_array().into_iter().flatten().filter_map(|h| h["file"].as_str()).collect();
    range.iter().all(|hour| listed.contains(&hour.file_name().as_str()) && folder.join(hour.file_name()).is_file())
}

fn generate(profile: Profile, seed: u64, events: u64, range: HourRange, folder: &Path) -> Result<()> {
    eprintln!("[bench] data: generating {} of {events} events (seed {seed}) into {}", ghbench_olap::ledger::count_of(range.len(), "hour"), folder.display());
    let generator = Generator::new(profile, seed)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Clean data: the bench measures queries, not the cleaning `ghbench gen --defects` tests.
    let defects = DefectOptions { rate: 0.0, truncate_prob: 0.0 };
    let options = RunOptions { out: folder.to_path_buf(), range, events: Some(events), defects, threads, profile_name: "built-in default".into() };
    let bar = ProgressBar::new(range.len() as u64);
    bar.set_style(ProgressStyle::with_template("[bench] data [{bar:30}] {pos}/{len} hours  {elapsed_precise}").expect("template"));
    let made = ghbench_gen::run(&generator, &options, &|_| bar.inc(1));
    bar.finish_and_clear();
    made.with_context(|| format!("generating hours into {}", folder.display()))?;
    Ok(())
}

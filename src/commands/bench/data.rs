//! The bench's data: generated hours (made once per seed and size of hour, in
//! a folder of their own, and reused while its manifest covers what is asked),
//! or real hours from a URL or a folder.

use std::path::Path;

use anyhow::{Context as _, Result};
use ghbench_core::{Hour, HourRange, TableName};
use ghbench_gen::{DefectOptions, Generator, Profile, RunOptions, MANIFEST};
use ghbench_ingest::{digest, Source};
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
        // `20150101t00`: the hour as written, in the characters a table name takes.
        let first_tag = first.to_string().replace('-', "").to_lowercase();
        match origin {
            Origin::Source(location) => {
                let source = Source::parse(location)?;
                // The same folder however it is written; a URL as given.
                let canonical = match &source {
                    Source::Dir(path) => std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()).display().to_string(),
                    Source::Http { base, .. } => base.clone(),
                };
                let identity = ghbench_core::digest::of_bytes(format!("{canonical}\n{first}").as_bytes());
                let short = identity[ghbench_core::digest::PREFIX.len()..][..8].to_string();
                Ok(Data {
                    source,
                    first,
                    record: DataSource {
                        kind: "source".into(),
                        location: canonical,
                        first_hour: first.to_string(),
                        seed: None,
                        events_per_hour: None,
                        identity: Some(identity),
                    },
                    table_tag: format!("_{first_tag}_src{short}"),
                })
            }
            Origin::Generated { seed, events_per_hour } => {
                let profile = Profile::default_profile();
                let events = events_per_hour.unwrap_or(profile.events_per_hour);
                let folder = dir.join(format!("gen-{events}-events-seed-{seed}"));
                match covers(&folder, *seed, events, &range) {
                    Ok(()) => eprintln!("[bench] data: reusing the generated hours in {} (each checked against its manifest)", folder.display()),
                    Err(why) => {
                        if folder.join(MANIFEST).exists() {
                            eprintln!("[bench] data: {why}: generating again");
                        }
                        generate(profile, *seed, events, range, &folder)?;
                    }
                }
                let location = folder.display().to_string();
                Ok(Data {
                    source: Source::parse(&location)?,
                    first,
                    record: DataSource {
                        kind: "generated".into(),
                        location,
                        first_hour: first.to_string(),
                        seed: Some(*seed),
                        events_per_hour: Some(events),
                        identity: None,
                    },
                    table_tag: format!("_e{events}_s{seed}_{first_tag}"),
                })
            }
        }
    }

    /// The table of the size of `hours`: named after the whole data set, so
    /// two data sets never share one, e.g. `bench_6h_e7702_s42_20150101t00`
    /// (generated) or `bench_6h_20150101t00_src1a2b3c4d` (a source's location
    /// and first hour, digested). Each hour's file is checked against the one
    /// its stored copy came from when the table is reused (see `load`).
    pub fn table(&self, base: &TableName, hours: u32) -> Result<TableName> {
        base.with_suffix(&format!("{hours}h{}", self.table_tag))
            .map_err(|e| anyhow::anyhow!("{e}; the bench names each table after --table, the size and the data: choose a shorter --table"))
    }
}

/// Whether the folder holds every hour of `range` as its manifest lists it
/// (this seed and this many events; each file of the size and digest written),
/// or why not. Files are written before their manifest.
fn covers(folder: &Path, seed: u64, events: u64, range: &HourRange) -> std::result::Result<(), String> {
    let path = folder.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{} is not a manifest ({e})", path.display()))?;
    if manifest["seed"] != seed || manifest["events_per_hour"] != events {
        return Err(format!("{} was made with other settings", path.display()));
    }
    let listed: Vec<&serde_json::Value> = manifest["hours"].as_array().into_iter().flatten().collect();
    for hour in range.iter() {
        let name = hour.file_name();
        let entry = listed.iter().find(|h| h["file"] == name.as_str()).ok_or_else(|| format!("hour {hour} is not in {}", path.display()))?;
        let (Some(bytes), Some(written)) = (entry["bytes"].as_u64(), entry["digest"].as_str()) else {
            return Err(format!("{} lists no digests (an older ghbench wrote it)", path.display()));
        };
        let file = folder.join(&name);
        let (size, now) = digest::of_file(&file).map_err(|e| format!("{} cannot be read ({e})", file.display()))?;
        if size != bytes || now != written {
            return Err(format!(
                "{} is damaged ({size} bytes, {}; its manifest says {bytes} bytes, {})",
                file.display(),
                digest::short(&now),
                digest::short(written)
            ));
        }
    }
    Ok(())
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

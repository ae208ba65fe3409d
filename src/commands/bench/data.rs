//! The bench's data: generated hours (made once per seed and size of hour, in
//! a folder of their own, and reused while its manifest covers what is asked),
//! or real hours from a URL or a folder.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use ghbench_core::{Hour, HourRange, TableName};
use ghbench_gen::{DefectOptions, Generator, Profile, RunOptions, MANIFEST};
use ghbench_ingest::{digest, Source};
use ghbench_olap::bench::{DataSource, SplitOf, SplitSource};
use ghbench_olap::Catalog;
use indicatif::{ProgressBar, ProgressStyle};

/// Generated hours are clean: the bench measures queries, not the cleaning
/// `ghbench gen --defects` tests. Hours made otherwise are not the bench's.
const CLEAN: DefectOptions = DefectOptions { rate: 0.0, truncate_prob: 0.0 };
/// The profile the bench generates with, as the manifest names it.
const PROFILE: &str = "built-in default";

/// Where a size's hours come from.
pub enum Origin {
    /// `ghbench gen`'s realistic hours, made here, from the built-in profile
    /// with these pools.
    Generated { seed: u64, events_per_hour: Option<u64>, pools: ghbench_gen::growth::Pools },
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
    /// The whole identity of the data, digested into the table's name when
    /// `table_tag` does not fit.
    identity: String,
    /// Generated data: what [`Data::make`] finds or makes.
    generated: Option<Generation>,
}

/// What `ghbench gen --split` wrote into `folder`, if it made it: a record
/// of split hours says whose events they are. A manifest that cannot be read
/// is refused: the record would say nothing of a split it holds.
fn split_of(folder: &Path) -> Result<Option<SplitOf>> {
    let path = folder.join(ghbench_gen::split::SPLIT_MANIFEST);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("reading {}: {e}", path.display()),
    };
    let manifest: ghbench_gen::split::SplitManifest =
        serde_json::from_slice(&text).with_context(|| format!("{}: not a manifest of ghbench gen --split; move it away, or split the hours again", path.display()))?;
    Ok(Some(SplitOf {
        sources: manifest.sources.into_iter().map(|s| SplitSource { file: s.file, lines: s.lines, digest: s.digest }).collect(),
        hours: manifest.hours.len() as u64,
        events: manifest.lines,
    }))
}

/// Generated hours: which, and the folder they are kept in.
struct Generation {
    seed: u64,
    events: u64,
    profile: Profile,
    range: HourRange,
    folder: PathBuf,
}

impl Data {
    /// Names the data for `hours` hours from `first` (nothing is generated
    /// yet: see [`Data::make`]).
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
                let text = format!("{canonical}\n{first}");
                let identity = ghbench_core::digest::of_bytes(text.as_bytes());
                let short = identity[ghbench_core::digest::PREFIX.len()..][..8].to_string();
                let split = match &source {
                    Source::Dir(folder) => split_of(folder)?,
                    Source::Http { .. } => None,
                };
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
                        split,
                        pools: None,
                    },
                    table_tag: format!("_{first_tag}_src{short}"),
                    identity: text,
                    generated: None,
                })
            }
            Origin::Generated { seed, events_per_hour, pools } => {
                let profile = pools.apply(Profile::default_profile(), PROFILE).map_err(anyhow::Error::msg)?;
                let events = events_per_hour.unwrap_or(profile.events_per_hour);
                // Growing pools make other events: a folder, a table and an
                // identity of their own (fixed pools keep those they had).
                let (folder_tail, seed_tag, identity_tail) = match &profile.growth {
                    Some(growth) => ("-growing", "g", format!("\ngrowing {}", serde_json::to_string(growth)?)),
                    None => ("", "", String::new()),
                };
                let folder = dir.join(format!("gen-{events}-events-seed-{seed}{folder_tail}"));
                let location = folder.display().to_string();
                let text = format!("generated\n{events}\n{seed}\n{first}{identity_tail}");
                Ok(Data {
                    // The folder [`Data::make`] fills.
                    source: Source::Dir(folder.clone()),
                    first,
                    record: DataSource {
                        kind: "generated".into(),
                        location,
                        first_hour: first.to_string(),
                        seed: Some(*seed),
                        events_per_hour: Some(events),
                        identity: Some(ghbench_core::digest::of_bytes(text.as_bytes())),
                        split: None,
                        pools: Some(ghbench_gen::growth::Pools::said(profile.growth.as_ref())),
                    },
                    table_tag: format!("_e{events}_s{seed}{seed_tag}_{first_tag}"),
                    identity: text,
                    generated: Some(Generation { seed: *seed, events, profile, range, folder }),
                })
            }
        }
    }

    /// Finds the generated hours whole in their folder (each file checked
    /// against its manifest), or makes them; nothing to do for a source.
    pub fn make(&self) -> Result<()> {
        let Some(Generation { seed, events, profile, range, folder }) = &self.generated else { return Ok(()) };
        match covers(folder, *seed, *events, profile.growth.as_ref(), range) {
            Ok(()) => eprintln!("[bench] data: reusing the generated hours in {} (each checked against its manifest)", folder.display()),
            Err(why) => {
                if folder.join(MANIFEST).exists() {
                    eprintln!("[bench] data: {why}: generating again");
                }
                generate(profile.clone(), *seed, *events, *range, folder)?;
            }
        }
        Ok(())
    }

    /// The table of the size of `hours`: named after the whole data set, so
    /// two data sets never share one, e.g. `bench_6h_e7702_s42_20150101t00`
    /// (generated) or `bench_6h_20150101t00_src1a2b3c4d` (a source's location
    /// and first hour, digested). Each hour's file is checked against the one
    /// its stored copy came from when the table is reused (see `load`).
    ///
    /// The name leaves `room` bytes for the names derived from it (indexes:
    /// `Catalog::longest_derived_suffix`); where the data's tag does not fit,
    /// a digest of the data's identity stands for it (`bench_6h_d1a2b3c4d5e6f`).
    pub fn table(&self, base: &TableName, hours: u32, catalog: &Catalog) -> Result<TableName> {
        let room = catalog.longest_derived_suffix();
        let limit = TableName::MAX_LEN.saturating_sub(room);
        let mut name = format!("{base}_{hours}h{}", self.table_tag);
        if name.len() > limit {
            let digest = ghbench_core::digest::of_bytes(self.identity.as_bytes());
            name = format!("{base}_{hours}h_d{}", &digest[ghbench_core::digest::PREFIX.len()..][..12]);
        }
        if name.len() > limit {
            anyhow::bail!(
                "the table '{name}' leaves no room for the index names made from it: '{name}{}' would be {} bytes, more than the {} PostgreSQL keeps of a name; the bench names each table after --table, the size and the data: choose a --table of at most {} characters",
                catalog.longest_derived_tail(),
                name.len() + room,
                TableName::MAX_LEN,
                (base.as_str().len() + limit).saturating_sub(name.len())
            );
        }
        name.parse().map_err(|e| anyhow::anyhow!("{e}; choose another --table"))
    }
}

/// Whether the folder holds every hour of `range` as its manifest lists it
/// (this seed and this many events; each file of the size and digest written),
/// or why not. Files are written before their manifest.
fn covers(folder: &Path, seed: u64, events: u64, growth: Option<&ghbench_gen::growth::Growth>, range: &HourRange) -> std::result::Result<(), String> {
    let path = folder.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{} is not a manifest ({e})", path.display()))?;
    let clean = serde_json::to_value(CLEAN).expect("defect options serialise");
    let pools = serde_json::to_value(growth).expect("growth serialises");
    if manifest["seed"] != seed || manifest["events_per_hour"] != events || manifest["defects"] != clean || manifest["profile"] != PROFILE || manifest["growth"] != pools {
        let theirs = serde_json::from_value::<Option<ghbench_gen::growth::Growth>>(manifest["growth"].clone()).ok().flatten();
        return Err(format!(
            "{} was made with other settings (seed {}, {} events per hour, defects {}, profile {}, {}; the bench's are {seed}, {events}, none, {PROFILE}, {})",
            path.display(),
            manifest["seed"],
            manifest["events_per_hour"],
            manifest["defects"],
            manifest["profile"],
            ghbench_gen::growth::Pools::said(theirs.as_ref()),
            ghbench_gen::growth::Pools::said(growth)
        ));
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
    let options = RunOptions { out: folder.to_path_buf(), range, events: Some(events), defects: CLEAN, threads, profile_name: PROFILE.into() };
    let bar = ProgressBar::new(range.len() as u64);
    bar.set_style(ProgressStyle::with_template("[bench] data [{bar:30}] {pos}/{len} hours  {elapsed_precise}").expect("template"));
    let made = ghbench_gen::run(&generator, &options, &|_| bar.inc(1));
    bar.finish_and_clear();
    made.with_context(|| format!("generating hours into {}", folder.display()))?;
    Ok(())
}

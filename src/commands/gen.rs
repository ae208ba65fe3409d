//! `ghbench gen`: synthetic GH Archive hours, and `--calibrate` to measure real ones.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use ghbench_core::HourRange;
use ghbench_gen::{calibrate, DefectOptions, Generator, Manifest, Profile, RunOptions};
use indicatif::{ProgressBar, ProgressStyle};

use crate::options::HourArgs;
use crate::outcome::Finished;
use crate::output::Target;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench gen --from 2015-01-01T00 --to 2015-01-01T23 --seed 42 --data-dir ./synthetic
  ghbench gen --from 2015-01-01T00 --hours 4 --events 20000 --defects 0.001 --data-dir ./faulty
  ghbench ingest --source ./synthetic --from 2015-01-01T00 --to 2015-01-01T23
  ghbench gen --calibrate real/2015-01-01-*.json.gz --json my-profile.json
  ghbench gen --split ./synthetic/2015-01-01-{0..6}.json.gz --year 2015 --data-dir ./year
      # the same events as 8,760 hour files

The same seed, hour, profile and --events give byte-identical files on any machine
and thread count. DIR/gen-manifest.json records the seed, the profile, and per hour
the events, the file's size and BLAKE3 digest, and the defects injected, with the
counts a correct loader reports. It lists every hour generated into DIR: a run adds
its hours to those made there with the same settings, and refuses a DIR holding
hours made otherwise that it would not make again. While hours are written it lists
only those kept, so a run that fails leaves no entry for a file it replaced.

Exit status: 0 done; 2 an error stopped it; 130 on Ctrl-C. The last line on standard
error names the folder (or the profile) it wrote.")]
pub struct GenArgs {
    #[command(flatten)]
    pub hours: HourArgs,

    /// Folder for the hour files and gen-manifest.json (created if missing).
    #[arg(long, value_name = "DIR", alias = "out", required_unless_present = "calibrate")]
    pub data_dir: Option<PathBuf>,

    /// Seed: the same seed gives the same files.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Events per hour [default: the profile's mean; real 2015 hours hold about 8k to 30k].
    #[arg(long)]
    pub events: Option<u64>,

    /// Chance that a line is damaged: corrupt JSON, a `\u0000` escape, or invalid UTF-8.
    #[arg(long, default_value_t = 0.0, value_name = "RATE")]
    pub defects: f64,

    /// Chance that an hour's gzip file is cut short [default: 10 × --defects, at most 0.5].
    #[arg(long, value_name = "P")]
    pub truncate_prob: Option<f64>,

    /// Profile to generate from [default: the built-in one, calibrated on 2015-01-01-0].
    #[arg(long, value_name = "PATH")]
    pub profile: Option<PathBuf>,

    /// Which actors and repositories the hours draw on: `growing` (new ones
    /// keep arriving with the events, as the profile's growth says) or
    /// `fixed` (the same pools every hour, as before ghbench had growth).
    /// Not used by --calibrate and --split, which draw nothing.
    #[arg(long, value_enum, default_value_t, env = "GHBENCH_POOLS")]
    pub pools: crate::options::PoolsArg,

    /// Worker threads [default: one per CPU core]; the files do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,

    /// Measure these real hour files (gzip or plain JSON lines) into a profile instead of generating.
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with_all = ["data_dir", "events", "defects", "truncate_prob", "profile"])]
    pub calibrate: Vec<PathBuf>,

    /// Instead of drawing events: every event (line) of these hour files, in
    /// hour order, spread over the hours asked as evenly as possible (the
    /// first hours one more), byte for byte: the same events in another
    /// number of files, e.g. 7 real or generated hours as the year's 8,760.
    /// Writes DIR/split-manifest.json; the same split asked again is kept.
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with_all = ["calibrate", "events", "defects", "truncate_prob", "profile", "threads", "seed"], requires = "data_dir")]
    pub split: Vec<PathBuf>,

    /// Where --calibrate writes the profile (JSON, `"format": 1`) [default: -,
    /// standard output].
    #[arg(long, value_name = "FILE", alias = "profile-out", requires = "calibrate")]
    pub json: Option<Target>,
}

pub fn run(args: GenArgs) -> Result<Finished> {
    if !args.calibrate.is_empty() {
        return run_calibrate(&args.calibrate, args.json.as_ref().unwrap_or(&Target::Stdout));
    }
    let out = args.data_dir.clone().context("--data-dir DIR is required")?;
    let range = args.hours.range()?;
    if !args.split.is_empty() {
        return run_split(&args.split, range, &out);
    }
    if args.events == Some(0) {
        bail!("--events must be at least 1");
    }
    let (profile, profile_name) = match &args.profile {
        Some(path) => (Profile::load(path)?, path.display().to_string()),
        None => (Profile::default_profile(), "built-in default".to_string()),
    };
    let profile = args.pools.pools().apply(profile, &profile_name).map_err(anyhow::Error::msg)?;
    let defects = DefectOptions {
        rate: args.defects,
        truncate_prob: args.truncate_prob.unwrap_or((args.defects * 10.0).min(0.5)),
    };
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let started = Instant::now();
    let gen = Generator::new(profile, args.seed)?;
    let options = RunOptions { out, range, events: args.events, defects, threads, profile_name };
    let bar = ProgressBar::new(range.len() as u64);
    bar.set_style(ProgressStyle::with_template("gen [{bar:30}] {pos}/{len} hours  {elapsed_precise} (eta {eta})").expect("template"));
    let manifest = ghbench_gen::run(&gen, &options, &|_| bar.inc(1))?;
    bar.finish_and_clear();
    print_summary(&manifest, &options.out, range.len(), started.elapsed().as_secs_f64());
    Ok(Finished::ok().wrote(&options.out))
}

fn run_split(sources: &[PathBuf], range: HourRange, out: &Path) -> Result<Finished> {
    let started = Instant::now();
    let done = ghbench_gen::split(sources, range, out)?;
    let m = &done.manifest;
    let (fewest, most) = (m.hours.iter().map(|h| h.lines).min().unwrap_or(0), m.hours.iter().map(|h| h.lines).max().unwrap_or(0));
    let per_hour = if fewest == most { format!("{most} an hour") } else { format!("{fewest} to {most} an hour") };
    let what = format!("{} events of {} file(s) as {} hours ({per_hour}) in {}", m.lines, m.sources.len(), m.hours.len(), out.display());
    if done.kept {
        println!("already split: {what} (its {} names the same sources, whole); nothing written", ghbench_gen::SPLIT_MANIFEST);
        return Ok(Finished::ok());
    }
    println!("split {what} in {:.1} s: {:.1} MB gzip", started.elapsed().as_secs_f64(), m.hours.iter().map(|h| h.bytes).sum::<u64>() as f64 / 1e6);
    Ok(Finished::ok().wrote(out))
}

fn run_calibrate(files: &[PathBuf], target: &Target) -> Result<Finished> {
    target.check("--json")?;
    let calibration = calibrate(files)?;
    let p = &calibration.profile;
    let json = p.to_json();
    let wrote = target.write(&json)?;
    eprintln!(
        "calibrated on {} file(s): {} events ({} lines skipped), {} types, mean size {:.0} B, top actor {} of {} events/hour",
        files.len(),
        calibration.events,
        calibration.skipped,
        p.types.len(),
        p.mean_size,
        p.actors.top,
        p.actors.events
    );
    if let Some(path) = &wrote {
        eprintln!("profile written to {} ({} bytes); use it with --profile", path.display(), json.len());
    }
    Ok(Finished::ok().wrote_all(wrote))
}

/// What this run made, then what the folder's manifest lists: `made` hours,
/// and any an earlier run made there with the same settings.
fn print_summary(m: &Manifest, out: &Path, made: usize, seconds: f64) {
    let t = &m.totals;
    let size = format!("{:.1} MB gzip", t.bytes as f64 / 1e6);
    let whole = match t.hours > made {
        true => format!("; with {} kept from earlier runs with the same settings, the folder holds {} hours, {size}", t.hours - made, t.hours),
        false => format!(": {size}"),
    };
    println!(
        "generated {made} hours x {} events (seed {}, profile {}, {}) into {} in {seconds:.1} s{whole}",
        m.events_per_hour,
        m.seed,
        m.profile,
        ghbench_gen::growth::Pools::said(m.growth.as_ref()),
        out.display(),
    );
    if m.defects.rate > 0.0 || m.defects.truncate_prob > 0.0 {
        println!(
            "injected: {} corrupt lines, {} \\u0000 escapes, {} invalid UTF-8 lines, {} truncated files",
            t.corrupt_lines, t.nul_escapes, t.invalid_utf8, t.truncated_files
        );
        let q: Vec<String> = t.expected.quarantined.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "a correct loader reports: {} lines, {} events ({} sanitized), quarantined: {}",
            t.expected.lines,
            t.expected.events,
            t.expected.sanitized,
            if q.is_empty() { "none".into() } else { q.join(", ") }
        );
    }
    println!("manifest: {}", out.join(ghbench_gen::MANIFEST).display());
}

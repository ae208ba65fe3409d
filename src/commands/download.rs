//! `ghbench download`: mirror a range of hours into a folder.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use ghbench_ingest::mirror::{mirror, MirrorStatus};
use ghbench_ingest::{Source, DEFAULT_SOURCE};
use indicatif::{ProgressBar, ProgressStyle};

use crate::options::HourArgs;
use crate::outcome::Finished;

#[derive(Args, Debug)]
#[command(after_help = "\
Files appear in DIR under their GH Archive names only once complete and checked
(the gzip decodes to the end), so a rerun skips them; hours the source does not
have (HTTP 404) are listed in DIR/missing.txt. Then: ghbench ingest --source DIR ...

Exit status: 0 every hour downloaded, present or missing at the source, at least one
usable; 1 an hour failed after its retries (rerun to retry it) or none is usable; 2 an
error stopped it; 130 on Ctrl-C.")]
pub struct DownloadArgs {
    #[command(flatten)]
    pub hours: HourArgs,

    /// Where hours come from: an http(s) base URL or another folder.
    #[arg(long, default_value = DEFAULT_SOURCE)]
    pub source: String,

    /// Folder to mirror into (created if needed).
    #[arg(long, value_name = "DIR", alias = "out")]
    pub data_dir: PathBuf,

    /// Downloads at the same time.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,

    /// Further attempts after a network failure, HTTP 5xx or a damaged download.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
}

pub async fn run(args: DownloadArgs) -> Result<Finished> {
    let range = args.hours.range()?;
    let source = Source::parse(&args.source)?;
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    eprintln!("mirroring {range} from {} into {}", source.describe(), args.data_dir.display());
    let bar = ProgressBar::new(range.len() as u64);
    bar.set_style(ProgressStyle::with_template("[{bar:30}] {pos}/{len} hours  {elapsed_precise}  {msg}").expect("template"));
    let reports = mirror(&source, range, &args.data_dir, args.concurrency, args.retries, |r| {
        bar.inc(1);
        if let Some(e) = &r.error {
            bar.println(format!("{}: FAILED {e}", r.hour));
        }
    })
    .await?;
    bar.finish_and_clear();

    let count = |status| reports.iter().filter(|r| r.status == status).count();
    let bytes: u64 = reports.iter().filter(|r| r.status == MirrorStatus::Downloaded).map(|r| r.bytes).sum();
    println!(
        "hours: {} requested, {} downloaded ({:.1} MB), {} already present, {} missing, {} failed",
        reports.len(),
        count(MirrorStatus::Downloaded),
        bytes as f64 / 1e6,
        count(MirrorStatus::Present),
        count(MirrorStatus::Missing),
        count(MirrorStatus::Failed)
    );
    let failed = count(MirrorStatus::Failed);
    if failed > 0 {
        eprintln!("{failed} hours failed (see above); rerun to retry them");
    }
    let usable = count(MirrorStatus::Downloaded) + count(MirrorStatus::Present);
    Ok(Finished::ok().wrote(&args.data_dir).trusted_if(usable > 0 && failed == 0))
}

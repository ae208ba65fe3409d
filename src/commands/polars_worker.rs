//! `ghbench polars-worker` (hidden): the process polars' queries run in,
//! started by ghbench itself for each polars backend (see
//! `ghbench_polars::worker`), so a query can be stopped by ending it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ghbench_core::TableName;

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The polars engine's data folder.
    #[arg(long)]
    pub polars_dir: PathBuf,

    /// The table whose queries it answers.
    #[arg(long)]
    pub table: TableName,
}

/// Generated events the worker warms each query on before its timed runs:
/// enough that every operator sees rows (a dozen of A's IssuesEvents), few
/// enough to take no room under a memory limit (two workers of a 100 MiB
/// limit were OOM-killed warming on 2,000).
const WARM_EVENTS: u64 = 300;

/// Answers queries on standard input until it closes.
pub fn run(args: &WorkerArgs) -> ExitCode {
    let hour = "2015-01-01T00".parse().expect("an hour");
    let warm = ghbench_gen::Generator::new(ghbench_gen::Profile::default_profile(), 1).map(|g| g.events(hour, WARM_EVENTS)).unwrap_or_default();
    match ghbench_polars::worker::serve(&args.polars_dir, &args.table, warm) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: polars worker: {e:#}");
            ExitCode::from(2)
        }
    }
}

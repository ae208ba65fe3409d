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

/// Answers queries on standard input until it closes.
pub fn run(args: &WorkerArgs) -> ExitCode {
    match ghbench_polars::worker::serve(&args.polars_dir, &args.table) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: polars worker: {e:#}");
            ExitCode::from(2)
        }
    }
}

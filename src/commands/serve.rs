//! `ghbench serve DIR`: GH Archive's file layout over HTTP on loopback.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use ghbench_ingest::serve::StaticServer;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Folder of YYYY-MM-DD-H.json.gz files.
    pub dir: PathBuf,

    /// Address to listen on (loopback by default; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
}

pub fn run(args: ServeArgs) -> Result<crate::outcome::Finished> {
    if !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    let server = StaticServer::start(&args.dir, &args.addr)?;
    println!("serving {} at {} (Ctrl-C to stop)", args.dir.display(), server.url());
    println!("  ghbench ingest --source {} --from ...", server.url());
    server.wait();
    Ok(crate::outcome::Finished::ok())
}

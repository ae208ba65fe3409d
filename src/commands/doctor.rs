//! `ghbench doctor`: can we reach the engines, and what exactly are they?

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ghbench_core::ServerInfo;

use crate::options::{ConnOptions, Engines};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub conn: ConnOptions,
}

pub async fn run(args: DoctorArgs, engines: &Engines) -> Result<ExitCode> {
    let table = args.conn.table_or(super::olap::DEFAULT_YEAR);
    let mut healthy = true;
    for engine in engines.select(&args.conn)? {
        let described: Result<ServerInfo> = async {
            let backend = engine.backend(&table).await?;
            let info = backend.describe().await;
            backend.close().await;
            info
        }
        .await;
        match described {
            Ok(info) => {
                println!("{:<15} ok  {}", engine.engine(), info.label);
                println!("           url: {}", info.url);
                println!("           build: {}", info.build);
                for (k, v) in &info.settings {
                    println!("           {k} = {v}");
                }
                if let Some(caveat) = &info.caveat {
                    println!("           note: {caveat}");
                }
            }
            Err(e) => {
                healthy = false;
                println!("{:<15} FAILED  {e:#}", engine.engine());
            }
        }
    }
    Ok(if healthy { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

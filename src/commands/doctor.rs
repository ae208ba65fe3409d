//! `ghbench doctor`: can we reach the servers, and what exactly are they?

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ghbench_core::{describe_mongo, describe_postgres, error_chain, short_mongo_error, Engine, ServerInfo};

use crate::options::ConnOptions;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub conn: ConnOptions,
}

pub async fn run(args: DoctorArgs) -> Result<ExitCode> {
    let servers = args.conn.servers();
    let mut healthy = true;
    for engine in args.conn.engines() {
        let info: Result<ServerInfo, String> = match engine {
            Engine::Postgres => match servers.postgres().await {
                Ok(client) => describe_postgres(&client, &servers.pg_url).await.map_err(|e| error_chain(&e)),
                Err(e) => Err(e.to_string()),
            },
            Engine::Mongo => match servers.mongo().await {
                Ok(db) => describe_mongo(&db, &servers.mongo_url).await.map_err(|e| short_mongo_error(&e)),
                Err(e) => Err(e.to_string()),
            },
        };
        match info {
            Ok(info) => {
                println!("{:<9} ok  {}", engine.name(), info.label());
                println!("          url: {}", info.url);
                println!("          build: {}", info.build);
                for (k, v) in &info.settings {
                    println!("          {k} = {v}");
                }
            }
            Err(e) => {
                healthy = false;
                println!("{:<9} FAILED  {e}", engine.name());
            }
        }
    }
    Ok(if healthy { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

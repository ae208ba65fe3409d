//! `ghbench doctor`: can we reach the engines, and what exactly are they?
//! Like every command that reaches servers, it first puts back what a
//! ghbench that ended left changed on them (`super::leftovers`, run by `cli`
//! for each such command): `--servers` names the servers `just setup` started.

use anyhow::{bail, Result};
use clap::Args;
use ghbench_core::ServerInfo;

use crate::options::{ConnOptions, Engines};
use crate::outcome::Finished;

#[derive(Args, Debug)]
#[command(after_help = "\
First it puts back what a ghbench that ended (killed, or its machine restarted) left
changed on the servers: a memory limit, a server stopped, a parameter; each is said.

Exit status: 0 every engine answered; 2 one could not be reached or refused the login,
or a change a ghbench that ended left could not be put back (each is said above the
error); 130 on Ctrl-C.")]
pub struct DoctorArgs {
    #[command(flatten)]
    pub conn: ConnOptions,
    #[command(flatten)]
    pub managed: super::servers::ServersArg,
}

pub async fn run(args: DoctorArgs, engines: &Engines) -> Result<Finished> {
    let table = args.conn.table_or(super::olap::DEFAULT_YEAR);
    let mut failed = Vec::new();
    for engine in engines.select(&args.conn)? {
        let described: Result<ServerInfo> = async {
            let backend = engine.backend(&table).await?;
            let info = backend.describe().await;
            let health = backend.health().await;
            backend.close().await;
            health.map_err(anyhow::Error::msg)?;
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
                failed.push(engine.engine().to_string());
                println!("{:<15} FAILED  {e:#}", engine.engine());
            }
        }
    }
    if !failed.is_empty() {
        bail!("{} did not answer as asked (see above)", failed.join(", "));
    }
    Ok(Finished::ok())
}

//! Options every command shares, flattened into each subcommand.

use anyhow::{bail, Result};
use clap::Args;
use ghbench_core::server::{DEFAULT_MONGO_URL, DEFAULT_PG_URL};
use ghbench_core::{Engine, Hour, HourRange, Servers, TableName};

#[derive(Args, Debug, Clone)]
pub struct ConnOptions {
    /// Engines to use, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,mongo")]
    pub engines: Vec<Engine>,

    /// Table (PostgreSQL) and collection (MongoDB) name [default: github<year>, e.g. github2015].
    #[arg(long)]
    pub table: Option<TableName>,

    /// PostgreSQL connection URL.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_PG_URL, hide_env_values = true)]
    pub pg_url: String,

    /// MongoDB connection URI; the database is the one it names, else `ghbench`.
    #[arg(long, env = "MONGODB_URI", default_value = DEFAULT_MONGO_URL, hide_env_values = true)]
    pub mongo_url: String,
}

impl ConnOptions {
    pub fn servers(&self) -> Servers {
        Servers { pg_url: self.pg_url.clone(), mongo_url: self.mongo_url.clone() }
    }

    /// The engines, each once, in the order given.
    pub fn engines(&self) -> Vec<Engine> {
        let mut engines = Vec::new();
        for e in &self.engines {
            if !engines.contains(e) {
                engines.push(*e);
            }
        }
        engines
    }

    pub fn table_or(&self, year: i32) -> TableName {
        self.table.clone().unwrap_or_else(|| TableName::for_year(year))
    }
}

/// Which hours a command works on: `--year`, or `--from` with `--to` or `--hours`.
#[derive(Args, Debug)]
pub struct HourArgs {
    /// Every hour of this year (e.g. 2015).
    #[arg(long, conflicts_with_all = ["from", "to", "hours"])]
    pub year: Option<i32>,

    /// First hour, e.g. 2015-01-01T00 (also accepts GH Archive's 2015-01-01-0).
    #[arg(long)]
    pub from: Option<Hour>,

    /// Last hour, inclusive [default: the --from hour].
    #[arg(long, requires = "from", conflicts_with = "hours")]
    pub to: Option<Hour>,

    /// Number of hours starting at --from.
    #[arg(long, requires = "from")]
    pub hours: Option<u32>,
}

impl HourArgs {
    pub fn range(&self) -> Result<HourRange> {
        Ok(match (self.year, self.from) {
            (Some(year), _) => HourRange::year(year)?,
            (None, Some(from)) => match (self.to, self.hours) {
                (Some(to), _) => HourRange::new(from, to)?,
                (None, Some(n)) => HourRange::starting_at(from, n)?,
                (None, None) => HourRange::new(from, from)?,
            },
            (None, None) => bail!("choose the hours: --year 2015, or --from 2015-01-01T00 with --to or --hours"),
        })
    }
}

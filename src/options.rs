//! Options every command shares, flattened into each subcommand.

use clap::Args;
use ghbench_core::server::{DEFAULT_MONGO_URL, DEFAULT_PG_URL};
use ghbench_core::{Engine, Servers, TableName};

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

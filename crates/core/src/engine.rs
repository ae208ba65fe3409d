//! The database engines ghbench can load and measure.

use std::fmt;
use std::str::FromStr;

/// An engine ghbench measures. Server-backed engines are loaded by `ingest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// PostgreSQL, one `jsonb` column.
    Postgres,
    /// A MongoDB-wire server (mongod or SecantusDB), one collection.
    Mongo,
}

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Postgres, Engine::Mongo];

    pub fn name(&self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Mongo => "mongo",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown engine '{0}': expected one of postgres, mongo")]
pub struct UnknownEngine(String);

impl FromStr for Engine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" | "pg" => Ok(Engine::Postgres),
            "mongo" | "mongodb" => Ok(Engine::Mongo),
            _ => Err(UnknownEngine(s.to_string())),
        }
    }
}

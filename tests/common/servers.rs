// Included (`include!`) by the test helpers: the servers `just setup` starts,
// reached through the engines' own code, as ghbench reaches them.

/// Where a test's PostgreSQL and MongoDB-wire server are.
#[derive(Debug, Clone)]
pub struct Servers {
    pub pg_url: String,
    pub mongo_url: String,
}

impl Servers {
    /// The ones `just setup` starts (or `DATABASE_URL` / `MONGODB_URI`).
    pub fn from_env() -> Servers {
        Servers {
            pg_url: std::env::var("DATABASE_URL").unwrap_or_else(|_| ghbench_postgres::DEFAULT_URL.into()),
            mongo_url: std::env::var("MONGODB_URI").unwrap_or_else(|_| ghbench_mongo::DEFAULT_URL.into()),
        }
    }

    pub async fn postgres(&self) -> Result<tokio_postgres::Client, ghbench_core::ConnectError> {
        ghbench_postgres::connect::connect(&ghbench_postgres::SPEC, &self.pg_url).await
    }

    pub async fn mongo(&self) -> Result<mongodb::Database, ghbench_core::ConnectError> {
        ghbench_mongo::connect::connect(&ghbench_mongo::SPEC, &self.mongo_url).await
    }

    /// Both engines as configured for these servers.
    pub fn engines(&self) -> Vec<(std::sync::Arc<dyn ghbench_engine::EnginePlugin>, ghbench_core::EngineConfig)> {
        vec![
            (ghbench_postgres::plugin(), ghbench_core::EngineConfig::default().with(ghbench_postgres::URL.long, &self.pg_url)),
            (ghbench_mongo::plugin(), ghbench_core::EngineConfig::default().with(ghbench_mongo::URL.long, &self.mongo_url)),
        ]
    }

    /// Both engines' loaders, for the ingest library.
    pub fn loaders(&self) -> Vec<std::sync::Arc<dyn ghbench_engine::Loader>> {
        self.engines().iter().map(|(plugin, config)| plugin.loader(config)).collect()
    }
}

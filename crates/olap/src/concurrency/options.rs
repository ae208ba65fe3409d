//! What a concurrency phase is asked to do: its own module so the clients
//! read it without importing the phase that runs them.

use std::time::Duration;

use ghbench_record::concurrency::MixQuery;

#[derive(Debug, Clone)]
pub struct ConcurrencyOptions {
    /// Client counts, smallest first, each at least one.
    pub clients: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub max_queries: u64,
    /// The queries every client loops over (see [`super::resolve_mix`]).
    pub mix: Vec<MixQuery>,
    pub grace: Duration,
    pub connect_limit: Duration,
}

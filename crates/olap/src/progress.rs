//! What a run tells its observer as it goes (the CLI draws progress from
//! these). Its own module so the runner and the concurrency phase both speak
//! it without importing each other.

use ghbench_core::Engine;

use crate::record::QueryRecord;
use crate::rows::Row;

/// What the runner tells its observer (the CLI draws progress from these).
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// Total runs planned (cold runs included).
    Planned { runs: u64 },
    /// Before a cold run: the engine is being made cold (a restart can take seconds).
    /// `how`: what making it cold will do, e.g. `page cache and server caches, no restart`.
    Cooling { engine: &'a Engine, variant: &'a str, query: &'a str, how: &'static str },
    Running { engine: &'a Engine, variant: &'a str, query: &'a str, label: &'a str },
    Ran { engine: &'a Engine, seconds: f64 },
    /// The concurrency phase: `clients` clients on the engine for `seconds`
    /// (warm-up and duration).
    Loading { engine: &'a Engine, clients: usize, seconds: f64 },
    /// A query ran on every engine and its answers were compared: what the
    /// record keeps of it, and every engine's rows (None: it failed), for a
    /// record written as the run goes.
    QueryDone { record: &'a QueryRecord, rows: &'a [Option<Vec<Row>>] },
}

pub trait Progress: Send + Sync {
    fn event(&self, event: RunEvent<'_>);
}

/// For library use and tests.
pub struct Silent;
impl Progress for Silent {
    fn event(&self, _: RunEvent<'_>) {}
}


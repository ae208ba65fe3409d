//! One client of the concurrency phase: loops over its mix on its own
//! connection until the window ends or the phase's query bound is reached,
//! checking every answer, and reports each query as a [`Sample`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ghbench_core::{Engine, EngineError};
use tokio::sync::mpsc::UnboundedSender;

use crate::backend::{Backend, Prepared};
use crate::verify::{compare, Difference};

use super::mix::Expected;
use super::options::ConcurrencyOptions;

/// Errors in a row after which a client stops: an engine that fails every
/// query is not loaded by a client spinning on its errors.
const ERRORS_IN_A_ROW: usize = 10;

/// What every client of a phase shares: the clock and the bounds.
pub struct Shared {
    pub started: Instant,
    pub window_start: Instant,
    pub window_end: Instant,
    pub max_queries: u64,
    /// Queries started in the window so far, all clients together.
    pub window_queries: AtomicU64,
    pub expected: Vec<Option<Expected>>,
    pub engine: Engine,
}

impl Shared {
    pub fn new(started: Instant, options: &ConcurrencyOptions, expected: &[Result<Expected, String>], engine: Engine) -> Shared {
        let window_start = started + options.warmup;
        Shared {
            started,
            window_start,
            window_end: window_start + options.duration,
            max_queries: options.max_queries,
            window_queries: AtomicU64::new(0),
            expected: expected.iter().map(|e| e.as_ref().ok().cloned()).collect(),
            engine,
        }
    }

    /// Seconds from the phase's start.
    pub fn offset(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }
}

/// One query a client ran.
#[derive(Debug)]
pub struct Sample {
    /// From 0.
    pub client: usize,
    /// Its place in the mix.
    pub query: usize,
    /// When it was sent, from the phase's start.
    pub sent: Duration,
    pub seconds: f64,
    pub outcome: Outcome,
}

#[derive(Debug)]
pub enum Outcome {
    Right,
    Wrong(Difference),
    Failed(String),
}

/// Why a client stopped.
#[derive(Debug)]
pub enum Ended {
    /// The window ended.
    Duration,
    /// The phase's query bound was reached.
    MaxQueries,
    /// Its connection was lost: the engine's later phases are not run.
    Lost(String),
    /// Too many errors in a row, or its task ended abnormally.
    Failed(String),
}

/// Runs client `index` until its phase ends; gives its connection back.
pub async fn run(
    index: usize,
    client: Box<dyn Backend>,
    prepared: Vec<Option<Prepared>>,
    shared: Arc<Shared>,
    samples: UnboundedSender<Sample>,
) -> (Box<dyn Backend>, Ended) {
    let order: Vec<usize> = (0..prepared.len()).filter(|&q| prepared[q].is_some()).collect();
    let mut next = index % order.len().max(1);
    let mut errors_in_a_row = 0;
    let label = format!("{} client {}", shared.engine, index + 1);
    let ended = loop {
        let now = Instant::now();
        if now >= shared.window_end || order.is_empty() {
            break Ended::Duration;
        }
        if now >= shared.window_start && shared.window_queries.fetch_add(1, Ordering::SeqCst) >= shared.max_queries {
            break Ended::MaxQueries;
        }
        let query = order[next];
        next = (next + 1) % order.len();
        let (Some(ready), Some(expected)) = (&prepared[query], &shared.expected[query]) else { continue };
        let sent = Instant::now();
        let executed = client.execute(ready).await;
        let seconds = sent.elapsed().as_secs_f64();
        let (outcome, lost) = match executed {
            Ok(rows) => {
                let checked = compare(expected.compare, ("single-client", &expected.rows), (&label, &rows));
                (checked.map_or_else(Outcome::Wrong, |()| Outcome::Right), None)
            }
            Err(e) => {
                let said = format!("{e:#}");
                (Outcome::Failed(said.clone()), EngineError::lost_connection_in(&e).then_some(said))
            }
        };
        errors_in_a_row = if matches!(outcome, Outcome::Failed(_)) { errors_in_a_row + 1 } else { 0 };
        let failed = match &outcome {
            Outcome::Failed(said) => Some(said.clone()),
            _ => None,
        };
        let _ = samples.send(Sample { client: index, query, sent: sent.saturating_duration_since(shared.started), seconds, outcome });
        if let Some(said) = lost {
            break Ended::Lost(format!("client {} lost its connection {:.1} s into the phase: {said}", index + 1, shared.offset(Instant::now())));
        }
        if errors_in_a_row >= ERRORS_IN_A_ROW {
            let last = failed.unwrap_or_default();
            break Ended::Failed(format!("client {} stopped after {ERRORS_IN_A_ROW} errors in a row; the last: {last}", index + 1));
        }
    };
    (client, ended)
}

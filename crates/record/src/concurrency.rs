//! What the concurrency phase measured, as the run record keeps it (schema
//! in docs/results-schema.md): per engine and client count, the queries
//! completed, their rate and latency percentiles, every answer checked.

use std::collections::BTreeMap;

use ghbench_core::Engine;
use serde::{Deserialize, Serialize};

/// `--clients`: after the single-client timings, that many clients per engine
/// loop over a mix of queries for a while; one [`LoadPhase`] per engine and
/// client count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConcurrencyRecord {
    /// The client counts asked for, smallest first.
    pub clients: Vec<usize>,
    /// Seconds each phase measures, after its warm-up.
    pub duration_seconds: f64,
    /// Seconds each phase's clients run the mix before the measurement starts
    /// (their answers checked, their times not kept).
    pub warmup_seconds: f64,
    /// Most queries one phase starts in its measured window: it stops at
    /// whichever comes first, this or the duration.
    pub max_queries: u64,
    /// The queries each client loops over; client `i` starts at the `i`th
    /// (modulo their number), so the clients do not run in lockstep.
    pub mix: Vec<MixQuery>,
    /// One per engine and client count, in run order.
    pub phases: Vec<LoadPhase>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MixQuery {
    pub query: String,
    pub variant: String,
}

/// `1 client`, `4 clients`: how the records and reports say a client count.
pub fn clients(n: usize) -> String {
    format!("{n} client{}", if n == 1 { "" } else { "s" })
}

impl std::fmt::Display for MixQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.query, self.variant)
    }
}

/// One engine under `clients` clients at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadPhase {
    pub engine: Engine,
    pub clients: usize,
    /// How the clients reach the engine, e.g. `4 connections of their own`,
    /// `4 handles of their own (no server)`.
    pub connections: String,
    /// Seconds from the end of the warm-up to the window's end: the
    /// duration, unless `max_queries` ended it first (then with the last
    /// query sent in it). A phase whose clients failed keeps the duration:
    /// it is not a measurement (see `error`).
    pub window_seconds: f64,
    /// Queries answered (rightly) within the window, all clients together,
    /// also those sent before it (in the warm-up).
    pub completed: u64,
    /// `completed / window_seconds`.
    pub queries_per_second: Option<f64>,
    /// Over every query of the mix started in the window and answered
    /// rightly, also those that finished after it (so a slow query is not
    /// left out of the percentiles for being slow).
    pub latency: Option<Latency>,
    /// The same per query of the mix.
    pub per_query: Vec<QueryLoad>,
    /// Queries that returned an error, warm-up included.
    pub failed_queries: u64,
    /// The first errors, as the engine said them (`client 2 at 3.1 s: …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Answers that differ from the verified single-client answer, warm-up
    /// included: any makes the phase a failure.
    pub wrong_answers: u64,
    /// The first wrong answers, said as a mismatch is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<LoadMismatch>,
    /// Queries run in the warm-up (answers checked, times not kept).
    pub warmup_queries: u64,
    /// Queries still running when the phase's time limit ran out, abandoned.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned: u64,
    /// What ended the window: `duration`, `max queries`, or what failed.
    pub stopped_by: String,
    /// ghbench's own CPU during the phase: is the client the bottleneck?
    pub client_cpu: Option<ClientCpu>,
    /// The settings that bound how many clients the engine serves at once,
    /// as it said them (e.g. `max_connections`), and ghbench's own.
    pub limits: BTreeMap<String, String>,
    /// Why this phase is not a measurement: a wrong answer, a client that lost
    /// its connection, clients that could not connect. None: it stands.
    pub error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl LoadPhase {
    /// The phase stands as a measurement: no failure, no wrong answer, no error.
    pub fn stands(&self) -> bool {
        self.error.is_none() && self.wrong_answers == 0 && self.failed_queries == 0
    }
}

/// One query of the mix under load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryLoad {
    pub query: String,
    pub variant: String,
    /// Answered rightly within the window.
    pub completed: u64,
    pub latency: Option<Latency>,
    pub failed: u64,
    pub wrong: u64,
    /// What its answers were checked against, e.g. `the answer verified
    /// across engines (postgres's single-client answer)`.
    pub checked_against: Option<String>,
    /// Why this engine's clients did not run it (e.g. it failed in the
    /// single-client phase, so there is no answer to check against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

/// Latency percentiles in seconds (nearest rank, from an HDR histogram of
/// microseconds kept to three significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// A wrong answer under load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadMismatch {
    pub query: String,
    pub variant: String,
    /// Which client (from 1) and when, seconds from the phase's start.
    pub client: usize,
    pub at_seconds: f64,
    pub reason: String,
    pub first_differences: Vec<String>,
}

/// ghbench's own CPU over a phase (warm-up included).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ClientCpu {
    /// CPU seconds ghbench's process used, user and system.
    pub seconds: f64,
    /// Of the machine's capacity over the phase: `seconds / (wall × cores)`.
    pub share_of_machine: f64,
    /// How busy the whole machine was over the phase (all processes, from
    /// /proc/stat); None where that cannot be read.
    pub machine_busy: Option<f64>,
    /// The engine computes inside ghbench's process (no server, no worker
    /// process): `seconds` is mostly the engine's own work, not the clients'.
    pub engine_in_process: bool,
}

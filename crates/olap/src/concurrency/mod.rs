//! The concurrency phase (`--clients 1,4,16 --duration 60`): after the
//! single-client timings, for each engine and client count, that many
//! clients (each its own connection; for an engine without a server, tasks
//! in ghbench's process) loop over a mix of queries for a warm-up and then
//! the duration. Every answer is checked against the verified answer of the
//! single-client phase; ghbench's own CPU is measured beside the rates.
//!
//! - [`record`]: what it records; [`mix`]: which queries and what each is
//!   checked against; [`client`]: one client's loop; [`tally`]: the samples
//!   summed into a phase; [`cpu`]: ghbench's and the machine's CPU.

mod client;
mod options;
pub mod cpu;
pub mod mix;
mod tally;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::{Backend, Prepared};
use crate::catalog::Catalog;
use crate::record::QueryRecord;
use crate::progress::{Progress, RunEvent};

pub use self::mix::{resolve_mix, Answers};
pub use ghbench_record::concurrency::{clients as clients_said, ClientCpu, ConcurrencyRecord, Latency, LoadMismatch, LoadPhase, MixQuery, QueryLoad};
use self::client::{Ended, Sample, Shared};
use self::mix::Expected;
pub use self::options::ConcurrencyOptions;

/// Most clients one phase may open: each is a connection (PostgreSQL's
/// default `max_connections` is 100), and more than this on one machine
/// measures the machine's scheduler, not the engine.
pub const MAX_CLIENTS: usize = 256;

/// How long the queries still running when the window ends may take to
/// finish, beyond the duration, before they are abandoned: the phase always
/// ends by itself.
pub const GRACE: Duration = Duration::from_secs(60);

/// How long an abandoned client's task may take to be dropped.
const ABORT_LIMIT: Duration = Duration::from_secs(5);

/// How long opening one client may take.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// Every engine under every client count, one after another (the engines
/// never share the machine with each other's load). An engine that could not
/// be reached or lost its clients for good is not loaded again: its later
/// phases say so.
pub async fn run_concurrency(
    backends: &[Box<dyn Backend>],
    catalog: &Catalog,
    records: &[QueryRecord],
    answers: &Answers,
    options: &ConcurrencyOptions,
    progress: &dyn Progress,
) -> ConcurrencyRecord {
    let mut phases = Vec::new();
    for (index, backend) in backends.iter().enumerate() {
        let expected = mix::expected(&options.mix, records, answers, index);
        let mut gone: Option<String> = None;
        for &clients in &options.clients {
            let phase = match &gone {
                Some(why) => failed_phase(backend.as_ref(), clients, &options.mix, &expected, format!("not run: {why}")),
                None => {
                    let (fitted, said) = fit_to_queries(options, &expected, clients);
                    progress.event(RunEvent::Loading {
                        engine: backend.engine(),
                        clients,
                        seconds: (fitted.warmup + fitted.duration).as_secs_f64(),
                    });
                    let (mut phase, lost) = run_phase(backend.as_ref(), catalog, clients, &expected, &fitted).await;
                    phase.limits.extend(said);
                    gone = lost;
                    phase
                }
            };
            phases.push(phase);
        }
    }
    ConcurrencyRecord {
        clients: options.clients.clone(),
        duration_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup.as_secs_f64(),
        max_queries: options.max_queries,
        mix: options.mix.clone(),
        phases,
    }
}

/// The phase's options for one engine and client count, fitted to how long
/// its queries took alone: the window holds at least two of the slowest
/// single-client runs of the mix (a window shorter than a query would count
/// nothing), and the queries still running when it ends get at least twice
/// what `clients` of the slowest would take one after another before they
/// are abandoned. What was lengthened is said for the phase's record.
pub fn fit_to_queries(options: &ConcurrencyOptions, expected: &[Result<Expected, String>], clients: usize) -> (ConcurrencyOptions, Vec<(String, String)>) {
    let slowest = expected.iter().flatten().map(|e| e.slowest).fold(0.0, f64::max);
    let mut fitted = options.clone();
    let mut said = Vec::new();
    let window = Duration::from_secs_f64(2.0 * slowest);
    if window > options.duration {
        fitted.duration = window;
        said.push((
            "ghbench window".to_string(),
            format!("{:.1} s, not the {:.1} s asked: twice the slowest single-client run of the mix ({slowest:.1} s)", window.as_secs_f64(), options.duration.as_secs_f64()),
        ));
    }
    let grace = Duration::from_secs_f64(2.0 * clients as f64 * slowest);
    if grace > options.grace {
        fitted.grace = grace;
        said.push((
            "ghbench grace".to_string(),
            format!("{:.1} s for queries running when the window ends: twice {} × the slowest single-client run ({slowest:.1} s)", grace.as_secs_f64(), clients),
        ));
    }
    (fitted, said)
}

/// One engine under `clients` clients; the second value says why its later
/// phases cannot run (its server went away), if so.
async fn run_phase(
    backend: &dyn Backend,
    catalog: &Catalog,
    clients: usize,
    expected: &[Result<Expected, String>],
    options: &ConcurrencyOptions,
) -> (LoadPhase, Option<String>) {
    if expected.iter().all(Result::is_err) {
        let why = "no query of the mix has a single-client answer to check against (see each query's reason)";
        return (failed_phase(backend, clients, &options.mix, expected, why.into()), None);
    }
    let mut limits = match tokio::time::timeout(options.connect_limit, backend.concurrency_limits()).await {
        Ok(limits) => limits,
        Err(_) => [("server".to_string(), format!("did not say its limits within {} s", options.connect_limit.as_secs()))].into(),
    };
    limits.insert("ghbench clients".into(), connections(backend, clients));
    limits.insert("ghbench runtime threads".into(), tokio::runtime::Handle::current().metrics().num_workers().to_string());
    let (mut phase, gone) = match open_clients(backend, catalog, clients, expected, options).await {
        Ok(opened) => run_clients(backend, clients, opened, expected, options).await,
        Err(why) => {
            // Larger counts would only wait for the same refusal.
            let gone = format!("{}'s clients could not be opened in the phase with {}", backend.engine(), clients_said(clients));
            (failed_phase(backend, clients, &options.mix, expected, why), Some(gone))
        }
    };
    phase.limits = limits;
    // On every path: a client that opened may have set the setup's parameters.
    if let Some(e) = restore(backend, options.connect_limit).await {
        phase.error = Some(phase.error.take().map_or(e.clone(), |first| format!("{first}; {e}")));
    }
    (phase, gone)
}

/// A client and its mix, prepared (None for a query left out of its mix).
type OpenClient = (Box<dyn Backend>, Vec<Option<Prepared>>);

/// `clients` clients, each with the mix prepared; if one cannot be opened,
/// those opened are closed and why is said.
async fn open_clients(
    backend: &dyn Backend,
    catalog: &Catalog,
    clients: usize,
    expected: &[Result<Expected, String>],
    options: &ConcurrencyOptions,
) -> Result<Vec<OpenClient>, String> {
    let mut opened = Vec::with_capacity(clients);
    for i in 0..clients {
        match open_client(backend, catalog, &options.mix, expected, options.connect_limit).await {
            Ok(client) => opened.push(client),
            Err(e) => {
                close_all(opened.into_iter().map(|(c, _)| c)).await;
                return Err(format!("client {} of {clients} could not be opened: {e:#}", i + 1));
            }
        }
    }
    Ok(opened)
}

/// The opened clients loop over the mix until the window ends (or the
/// phase's bounds); their samples summed into the phase, and whether the
/// engine is gone for its later phases.
async fn run_clients(
    backend: &dyn Backend,
    clients: usize,
    opened: Vec<OpenClient>,
    expected: &[Result<Expected, String>],
    options: &ConcurrencyOptions,
) -> (LoadPhase, Option<String>) {
    let engine = backend.engine().clone();
    let started = Instant::now();
    let shared = Arc::new(Shared::new(started, options, expected, engine.clone()));
    let cpu_before = cpu::Reading::now();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Sample>();
    let mut tasks = Vec::with_capacity(clients);
    for (i, (client, prepared)) in opened.into_iter().enumerate() {
        tasks.push(tokio::spawn(client::run(i, client, prepared, shared.clone(), sender.clone())));
    }
    drop(sender);
    let deadline = tokio::time::Instant::from_std(shared.window_end) + options.grace;
    let mut ended = Vec::new();
    let mut returned = Vec::new();
    let mut abandoned_clients = 0;
    for mut task in tasks {
        match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(Ok((client, end))) => {
                returned.push(client);
                ended.push(end);
            }
            Ok(Err(join)) => ended.push(Ended::Failed(format!("a client task ended abnormally: {join}"))),
            Err(_) => {
                // Aborting drops the client's query, which cancels it on the
                // server; awaited, so that has happened when the phase ends.
                task.abort();
                let _ = tokio::time::timeout(ABORT_LIMIT, task).await;
                abandoned_clients += 1;
            }
        }
    }
    let cpu = cpu_before.since(!backend.runs_in_process());
    let mut samples = Vec::new();
    while let Ok(sample) = receiver.try_recv() {
        samples.push(sample);
    }
    close_all(returned).await;
    let mut phase = tally::phase(&shared, &options.mix, expected, clients, &samples, &ended, abandoned_clients);
    phase.connections = connections(backend, clients);
    phase.client_cpu = cpu;
    let gone = match (ended.iter().any(|e| matches!(e, Ended::Lost(_))), abandoned_clients) {
        (true, _) => Some(format!("{engine} lost its connections in the phase with {}", clients_said(clients))),
        // A server that stops answering would hold every later phase too.
        (false, n) if n > 0 => Some(format!("{engine} left {} unanswered past the time limit in the phase with {}", clients_said(n as usize), clients_said(clients))),
        _ => None,
    };
    (phase, gone)
}

/// Puts back the server parameters the clients' `prepare` set (a setup's
/// `setParameter`), through the engine's own connection: it read the
/// server's values before any client changed them, whereas a client opened
/// after another had prepared would read the setup's. Bounded in time; the
/// error, if any, says the server was left changed.
async fn restore(backend: &dyn Backend, limit: Duration) -> Option<String> {
    match tokio::time::timeout(limit, backend.after_query()).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("the server was left changed after the phase: {e:#}")),
        Err(_) => Some(format!("the server was left changed after the phase: it did not answer within {} s", limit.as_secs())),
    }
}

/// A client of its own for the phase with the mix prepared (not timed);
/// None for a query left out of this engine's mix.
async fn open_client(
    backend: &dyn Backend,
    catalog: &Catalog,
    mix: &[MixQuery],
    expected: &[Result<Expected, String>],
    limit: Duration,
) -> anyhow::Result<OpenClient> {
    let client = match tokio::time::timeout(limit, backend.open_client()).await {
        Ok(opened) => opened?,
        Err(_) => anyhow::bail!("no connection within {} s", limit.as_secs()),
    };
    match tokio::time::timeout(limit, prepare_mix(client.as_ref(), catalog, mix, expected)).await {
        Ok(Ok(prepared)) => Ok((client, prepared)),
        Ok(Err(e)) => {
            client.close().await;
            Err(e)
        }
        Err(_) => {
            client.close().await;
            anyhow::bail!("the mix was not prepared within {} s", limit.as_secs())
        }
    }
}

async fn prepare_mix(client: &dyn Backend, catalog: &Catalog, mix: &[MixQuery], expected: &[Result<Expected, String>]) -> anyhow::Result<Vec<Option<Prepared>>> {
    let mut prepared = Vec::with_capacity(mix.len());
    for (m, wanted) in mix.iter().zip(expected) {
        if wanted.is_err() {
            prepared.push(None);
            continue;
        }
        let file = catalog.query(client.dialect(), &m.variant, &m.query)?;
        prepared.push(Some(client.prepare(&file).await.map_err(|e| e.context(format!("preparing {m}")))?));
    }
    Ok(prepared)
}

async fn close_all(clients: impl IntoIterator<Item = Box<dyn Backend>>) {
    for client in clients {
        client.close().await;
    }
}

/// How the clients reach the engine.
fn connections(backend: &dyn Backend, clients: usize) -> String {
    let plural = if clients == 1 { "" } else { "s" };
    match backend.spec().capabilities.server {
        true => format!("{clients} connection{plural} of their own"),
        // Where their queries run (a worker process each, or tasks of the
        // caller's) the engine says in its limits.
        false => format!("{clients} handle{plural} of their own (no server)"),
    }
}

/// A phase that measured nothing, and why.
fn failed_phase(backend: &dyn Backend, clients: usize, mix: &[MixQuery], expected: &[Result<Expected, String>], why: String) -> LoadPhase {
    let mut phase = tally::empty(backend.engine(), clients, mix, expected);
    phase.connections = connections(backend, clients);
    phase.stopped_by = "not run".into();
    phase.error = Some(why);
    phase
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Compare;
    use std::collections::BTreeMap;

    fn options() -> ConcurrencyOptions {
        ConcurrencyOptions {
            clients: vec![1, 4],
            duration: Duration::from_secs(60),
            warmup: Duration::from_secs(5),
            max_queries: 100,
            mix: Vec::new(),
            grace: GRACE,
            connect_limit: CONNECT_LIMIT,
        }
    }

    fn taking(seconds: f64) -> Result<Expected, String> {
        Ok(Expected { rows: Vec::new(), compare: Compare::Ordered, label: "verified".into(), slowest: seconds })
    }

    #[test]
    fn the_window_and_grace_follow_the_slowest_single_client_run() {
        // Quick queries: the phase runs as asked, nothing said.
        let (fitted, said) = fit_to_queries(&options(), &[taking(0.2), Err("left out".into())], 4);
        assert_eq!((fitted.duration, fitted.grace), (Duration::from_secs(60), GRACE));
        assert!(said.is_empty(), "{said:?}");
        // A query of 41 minutes (the paper's quickest): two of it in the window,
        // and 4 clients of it twice over before any is abandoned.
        let (fitted, said) = fit_to_queries(&options(), &[taking(2460.0), taking(30.0)], 4);
        assert_eq!(fitted.duration, Duration::from_secs(4920));
        assert_eq!(fitted.grace, Duration::from_secs(2 * 4 * 2460));
        let said: BTreeMap<_, _> = said.into_iter().collect();
        assert!(said["ghbench window"].contains("not the 60.0 s asked"), "{said:?}");
        assert!(said["ghbench grace"].contains("twice 4 × the slowest single-client run (2460.0 s)"), "{said:?}");
    }
}

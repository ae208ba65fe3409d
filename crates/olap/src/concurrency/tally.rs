//! The clients' samples summed into one [`LoadPhase`]: what counts as
//! completed in the window, the latency percentiles, the errors and wrong
//! answers, and why the phase ended.

use ghbench_core::Engine;
use hdrhistogram::Histogram;

use super::client::{Ended, Outcome, Sample, Shared};
use super::mix::Expected;
use ghbench_record::concurrency::{clients as clients_said, Latency, LoadMismatch, LoadPhase, MixQuery, QueryLoad};

/// How many errors and wrong answers a phase says in full.
const SHOWN: usize = 5;
/// Latencies are kept in microseconds, from 1 µs up (the histogram grows to
/// hold the longest query, hours if need be), to three significant digits
/// (0.1 % at most off).
const MICROS: f64 = 1e6;

/// A phase with nothing measured: its mix said query by query.
pub fn empty(engine: &Engine, clients: usize, mix: &[MixQuery], expected: &[Result<Expected, String>]) -> LoadPhase {
    LoadPhase {
        engine: engine.clone(),
        clients,
        connections: String::new(),
        window_seconds: 0.0,
        completed: 0,
        queries_per_second: None,
        latency: None,
        per_query: mix
            .iter()
            .zip(expected)
            .map(|(m, e)| QueryLoad {
                query: m.query.clone(),
                variant: m.variant.clone(),
                completed: 0,
                latency: None,
                failed: 0,
                wrong: 0,
                checked_against: e.as_ref().ok().map(|e| e.label.clone()),
                left_out: e.as_ref().err().cloned(),
            })
            .collect(),
        failed_queries: 0,
        errors: Vec::new(),
        wrong_answers: 0,
        mismatches: Vec::new(),
        warmup_queries: 0,
        abandoned: 0,
        stopped_by: String::new(),
        client_cpu: None,
        limits: Default::default(),
        error: None,
    }
}

/// Sums the samples. A query counts as completed if it was answered rightly
/// within the window, whenever it was sent (else every client would lose
/// about one query per window, and more as latency grows with the clients:
/// the rate would read low just where it matters); its latency counts if it
/// was sent in the window, however late it finished.
pub fn phase(
    shared: &Shared,
    mix: &[MixQuery],
    expected: &[Result<Expected, String>],
    clients: usize,
    samples: &[Sample],
    ended: &[Ended],
    abandoned: u64,
) -> LoadPhase {
    let mut phase = empty(&shared.engine, clients, mix, expected);
    let start = shared.offset(shared.window_start);
    let in_window = |s: &Sample| s.sent.as_secs_f64() >= start;
    let finished = |s: &Sample| s.sent.as_secs_f64() + s.seconds;
    let bounded = ended.iter().any(|e| matches!(e, Ended::MaxQueries));
    let window_end = shared.offset(shared.window_end);
    // Stopped by the query bound: the window closes with its last query (a
    // query finishing in the grace after the duration does not stretch it).
    let end = match bounded {
        true => samples.iter().filter(|s| in_window(s)).map(finished).fold(start, f64::max).min(window_end),
        false => window_end,
    };
    let right = |s: &&Sample| matches!(s.outcome, Outcome::Right) && in_window(s);
    let completed = |s: &&Sample| matches!(s.outcome, Outcome::Right) && (start..=end).contains(&finished(s));
    phase.window_seconds = end - start;
    phase.completed = samples.iter().filter(completed).count() as u64;
    phase.queries_per_second = (phase.window_seconds > 0.0).then(|| phase.completed as f64 / phase.window_seconds);
    phase.latency = latency(samples.iter().filter(right));
    for (q, load) in phase.per_query.iter_mut().enumerate() {
        let of_query = || samples.iter().filter(move |s| s.query == q);
        load.completed = of_query().filter(completed).count() as u64;
        load.latency = latency(of_query().filter(right));
        load.failed = of_query().filter(|s| matches!(s.outcome, Outcome::Failed(_))).count() as u64;
        load.wrong = of_query().filter(|s| matches!(s.outcome, Outcome::Wrong(_))).count() as u64;
    }
    phase.warmup_queries = samples.iter().filter(|s| !in_window(s)).count() as u64;
    for s in samples {
        let at = s.sent.as_secs_f64();
        match &s.outcome {
            Outcome::Right => {}
            Outcome::Failed(said) => {
                phase.failed_queries += 1;
                if phase.errors.len() < SHOWN {
                    phase.errors.push(format!("{} on client {} at {at:.1} s: {said}", mix[s.query], s.client + 1));
                }
            }
            Outcome::Wrong(diff) => {
                phase.wrong_answers += 1;
                if phase.mismatches.len() < SHOWN {
                    phase.mismatches.push(LoadMismatch {
                        query: mix[s.query].query.clone(),
                        variant: mix[s.query].variant.clone(),
                        client: s.client + 1,
                        at_seconds: at,
                        reason: diff.reason.clone(),
                        first_differences: diff.first_differences.clone(),
                    });
                }
            }
        }
    }
    phase.abandoned = abandoned;
    let failures: Vec<&str> = ended
        .iter()
        .filter_map(|e| match e {
            Ended::Lost(why) | Ended::Failed(why) => Some(why.as_str()),
            _ => None,
        })
        .collect();
    phase.stopped_by = match (failures.first(), bounded) {
        (Some(why), _) => why.to_string(),
        (None, true) => format!("max queries ({})", shared.max_queries),
        (None, false) => "duration".into(),
    };
    let mut wrong = Vec::new();
    if let Some(first) = phase.mismatches.first() {
        wrong.push(format!(
            "{} wrong answer(s) under load, the first {} {} on client {} at {:.1} s: {}",
            phase.wrong_answers, first.query, first.variant, first.client, first.at_seconds, first.reason
        ));
    }
    wrong.extend(failures.iter().map(|f| f.to_string()));
    if abandoned > 0 {
        wrong.push(format!("{} still running their query when the phase's time limit ran out: abandoned", clients_said(abandoned as usize)));
    }
    if failures.is_empty() && phase.wrong_answers == 0 && phase.completed == 0 && phase.failed_queries == 0 {
        wrong.push("no query finished within the window: choose a longer --duration or less data".into());
    }
    phase.error = (!wrong.is_empty()).then(|| wrong.join("; "));
    phase
}

/// Nearest-rank percentiles of the samples' seconds; None without samples.
fn latency<'a>(samples: impl Iterator<Item = &'a Sample>) -> Option<Latency> {
    let mut histogram = Histogram::<u64>::new(3).expect("three significant digits are valid");
    for s in samples {
        // An auto-resizing histogram takes any value it is given.
        let _ = histogram.record(((s.seconds * MICROS).round() as u64).max(1));
    }
    if histogram.is_empty() {
        return None;
    }
    let at = |q: f64| histogram.value_at_quantile(q) as f64 / MICROS;
    Some(Latency { count: histogram.len(), p50: at(0.50), p95: at(0.95), p99: at(0.99), max: histogram.max() as f64 / MICROS })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::concurrency::ConcurrencyOptions;
    use crate::verify::Difference;

    fn shared(expected: &[Result<Expected, String>]) -> Shared {
        let options = ConcurrencyOptions {
            clients: vec![2],
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            max_queries: 1000,
            mix: Vec::new(),
            grace: Duration::from_secs(1),
            connect_limit: Duration::from_secs(1),
        };
        Shared::new(Instant::now(), &options, expected, Engine::named("postgres"))
    }

    fn sample(query: usize, sent: f64, seconds: f64, outcome: Outcome) -> Sample {
        Sample { client: 0, query, sent: Duration::from_secs_f64(sent), seconds, outcome }
    }

    fn mix() -> (Vec<MixQuery>, Vec<Result<Expected, String>>) {
        let mix = vec![MixQuery { query: "A".into(), variant: "corrected".into() }, MixQuery { query: "B".into(), variant: "corrected".into() }];
        let expected = vec![
            Ok(Expected { rows: Vec::new(), compare: crate::catalog::Compare::Ordered, label: "verified".into(), slowest: 0.0 }),
            Err("it failed in the single-client phase".into()),
        ];
        (mix, expected)
    }

    #[test]
    fn queries_finished_in_the_window_complete_and_those_sent_in_it_keep_their_latency() {
        let (mix, expected) = mix();
        let shared = shared(&expected);
        let samples = vec![
            sample(0, 1.0, 0.5, Outcome::Right),  // warm-up
            sample(0, 1.5, 1.0, Outcome::Right),  // sent in the warm-up, finished in the window
            sample(0, 2.0, 1.0, Outcome::Right),  // in the window
            sample(0, 3.0, 2.0, Outcome::Right),  // in the window
            sample(0, 11.5, 4.0, Outcome::Right), // sent in the window, finished after it
        ];
        let phase = phase(&shared, &mix, &expected, 2, &samples, &[Ended::Duration, Ended::Duration], 0);
        assert_eq!((phase.completed, phase.warmup_queries), (3, 2));
        assert!((phase.window_seconds - 10.0).abs() < 1e-9);
        assert!((phase.queries_per_second.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(phase.per_query[0].completed, 3);
        let latency = phase.latency.unwrap();
        assert_eq!(latency.count, 3, "the late query's latency is kept, the warm-up's are not");
        assert!((latency.max - 4.0).abs() < 0.01 && (latency.p50 - 2.0).abs() < 0.01, "{latency:?}");
        assert_eq!(phase.stopped_by, "duration");
        assert!(phase.error.is_none(), "{:?}", phase.error);
        assert_eq!(phase.per_query[1].left_out.as_deref(), Some("it failed in the single-client phase"));
    }

    #[test]
    fn a_wrong_answer_or_a_lost_client_makes_the_phase_a_failure() {
        let (mix, expected) = mix();
        let shared = shared(&expected);
        let wrong = Outcome::Wrong(Difference { reason: "single-client returned 3 rows, postgres client 1 4".into(), first_differences: vec!["row 4".into()] });
        let samples = vec![sample(0, 2.5, 0.1, Outcome::Right), sample(0, 3.0, 0.1, wrong), sample(0, 4.0, 0.1, Outcome::Failed("connection closed".into()))];
        let ended = [Ended::Duration, Ended::Lost("client 2 lost its connection 4.1 s into the phase: connection closed".into())];
        let phase = phase(&shared, &mix, &expected, 2, &samples, &ended, 0);
        assert_eq!((phase.wrong_answers, phase.failed_queries, phase.completed), (1, 1, 1));
        let error = phase.error.as_deref().unwrap();
        assert!(error.starts_with("1 wrong answer(s) under load, the first A corrected on client 1 at 3.0 s"), "{error}");
        assert!(error.contains("client 2 lost its connection"), "{error}");
        assert!(phase.stopped_by.starts_with("client 2 lost"), "{}", phase.stopped_by);
        assert!(!phase.stands());
    }

    #[test]
    fn the_query_bound_closes_the_window_with_its_last_query() {
        let (mix, expected) = mix();
        let shared = shared(&expected);
        let samples = vec![sample(0, 2.0, 1.0, Outcome::Right), sample(0, 3.0, 1.5, Outcome::Right)];
        let phase = phase(&shared, &mix, &expected, 1, &samples, &[Ended::MaxQueries], 0);
        assert!((phase.window_seconds - 2.5).abs() < 1e-6, "{}", phase.window_seconds);
        assert_eq!(phase.completed, 2);
        assert_eq!(phase.stopped_by, "max queries (1000)");
        // The bound reached near the duration's end: the window stops there,
        // not when the last query finished in the grace after it.
        let late = vec![sample(0, 2.0, 1.0, Outcome::Right), sample(0, 11.0, 3.0, Outcome::Right)];
        let bounded_late = super::phase(&shared, &mix, &expected, 1, &late, &[Ended::MaxQueries], 0);
        assert!((bounded_late.window_seconds - 10.0).abs() < 1e-6, "{}", bounded_late.window_seconds);
        assert_eq!(bounded_late.completed, 1);
    }
}

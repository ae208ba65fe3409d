//! The mix every client loops over, and what each of its answers is checked
//! against: the answer the single-client phase verified across engines.

use anyhow::bail;

use crate::catalog::Compare;
use crate::record::QueryRecord;
use crate::rows::Row;

use ghbench_record::concurrency::MixQuery;

/// The variant the mix takes by default: the corrected queries have one
/// right answer on every engine (the published ones' ties may differ).
pub const DEFAULT_VARIANT: &str = "corrected";

/// Every engine's rows of every query of the single-client phase, in the
/// order of the records and of the engines (None: it failed).
#[derive(Debug, Default)]
pub struct Answers {
    pub rows: Vec<Vec<Option<Vec<Row>>>>,
}

/// What one query's answers under load must agree with.
#[derive(Debug, Clone)]
pub struct Expected {
    pub rows: Vec<Row>,
    pub compare: Compare,
    /// For people, e.g. `its single-client answer, verified across engines`.
    pub label: String,
    /// The slowest single-client run of the query on the engine (cold run
    /// included), in seconds: the phase's window and grace follow it.
    pub slowest: f64,
}

/// The mix: `asked` if given, each among the queries run (only they have a
/// verified answer to check against); else the run's corrected queries, or
/// every query run when it ran none of those.
pub fn resolve_mix(asked: &[MixQuery], run: &[(String, String)]) -> anyhow::Result<Vec<MixQuery>> {
    let listed = || run.iter().map(|(variant, query)| format!("{query} {variant}")).collect::<Vec<_>>().join(", ");
    if asked.is_empty() {
        let corrected: Vec<MixQuery> =
            run.iter().filter(|(variant, _)| variant == DEFAULT_VARIANT).map(|(variant, query)| MixQuery { query: query.clone(), variant: variant.clone() }).collect();
        let mix = if corrected.is_empty() { run.iter().map(|(variant, query)| MixQuery { query: query.clone(), variant: variant.clone() }).collect() } else { corrected };
        if mix.is_empty() {
            bail!("no query is run, so the clients have no mix");
        }
        return Ok(mix);
    }
    let mut mix: Vec<MixQuery> = Vec::with_capacity(asked.len());
    for m in asked {
        let variants: Vec<&str> = run.iter().filter(|(_, query)| *query == m.query).map(|(variant, _)| variant.as_str()).collect();
        if variants.is_empty() {
            bail!("--queries {}: this run times no query {} (it times {}); the mix may hold only queries the run times first, whose verified answers check the clients'", m.query, m.query, listed());
        }
        if !variants.contains(&m.variant.as_str()) {
            bail!(
                "--queries {}:{}: this run times {} only as {} (choose the variants it times with --variant; the mix may hold only what the run times first, whose verified answers check the clients')",
                m.query,
                m.variant,
                m.query,
                variants.join(" and ")
            );
        }
        // The same query twice would only weigh the mix and split its rows.
        if !mix.contains(m) {
            mix.push(m.clone());
        }
    }
    Ok(mix)
}

/// For each query of the mix, what the `engine`th engine's answers are
/// checked against, or why it is left out of that engine's mix.
pub fn expected(mix: &[MixQuery], records: &[QueryRecord], answers: &Answers, engine: usize) -> Vec<Result<Expected, String>> {
    mix.iter()
        .map(|m| {
            let (at, record) = records
                .iter()
                .enumerate()
                .find(|(_, r)| r.query == m.query && r.variant == m.variant)
                .ok_or_else(|| "not run in the single-client phase".to_string())?;
            let result = record.engines.get(engine).ok_or_else(|| "not run in the single-client phase".to_string())?;
            let rows = answers.rows.get(at).and_then(|r| r.get(engine)).and_then(Option::as_ref);
            let rows = match (&result.error, rows) {
                (None, Some(rows)) => rows,
                _ => return Err("it failed in the single-client phase: no answer to check against".to_string()),
            };
            let label = match result.verified {
                Some(true) => "its single-client answer, verified across engines",
                None => "its own single-client answer (not verified: no other engine answered it)",
                Some(false) => return Err("its single-client answer disagreed (see the mismatch): no verified answer to check against".into()),
            };
            let slowest = result.iterations.iter().chain(&result.cold_run).chain(&result.cold_runs).map(|i| i.seconds).fold(0.0, f64::max);
            Ok(Expected { rows: rows.clone(), compare: record.compare, label: label.into(), slowest })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Vec<(String, String)> {
        ["published", "corrected"].iter().flat_map(|v| ["A", "B"].map(|q| (v.to_string(), q.to_string()))).collect()
    }

    #[test]
    fn the_default_mix_is_the_corrected_queries_run() {
        let mix = resolve_mix(&[], &run()).unwrap();
        assert_eq!(mix.iter().map(ToString::to_string).collect::<Vec<_>>(), ["A corrected", "B corrected"]);
        let published_only = vec![("published".to_string(), "C".to_string())];
        assert_eq!(resolve_mix(&[], &published_only).unwrap()[0].to_string(), "C published");
    }

    #[test]
    fn a_mix_query_not_run_first_is_refused_naming_what_was() {
        let asked = [MixQuery { query: "D".into(), variant: "corrected".into() }];
        let error = resolve_mix(&asked, &run()).unwrap_err().to_string();
        assert!(error.starts_with("--queries D: this run times no query D (it times A published, B published, A corrected, B corrected)"), "{error}");
        let corrected_only = vec![("corrected".to_string(), "A".to_string())];
        let asked = [MixQuery { query: "A".into(), variant: "published".into() }];
        let error = resolve_mix(&asked, &corrected_only).unwrap_err().to_string();
        assert!(error.starts_with("--queries A:published: this run times A only as corrected (choose the variants it times with --variant"), "{error}");
    }

    #[test]
    fn a_query_named_twice_is_in_the_mix_once() {
        let a = MixQuery { query: "A".into(), variant: "corrected".into() };
        let b = MixQuery { query: "B".into(), variant: "corrected".into() };
        let mix = resolve_mix(&[a.clone(), b.clone(), a.clone()], &run()).unwrap();
        assert_eq!(mix, [a, b]);
    }
}

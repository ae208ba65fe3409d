//! The answer a reader came for, in a few numbers per engine: its time
//! against the baseline's over all queries (the geometric mean of the
//! per-query ratios, as ClickBench and JSONBench summarise), how its answers
//! were verified, how long it took to load and how big its data is on disk.
//! The Markdown report and the page open with it; the terminal shows the
//! mean under its ratio table.

use ghbench_core::Engine;

use super::bench::TextTable;
use super::charts::MIB;
use super::{answered_median, result_for, ResultsView};
use ghbench_record::run::{EngineRecord, QueryRecord};

/// `other`'s median ÷ `baseline`'s on one query, when both answered.
pub fn ratio(query: &QueryRecord, baseline: &Engine, other: &Engine) -> Option<f64> {
    Some(answered_median(query, other)? / answered_median(query, baseline)?)
}

/// A ratio to three significant digits: `0.0312×`, `2.31×`, `28.4×`, `312×`.
pub fn times(ratio: f64) -> String {
    let decimals = (2 - ratio.log10().floor() as i32).clamp(0, 6) as usize;
    format!("{ratio:.decimals$}×")
}

/// The geometric mean; None for no values.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// What the ratio table's numbers mean, in a line.
pub fn ratio_caption(view: &ResultsView) -> String {
    let baseline = view.baseline.map_or("the baseline", Engine::name);
    format!(
        "Each engine's median ÷ {baseline}'s, per query (below 1×: faster than {baseline});\n\
         the geometric mean is over the queries both answered (`3 of 4` when not all):"
    )
}

/// One engine's line of the summary.
pub struct EngineSummary<'a> {
    pub engine: &'a Engine,
    /// Its time against the baseline's: the geometric mean of the per-query
    /// ratios; None for the baseline itself, or with no query both answered.
    pub ratio: Option<f64>,
    /// How many queries the mean is over, of how many the run had.
    pub counted: usize,
    pub queries: usize,
    pub verified: usize,
    pub differ: usize,
    pub failed: usize,
    pub record: Option<&'a EngineRecord>,
}

impl<'a> EngineSummary<'a> {
    /// Every engine of the run, in its order.
    pub fn all(view: &ResultsView<'a>) -> Vec<EngineSummary<'a>> {
        let queries = &view.record.queries;
        view.engines
            .iter()
            .map(|&engine| {
                let ratios: Vec<f64> = match view.baseline.filter(|b| *b != engine) {
                    Some(baseline) => queries.iter().filter_map(|q| ratio(q, baseline, engine)).collect(),
                    None => Vec::new(),
                };
                let results: Vec<_> = queries.iter().filter_map(|q| result_for(q, engine)).collect();
                EngineSummary {
                    engine,
                    ratio: geometric_mean(&ratios),
                    counted: ratios.len(),
                    queries: queries.len(),
                    verified: results.iter().filter(|r| r.error.is_none() && r.verified == Some(true)).count(),
                    differ: results.iter().filter(|r| r.error.is_none() && r.verified == Some(false)).count(),
                    failed: results.iter().filter(|r| r.error.is_some()).count(),
                    record: view.record.context.engines.iter().find(|e| e.engine == *engine),
                }
            })
            .collect()
    }

    /// `2.31×`, and over how many queries when not all: `1.60× (3 of 4)`.
    pub fn ratio_cell(&self) -> String {
        match self.ratio {
            None => "–".into(),
            Some(r) if self.counted == self.queries => times(r),
            Some(r) => format!("{} ({} of {})", times(r), self.counted, self.queries),
        }
    }

    /// `4 ✓`, `3 ✓, 1 ✗, 1 failed` (the marks of the results table), or `not compared`.
    pub fn answers(&self) -> String {
        let parts: Vec<String> = [(self.verified, "✓"), (self.differ, "✗"), (self.failed, "failed")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if parts.is_empty() {
            "not compared".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The summary as a table: per engine the ratio, the answers, load and size.
pub fn summary_table(view: &ResultsView) -> TextTable {
    let ratio_header = match view.baseline {
        Some(b) => format!("time ÷ {b}'s (geometric mean)"),
        None => "time".into(),
    };
    let mut table = TextTable::new(&["engine", &ratio_header, "answers", "load s", "events/s", "on disk MiB"]);
    for s in EngineSummary::all(view) {
        let data = s.record.and_then(|e| e.data.as_ref());
        let load = data.and_then(super::load_cell);
        let size = s.record.and_then(|e| e.storage.as_ref()).map(|st| format!("{:.1}", (st.table_bytes + st.index_bytes) as f64 / MIB));
        let ratio = if Some(s.engine) == view.baseline { "1× (baseline)".to_string() } else { s.ratio_cell() };
        table.rows.push(vec![
            s.engine.to_string(),
            ratio,
            s.answers(),
            load.unwrap_or_else(|| "–".into()),
            data.and_then(|d| d.events_per_second()).map_or_else(|| "–".into(), |r| format!("{r:.0}")),
            size.unwrap_or_else(|| "–".into()),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_to_three_digits() {
        assert_eq!(times(0.03125), "0.0312×");
        assert_eq!(times(2.3149), "2.31×");
        assert_eq!(times(28.44), "28.4×");
        assert_eq!(times(312.2), "312×");
        assert_eq!(times(1.0), "1.00×");
    }

    #[test]
    fn the_geometric_mean_weighs_a_halving_and_a_doubling_alike() {
        assert!((geometric_mean(&[0.5, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geometric_mean(&[4.0, 1.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[]), None);
    }
}

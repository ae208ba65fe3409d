//! The paper's published numbers beside ours, as a table of text cells that
//! the Markdown report and the HTML page each lay out in their own syntax.

use ghbench_core::Engine;
use serde::Serialize;

use super::{median_said, percent, result_for, ResultsView};
use ghbench_record::run::RunRecord;

/// The paper's numbers and ours for the engines both ran, per query.
#[derive(Serialize)]
pub(crate) struct PaperTable {
    pub events: u64,
    pub machine: String,
    /// (product, engine) as the paper ran them, its baseline first.
    pub products: Vec<(String, Engine)>,
    /// Which of our variants stands beside the paper's numbers.
    pub variant: &'static str,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl PaperTable {
    /// None when the record carries no published numbers.
    pub fn of(record: &RunRecord) -> Option<PaperTable> {
        let paper = record.published.as_ref()?;
        let ours = |variant: &str| record.queries.iter().filter(|q| q.variant == variant).collect::<Vec<_>>();
        let (variant, queries) = match ours("published") {
            q if !q.is_empty() => ("published", q),
            _ => ("corrected", ours("corrected")),
        };
        // The paper's baseline first, as the paper put it.
        let engines: Vec<&Engine> =
            std::iter::once(&paper.baseline).chain(paper.engines.keys().filter(|e| **e != paper.baseline)).collect();
        let product = |e: &Engine| paper.engines.get(e).cloned().unwrap_or_else(|| e.to_string());
        // Ours beside the paper's for the engines both ran, "faster by" from the paper's baseline.
        let view = ResultsView { baseline: Some(&paper.baseline), ..ResultsView::of(record) };
        let ours: Vec<&Engine> = engines.iter().copied().filter(|e| view.engines.contains(e)).collect();
        let others: Vec<&Engine> = engines[1..].to_vec();
        let mut header = vec!["query".to_string()];
        header.extend(engines.iter().map(|e| format!("paper {} s", product(e))));
        header.extend(others.iter().map(|o| format!("paper {}", view.faster_by_header(o))));
        header.extend(ours.iter().map(|e| format!("ours {e} s")));
        if ours.contains(&&paper.baseline) {
            header.extend(others.iter().filter(|o| ours.contains(o)).map(|o| format!("ours {}", view.faster_by_header(o))));
        }
        let mut rows = Vec::new();
        for (name, secs) in &paper.seconds {
            let q = queries.iter().find(|q| &q.query == name);
            let mut row = vec![name.clone()];
            row.extend(engines.iter().map(|e| secs.get(*e).map(|s| format!("{s:.0}")).unwrap_or_default()));
            row.extend(others.iter().map(|_| paper.faster_by.get(name).map(|f| percent(*f)).unwrap_or_default()));
            row.extend(ours.iter().map(|e| median_said(q.and_then(|q| result_for(q, e)?.hot_stats()), " ")));
            if ours.contains(&&paper.baseline) {
                row.extend(others.iter().filter(|o| ours.contains(o)).map(|o| q.map(|q| view.faster_by(q, o)).unwrap_or_default()));
            }
            rows.push(row);
        }
        Some(PaperTable {
            events: paper.events,
            machine: paper.machine.clone(),
            products: engines.iter().map(|e| (product(e), (*e).clone())).collect(),
            variant,
            header,
            rows,
        })
    }
}

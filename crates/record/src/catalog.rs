//! What the query catalog (`queries/`) says that a run record keeps: how two
//! engines' answers must agree, and the paper's published results.

use std::collections::BTreeMap;

use ghbench_core::Engine;
use serde::{Deserialize, Serialize};

/// How two engines' results of a query must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compare {
    /// Row by row in order: the variant defines the order completely.
    Ordered,
    /// Ordered by the value column (the second) only: the value column must
    /// agree in order, the rows as a multiset.
    TiesUnordered,
    /// As `TiesUnordered`, but a LIMIT may cut through the last tie, so rows
    /// tied with the last row need only agree in their value.
    TiesUnorderedCut,
}

/// The paper's published results, shown beside ours for context.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PaperResults {
    pub events: u64,
    pub machine: String,
    /// engine -> the product and version the paper ran
    pub engines: BTreeMap<Engine, String>,
    /// query -> engine -> seconds
    pub seconds: BTreeMap<String, BTreeMap<Engine, f64>>,
    /// The engine the paper's "faster by" column speaks for.
    pub baseline: Engine,
    /// query -> the paper's (S-F)/S of the baseline against the other engine
    pub faster_by: BTreeMap<String, f64>,
}

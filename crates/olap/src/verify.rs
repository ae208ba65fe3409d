//! All verification of results: do the engines' results of the same query
//! agree? As strictly as the query's variant allows: in order where it defines
//! the order, else up to ties. ([`crate::consistency`] checks the data they
//! hold before any query runs.)

use serde::{Deserialize, Serialize};

use crate::catalog::{Compare, QuerySpec};
use crate::record::{EngineResult, Mismatch, Verification, VerificationStatus};
use crate::rows::{rows_agree, show_row, Cell, Row};

/// The column the published queries order by (their count or average).
pub const VALUE_COLUMN: usize = 1;
/// How many differing rows a mismatch shows.
const SHOWN: usize = 5;

/// Why two results differ, with the first differing rows of each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub reason: String,
    /// Human-readable lines, e.g. `row 3: postgres ("a", 2) vs mongo ("b", 2)`.
    pub first_differences: Vec<String>,
}

/// Compares every engine's rows with the first engine that answered.
pub fn verify(spec: &QuerySpec, results: &mut [EngineResult], rows: &[Option<Vec<Row>>]) -> Verification {
    let answered: Vec<usize> = (0..results.len()).filter(|&i| rows[i].is_some()).collect();
    let failed = answered.len() < results.len();
    let Some((&reference, others)) = answered.split_first() else {
        return Verification { status: VerificationStatus::Error, reference: None, mismatches: Vec::new(), cause: None };
    };
    let ref_name = results[reference].engine.clone();
    let ref_rows = rows[reference].as_deref().unwrap_or_default();
    let mut mismatches = Vec::new();
    for &i in others {
        let name = results[i].engine.clone();
        match compare(spec.compare, (ref_name.name(), ref_rows), (name.name(), rows[i].as_deref().unwrap_or_default())) {
            Ok(()) => results[i].verified = Some(true),
            Err(diff) => {
                results[i].verified = Some(false);
                mismatches.push(Mismatch { engine: name, reason: diff.reason, first_differences: diff.first_differences });
            }
        }
    }
    let status = if !mismatches.is_empty() {
        VerificationStatus::Mismatch
    } else if failed {
        VerificationStatus::Error
    } else if others.is_empty() {
        VerificationStatus::NotCompared
    } else {
        VerificationStatus::Agree
    };
    // The reference is as verified as the comparison: a mismatch does not say which side is wrong.
    results[reference].verified = (!others.is_empty()).then_some(mismatches.is_empty());
    for r in results.iter_mut().filter(|r| r.error.is_some()) {
        r.verified = Some(false);
    }
    Verification { status, reference: Some(ref_name), mismatches, cause: None }
}

/// Compares `other` against `reference` (the names label the output).
pub fn compare(mode: Compare, reference: (&str, &[Row]), other: (&str, &[Row])) -> Result<(), Difference> {
    let ((ref_name, a), (other_name, b)) = (reference, other);
    if a.len() != b.len() {
        let mut diff = match mode {
            Compare::Ordered => first_ordered_difference(ref_name, a, other_name, b),
            _ => multiset_difference(ref_name, a, other_name, b),
        };
        diff.reason = format!("{ref_name} returned {} rows, {other_name} {}", a.len(), b.len());
        return Err(diff);
    }
    match mode {
        Compare::Ordered => ordered(ref_name, a, other_name, b),
        Compare::TiesUnordered => {
            value_column(ref_name, a, other_name, b)?;
            as_multisets(ref_name, a, other_name, b)
        }
        Compare::TiesUnorderedCut => {
            value_column(ref_name, a, other_name, b)?;
            // Rows tied with the last row may be any of the tied ones: leave them out.
            let last = a.last().and_then(|r| r.get(VALUE_COLUMN)).cloned().unwrap_or(Cell::Null);
            let above = |rows: &[Row]| -> Vec<Row> {
                rows.iter().filter(|r| !r.get(VALUE_COLUMN).is_some_and(|v| v.agrees(&last))).cloned().collect()
            };
            as_multisets(ref_name, &above(a), other_name, &above(b))
        }
    }
}

fn ordered(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Result<(), Difference> {
    if a.iter().zip(b).all(|(x, y)| rows_agree(x, y)) {
        return Ok(());
    }
    Err(first_ordered_difference(ref_name, a, other_name, b))
}

fn first_ordered_difference(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Difference {
    let first = (0..a.len().max(b.len()))
        .find(|&i| match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => !rows_agree(x, y),
            _ => true,
        })
        .unwrap_or(0);
    let show = |rows: &[Row], i: usize| rows.get(i).map_or("(no row)".to_string(), |r| show_row(r));
    Difference {
        reason: format!("rows differ from row {} on (in order)", first + 1),
        first_differences: (first..(first + SHOWN).min(a.len().max(b.len())))
            .map(|i| format!("row {}: {ref_name} {} vs {other_name} {}", i + 1, show(a, i), show(b, i)))
            .collect(),
    }
}

/// The value column must agree row by row: both engines ordered by it.
fn value_column(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Result<(), Difference> {
    let value = |r: &Row| r.get(VALUE_COLUMN).cloned().unwrap_or(Cell::Null);
    match a.iter().zip(b).position(|(x, y)| !value(x).agrees(&value(y))) {
        None => Ok(()),
        Some(i) => Err(Difference {
            reason: format!("the ordered value column differs from row {} on", i + 1),
            first_differences: (i..(i + SHOWN).min(a.len()))
                .map(|i| format!("row {}: {ref_name} {} vs {other_name} {}", i + 1, show_row(&a[i]), show_row(&b[i])))
                .collect(),
        }),
    }
}

fn as_multisets(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Result<(), Difference> {
    let (sa, sb) = (canonical(a), canonical(b));
    if sa.len() == sb.len() && sa.iter().zip(&sb).all(|(x, y)| rows_agree(x, y)) {
        return Ok(());
    }
    Err(multiset_difference(ref_name, a, other_name, b))
}

/// Rows in one result and not the other (up to `SHOWN` of each side).
fn multiset_difference(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Difference {
    let only_in = |xs: &[Row], ys: &[Row]| -> Vec<Row> {
        let mut unmatched: Vec<Option<&Row>> = ys.iter().map(Some).collect();
        let mut only = Vec::new();
        for x in canonical(xs) {
            match unmatched.iter_mut().find(|y| y.is_some_and(|y| rows_agree(&x, y))) {
                Some(slot) => *slot = None,
                None => only.push(x),
            }
        }
        only
    };
    let (only_a, only_b) = (only_in(a, b), only_in(b, a));
    let mut lines: Vec<String> = only_a.iter().take(SHOWN).map(|r| format!("only in {ref_name}: {}", show_row(r))).collect();
    lines.extend(only_b.iter().take(SHOWN).map(|r| format!("only in {other_name}: {}", show_row(r))));
    Difference {
        reason: format!("{} rows only in {ref_name}, {} only in {other_name} (compared as multisets)", only_a.len(), only_b.len()),
        first_differences: lines,
    }
}

fn canonical(rows: &[Row]) -> Vec<Row> {
    let mut sorted = rows.to_vec();
    sorted.sort_by(|x, y| {
        x.iter().zip(y.iter()).map(|(a, b)| a.canonical_cmp(b)).find(|o| o.is_ne()).unwrap_or(x.len().cmp(&y.len()))
    });
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(items: &[(&str, i64)]) -> Vec<Row> {
        items.iter().map(|(k, n)| vec![Cell::Text(k.to_string()), Cell::Int(*n)]).collect()
    }

    #[test]
    fn ordered_needs_the_same_order() {
        let a = rows(&[("x", 2), ("y", 2)]);
        let b = rows(&[("y", 2), ("x", 2)]);
        assert!(compare(Compare::Ordered, ("pg", &a), ("mongo", &a)).is_ok());
        let err = compare(Compare::Ordered, ("pg", &a), ("mongo", &b)).unwrap_err();
        assert!(err.first_differences[0].starts_with("row 1: pg (\"x\", 2) vs mongo (\"y\", 2)"), "{err:?}");
        assert!(compare(Compare::TiesUnordered, ("pg", &a), ("mongo", &b)).is_ok());
    }

    #[test]
    fn ties_unordered_still_needs_the_value_order_and_the_same_rows() {
        let a = rows(&[("x", 3), ("y", 2)]);
        assert!(compare(Compare::TiesUnordered, ("pg", &a), ("mongo", &rows(&[("y", 2), ("x", 3)]))).is_err());
        let err = compare(Compare::TiesUnordered, ("pg", &a), ("mongo", &rows(&[("x", 3), ("z", 2)]))).unwrap_err();
        assert_eq!(err.first_differences, ["only in pg: (\"y\", 2)", "only in mongo: (\"z\", 2)"]);
        let err = compare(Compare::TiesUnordered, ("pg", &a), ("mongo", &rows(&[("x", 3), ("y", 2), ("z", 1)]))).unwrap_err();
        assert!(err.reason.contains("2 rows, mongo 3"), "{err:?}");
    }

    #[test]
    fn a_limit_cutting_a_tie_may_keep_different_keys_but_not_above_it() {
        let a = rows(&[("x", 3), ("y", 2)]);
        assert!(compare(Compare::TiesUnorderedCut, ("pg", &a), ("mongo", &rows(&[("x", 3), ("z", 2)]))).is_ok());
        assert!(compare(Compare::TiesUnorderedCut, ("pg", &a), ("mongo", &rows(&[("w", 3), ("y", 2)]))).is_err());
        assert!(compare(Compare::TiesUnorderedCut, ("pg", &a), ("mongo", &rows(&[("x", 3), ("y", 1)]))).is_err());
    }

    #[test]
    fn averages_agree_to_a_relative_tolerance() {
        let a = vec![vec![Cell::Text("r".into()), Cell::Float(10.0 / 3.0)]];
        let b = vec![vec![Cell::Text("r".into()), Cell::from_sql_value(Some("3.3333333333333333"))]];
        assert!(compare(Compare::Ordered, ("pg", &a), ("mongo", &b)).is_ok());
        let c = vec![vec![Cell::Text("r".into()), Cell::Float(3.3334)]];
        assert!(compare(Compare::Ordered, ("pg", &a), ("mongo", &c)).is_err());
    }
}

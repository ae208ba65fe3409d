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

/// Groups the engines by agreeing answers and says which disagree with the
/// rest. With a majority (one largest group of two or more) its engines are
/// verified and each other engine is a mismatch against it; the first engine
/// is not blamed for another's wrong answer. With no majority (two engines
/// that differ, or a tie) no engine can be trusted: all are marked, and the
/// mismatches are against the first engine that answered.
pub fn verify(spec: &QuerySpec, results: &mut [EngineResult], rows: &[Option<Vec<Row>>]) -> Verification {
    let answered: Vec<usize> = (0..results.len()).filter(|&i| rows[i].is_some()).collect();
    let failed = answered.len() < results.len();
    if answered.is_empty() {
        return Verification { status: VerificationStatus::Error, reference: None, agreeing: Vec::new(), mismatches: Vec::new(), cause: None };
    }
    let names: Vec<String> = results.iter().map(|r| r.engine.name().to_string()).collect();
    let against = |reference: usize, other: usize| {
        compare(spec.compare, (&names[reference], rows[reference].as_deref().unwrap_or_default()), (&names[other], rows[other].as_deref().unwrap_or_default()))
    };
    let groups = agreeing_groups(&answered, |a, b| against(a, b).is_ok());
    let largest = groups.iter().map(Vec::len).max().unwrap_or(0);
    // The first largest group: on a tie, the first engine's side.
    let majority = groups.iter().find(|g| g.len() == largest).cloned().unwrap_or_default();
    let sure = largest >= 2 && groups.iter().filter(|g| g.len() == largest).count() == 1;
    let reference = majority[0];
    let mismatches: Vec<Mismatch> = answered
        .iter()
        .filter(|i| !majority.contains(i))
        .filter_map(|&i| against(reference, i).err().map(|diff| (i, diff)))
        .map(|(i, diff)| Mismatch { engine: results[i].engine.clone(), reason: diff.reason, first_differences: diff.first_differences })
        .collect();
    let status = if !mismatches.is_empty() {
        VerificationStatus::Mismatch
    } else if failed {
        VerificationStatus::Error
    } else if answered.len() < 2 {
        VerificationStatus::NotCompared
    } else {
        VerificationStatus::Agree
    };
    for &i in &answered {
        results[i].verified = (answered.len() > 1).then(|| mismatches.is_empty() || (sure && majority.contains(&i)));
    }
    for r in results.iter_mut().filter(|r| r.error.is_some()) {
        r.verified = Some(false);
    }
    let agreeing = if sure && !mismatches.is_empty() { majority.iter().map(|&i| results[i].engine.clone()).collect() } else { Vec::new() };
    Verification { status, reference: Some(results[reference].engine.clone()), agreeing, mismatches, cause: None }
}

/// `engines` in groups whose answers agree, in order: each joins the first
/// group whose first engine it agrees with. Agreement within a tolerance is
/// not transitive, so an engine that agrees with the largest group's first
/// engine is moved there: it is never called wrong by the group it matches.
fn agreeing_groups(engines: &[usize], agree: impl Fn(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in engines {
        match groups.iter_mut().find(|g| agree(g[0], i)) {
            Some(group) => group.push(i),
            None => groups.push(vec![i]),
        }
    }
    let Some(largest) = groups.iter().map(Vec::len).max() else { return groups };
    let first_largest = groups.iter().position(|g| g.len() == largest).unwrap_or(0);
    let head = groups[first_largest][0];
    let mut movers = Vec::new();
    for (g, group) in groups.iter_mut().enumerate() {
        if g == first_largest {
            continue;
        }
        group.retain(|&i| {
            let moves = agree(head, i);
            if moves {
                movers.push(i);
            }
            !moves
        });
    }
    groups[first_largest].extend(movers);
    groups.retain(|g| !g.is_empty());
    groups
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

/// Rows in one result and not the other (up to `SHOWN` of each side): the
/// two sides sorted into the canonical order and merged, so a published A of
/// a million rows is compared in one pass, not a search per row. Rows that
/// agree within the float tolerance pair off as before.
fn multiset_difference(ref_name: &str, a: &[Row], other_name: &str, b: &[Row]) -> Difference {
    let (sa, sb) = (canonical(a), canonical(b));
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < sa.len() && j < sb.len() {
        if rows_agree(&sa[i], &sb[j]) {
            i += 1;
            j += 1;
        } else if row_cmp(&sa[i], &sb[j]).is_lt() {
            only_a.push(&sa[i]);
            i += 1;
        } else {
            only_b.push(&sb[j]);
            j += 1;
        }
    }
    only_a.extend(&sa[i..]);
    only_b.extend(&sb[j..]);
    let mut lines: Vec<String> = only_a.iter().take(SHOWN).map(|r| format!("only in {ref_name}: {}", show_row(r))).collect();
    lines.extend(only_b.iter().take(SHOWN).map(|r| format!("only in {other_name}: {}", show_row(r))));
    Difference {
        reason: format!("{} rows only in {ref_name}, {} only in {other_name} (compared as multisets)", only_a.len(), only_b.len()),
        first_differences: lines,
    }
}

/// The canonical order of rows: cell by cell, then the shorter first.
fn row_cmp(x: &Row, y: &Row) -> std::cmp::Ordering {
    x.iter().zip(y.iter()).map(|(a, b)| a.canonical_cmp(b)).find(|o| o.is_ne()).unwrap_or(x.len().cmp(&y.len()))
}

fn canonical(rows: &[Row]) -> Vec<Row> {
    let mut sorted = rows.to_vec();
    sorted.sort_by(row_cmp);
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(items: &[(&str, i64)]) -> Vec<Row> {
        items.iter().map(|(k, n)| vec![Cell::Text(k.to_string()), Cell::Int(*n)]).collect()
    }

    /// Verifies one answer per engine (None: the engine failed).
    fn verify_answers(answers: &[(&str, Option<Vec<Row>>)]) -> (Verification, Vec<Option<bool>>) {
        let spec = QuerySpec { title: "t".into(), compare: Compare::Ordered };
        let mut results: Vec<EngineResult> = answers
            .iter()
            .map(|(e, rows)| match rows {
                Some(_) => EngineResult::empty(&(*e).into()),
                None => EngineResult::failed(&(*e).into(), "gone".into()),
            })
            .collect();
        let rows: Vec<Option<Vec<Row>>> = answers.iter().map(|(_, r)| r.clone()).collect();
        let verification = verify(&spec, &mut results, &rows);
        (verification, results.iter().map(|r| r.verified).collect())
    }

    #[test]
    fn the_engine_that_differs_from_the_rest_is_the_one_marked() {
        let (good, bad) = (rows(&[("x", 2)]), rows(&[("x", 3)]));
        let (v, marks) = verify_answers(&[("pg", Some(good.clone())), ("mongo", Some(bad.clone())), ("polars", Some(good.clone()))]);
        assert_eq!(v.status, VerificationStatus::Mismatch);
        assert_eq!(marks, [Some(true), Some(false), Some(true)], "the first engine is not blamed for mongo's answer");
        assert_eq!(v.mismatches.iter().map(|m| m.engine.name()).collect::<Vec<_>>(), ["mongo"]);
        assert_eq!(v.agreeing.iter().map(|e| e.name()).collect::<Vec<_>>(), ["pg", "polars"]);
        // The first engine is the odd one out: the majority is the reference.
        let (v, marks) = verify_answers(&[("pg", Some(bad.clone())), ("mongo", Some(good.clone())), ("polars", Some(good.clone()))]);
        assert_eq!(marks, [Some(false), Some(true), Some(true)]);
        assert_eq!(v.reference.as_ref().map(|e| e.name()), Some("mongo"));
        assert_eq!(v.mismatches.iter().map(|m| m.engine.name()).collect::<Vec<_>>(), ["pg"]);
    }

    #[test]
    fn without_a_majority_every_engine_is_marked() {
        let (a, b) = (rows(&[("x", 2)]), rows(&[("x", 3)]));
        let (v, marks) = verify_answers(&[("pg", Some(a.clone())), ("mongo", Some(b.clone()))]);
        assert_eq!(marks, [Some(false), Some(false)], "two answers that differ: either may be wrong");
        assert!(v.agreeing.is_empty());
        assert_eq!(v.mismatches.iter().map(|m| m.engine.name()).collect::<Vec<_>>(), ["mongo"]);
        // All agree, one failed: the answers stand, the failure is marked.
        let (v, marks) = verify_answers(&[("pg", Some(a.clone())), ("mongo", None), ("polars", Some(a.clone()))]);
        assert_eq!((v.status, marks), (VerificationStatus::Error, vec![Some(true), Some(false), Some(true)]));
        let (v, marks) = verify_answers(&[("pg", Some(a))]);
        assert_eq!((v.status, marks), (VerificationStatus::NotCompared, vec![None]));
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

    /// A published A at the paper's scale has about a million rows: two such
    /// answers that differ in one row are told apart, the row named on each
    /// side, in one merge of the sorted sides (no search per row).
    #[test]
    fn a_million_rows_that_differ_in_one_are_compared_by_merging() {
        let many: Vec<Row> = (0..1_000_000).map(|i| vec![Cell::Text(format!("owner{}/repo{i}", i % 977)), Cell::Int(i % 13)]).collect();
        let mut other = many.clone();
        other[123_456][1] = Cell::Int(99);
        other.reverse();
        let diff = compare(Compare::TiesUnordered, ("postgres", &many), ("mongo", &other[..])).unwrap_err();
        // Ties unordered first checks the value column row by row; as multisets:
        let diff_sets = multiset_difference("postgres", &many, "mongo", &other);
        assert!(diff.reason.contains("value column"), "{}", diff.reason);
        assert_eq!(diff_sets.reason, "1 rows only in postgres, 1 only in mongo (compared as multisets)");
        assert_eq!(diff_sets.first_differences, ["only in postgres: (\"owner354/repo123456\", 8)", "only in mongo: (\"owner354/repo123456\", 99)"]);
        assert!(multiset_difference("a", &many, "b", &many).first_differences.is_empty());
    }
}

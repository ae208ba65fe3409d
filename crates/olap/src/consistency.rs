//! Do the engines hold the same data? Checked before timing: engines holding
//! different hours cannot return the same results, and their timings measure
//! different work, so a difference has to be named before any mismatch is.
//!
//! Every engine's ingest ledger is compared with the first engine's, hour by
//! hour; and each table's exact row count with its own ledger, since a table
//! changed by hand makes its ledger lie.

use ghbench_core::{summarise_hours, Hour};

use crate::ledger::{count_of, Ledger};
use crate::record::{DataConsistency, QueryRecord, VerificationStatus};

/// Runs of consecutive hours shown before the rest is only counted: a year has
/// 8,760 hours, and a line of them helps nobody.
const RANGES_SHOWN: usize = 4;
/// Hours (or unreadable ledger entries) listed one by one before the rest is only counted.
const LISTED: usize = 4;

/// What the check needs to know of one engine.
#[derive(Debug, Clone, Copy)]
pub struct Holding<'a> {
    pub engine: &'a str,
    /// None when the ledger could not be read.
    pub ledger: Option<&'a Ledger>,
    /// The table's row count when it was counted (not the planner's estimate).
    pub exact_rows: Option<u64>,
}

/// Compares what the engines hold; `agree` when nothing differs.
pub fn check(engines: &[Holding<'_>]) -> DataConsistency {
    let mut differences = Vec::new();
    let readable: Vec<(&str, &Ledger)> = engines.iter().filter_map(|e| Some((e.engine, e.ledger?))).collect();
    if let Some((&reference, others)) = readable.split_first() {
        for &other in others {
            differences.extend(ledger_differences(reference, other));
        }
    }
    for engine in engines {
        differences.extend(ledger_problems(engine));
    }
    DataConsistency { agree: differences.is_empty(), differences }
}

/// Gives each mismatching query the cause when the engines hold different data.
/// Their rows were compared all the same: the details stay in the record.
pub fn explain_mismatches(queries: &mut [QueryRecord], data: &DataConsistency) {
    if data.agree {
        return;
    }
    let cause = format!("the engines hold different data: {}", data.differences.join("; "));
    for query in queries.iter_mut().filter(|q| q.verification.status == VerificationStatus::Mismatch) {
        query.verification.cause = Some(cause.clone());
    }
}

/// Hours only one side holds, and hours whose event counts differ.
fn ledger_differences((a_name, a): (&str, &Ledger), (b_name, b): (&str, &Ledger)) -> Vec<String> {
    let mut differences: Vec<String> = [lacking(b_name, (a_name, a), b), lacking(a_name, (b_name, b), a)].into_iter().flatten().collect();
    let differing: Vec<(Hour, u64, u64)> =
        a.hours.iter().filter_map(|(&hour, &ea)| b.hours.get(&hour).filter(|&&eb| eb != ea).map(|&eb| (hour, ea, eb))).collect();
    if !differing.is_empty() {
        let mut listed: Vec<String> =
            differing.iter().take(LISTED).map(|(hour, ea, eb)| format!("{hour} {a_name} {ea} vs {b_name} {eb}")).collect();
        if differing.len() > LISTED {
            let (sum_a, sum_b) = differing.iter().fold((0, 0), |(sa, sb), (_, ea, eb)| (sa + ea, sb + eb));
            listed.push(format!("and {} more ({a_name} {sum_a} vs {b_name} {sum_b} events in all {})", differing.len() - LISTED, differing.len()));
        }
        let hours = count_of(differing.len(), "hour");
        differences.push(format!("{a_name} and {b_name} list different event counts for {hours}: {}", listed.join(", ")));
    }
    differences
}

/// `mongo lacks 1 hour postgres holds: 2015-01-01T00 (7702 events)`, if it lacks any.
fn lacking(lacker: &str, (holder, held): (&str, &Ledger), lacker_ledger: &Ledger) -> Option<String> {
    let hours: Vec<Hour> = held.hours.keys().filter(|h| !lacker_ledger.hours.contains_key(h)).copied().collect();
    if hours.is_empty() {
        return None;
    }
    let events: u64 = hours.iter().map(|h| held.hours[h]).sum();
    Some(format!("{lacker} lacks {} {holder} holds: {} ({events} events)", count_of(hours.len(), "hour"), summarise_hours(hours, RANGES_SHOWN)))
}

/// `2015-01-01T05` for the stem `2015-01-01-5`; a stem that names no hour as it is.
fn shown_hour(stem: &str) -> String {
    stem.parse::<Hour>().map_or_else(|_| stem.to_string(), |hour| hour.to_string())
}

/// An engine whose ledger cannot be read, names no hour, lists hours begun
/// and not finished, or disagrees with its table.
fn ledger_problems(engine: &Holding<'_>) -> Vec<String> {
    let name = engine.engine;
    let Some(ledger) = engine.ledger else {
        return vec![format!("{name}'s ingest ledger could not be read, so its data cannot be compared")];
    };
    let mut problems = Vec::new();
    if !ledger.unreadable.is_empty() {
        let mut listed: Vec<String> = ledger.unreadable.iter().take(LISTED).map(|(entry, n)| format!("'{entry}' ({n} events)")).collect();
        if ledger.unreadable.len() > LISTED {
            listed.push(format!("and {} more", ledger.unreadable.len() - LISTED));
        }
        let entries = match ledger.unreadable.len() {
            1 => "1 entry that names no hour".to_string(),
            n => format!("{n} entries that name no hour"),
        };
        problems.push(format!("{name}'s ingest ledger lists {entries}, which cannot be compared: {}", listed.join(", ")));
    }
    let part_written: Vec<(&String, &u64)> = ledger.part_written.iter().filter(|(_, &rows)| rows > 0).collect();
    if !part_written.is_empty() {
        let rows: u64 = part_written.iter().map(|(_, &rows)| rows).sum();
        let mut listed: Vec<String> = part_written.iter().take(LISTED).map(|(stem, rows)| format!("{} ({rows} rows)", shown_hour(stem))).collect();
        if part_written.len() > LISTED {
            listed.push(format!("and {} more", part_written.len() - LISTED));
        }
        problems.push(format!(
            "{name}'s table holds {rows} rows of {} a load began and did not finish: {} (a load is running, or one died; \
             any `ghbench ingest` of this table removes what a dead load left, whichever hours it loads)",
            count_of(part_written.len(), "hour"),
            listed.join(", ")
        ));
    }
    let explained = ledger.events() + ledger.part_written_rows();
    if let Some(rows) = engine.exact_rows.filter(|&rows| rows != explained) {
        problems.push(format!(
            "{name}'s table holds {rows} rows but its ingest ledger lists {} events: an ingest is running or was interrupted \
             (rerun `ghbench ingest`), or the table was changed outside it",
            ledger.events()
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::catalog::Compare;
    use crate::record::Verification;

    fn ledger(entries: &[(&str, i64)]) -> Ledger {
        Ledger::from_entries(entries.iter().map(|(stem, n)| crate::ledger::Entry::new(*stem, *n)))
    }

    fn holding<'a>(engine: &'a str, ledger: &'a Ledger) -> Holding<'a> {
        Holding { engine, ledger: Some(ledger), exact_rows: Some(ledger.events()) }
    }

    #[test]
    fn the_same_hours_and_counts_agree() {
        let l = ledger(&[("2015-01-01-0", 7702), ("2015-01-01-1", 7427)]);
        let data = check(&[holding("postgres", &l), holding("mongo", &l.clone())]);
        assert_eq!(data, DataConsistency { agree: true, differences: vec![] });
        assert!(check(&[holding("postgres", &l)]).agree, "one engine agrees with its own table");
    }

    #[test]
    fn names_the_hours_each_side_lacks_as_ranges_with_exact_events() {
        let pg = ledger(&[("2015-01-01-0", 7702), ("2015-01-01-1", 10), ("2015-01-01-2", 20), ("2015-01-01-5", 1)]);
        let mongo = ledger(&[("2015-01-01-5", 1), ("2015-01-02-0", 300)]);
        let data = check(&[holding("postgres", &pg), holding("mongo", &mongo)]);
        assert!(!data.agree);
        assert_eq!(
            data.differences,
            [
                "mongo lacks 3 hours postgres holds: 2015-01-01T00 .. 2015-01-01T02 (3 hours) (7732 events)",
                "postgres lacks 1 hour mongo holds: 2015-01-02T00 (300 events)",
            ]
        );
    }

    #[test]
    fn names_hours_whose_event_counts_differ() {
        let pg = ledger(&[("2015-01-01-0", 7702), ("2015-01-01-1", 10)]);
        let mongo = ledger(&[("2015-01-01-0", 7700), ("2015-01-01-1", 10)]);
        let data = check(&[holding("postgres", &pg), holding("mongo", &mongo)]);
        assert_eq!(data.differences, ["postgres and mongo list different event counts for 1 hour: 2015-01-01T00 postgres 7702 vs mongo 7700"]);

        // Many differing hours: four listed, the rest counted, the totals exact.
        let stems: Vec<String> = (0..6).map(|h| format!("2015-01-01-{h}")).collect();
        let pg = Ledger::from_entries(stems.iter().map(|s| crate::ledger::Entry::new(s.clone(), 10)));
        let mongo = Ledger::from_entries(stems.iter().map(|s| crate::ledger::Entry::new(s.clone(), 9)));
        let data = check(&[holding("postgres", &pg), holding("mongo", &mongo)]);
        assert!(data.differences[0].starts_with("postgres and mongo list different event counts for 6 hours: 2015-01-01T00 postgres 10 vs mongo 9,"));
        assert!(data.differences[0].ends_with("and 2 more (postgres 60 vs mongo 54 events in all 6)"), "{:?}", data.differences);
    }

    #[test]
    fn a_table_changed_by_hand_disagrees_with_its_ledger() {
        let l = ledger(&[("2015-01-01-0", 7702)]);
        let edited = Holding { exact_rows: Some(7703), ..holding("mongo", &l) };
        let data = check(&[holding("postgres", &l), edited]);
        assert_eq!(data.differences.len(), 1);
        assert!(data.differences[0].starts_with("mongo's table holds 7703 rows but its ingest ledger lists 7702 events"));
        // A planner's estimate is no count: not compared.
        assert!(check(&[Holding { exact_rows: None, ..holding("postgres", &l) }]).agree);
    }

    #[test]
    fn hours_a_load_began_and_did_not_finish_are_named_with_their_rows() {
        let part = BTreeMap::from([("2015-01-01-1".to_string(), 1234), ("2015-01-01-2".to_string(), 0)]);
        let l = ledger(&[("2015-01-01-0", 7702)]).with_part_written(part);
        // The table's count is the ledger's events and the partial rows: one difference, not two.
        let data = check(&[Holding { exact_rows: Some(7702 + 1234), ..holding("mongo", &l) }]);
        assert_eq!(data.differences.len(), 1, "{:?}", data.differences);
        assert!(data.differences[0].starts_with("mongo's table holds 1234 rows of 1 hour a load began and did not finish: 2015-01-01T01 (1234 rows)"));
        // Rows besides those are named as well.
        let data = check(&[Holding { exact_rows: Some(7702 + 1235), ..holding("mongo", &l) }]);
        assert_eq!(data.differences.len(), 2, "{:?}", data.differences);
        // A mark with no rows written changes no answer.
        let empty = ledger(&[("2015-01-01-0", 7702)]).with_part_written(BTreeMap::from([("2015-01-01-1".to_string(), 0)]));
        assert!(check(&[holding("mongo", &empty)]).agree);
    }

    #[test]
    fn unreadable_ledgers_and_entries_are_differences() {
        let l = ledger(&[("2015-01-01-0", 7702)]);
        let odd = ledger(&[("2015-01-01-0", 7702), ("by hand", 5)]);
        let data = check(&[holding("postgres", &l), Holding { engine: "mongo", ledger: None, exact_rows: Some(7702) }]);
        assert_eq!(data.differences, ["mongo's ingest ledger could not be read, so its data cannot be compared"]);
        let data = check(&[holding("postgres", &odd)]);
        assert_eq!(data.differences, ["postgres's ingest ledger lists 1 entry that names no hour, which cannot be compared: 'by hand' (5 events)"]);
    }

    #[test]
    fn only_mismatching_queries_get_the_cause() {
        let query = |status| QueryRecord {
            query: "A".into(),
            variant: "corrected".into(),
            title: String::new(),
            compare: Compare::Ordered,
            verification: Verification { status, reference: Some("postgres".into()), agreeing: vec![], mismatches: vec![], cause: None },
            engines: vec![],
        };
        let mut queries = [query(VerificationStatus::Mismatch), query(VerificationStatus::Agree)];
        explain_mismatches(&mut queries, &DataConsistency { agree: true, differences: vec![] });
        assert!(queries[0].verification.cause.is_none());
        let differ = DataConsistency { agree: false, differences: vec!["mongo lacks 1 hour".into(), "postgres lacks 2 hours".into()] };
        explain_mismatches(&mut queries, &differ);
        assert_eq!(queries[0].verification.cause.as_deref(), Some("the engines hold different data: mongo lacks 1 hour; postgres lacks 2 hours"));
        assert!(queries[1].verification.cause.is_none());
    }
}

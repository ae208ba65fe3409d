//! An engine's ingest ledger (`ghbench_ledger`) for one table, hour by hour:
//! what `ghbench ingest` says it stored there. The run record keeps only its
//! summary ([`DataLoaded`]); the data check compares ledgers hour by hour.

use std::collections::BTreeMap;

use ghbench_core::Hour;

use crate::record::DataLoaded;

/// Events per hour, as the ledger lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    pub hours: BTreeMap<Hour, u64>,
    /// Entries whose hour is no hour stem (ingest never writes those: someone
    /// edited the ledger). Counted in the summary and reported by the data
    /// check, since they cannot be compared hour by hour.
    pub unreadable: BTreeMap<String, u64>,
}

impl Ledger {
    /// From the ledger's (hour stem, events) entries, e.g. `("2015-01-01-0", 7702)`.
    pub fn from_entries(entries: impl IntoIterator<Item = (String, i64)>) -> Ledger {
        let mut ledger = Ledger::default();
        for (stem, events) in entries {
            let events = events.max(0) as u64;
            match stem.parse::<Hour>() {
                Ok(hour) => *ledger.hours.entry(hour).or_default() += events,
                Err(_) => *ledger.unreadable.entry(stem).or_default() += events,
            }
        }
        ledger
    }

    /// Events of every entry, readable or not.
    pub fn events(&self) -> u64 {
        self.hours.values().chain(self.unreadable.values()).sum()
    }

    /// Hours and events, and the first and last hour, for the run record.
    pub fn summary(&self) -> DataLoaded {
        DataLoaded {
            hours: (self.hours.len() + self.unreadable.len()) as u64,
            events: self.events(),
            first_hour: self.hours.keys().next().map(Hour::to_string),
            last_hour: self.hours.keys().next_back().map(Hour::to_string),
        }
    }
}

/// Ranges of consecutive hours shown before the rest is only counted: a year
/// has 8,760 hours, and a line of them helps nobody.
const RANGES_SHOWN: usize = 4;

/// Sorted hours as ranges of consecutive hours, e.g. `2015-01-01T00..2015-01-01T05,
/// 2015-01-02T00`, the first few only, then how many ranges more.
pub fn hour_ranges(hours: &[Hour]) -> String {
    let mut ranges: Vec<(Hour, Hour)> = Vec::new();
    for &hour in hours {
        match ranges.last_mut() {
            Some((_, last)) if last.next() == hour => *last = hour,
            _ => ranges.push((hour, hour)),
        }
    }
    let mut shown: Vec<String> = ranges
        .iter()
        .take(RANGES_SHOWN)
        .map(|(first, last)| if first == last { first.to_string() } else { format!("{first}..{last}") })
        .collect();
    if ranges.len() > RANGES_SHOWN {
        shown.push(format!("and {} more ranges", ranges.len() - RANGES_SHOWN));
    }
    shown.join(", ")
}

/// `1 hour`, `2 hours`.
pub fn count_of(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(s: &str) -> Hour {
        s.parse().unwrap()
    }

    #[test]
    fn summarises_the_ledger_and_keeps_unreadable_entries() {
        let ledger = Ledger::from_entries([
            ("2015-01-01-1".to_string(), 20),
            ("2015-01-01-0".to_string(), 10),
            ("by hand".to_string(), 5),
            ("2015-01-01-2".to_string(), -3),
        ]);
        assert_eq!(ledger.hours.len(), 3);
        assert_eq!(ledger.unreadable, BTreeMap::from([("by hand".to_string(), 5)]));
        let summary = ledger.summary();
        assert_eq!((summary.hours, summary.events), (4, 35));
        assert_eq!(summary.first_hour.as_deref(), Some("2015-01-01T00"));
        assert_eq!(summary.last_hour.as_deref(), Some("2015-01-01T02"));
        assert_eq!(Ledger::default().summary().first_hour, None);
    }

    #[test]
    fn consecutive_hours_become_ranges_and_long_lists_are_cut() {
        let hours = ["2015-01-01T22", "2015-01-01T23", "2015-01-02T00", "2015-01-02T05"].map(hour);
        assert_eq!(hour_ranges(&hours), "2015-01-01T22..2015-01-02T00, 2015-01-02T05");
        assert_eq!(hour_ranges(&[hour("2015-01-01T00")]), "2015-01-01T00");
        // Every other hour of a year: 4,380 ranges, four shown.
        let mut every_other = Vec::new();
        let mut h = hour("2015-01-01T00");
        for _ in 0..4380 {
            every_other.push(h);
            h = h.next().next();
        }
        let text = hour_ranges(&every_other);
        assert_eq!(text, "2015-01-01T00, 2015-01-01T02, 2015-01-01T04, 2015-01-01T06, and 4376 more ranges");
        assert_eq!(hour_ranges(&[]), "");
    }
}

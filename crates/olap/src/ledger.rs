//! An engine's ingest ledger (`ghbench_ledger`) for one table, hour by hour:
//! what `ghbench ingest` says it stored there. The run record keeps only its
//! summary ([`DataLoaded`]); the data check compares ledgers hour by hour.

use std::collections::BTreeMap;

use ghbench_core::Hour;

use crate::record::DataLoaded;

/// Events per hour, as the ledger lists them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    pub hours: BTreeMap<Hour, u64>,
    /// Entries whose hour is no hour stem (ingest never writes those: someone
    /// edited the ledger). Counted in the summary and reported by the data
    /// check, since they cannot be compared hour by hour.
    pub unreadable: BTreeMap<String, u64>,
    /// The engine's loading time summed over its hours, when every entry
    /// recorded one (ledgers written before ghbench timed hours did not).
    pub load_seconds: Option<f64>,
    /// Work on the whole table after loading (`VACUUM (ANALYZE)`), part of
    /// the load's cost, when the engine does and records any.
    pub upkeep_seconds: Option<f64>,
    /// Attempts at hours made again after a fault, summed over the hours
    /// (`load_seconds` includes them); 0 for entries older than the count.
    pub load_retries: u64,
}

impl Ledger {
    /// From the ledger's (hour stem, events, seconds) entries, e.g. `("2015-01-01-0", 7702, Some(1.5))`.
    pub fn from_entries(entries: impl IntoIterator<Item = (String, i64, Option<f64>)>) -> Ledger {
        let mut ledger = Ledger { load_seconds: Some(0.0), ..Ledger::default() };
        for (stem, events, seconds) in entries {
            ledger.load_seconds = ledger.load_seconds.zip(seconds).map(|(sum, s)| sum + s);
            let events = events.max(0) as u64;
            match stem.parse::<Hour>() {
                Ok(hour) => *ledger.hours.entry(hour).or_default() += events,
                Err(_) => *ledger.unreadable.entry(stem).or_default() += events,
            }
        }
        ledger
    }

    /// The ledger, with the engine's upkeep after loading counted in its load time.
    pub fn with_upkeep(mut self, seconds: Option<f64>) -> Ledger {
        self.upkeep_seconds = seconds;
        self
    }

    /// The ledger, with the retries its hours needed summed.
    pub fn with_retries(mut self, retries: u64) -> Ledger {
        self.load_retries = retries;
        self
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
            load_seconds: self.load_seconds.filter(|_| self.events() > 0).map(|s| s + self.upkeep_seconds.unwrap_or(0.0)),
            upkeep_seconds: self.upkeep_seconds.filter(|_| self.events() > 0),
            load_retries: self.load_retries,
        }
    }
}

/// `1 hour`, `2 hours`.
pub fn count_of(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_the_ledger_and_keeps_unreadable_entries() {
        let ledger = Ledger::from_entries([
            ("2015-01-01-1".to_string(), 20, Some(1.5)),
            ("2015-01-01-0".to_string(), 10, Some(0.5)),
            ("by hand".to_string(), 5, None),
            ("2015-01-01-2".to_string(), -3, Some(1.0)),
        ]);
        assert_eq!(ledger.hours.len(), 3);
        assert_eq!(ledger.unreadable, BTreeMap::from([("by hand".to_string(), 5)]));
        let summary = ledger.summary();
        assert_eq!((summary.hours, summary.events), (4, 35));
        assert_eq!(summary.first_hour.as_deref(), Some("2015-01-01T00"));
        assert_eq!(summary.last_hour.as_deref(), Some("2015-01-01T02"));
        assert_eq!(summary.load_seconds, None, "one entry was not timed: no total");
        assert_eq!(Ledger::default().summary().first_hour, None);
        let timed = Ledger::from_entries([("2015-01-01-0".to_string(), 10, Some(0.5)), ("2015-01-01-1".to_string(), 10, Some(1.5))]);
        assert_eq!(timed.summary().load_seconds, Some(2.0));
        assert_eq!(timed.summary().load_retries, 0);
        let retried = timed.clone().with_retries(3).summary();
        assert_eq!(retried.load_retries, 3, "the retries go with the load time into the run record");
        assert_eq!(crate::render::retries_note(retried.load_retries).as_deref(), Some("includes 3 retries"));
        assert_eq!(crate::render::retries_note(1).as_deref(), Some("includes 1 retry"));
        assert_eq!(crate::render::retries_note(0), None);
        let json = serde_json::to_value(timed.summary()).unwrap();
        assert!(json.get("load_retries").is_none(), "no retries, no field: records stay as they were");
    }
}

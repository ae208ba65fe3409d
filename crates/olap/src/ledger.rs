//! An engine's ingest ledger (`ghbench_ledger`) for one table, hour by hour:
//! what `ghbench ingest` says it stored there. The run record keeps only its
//! summary ([`DataLoaded`]); the data check compares ledgers hour by hour.

use std::collections::BTreeMap;

use ghbench_core::Hour;

use ghbench_record::run::DataLoaded;

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
    /// More than the wall time when hours load side by side.
    pub load_seconds: Option<f64>,
    /// The time the engine spent loading, as a clock on the wall shows it:
    /// the span covered by at least one hour between its start and its
    /// commit (hours loading side by side count once, the time between two
    /// runs not at all). None when some entry does not say when it finished.
    pub wall_seconds: Option<f64>,
    /// Work on the whole table after loading (`VACUUM (ANALYZE)`), part of
    /// the load's cost, when the engine does and records any.
    pub upkeep_seconds: Option<f64>,
    /// Attempts at hours made again after a fault, summed over the hours
    /// (`load_seconds` includes them); 0 for entries older than the count.
    pub load_retries: u64,
    /// Hours a load began and did not finish, by stem, with the rows the
    /// table holds of each: a load running now, or one that died. Only an
    /// engine whose hours are not written in one transaction (MongoDB) can
    /// hold any; its table's count includes them, its ledger's events do not.
    pub part_written: BTreeMap<String, u64>,
}

/// One entry of an engine's ledger, as the engine reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The hour's stem, e.g. `2015-01-01-0`.
    pub stem: String,
    pub events: i64,
    /// The engine's time for the hour, from its start to its commit.
    pub seconds: Option<f64>,
    /// When it committed, in seconds since the Unix epoch.
    pub finished_at: Option<f64>,
}

impl Entry {
    /// An entry that says nothing of its time.
    pub fn new(stem: impl Into<String>, events: i64) -> Entry {
        Entry { stem: stem.into(), events, seconds: None, finished_at: None }
    }

    /// With its time: `seconds` long, committed at `finished_at`.
    pub fn timed(self, seconds: Option<f64>, finished_at: Option<f64>) -> Entry {
        Entry { seconds, finished_at, ..self }
    }
}

/// How long at least one of the `(start, end)` spans was going on.
fn covered(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

impl Ledger {
    pub fn from_entries(entries: impl IntoIterator<Item = Entry>) -> Ledger {
        let mut ledger = Ledger { load_seconds: Some(0.0), ..Ledger::default() };
        let mut spans = Some(Vec::new());
        for Entry { stem, events, seconds, finished_at } in entries {
            ledger.load_seconds = ledger.load_seconds.zip(seconds).map(|(sum, s)| sum + s);
            spans = spans.zip(seconds.zip(finished_at)).map(|(mut spans, (s, end))| {
                spans.push((end - s.max(0.0), end));
                spans
            });
            let events = events.max(0) as u64;
            match stem.parse::<Hour>() {
                Ok(hour) => *ledger.hours.entry(hour).or_default() += events,
                Err(_) => *ledger.unreadable.entry(stem).or_default() += events,
            }
        }
        ledger.wall_seconds = spans.map(covered);
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

    /// The ledger, with the hours begun and not finished and the rows of each.
    pub fn with_part_written(mut self, part_written: BTreeMap<String, u64>) -> Ledger {
        self.part_written = part_written;
        self
    }

    /// Rows of hours begun and not finished (see [`Ledger::part_written`]).
    pub fn part_written_rows(&self) -> u64 {
        self.part_written.values().sum()
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
            wall_seconds: self.wall_seconds.filter(|_| self.events() > 0),
            upkeep_seconds: self.upkeep_seconds.filter(|_| self.events() > 0),
            load_retries: self.load_retries,
        }
    }
}

pub use ghbench_core::count_of;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_the_ledger_and_keeps_unreadable_entries() {
        let ledger = Ledger::from_entries([
            Entry::new("2015-01-01-1", 20).timed(Some(1.5), None),
            Entry::new("2015-01-01-0", 10).timed(Some(0.5), None),
            Entry::new("by hand", 5),
            Entry::new("2015-01-01-2", -3).timed(Some(1.0), None),
        ]);
        assert_eq!(ledger.hours.len(), 3);
        assert_eq!(ledger.unreadable, BTreeMap::from([("by hand".to_string(), 5)]));
        let summary = ledger.summary();
        assert_eq!((summary.hours, summary.events), (4, 35));
        assert_eq!(summary.first_hour.as_deref(), Some("2015-01-01T00"));
        assert_eq!(summary.last_hour.as_deref(), Some("2015-01-01T02"));
        assert_eq!(summary.load_seconds, None, "one entry was not timed: no total");
        assert_eq!(Ledger::default().summary().first_hour, None);
        let timed = Ledger::from_entries([Entry::new("2015-01-01-0", 10).timed(Some(0.5), None), Entry::new("2015-01-01-1", 10).timed(Some(1.5), None)]);
        assert_eq!(timed.summary().load_seconds, Some(2.0));
        assert_eq!(timed.summary().load_retries, 0);
        let retried = timed.clone().with_retries(3).summary();
        assert_eq!(retried.load_retries, 3, "the retries go with the load time into the run record");
        let json = serde_json::to_value(timed.summary()).unwrap();
        assert!(json.get("load_retries").is_none(), "no retries, no field: records stay as they were");
    }

    #[test]
    fn the_wall_time_counts_hours_loading_side_by_side_once_and_the_time_between_runs_not_at_all() {
        let hour = |h: u32, seconds: f64, finished_at: f64| Entry::new(format!("2015-01-01-{h}"), 100).timed(Some(seconds), Some(finished_at));
        // Four hours side by side from t=0 to t=10, then after a day's pause two more, one after the other.
        let day = 86_400.0;
        let ledger = Ledger::from_entries([hour(0, 10.0, 10.0), hour(1, 9.0, 9.5), hour(2, 8.0, 10.0), hour(3, 4.0, 6.0), hour(4, 3.0, day + 3.0), hour(5, 2.0, day + 5.0)]);
        assert_eq!(ledger.wall_seconds, Some(15.0), "10 s, then 3 + 2 s");
        assert_eq!(ledger.load_seconds, Some(36.0), "the hours' own times summed");
        let summary = ledger.with_upkeep(Some(4.0)).summary();
        assert_eq!((summary.wall_seconds, summary.events_per_second()), (Some(15.0), Some(40.0)), "events/s from the wall time, upkeep apart");
        // One entry that does not say when it finished: no wall time, and no rate.
        let older = Ledger::from_entries([hour(0, 10.0, 10.0), Entry::new("2015-01-01-1", 100).timed(Some(9.0), None)]);
        assert_eq!(older.wall_seconds, None);
        assert_eq!(older.summary().events_per_second(), None, "a sum of hours is never a rate");
    }
}

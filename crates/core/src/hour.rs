//! One hour of GitHub Archive: the unit every command speaks in.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};

/// An hour of GH Archive, e.g. `2015-01-01T15`, stored as the start of the hour (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hour(NaiveDateTime);

#[derive(Debug, thiserror::Error)]
#[error("invalid hour '{input}': expected YYYY-MM-DDTHH (e.g. 2015-01-01T15) or YYYY-MM-DD-H")]
pub struct ParseHourError {
    input: String,
}

impl Hour {
    pub fn new(date: NaiveDate, hour: u32) -> Option<Self> {
        date.and_hms_opt(hour, 0, 0).map(Hour)
    }

    pub fn date(&self) -> NaiveDate {
        self.0.date()
    }

    pub fn hour(&self) -> u32 {
        self.0.hour()
    }

    /// GH Archive's name for the hour: `2015-01-01-15` (hour without a leading zero).
    /// Also the key ghbench uses for the hour in its ledgers and document ids.
    pub fn stem(&self) -> String {
        let d = self.date();
        format!("{:04}-{:02}-{:02}-{}", d.year(), d.month(), d.day(), self.hour())
    }

    /// `2015-01-01-15.json.gz`
    pub fn file_name(&self) -> String {
        format!("{}.json.gz", self.stem())
    }

    pub fn next(&self) -> Hour {
        Hour(self.0 + Duration::hours(1))
    }

    /// Parses a file name such as `2015-01-01-15.json.gz` back into its hour.
    pub fn from_file_name(name: &str) -> Option<Hour> {
        name.strip_suffix(".json.gz")?.parse().ok()
    }
}

impl fmt::Display for Hour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{:02}", self.date().format("%Y-%m-%d"), self.hour())
    }
}

impl FromStr for Hour {
    type Err = ParseHourError;

    /// Accepts `2015-01-01T15`, `2015-01-01T5` and GH Archive's `2015-01-01-15`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseHourError { input: s.to_string() };
        let s = s.trim();
        // The date is always the first 10 characters; what follows is `T` or `-` and the hour.
        let (date, rest) = (s.get(..10).ok_or_else(err)?, s.get(10..).ok_or_else(err)?);
        let hour = rest.strip_prefix('T').or_else(|| rest.strip_prefix('-')).ok_or_else(err)?;
        if hour.is_empty() || hour.len() > 2 || !hour.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let date = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| err())?;
        Hour::new(date, hour.parse().map_err(|_| err())?).ok_or_else(err)
    }
}

impl serde::Serialize for Hour {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Hour {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Hour, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An inclusive range of hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourRange {
    pub first: Hour,
    pub last: Hour,
}

#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    #[error("--to {last} is before --from {first}")]
    Backwards { first: Hour, last: Hour },
    #[error("--hours must be at least 1")]
    Empty,
    #[error("year {0} is out of range")]
    BadYear(i32),
    #[error("{0} hours is more than GH Archive could ever hold (at most {MAX_HOURS} hours at once)")]
    TooLong(u64),
}

/// About a century of hours: far beyond GH Archive (2011 on), small enough to plan in memory.
pub const MAX_HOURS: u64 = 24 * 366 * 100;

impl HourRange {
    pub fn new(first: Hour, last: Hour) -> Result<Self, RangeError> {
        if last < first {
            return Err(RangeError::Backwards { first, last });
        }
        let hours = (last.0 - first.0).num_hours() as u64 + 1;
        if hours > MAX_HOURS {
            return Err(RangeError::TooLong(hours));
        }
        Ok(HourRange { first, last })
    }

    /// `count` hours starting at `first`.
    pub fn starting_at(first: Hour, count: u32) -> Result<Self, RangeError> {
        if count == 0 {
            return Err(RangeError::Empty);
        }
        if u64::from(count) > MAX_HOURS {
            return Err(RangeError::TooLong(count.into()));
        }
        let last = first.0.checked_add_signed(Duration::hours(i64::from(count) - 1)).ok_or(RangeError::TooLong(count.into()))?;
        HourRange::new(first, Hour(last))
    }

    /// Every hour of a calendar year.
    pub fn year(year: i32) -> Result<Self, RangeError> {
        let start = NaiveDate::from_ymd_opt(year, 1, 1).ok_or(RangeError::BadYear(year))?;
        let end = NaiveDate::from_ymd_opt(year, 12, 31).ok_or(RangeError::BadYear(year))?;
        Ok(HourRange { first: Hour::new(start, 0).unwrap(), last: Hour::new(end, 23).unwrap() })
    }

    pub fn len(&self) -> usize {
        ((self.last.0 - self.first.0).num_hours() + 1) as usize
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn iter(&self) -> impl Iterator<Item = Hour> {
        let last = self.last;
        // Stops before stepping past `last`, so the last hour chrono can represent is fine.
        std::iter::successors(Some(self.first), move |h| (*h < last).then(|| h.next()))
    }
}

impl fmt::Display for HourRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} .. {} ({} hours)", self.first, self.last, self.len())
    }
}

/// Hours as runs of consecutive ones, for people: `2015-01-01T00 .. 2015-01-01T05,
/// 2015-01-02T07`, at most `max_runs` runs and then how many more, so a year of
/// missing hours fits on a line.
pub fn summarise_hours(hours: impl IntoIterator<Item = Hour>, max_runs: usize) -> String {
    let mut sorted: Vec<Hour> = hours.into_iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut runs: Vec<(Hour, Hour)> = Vec::new();
    for hour in sorted {
        match runs.last_mut() {
            Some((_, last)) if last.next() == hour => *last = hour,
            _ => runs.push((hour, hour)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .take(max_runs)
        .map(|&(first, last)| if first == last { first.to_string() } else { HourRange { first, last }.to_string() })
        .collect();
    let mut text = shown.join(", ");
    if runs.len() > max_runs {
        text.push_str(&format!(" and {} more runs of hours", runs.len() - max_runs));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings_and_names_files_like_gharchive() {
        let h: Hour = "2015-01-01T05".parse().unwrap();
        assert_eq!(h, "2015-01-01-5".parse().unwrap());
        assert_eq!(h.file_name(), "2015-01-01-5.json.gz");
        assert_eq!(h.to_string(), "2015-01-01T05");
        assert_eq!(Hour::from_file_name("2015-01-01-15.json.gz").unwrap().hour(), 15);
    }

    #[test]
    fn summarises_hours_as_runs() {
        let h = |s: &str| s.parse::<Hour>().unwrap();
        let hours = [h("2015-01-01T23"), h("2015-01-01T22"), h("2015-01-02T00"), h("2015-01-02T05")];
        assert_eq!(summarise_hours(hours, 10), "2015-01-01T22 .. 2015-01-02T00 (3 hours), 2015-01-02T05");
        assert_eq!(summarise_hours(hours, 1), "2015-01-01T22 .. 2015-01-02T00 (3 hours) and 1 more runs of hours");
        assert_eq!(summarise_hours(HourRange::year(2016).unwrap().iter(), 5), "2016-01-01T00 .. 2016-12-31T23 (8784 hours)");
        assert_eq!(summarise_hours([], 5), "");
    }

    #[test]
    fn rejects_bad_hours() {
        for bad in ["2015-01-01T24", "2015-13-01T00", "2015-01-01", "2015-01-01T", "2015-01-01Tx", "x"] {
            assert!(bad.parse::<Hour>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn ranges_are_inclusive_and_cross_days() {
        let r = HourRange::new("2015-01-01T22".parse().unwrap(), "2015-01-02T01".parse().unwrap()).unwrap();
        let names: Vec<_> = r.iter().map(|h| h.stem()).collect();
        assert_eq!(names, ["2015-01-01-22", "2015-01-01-23", "2015-01-02-0", "2015-01-02-1"]);
        assert_eq!(HourRange::year(2015).unwrap().len(), 8760);
        assert_eq!(HourRange::year(2016).unwrap().len(), 8784);
        assert!(HourRange::new(r.last, r.first).is_err());
        assert_eq!(HourRange::starting_at(r.first, 3).unwrap().last.stem(), "2015-01-02-0");
        assert!(HourRange::starting_at(r.first, u32::MAX).is_err());
        assert!(HourRange::new("0001-01-01T00".parse().unwrap(), "9999-01-01T00".parse().unwrap()).is_err());
    }
}

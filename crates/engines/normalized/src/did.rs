//! Document ids (`did`) that say where the document came from, so
//! `ghbench normalize --verify` can fetch the original to compare with:
//!
//! - loaded by `ghbench ingest`: the hour and the line in its file,
//!   `hours since 1970 << 32 | line`, the same for the same line on every run;
//! - derived by `ghbench normalize` from the `jsonb` table: the row's place in
//!   it (`ctid`), with bit 62 set so the two kinds never meet.

use chrono::NaiveDate;
use ghbench_core::Hour;

const FROM_JSONB: i64 = 1 << 62;
const LINE_BITS: u32 = 32;

/// Where a document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// Line `line` (1-based) of the hour's file.
    Line { hour: Hour, line: u64 },
    /// The row at `(block, offset)` of the `jsonb` table.
    Jsonb { block: u32, offset: u16 },
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date")
}

/// The id of line `line` of `hour`.
pub fn of_line(hour: Hour, line: u64) -> Result<i64, String> {
    let hours = (hour.date() - epoch()).num_days() * 24 + i64::from(hour.hour());
    if !(0..1 << 29).contains(&hours) || line >= 1 << LINE_BITS {
        return Err(format!("line {line} of hour {hour} has no document id (hours from 1970 on, lines below 2^32)"));
    }
    Ok(hours << LINE_BITS | line as i64)
}

/// The id of the `jsonb` row at `ctid` (`(block,offset)`, as PostgreSQL prints it).
pub fn of_ctid(ctid: &str) -> Result<i64, String> {
    let bad = || format!("unexpected ctid '{ctid}'");
    let (block, offset) = ctid.trim_start_matches('(').trim_end_matches(')').split_once(',').ok_or_else(bad)?;
    let block: u32 = block.parse().map_err(|_| bad())?;
    let offset: u16 = offset.parse().map_err(|_| bad())?;
    Ok(FROM_JSONB | i64::from(block) << 16 | i64::from(offset))
}

/// The hour stem that ids `prefix << 32 | line` belong to, for counting a
/// table by hour; ids derived from the `jsonb` table belong to none (and
/// get a key no hour has).
pub fn hour_of_id_prefix(prefix: i64) -> String {
    match origin(prefix << LINE_BITS) {
        Some(Origin::Line { hour, .. }) if prefix << LINE_BITS & FROM_JSONB == 0 => hour.stem(),
        _ => format!("ids {prefix}<<32 (derived from the jsonb table)"),
    }
}

/// Where document `did` came from.
pub fn origin(did: i64) -> Option<Origin> {
    if did & FROM_JSONB != 0 {
        let rest = did & !FROM_JSONB;
        return Some(Origin::Jsonb { block: u32::try_from(rest >> 16).ok()?, offset: (rest & 0xffff) as u16 });
    }
    let (hours, line) = (did >> LINE_BITS, (did & 0xffff_ffff) as u64);
    let date = epoch().checked_add_days(chrono::Days::new(u64::try_from(hours / 24).ok()?))?;
    let hour = Hour::new(date, (hours % 24) as u32)?;
    Some(Origin::Line { hour, line })
}

impl Origin {
    /// `(block,offset)` for a `tid` literal.
    pub fn ctid(&self) -> Option<String> {
        match self {
            Origin::Jsonb { block, offset } => Some(format!("({block},{offset})")),
            Origin::Line { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_back_as_where_the_document_came_from() {
        let hour: Hour = "2015-01-01-15".parse().unwrap();
        let did = of_line(hour, 7702).unwrap();
        assert_eq!(origin(did), Some(Origin::Line { hour, line: 7702 }));
        assert_ne!(did, of_line(hour.next(), 7702).unwrap());
        let row = of_ctid("(12345,7)").unwrap();
        assert_eq!(origin(row), Some(Origin::Jsonb { block: 12345, offset: 7 }));
        assert_eq!(origin(row).unwrap().ctid().as_deref(), Some("(12345,7)"));
        assert!(of_ctid("12,x").is_err());
        assert!(of_line(hour, 1 << 32).is_err());
    }
}

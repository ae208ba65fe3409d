//! Time limits as a user writes and reads them (`--query-timeout 90s`, `2h`,
//! `500ms`): parsed and said by `humantime`, so every command and report
//! spells a limit the same way.

use std::time::Duration;

/// The shortest limit the servers can keep: they count in milliseconds (a
/// MongoDB `maxTimeMS` of 0 would mean none at all).
const SHORTEST: Duration = Duration::from_millis(1);
/// The longest: PostgreSQL's `statement_timeout` is an int of milliseconds.
const LONGEST: Duration = Duration::from_millis(i32::MAX as u64);

/// A limit given on the command line: a number with its unit (`90s`, `2h`,
/// `1h30m`, `500ms`), more than zero. Said as clap's value parsers say errors.
pub fn parse_limit(text: &str) -> Result<Duration, String> {
    let limit = humantime::parse_duration(text.trim())
        .map_err(|e| format!("'{text}' is not a duration ({e}); write a number and its unit, e.g. 90s, 2h, 1h30m, 500ms"))?;
    if limit < SHORTEST {
        return Err("must be 1ms or more (the servers count in milliseconds); leave the option out for no limit".into());
    }
    if limit > LONGEST {
        return Err(format!("must be at most {} (PostgreSQL's longest statement_timeout); leave the option out for no limit", said(LONGEST)));
    }
    Ok(limit)
}

/// A limit for people, e.g. `1m 30s`, `2h`, `500ms`.
pub fn said(limit: Duration) -> String {
    humantime::format_duration(limit).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_with_their_units_and_are_said_back_the_same_way() {
        assert_eq!(parse_limit("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_limit("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_limit("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(said(Duration::from_secs(90)), "1m 30s");
        assert_eq!(said(Duration::from_millis(500)), "500ms");
        assert!(parse_limit("0s").unwrap_err().contains("1ms or more"));
        assert!(parse_limit("500us").unwrap_err().contains("1ms or more"), "below a millisecond the servers would keep none");
        assert!(parse_limit("30days").unwrap_err().contains("at most 24days"), "{:?}", parse_limit("30days"));
        assert!(parse_limit("90").unwrap_err().contains("unit"), "a bare number has no unit");
        assert!(parse_limit("soon").unwrap_err().contains("not a duration"));
    }
}

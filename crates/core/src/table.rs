//! Table and collection names go into SQL text, so they are validated once here.

use std::fmt;
use std::str::FromStr;

/// A lower-case SQL identifier (`[a-z_][a-z0-9_]*`, at most 63 bytes) that is safe
/// to splice into SQL unquoted and is a valid MongoDB collection name too.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName(String);

#[derive(Debug, thiserror::Error)]
pub enum InvalidTableName {
    #[error("invalid table name '{0}': use lower-case letters, digits and '_', starting with a letter or '_'")]
    Shape(String),
    #[error("the name '{0}' is {len} bytes, more than the {max} PostgreSQL keeps of a name", len = .0.len(), max = TableName::MAX_LEN)]
    TooLong(String),
    #[error("table name '{0}' is reserved: names starting with {1} belong to {2}; choose another --table")]
    Reserved(String, &'static str, &'static str),
}

/// Prefixes a data table may not take: ghbench's bookkeeping (ledgers, locks),
/// which a load would otherwise overwrite. Names a server reserves for
/// itself are refused by its engine (`EngineSink::check_name`).
const RESERVED_PREFIXES: [(&str, &str); 1] = [("ghbench_", "ghbench's own bookkeeping (ledgers, locks)")];

impl TableName {
    /// The longest name PostgreSQL keeps whole (NAMEDATALEN - 1 bytes).
    pub const MAX_LEN: usize = 63;

    /// The default name for a year's data, as in the paper: `github2015`.
    pub fn for_year(year: i32) -> TableName {
        TableName(format!("github{year}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name derived from this one (e.g. an index or a normalized table), validated again.
    pub fn with_suffix(&self, suffix: &str) -> Result<TableName, InvalidTableName> {
        format!("{}_{suffix}", self.0).parse()
    }
}

impl FromStr for TableName {
    type Err = InvalidTableName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bytes = s.bytes();
        let first_ok = matches!(bytes.next(), Some(b'a'..=b'z' | b'_'));
        let rest_ok = bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'));
        if !(first_ok && rest_ok) {
            return Err(InvalidTableName::Shape(s.to_string()));
        }
        if s.len() > TableName::MAX_LEN {
            return Err(InvalidTableName::TooLong(s.to_string()));
        }
        match RESERVED_PREFIXES.iter().find(|(prefix, _)| s.starts_with(prefix)) {
            Some((prefix, owner)) => Err(InvalidTableName::Reserved(s.to_string(), prefix, owner)),
            None => Ok(TableName(s.to_string())),
        }
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_identifiers_and_refuses_injection() {
        assert!("github2015".parse::<TableName>().is_ok());
        assert!("_t1".parse::<TableName>().is_ok());
        for bad in ["", "1abc", "Github", "a-b", "a b", "x; drop table y", "t\""] {
            assert!(matches!(bad.parse::<TableName>(), Err(InvalidTableName::Shape(_))), "{bad:?} accepted");
        }
        // Its length is not its characters' fault: said as what it is.
        let long = "a".repeat(64).parse::<TableName>().unwrap_err();
        assert_eq!(long.to_string(), format!("the name '{}' is 64 bytes, more than the 63 PostgreSQL keeps of a name", "a".repeat(64)));
        for reserved in ["ghbench_ledger", "ghbench_locks"] {
            let err = reserved.parse::<TableName>().unwrap_err();
            assert!(matches!(err, InvalidTableName::Reserved(..)), "{reserved:?}: {err}");
            assert!(err.to_string().contains("choose another --table"), "{err}");
        }
        assert!("github2015_pg_copy".parse::<TableName>().is_ok());
    }
}

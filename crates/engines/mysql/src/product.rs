//! Which server of the MySQL family answers, and where their dialects part.
//! The protocol's handshake cannot tell (TiDB says `8.0.11-TiDB-…`, MariaDB
//! once said `5.5.5-10.x-MariaDB`): the server's own `VERSION()`,
//! `@@version_comment` and, on TiDB only, `TIDB_VERSION()` do.
//!
//! Sources (see `../shared/reference/mysql-family.md`): MariaDB's `VERSION()`
//! contains `MariaDB`; MySQL's `@@version_comment` reads like `MySQL
//! Community Server - GPL`; TiDB's `VERSION()` like `8.0.11-TiDB-v7.5.1`.

use std::fmt;

/// A server of the MySQL family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    MariaDb,
    MySql,
    TiDb,
}

/// What the server says of itself, as read on connecting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub product: Product,
    /// The release, e.g. `10.11.19`, `8.0.36`, `v7.5.1` (TiDB's own, not the
    /// MySQL version it reports).
    pub version: String,
    /// The server's full version text (VERSION() and its comment, or TIDB_VERSION()).
    pub build: String,
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl Product {
    pub fn name(self) -> &'static str {
        match self {
            Product::MariaDb => "MariaDB",
            Product::MySql => "MySQL",
            Product::TiDb => "TiDB",
        }
    }

    /// How the product stores a JSON column, for every report: MariaDB's
    /// `JSON` is `LONGTEXT` with a `JSON_VALID` check (its text is parsed on
    /// every read), MySQL's and TiDB's a binary form.
    pub fn json_storage(self) -> &'static str {
        match self {
            Product::MariaDb => "text: LONGTEXT with a JSON_VALID check, parsed again on every read",
            Product::MySql => "binary (MySQL's JSON format, read without parsing)",
            Product::TiDb => "binary (TiDB's JSON format)",
        }
    }

    /// What a reader must know before comparing these numbers.
    pub fn caveat(self) -> String {
        match self {
            Product::MariaDb => "MariaDB stores JSON as text (its JSON type is LONGTEXT with a validity check), MySQL 8 and TiDB in binary formats: \
                 these numbers are MariaDB's and say nothing of MySQL's speed"
                .into(),
            Product::MySql => "MySQL 8 stores JSON in a binary format; MariaDB (text) and TiDB (distributed) would give other numbers".into(),
            Product::TiDb => "TiDB is distributed: its sizes are estimates from statistics, and a single-machine run says little of a cluster's speed".into(),
        }
    }

    /// The session variable that bounds a statement's time: MariaDB's
    /// `max_statement_time` (seconds, every statement, DDL included), MySQL's
    /// `max_execution_time` (milliseconds, SELECTs only) and TiDB's (every
    /// statement).
    pub fn statement_limit_variable(self) -> &'static str {
        match self {
            Product::MariaDb => "max_statement_time",
            Product::MySql | Product::TiDb => "max_execution_time",
        }
    }

    /// The statement that sets [`Product::statement_limit_variable`] to
    /// `limit` (None: no limit), in the variable's unit.
    pub fn statement_limit(self, limit: Option<std::time::Duration>) -> String {
        let value = match self {
            Product::MariaDb => limit.map_or(0.0, |l| l.as_secs_f64()).to_string(),
            Product::MySql | Product::TiDb => limit.map_or(0, |l| l.as_millis().max(1)).to_string(),
        };
        format!("SET SESSION {} = {value}", self.statement_limit_variable())
    }

    /// The server's error codes for a statement its time limit stopped
    /// (MariaDB 1969 ER_STATEMENT_TIMEOUT; MySQL 3024 ER_QUERY_TIMEOUT;
    /// TiDB answers MySQL's 3024).
    pub fn stopped_by_limit(self, code: u16) -> bool {
        match self {
            Product::MariaDb => code == 1969,
            Product::MySql | Product::TiDb => code == 3024,
        }
    }

    /// `CREATE INDEX IF NOT EXISTS` exists (MariaDB, TiDB); MySQL 8 has no
    /// such clause, so an index that exists is skipped instead.
    pub fn creates_index_if_not_exists(self) -> bool {
        !matches!(self, Product::MySql)
    }

    /// A setup's DDL in this product's words: MariaDB's page compression
    /// (`PAGE_COMPRESSED=1`) is MySQL 8's `COMPRESSION='zlib'` (the same
    /// hole-punched pages) and has no TiDB counterpart (TiKV compresses
    /// everything); MariaDB's `PERSISTENT` columns are everyone's `STORED`;
    /// its NO PAD binary collation `utf8mb4_nopad_bin` is MySQL 8's and
    /// TiDB's (7.4+) `utf8mb4_0900_bin`.
    pub fn adapt_ddl(self, statement: &str) -> String {
        let stored = statement.replace(" PERSISTENT", " STORED").replace("utf8mb4_nopad_bin", "utf8mb4_0900_bin");
        match self {
            Product::MariaDb => statement.to_string(),
            Product::MySql => stored.replace("PAGE_COMPRESSED=1", "COMPRESSION='zlib'"),
            Product::TiDb => stored.replace(" PAGE_COMPRESSED=1", ""),
        }
    }

    /// The estimated plan's command: TiDB's JSON plans have a format of their own.
    pub fn explain_estimated(self) -> &'static str {
        match self {
            Product::MariaDb | Product::MySql => "EXPLAIN FORMAT=JSON",
            Product::TiDb => "EXPLAIN FORMAT='tidb_json'",
        }
    }

    /// The plan as the query ran: MariaDB's `ANALYZE FORMAT=JSON`, MySQL's
    /// (8.0.18+) and TiDB's `EXPLAIN ANALYZE` (text).
    pub fn explain_measured(self) -> &'static str {
        match self {
            Product::MariaDb => "ANALYZE FORMAT=JSON",
            Product::MySql | Product::TiDb => "EXPLAIN ANALYZE",
        }
    }

    /// Whether an hour goes in as one `LOAD DATA LOCAL INFILE`. TiDB makes
    /// one `LOAD DATA` one transaction of at most ~100 MiB since v7.0, so it
    /// gets batched inserts; MySQL 8 turns `local_infile` off by default, and
    /// a refusal switches the sink to inserts (see `sink`).
    pub fn loads_with_load_data(self) -> bool {
        !matches!(self, Product::TiDb)
    }
}

/// The product from what the server says: `VERSION()`, `@@version_comment`
/// and `TIDB_VERSION()` (None where the function does not exist, i.e. on
/// anything but TiDB).
pub fn identify(version: &str, version_comment: &str, tidb_version: Option<&str>) -> Identity {
    if let Some(tidb) = tidb_version.filter(|t| !t.trim().is_empty()).or_else(|| version.contains("-TiDB-").then_some(version)) {
        // `8.0.11-TiDB-v7.5.1`: TiDB's release follows its name.
        let release = version.split("-TiDB-").nth(1).or_else(|| tidb.lines().find_map(|l| l.trim().strip_prefix("Release Version:")).map(str::trim));
        return Identity { product: Product::TiDb, version: release.unwrap_or(version).trim().to_string(), build: tidb.trim().to_string() };
    }
    let build = match version_comment.trim() {
        "" => version.to_string(),
        comment => format!("{version} ({comment})"),
    };
    // `10.11.19-MariaDB-0+deb12u1`, or through a proxy `5.5.5-10.11.19-MariaDB`.
    if version.contains("MariaDB") || version_comment.contains("MariaDB") {
        let release = version.split('-').find(|part| part.starts_with(|c: char| c.is_ascii_digit()) && !part.starts_with("5.5.5")).unwrap_or(version);
        return Identity { product: Product::MariaDb, version: release.to_string(), build };
    }
    let release = version.split('-').next().unwrap_or(version);
    Identity { product: Product::MySql, version: release.to_string(), build }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_three_apart_by_what_each_says_of_itself() {
        let maria = identify("10.11.19-MariaDB-0+deb12u1", "Debian 12", None);
        assert_eq!((maria.product, maria.version.as_str()), (Product::MariaDb, "10.11.19"));
        assert_eq!(maria.build, "10.11.19-MariaDB-0+deb12u1 (Debian 12)");
        let proxied = identify("5.5.5-10.11.6-MariaDB-log", "MariaDB Server", None);
        assert_eq!((proxied.product, proxied.version.as_str()), (Product::MariaDb, "10.11.6"));
        let mysql = identify("8.0.36", "MySQL Community Server - GPL", None);
        assert_eq!((mysql.product, mysql.version.as_str()), (Product::MySql, "8.0.36"));
        let tidb = identify("8.0.11-TiDB-v7.5.1", "", Some("Release Version: v7.5.1\nEdition: Community"));
        assert_eq!((tidb.product, tidb.version.as_str()), (Product::TiDb, "v7.5.1"));
    }

    #[test]
    fn each_product_bounds_statements_in_its_own_words() {
        let limit = Some(std::time::Duration::from_millis(1500));
        assert_eq!(Product::MariaDb.statement_limit(limit), "SET SESSION max_statement_time = 1.5");
        assert_eq!(Product::MariaDb.statement_limit(None), "SET SESSION max_statement_time = 0");
        assert_eq!(Product::MySql.statement_limit(limit), "SET SESSION max_execution_time = 1500");
        assert_eq!(Product::TiDb.statement_limit(None), "SET SESSION max_execution_time = 0");
        assert!(Product::MariaDb.stopped_by_limit(1969) && !Product::MariaDb.stopped_by_limit(3024));
        assert!(Product::MySql.stopped_by_limit(3024));
        assert!(!Product::MySql.creates_index_if_not_exists() && Product::MariaDb.creates_index_if_not_exists());
        assert!(!Product::TiDb.loads_with_load_data());
        let tuned = "CREATE TABLE IF NOT EXISTS tuned.t (a VARCHAR(9) COLLATE utf8mb4_nopad_bin AS ('') PERSISTENT) ENGINE=InnoDB PAGE_COMPRESSED=1";
        assert_eq!(Product::MariaDb.adapt_ddl(tuned), tuned);
        let words = "CREATE TABLE IF NOT EXISTS tuned.t (a VARCHAR(9) COLLATE utf8mb4_0900_bin AS ('') STORED) ENGINE=InnoDB";
        assert_eq!(Product::MySql.adapt_ddl(tuned), format!("{words} COMPRESSION='zlib'"));
        assert_eq!(Product::TiDb.adapt_ddl(tuned), words);
    }
}

//! SQL files as statements, cut by a real tokenizer (sqlparser's, in the
//! engine's dialect) rather than at every `;`: a `;` or `--` inside a string
//! literal, a quoted name or a `$$` body stays part of its statement. For
//! every engine that speaks SQL (PostgreSQL's, the MySQL family's).

use anyhow::{bail, Context as _};
use ghbench_core::TableName;
use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect};
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// Whose SQL a file is written in: how its strings, quoted names and
/// comments read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlDialect {
    PostgreSql,
    /// MySQL, MariaDB and TiDB: backticks, `#` comments, backslash escapes.
    MySql,
}

impl SqlDialect {
    fn tokenizer_dialect(self) -> &'static dyn Dialect {
        match self {
            SqlDialect::PostgreSql => &PostgreSqlDialect {},
            SqlDialect::MySql => &MySqlDialect {},
        }
    }
}

/// The statements of `sql`, comments removed and white space folded, in order.
/// Each token's text is taken from `sql` itself (tokens do not print back
/// exactly: `'it''s'` would lose its doubled quote).
pub fn statements(dialect: SqlDialect, sql: &str) -> anyhow::Result<Vec<String>> {
    let tokens = Tokenizer::new(dialect.tokenizer_dialect(), sql).tokenize_with_location().context("reading the SQL")?;
    let line_starts: Vec<usize> = std::iter::once(0).chain(sql.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let starts: Vec<usize> = tokens.iter().map(|t| byte_offset(sql, &line_starts, t.span.start)).collect();
    let mut statements = Vec::new();
    let mut current = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let text = &sql[starts[i]..starts.get(i + 1).copied().unwrap_or(sql.len())];
        match &t.token {
            Token::SemiColon => push(&mut statements, &mut current),
            Token::Whitespace(_) => current.push(' '),
            _ => current.push_str(text),
        }
    }
    push(&mut statements, &mut current);
    Ok(statements)
}

/// The byte offset of a 1-based line and column (counted in characters).
fn byte_offset(text: &str, line_starts: &[usize], at: Location) -> usize {
    let Some(&line_start) = line_starts.get((at.line as usize).saturating_sub(1)) else { return text.len() };
    let line = &text[line_start..];
    line_start + line.char_indices().nth((at.column as usize).saturating_sub(1)).map_or(line.len(), |(i, _)| i)
}

fn push(statements: &mut Vec<String>, current: &mut String) {
    let folded = current.split_whitespace().collect::<Vec<_>>().join(" ");
    if !folded.is_empty() {
        statements.push(folded);
    }
    current.clear();
}

/// The statement's first words, for messages and for what a cancel names:
/// `SELECT data->'repo'->>'name' …` (`--` comment lines left out).
pub fn head(sql: &str) -> String {
    let words: Vec<&str> = sql.lines().filter(|l| !l.trim_start().starts_with("--")).flat_map(str::split_whitespace).collect();
    let mut said = words.iter().take(8).copied().collect::<Vec<_>>().join(" ");
    if words.len() > 8 {
        said.push_str(" …");
    }
    said
}

/// `CREATE INDEX IF NOT EXISTS <name> ON ...`: the name, validated as an
/// identifier (so it can be looked up and reported).
pub fn created_index_name(dialect: SqlDialect, statement: &str) -> anyhow::Result<TableName> {
    let tokens = Tokenizer::new(dialect.tokenizer_dialect(), statement).tokenize().context("reading the SQL")?;
    let words: Vec<&Token> = tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let is = |t: &Token, word: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    let shape = ["CREATE", "INDEX", "IF", "NOT", "EXISTS"];
    let starts_right = words.len() > shape.len() && words.iter().zip(shape).all(|(t, w)| is(t, w));
    match words.get(shape.len()) {
        Some(Token::Word(name)) if starts_right && name.quote_style.is_none() => Ok(name.value.parse()?),
        _ if starts_right => bail!("the index needs a plain lower-case name after IF NOT EXISTS"),
        _ => bail!("index statements must be CREATE INDEX IF NOT EXISTS <name> ON ... (so reruns are no-ops)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_where_statements_end_not_where_a_semicolon_stands() {
        let sql = "-- comment; with a semicolon\nCREATE INDEX IF NOT EXISTS t_a ON t ((data->>'a;b'));\n\n/* block; */ SELECT $$x;y$$, 'it''s; fine', \"odd;name\" FROM t -- tail; comment\n;\n";
        assert_eq!(
            statements(SqlDialect::PostgreSql, sql).unwrap(),
            ["CREATE INDEX IF NOT EXISTS t_a ON t ((data->>'a;b'))", "SELECT $$x;y$$, 'it''s; fine', \"odd;name\" FROM t"]
        );
        assert!(statements(SqlDialect::PostgreSql, "  -- only a comment\n").unwrap().is_empty());
    }

    #[test]
    fn mysql_files_split_with_their_own_quoting_and_comments() {
        let sql = "# a comment; here\nCREATE INDEX IF NOT EXISTS t_a ON t (a); SELECT 'it\\'s; fine', `odd;name` FROM t -- tail;\n;";
        assert_eq!(statements(SqlDialect::MySql, sql).unwrap(), ["CREATE INDEX IF NOT EXISTS t_a ON t (a)", "SELECT 'it\\'s; fine', `odd;name` FROM t"]);
        assert_eq!(created_index_name(SqlDialect::MySql, "CREATE INDEX IF NOT EXISTS t_b ON tuned.t (b, c)").unwrap().as_str(), "t_b");
    }

    #[test]
    fn finds_the_index_name_or_says_what_is_wanted() {
        assert_eq!(created_index_name(SqlDialect::PostgreSql, "CREATE INDEX IF NOT EXISTS t_b ON t ((data->'b'))").unwrap().as_str(), "t_b");
        assert_eq!(created_index_name(SqlDialect::PostgreSql, "create index if not exists t_c on t using gin (data jsonb_path_ops)").unwrap().as_str(), "t_c");
        assert!(created_index_name(SqlDialect::PostgreSql, "CREATE INDEX ON t ((data))").unwrap_err().to_string().contains("IF NOT EXISTS <name>"));
        assert!(created_index_name(SqlDialect::PostgreSql, "CREATE INDEX IF NOT EXISTS \"x y\" ON t ((data))").is_err());
        assert!(created_index_name(SqlDialect::PostgreSql, "CREATE INDEX IF NOT EXISTS Upper ON t ((data))").is_err());
    }
}

//! libpq's TLS settings, taken out of a connection string before
//! tokio-postgres reads the rest: its parser knows only sslmode
//! disable/prefer/require and no `sslrootcert`, and would refuse the string.
//! Both forms libpq takes are read: `postgres://…?sslmode=…` and
//! `host=… sslmode=…`.

use std::borrow::Cow;

/// libpq's `sslmode`, in its order of strictness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's "plain first, TLS if refused": tokio-postgres cannot try twice.
            "allow" => return Err("sslmode=allow is not supported yet; use sslmode=prefer (TLS when the server offers it) or disable".into()),
            other => return Err(format!("sslmode={other} is not a mode libpq knows; use disable, prefer, require, verify-ca or verify-full")),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// What the connection string asked for; `None` when it did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslParams {
    pub mode: Option<SslMode>,
    pub rootcert: Option<String>,
}

/// Settings of libpq's we do not act on yet. Ignoring one would connect less
/// safely than the user asked (a CRL not checked, no client certificate sent).
fn unsupported(key: &str) -> bool {
    // sslnegotiation is tokio-postgres's own; the rest of ssl* is libpq's TLS.
    (key.starts_with("ssl") && !matches!(key, "sslmode" | "sslrootcert" | "sslnegotiation")) || key == "requiressl"
}

/// The connection string without `sslmode` and `sslrootcert`, and their values
/// (the last one wins, as in libpq). A string neither form can read is handed
/// back as it is, for tokio-postgres to say what is wrong with it.
pub fn take(conn: &str) -> Result<(String, SslParams), String> {
    let mut params = SslParams::default();
    let mut keep = |key: &str, value: Cow<'_, str>| -> Result<bool, String> {
        match key {
            "sslmode" => params.mode = Some(SslMode::parse(&value)?),
            "sslrootcert" => params.rootcert = Some(value.into_owned()),
            _ if unsupported(key) => {
                return Err(format!(
                    "{key}= is not supported yet (of libpq's TLS settings ghbench reads sslmode and sslrootcert); remove it from the connection string"
                ))
            }
            _ => return Ok(true),
        }
        Ok(false)
    };
    let rest = match url_body(conn) {
        Some(start) => take_from_url(conn, start, &mut keep)?,
        None => match key_values(conn) {
            Some(pairs) => {
                let mut kept = Vec::new();
                for (key, value) in pairs {
                    if keep(key, Cow::Borrowed(&value))? {
                        kept.push(format!("{key}='{}'", value.replace('\\', "\\\\").replace('\'', "\\'")));
                    }
                }
                kept.join(" ")
            }
            None => conn.to_string(),
        },
    };
    Ok((rest, params))
}

/// Where a `postgres://` or `postgresql://` URL's body starts.
fn url_body(conn: &str) -> Option<usize> {
    ["postgres://", "postgresql://"].iter().find(|p| conn.starts_with(*p)).map(|p| p.len())
}

/// The URL without the parameters `keep` refuses. Its query starts at the first
/// `?` after the credentials (which end at the first `@`, as tokio-postgres reads
/// them); the other parameters are kept byte for byte.
fn take_from_url(
    conn: &str,
    start: usize,
    keep: &mut impl FnMut(&str, Cow<'_, str>) -> Result<bool, String>,
) -> Result<String, String> {
    let after_credentials = conn[start..].find('@').map_or(start, |at| start + at + 1);
    let Some(question) = conn[after_credentials..].find('?').map(|q| after_credentials + q) else {
        return Ok(conn.to_string());
    };
    let mut kept = Vec::new();
    for segment in conn[question + 1..].split('&') {
        let (key, value) = segment.split_once('=').unwrap_or((segment, ""));
        let key = decode(key);
        if keep(&key, decode(value))? {
            kept.push(segment);
        }
    }
    let head = &conn[..question];
    Ok(if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) })
}

fn decode(s: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

/// `key = value` pairs as libpq (and tokio-postgres) read them: a value is
/// `'quoted'` or runs to the next space, `\` escapes the next character.
/// `None` when the string is not of that form.
fn key_values(conn: &str) -> Option<Vec<(&str, String)>> {
    let mut pairs = Vec::new();
    let mut rest = conn.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c.is_whitespace() || c == '=')?;
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start().strip_prefix('=')?.trim_start();
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let quoted = rest.starts_with('\'');
        if quoted {
            chars.next();
        }
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.push(chars.next()?.1),
                '\'' if quoted => {
                    end = Some(i + 1);
                    break;
                }
                c if c.is_whitespace() && !quoted => {
                    end = Some(i);
                    break;
                }
                c => value.push(c),
            }
        }
        let end = match end {
            Some(end) => end,
            None if quoted => return None,
            None => rest.len(),
        };
        if key.is_empty() || (value.is_empty() && !quoted) {
            return None;
        }
        pairs.push((key, value));
        rest = rest[end..].trim_start();
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(m: SslMode) -> Option<SslMode> {
        Some(m)
    }

    #[test]
    fn urls_lose_only_the_tls_settings() {
        let (rest, p) = take("postgres://bob:pw@db:5432/x?sslmode=verify-full&connect_timeout=3&sslrootcert=%2Ftmp%2Fca.pem").unwrap();
        assert_eq!(rest, "postgres://bob:pw@db:5432/x?connect_timeout=3");
        assert_eq!(p, SslParams { mode: mode(SslMode::VerifyFull), rootcert: Some("/tmp/ca.pem".into()) });
        let (rest, p) = take("postgresql://db/x?sslmode=require").unwrap();
        assert_eq!((rest.as_str(), p.mode), ("postgresql://db/x", mode(SslMode::Require)));
        // A `?` in a password is not the query's start.
        let (rest, p) = take("postgres://bob:p?w@db/x").unwrap();
        assert_eq!((rest.as_str(), p), ("postgres://bob:p?w@db/x", SslParams::default()));
    }

    #[test]
    fn key_value_strings_lose_only_the_tls_settings() {
        let (rest, p) = take("host=db  sslmode = verify-ca sslrootcert='/my certs/ca.pem' password='it\\'s'").unwrap();
        assert_eq!(rest, "host='db' password='it\\'s'");
        assert_eq!(p, SslParams { mode: mode(SslMode::VerifyCa), rootcert: Some("/my certs/ca.pem".into()) });
        let config: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&b"it's"[..]));
        // Not of either form: handed on for tokio-postgres's own error.
        assert_eq!(take("host=db password='open").unwrap().0, "host=db password='open");
    }

    #[test]
    fn settings_not_acted_on_are_refused_by_name() {
        for conn in ["postgres://db/x?sslcert=/c.pem", "host=db sslkey=/k.pem", "postgres://db/x?sslcrl=x", "host=db requiressl=1"] {
            let e = take(conn).unwrap_err();
            assert!(e.contains("is not supported yet") && e.contains("remove it"), "{conn}: {e}");
        }
        let e = take("postgres://db/x?sslmode=allow").unwrap_err();
        assert!(e.contains("sslmode=allow is not supported yet"), "{e}");
        let e = take("postgres://db/x?sslmode=verify_full").unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
        // tokio-postgres's own negotiation setting passes through.
        assert_eq!(take("postgres://db/x?sslnegotiation=direct").unwrap().0, "postgres://db/x?sslnegotiation=direct");
    }
}

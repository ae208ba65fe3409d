//! Connection strings are shown in messages and results, never with their
//! secrets. A secret is any value the drivers document as one, in every form
//! a connection string takes: a URL's password, a query parameter (libpq's
//! `password` and `sslpassword`; MongoDB's `tlsCertificateKeyFilePassword`,
//! `sslPEMKeyPassword`, `proxyPassword`, and the `AWS_SESSION_TOKEN` of
//! `authMechanismProperties`; any other key naming a password, secret or
//! token), or a word of a libpq `key=value` string, quoted or not.

/// Keys whose value is a secret, as the drivers document them, matched
/// without regard to case; any key that names a password, secret or token
/// counts too (see [`is_secret_key`]).
const SECRET_KEYS: [&str; 7] = ["password", "sslpassword", "tlscertificatekeyfilepassword", "sslpemkeypassword", "proxypassword", "pwd", "pass"];

/// MongoDB's key whose value is a list of `NAME:value` pairs, some of them secrets.
const MECHANISM_PROPERTIES: &str = "authmechanismproperties";

fn is_secret_key(key: &str) -> bool {
    let key = key.trim().to_ascii_lowercase();
    SECRET_KEYS.contains(&key.as_str()) || ["password", "secret", "token"].iter().any(|word| key.contains(word))
}

/// `AWS_SESSION_TOKEN:abc,SERVICE_NAME:x` with each secret value hidden.
fn redact_properties(value: &str) -> String {
    value
        .split(',')
        .map(|pair| match pair.split_once(':') {
            Some((name, _)) if is_secret_key(name) => format!("{name}:***"),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A parameter's value as it may be shown.
fn shown_value(key: &str, value: &str) -> String {
    if is_secret_key(key) {
        "***".to_string()
    } else if key.eq_ignore_ascii_case(MECHANISM_PROPERTIES) {
        redact_properties(value)
    } else {
        value.to_string()
    }
}

/// Replaces every secret of a connection string with `***`: a URL's
/// password and secret parameters, or the secret words of a libpq
/// `key=value` string. Anything else that cannot be read is hidden whole
/// (reduced to its scheme), since it may carry a secret in a form this
/// cannot see.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(url) if url.cannot_be_a_base() => redact_keywords(raw).unwrap_or_else(|| hidden(raw)),
        Ok(mut url) => {
            if url.password().is_some() {
                let _ = url.set_password(Some("***"));
            }
            let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            let shown: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.clone(), shown_value(k, v))).collect();
            if shown != pairs {
                let mut query = url.query_pairs_mut();
                query.clear();
                for (k, v) in &shown {
                    query.append_pair(k, v);
                }
            }
            url.to_string()
        }
        Err(_) => redact_keywords(raw).unwrap_or_else(|| hidden(raw)),
    }
}

fn hidden(raw: &str) -> String {
    match raw.split_once("://") {
        Some((scheme, _)) if !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) => format!("{scheme}://<unparsed, hidden>"),
        _ => "<connection string hidden>".to_string(),
    }
}

/// A libpq `key=value` string (values quoted with `'`, `\` escaping) with
/// each secret value hidden; None when it is not one.
fn redact_keywords(raw: &str) -> Option<String> {
    let mut shown = Vec::new();
    let mut rest = raw.trim_start();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c == '=' || c.is_whitespace())?;
        let key = &rest[..key_end];
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        rest = rest[key_end..].trim_start().strip_prefix('=')?.trim_start();
        let (value, text, after) = keyword_value(rest)?;
        let shown_text = if is_secret_key(key) {
            "***".to_string()
        } else if key.eq_ignore_ascii_case(MECHANISM_PROPERTIES) {
            redact_properties(&value)
        } else {
            text.to_string()
        };
        shown.push(format!("{key}={shown_text}"));
        rest = after.trim_start();
    }
    Some(shown.join(" "))
}

/// The value at the head of `rest`: (its value, its text as written, what follows).
fn keyword_value(rest: &str) -> Option<(String, &str, &str)> {
    let mut value = String::new();
    let mut chars = rest.char_indices();
    if rest.starts_with('\'') {
        chars.next();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => value.push(chars.next()?.1),
                '\'' => return Some((value, &rest[..at + 1], &rest[at + 1..])),
                c => value.push(c),
            }
        }
        // An unterminated quote: not a string libpq reads.
        return None;
    }
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?.1),
            c if c.is_whitespace() => return Some((value, &rest[..at], &rest[at..])),
            c => value.push(c),
        }
    }
    Some((value, rest, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_passwords_everywhere() {
        let s = redact_url("postgres://bob:s3cret@db:5432/x?sslmode=disable");
        assert!(!s.contains("s3cret") && s.contains("bob") && s.contains("***"), "{s}");
        let s = redact_url("postgres://bob@db/x?password=s3cret");
        assert!(!s.contains("s3cret"), "{s}");
        let s = redact_url("mongodb://u:p%40ss@h1:27017,h2:27017/db");
        assert!(!s.contains("p%40ss") && !s.contains("p@ss"), "{s}");
        assert!(!redact_url("host=db password=s3cret").contains("s3cret"));
        assert_eq!(redact_url("mongodb://127.0.0.1:27017/"), "mongodb://127.0.0.1:27017/");
    }

    /// Every secret the drivers document (libpq's connection parameters,
    /// MongoDB's connection string options, MySQL's URL), in every form a
    /// connection string takes: absent from what is shown, and what is not
    /// secret still there to say which server it was.
    #[test]
    fn every_documented_secret_in_every_form_is_hidden() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            // libpq URLs: userinfo and parameters.
            ("postgres://u:S3CRET@db:5432/x", &["S3CRET"], &["db:5432", "u"]),
            ("postgresql://u@db/x?password=S3CRET&sslmode=require", &["S3CRET"], &["sslmode=require"]),
            ("postgres://u@db/x?sslpassword=S3CRET&sslkey=/k.pem", &["S3CRET"], &["sslkey"]),
            ("postgres://u@db/x?PassWord=S3CRET", &["S3CRET"], &[]),
            ("postgres://u:se%3Acret%40x@db/x", &["se%3Acret", "se:cret"], &["db"]),
            // libpq key=value strings: plain, quoted, escaped, with colons and spaces.
            ("host=db password=se:cret dbname=x", &["se:cret", "se:"], &["host=db", "dbname=x"]),
            ("password=se:cret host=db", &["se:cret", "se:"], &["host=db"]),
            ("host=db password='a b:c' user=u", &["a b:c", "b:c"], &["user=u"]),
            ("host=db password = 'it\\'s:secret' user=u", &["secret", "it\\'s"], &["user=u"]),
            ("host=db sslpassword=K3Y:pw", &["K3Y"], &["host=db"]),
            ("host=db password=back\\ slash", &["back", "slash"], &["host=db"]),
            // MongoDB: userinfo, TLS key password, proxy, AWS session token.
            ("mongodb://u:S3CRET@h:27017/db", &["S3CRET"], &["h:27017"]),
            ("mongodb://h/db?tls=true&tlsCertificateKeyFilePassword=S3CRET", &["S3CRET"], &["tls=true"]),
            ("mongodb://h/db?sslPEMKeyPassword=S3CRET", &["S3CRET"], &[]),
            ("mongodb://h/db?proxyHost=p&proxyPassword=S3CRET", &["S3CRET"], &["proxyHost=p"]),
            ("mongodb://KEY:S3CRET@h/db?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:T0KEN", &["S3CRET", "T0KEN"], &["MONGODB-AWS"]),
            ("mongodb+srv://u:S3CRET@cluster0.example.net/db", &["S3CRET"], &["cluster0.example.net"]),
            ("mongodb://u:S3CRET@h1:27017,h2:27017/db?replicaSet=rs", &["S3CRET"], &[]),
            // MySQL: userinfo, and a password parameter other drivers take.
            ("mysql://u:S3CRET@db:3306/x", &["S3CRET"], &["db:3306"]),
            ("mysql://u@db/x?password=S3CRET", &["S3CRET"], &[]),
            // Not readable: hidden whole.
            ("postgres://u:S3CRET@[bad", &["S3CRET"], &[]),
            ("host=db password='S3CRET", &["S3CRET"], &[]),
        ];
        for (raw, secrets, kept) in cases {
            let shown = redact_url(raw);
            for secret in *secrets {
                assert!(!shown.contains(secret), "{raw:?} showed {secret:?}: {shown}");
            }
            for part in *kept {
                assert!(shown.contains(part), "{raw:?} lost {part:?}: {shown}");
            }
        }
    }
}

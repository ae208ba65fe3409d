//! Connection strings are shown in messages and results, never with their passwords.

/// Replaces the password of a URL-shaped connection string with `***`.
/// Strings that do not parse as URLs are reduced to their scheme, since they may
/// carry a password in a form we cannot see.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) => {
            if url.password().is_some() {
                let _ = url.set_password(Some("***"));
            }
            // `password=` can also hide in the query string (libpq style).
            let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            if pairs.iter().any(|(k, _)| k.eq_ignore_ascii_case("password")) {
                let mut q = url.query_pairs_mut();
                q.clear();
                for (k, v) in &pairs {
                    q.append_pair(k, if k.eq_ignore_ascii_case("password") { "***" } else { v });
                }
            }
            url.to_string()
        }
        Err(_) => match raw.split_once(':') {
            Some((scheme, _)) if !scheme.contains(' ') => format!("{scheme}:<unparsed, hidden>"),
            _ => "<connection string hidden>".to_string(),
        },
    }
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
}

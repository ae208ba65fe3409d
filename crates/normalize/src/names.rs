//! Names of derived tables and columns: ToroDB's rules, within PostgreSQL's
//! limits. Every character outside `[0-9a-z_]` becomes `_` (after lower-casing),
//! and a name longer than PostgreSQL's 63 bytes keeps its first 54 bytes and
//! gains `_` and 8 hex digits of a CRC-32 of what it names, so the same key
//! always gets the same name, on every machine and in every version.

/// PostgreSQL's identifier limit (NAMEDATALEN - 1).
pub const MAX_IDENTIFIER: usize = 63;
/// Bytes kept of a name too long: 54 + `_` + 8 hex digits = 63.
const KEPT: usize = MAX_IDENTIFIER - 9;

/// `key` lower-cased, with every character outside `[0-9a-z_]` as `_`.
pub fn sanitize(key: &str) -> String {
    key.chars().map(|c| c.to_ascii_lowercase()).map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' { c } else { '_' }).collect()
}

/// `name`, shortened to [`MAX_IDENTIFIER`] bytes when longer; `origin` (what
/// the name stands for, e.g. the full path and key) makes the suffix.
pub fn fit(name: String, origin: &str) -> String {
    if name.len() <= MAX_IDENTIFIER {
        return name;
    }
    // `sanitize` leaves ASCII only, so any byte is a char boundary.
    format!("{}_{}", &name[..KEPT], tag(origin))
}

/// `name` made distinct from the names taken, deterministically: the tag of
/// `origin` replaces the end of the name.
pub fn distinct(name: String, origin: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(&name) {
        return name;
    }
    let base = &name[..name.len().min(KEPT)];
    let mut candidate = format!("{base}_{}", tag(origin));
    // A CRC collision on top of a name collision: count up (vanishingly rare).
    let mut n = 2;
    while taken(&candidate) {
        candidate = format!("{}_{}{n}", &base[..base.len().min(KEPT - 4)], tag(origin));
        n += 1;
    }
    candidate
}

/// 8 hex digits standing for `origin`, the same everywhere.
fn tag(origin: &str) -> String {
    format!("{:08x}", crc32fast::hash(origin.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_identifiers() {
        assert_eq!(sanitize("Actor.Login-Name é"), "actor_login_name__");
        assert_eq!(sanitize("payload"), "payload");
    }

    #[test]
    fn long_names_are_shortened_the_same_way_every_time() {
        let long = "k".repeat(70);
        let a = fit(format!("{long}_s"), "t/k70");
        assert_eq!(a.len(), MAX_IDENTIFIER);
        assert_eq!(a, fit(format!("{long}_s"), "t/k70"), "deterministic");
        assert_ne!(a, fit(format!("{long}_s"), "t/other"), "what it names decides the suffix");
        assert_eq!(fit("short_s".into(), "x"), "short_s");
    }

    #[test]
    fn colliding_names_are_told_apart() {
        let taken = |n: &str| n == "a_b_s";
        let b = distinct("a_b_s".into(), "a-b", taken);
        assert_ne!(b, "a_b_s");
        assert!(b.starts_with("a_b_s_") && b.len() <= MAX_IDENTIFIER);
        assert_eq!(distinct("c_s".into(), "c", taken), "c_s");
    }
}

//! Where a server runs, as far as its connection string tells: on the machine
//! ghbench runs on, or elsewhere. What ghbench does to this machine (dropping
//! its page cache) reaches only a server that runs here, and the reports say so.

use std::net::IpAddr;

/// Where an engine's server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// On this machine: a loopback address, `localhost`, a Unix socket, or this host's name.
    ThisMachine,
    /// On the named hosts (one is enough to be elsewhere).
    Elsewhere(Vec<String>),
}

impl Place {
    /// From a `scheme://[user@]host[:port][,host...]/...` URL (PostgreSQL's
    /// and MongoDB's, `?host=` included) or libpq's `key=value` form.
    pub fn of(url: &str) -> Place {
        let away: Vec<String> = hosts_of(url).into_iter().filter(|h| !is_this_machine(h)).collect();
        match away.is_empty() {
            true => Place::ThisMachine,
            false => Place::Elsewhere(away),
        }
    }
}

/// The host names a connection string names (empty: the default, a local socket).
fn hosts_of(url: &str) -> Vec<String> {
    let mut hosts = Vec::new();
    let (authority, query) = match url.split_once("://") {
        Some((_, rest)) => {
            let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
            let authority = before_query.split('/').next().unwrap_or("");
            (authority.rsplit_once('@').map_or(authority, |(_, h)| h), query)
        }
        // libpq's `host=a port=5432 ...`
        None => ("", url),
    };
    hosts.extend(authority.split(',').filter(|h| !h.is_empty()).map(without_port));
    for pair in query.split(['&', ' ']) {
        if let Some(("host" | "hostaddr", value)) = pair.split_once('=') {
            hosts.extend(value.split(',').filter(|h| !h.is_empty()).map(str::to_string));
        }
    }
    hosts
}

fn without_port(host_port: &str) -> String {
    if let Some(rest) = host_port.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest).to_string();
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host.to_string(),
        _ => host_port.to_string(),
    }
}

fn is_this_machine(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    // A Unix socket: a path, percent-encoded in a URL's host.
    if host.starts_with('/') || host.starts_with("%2f") {
        return true;
    }
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return ip.is_loopback() || ip.is_unspecified();
    }
    let own = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_ascii_lowercase()).unwrap_or_default();
    !own.is_empty() && host == own
}

/// `host:port` of a `scheme://[user@]host[:port][/...]` URL whose scheme is
/// one of `schemes`, with `default_port` when it names none: how an engine
/// on a server says where its server listens (`Loader::address`), as
/// `servers.json` lists the servers `just setup` started. None for another
/// form (another scheme, e.g. a DNS seed list's `mongodb+srv://`; libpq's
/// `key=value`), several hosts (a replica set) or a Unix socket: no single
/// server ghbench could find or restart.
pub fn address_of(url: &str, schemes: &[&str], default_port: u16) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !schemes.contains(&scheme) {
        return None;
    }
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // A replica set's list names several servers: not one ghbench can restart.
    // A Unix socket's path (percent-encoded) is no TCP address.
    if host_port.contains(',') || host_port.is_empty() || host_port.to_ascii_lowercase().starts_with("%2f") {
        return None;
    }
    Some(match host_port.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => host_port.to_string(),
        _ => format!("{host_port}:{default_port}"),
    })
}

/// Two `host:port` addresses name the same server (`localhost` is 127.0.0.1).
pub fn same_address(a: &str, b: &str) -> bool {
    let loopback = |s: &str| s.replace("localhost:", "127.0.0.1:");
    loopback(a) == loopback(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_servers_are_told_from_remote_ones() {
        for here in [
            "postgres://ghbench@127.0.0.1:54320/ghbench",
            "mongodb://127.0.0.1:27017/ghbench?directConnection=true",
            "mongodb://localhost,127.0.0.2:27018/?replicaSet=rs0",
            "postgresql://u@[::1]:5432/db",
            "postgresql:///db?host=/var/run/postgresql",
            "mongodb://%2Ftmp%2Fmongodb-27017.sock/ghbench",
            "host=localhost port=5432 dbname=x",
            "dbname=x",
        ] {
            assert_eq!(Place::of(here), Place::ThisMachine, "{here}");
        }
        assert_eq!(Place::of("postgres://u:p@db.example:5432/x"), Place::Elsewhere(vec!["db.example".into()]));
        assert_eq!(Place::of("mongodb+srv://u:p@cluster0.ab1cd.mongodb.net/ghbench"), Place::Elsewhere(vec!["cluster0.ab1cd.mongodb.net".into()]));
        assert_eq!(Place::of("mongodb://127.0.0.1,10.1.2.3:27017/?replicaSet=rs0"), Place::Elsewhere(vec!["10.1.2.3".into()]));
        assert_eq!(Place::of("host=db.example dbname=x"), Place::Elsewhere(vec!["db.example".into()]));
    }

    #[test]
    fn addresses_come_from_urls_with_the_engines_default_ports() {
        let pg = |url| address_of(url, &["postgres", "postgresql"], 5432);
        let mongo = |url| address_of(url, &["mongodb"], 27017);
        assert_eq!(pg("postgres://ghbench@127.0.0.1:54320/ghbench").as_deref(), Some("127.0.0.1:54320"));
        assert_eq!(pg("postgresql://u:p@db.example/x?sslmode=require").as_deref(), Some("db.example:5432"));
        assert_eq!(mongo("mongodb://127.0.0.1:27017/ghbench?directConnection=true").as_deref(), Some("127.0.0.1:27017"));
        assert_eq!(mongo("mongodb://db.example/ghbench").as_deref(), Some("db.example:27017"));
        assert_eq!(mongo("mongodb://a:1,b:2/x"), None, "a replica set is not one server");
        assert_eq!(pg("host=localhost port=5432"), None);
        assert_eq!(mongo("mongodb://%2Ftmp%2Fmongodb-27017.sock/ghbench"), None, "a Unix socket");
        assert_eq!(mongo("mongodb+srv://u:p@cluster0.ab1cd.mongodb.net/ghbench"), None, "a DNS seed list");
        assert_eq!(pg("mongodb://127.0.0.1:27017/ghbench"), None, "another engine's scheme");
        assert!(same_address("127.0.0.1:5432", "localhost:5432"));
    }
}

//! The concurrency phase's options, shared by `query` and `bench`.

use std::time::Duration;

use clap::Args;
use ghbench_olap::concurrency::{ConcurrencyOptions, MixQuery, CONNECT_LIMIT, GRACE, MAX_CLIENTS};

/// Longest phase one engine and client count may be asked for.
const MAX_SECONDS: u64 = 3_600;

#[derive(Args, Debug, Clone, Default)]
pub struct ConcurrencyArgs {
    /// After the single-client timings: for each engine and each of these client
    /// counts (e.g. 1,4,16), that many clients at once loop over --queries for
    /// --duration after --warmup, each on a connection of its own (polars: a
    /// worker process of its own). Records queries per second and latency
    /// percentiles; every answer is checked against the single-client phase's
    /// verified answer. At most 256 clients. Takes about engines x client
    /// counts x (--warmup + --duration) seconds; the window holds at least two
    /// of the slowest single-client run, and a query still running when it ends
    /// is abandoned (and cancelled) after 60 s or twice what the clients' slowest
    /// runs would take one after another, so every phase ends by itself.
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = client_count)]
    pub clients: Vec<usize>,

    /// Seconds each engine and client count is measured, after the warm-up.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, requires = "clients", value_parser = seconds_at_least_one)]
    pub duration: u64,

    /// Seconds the clients run the mix before the measurement starts (answers
    /// checked, times not kept).
    #[arg(long, value_name = "SECONDS", default_value_t = 5, requires = "clients", value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    pub warmup: u64,

    /// The mix the clients loop over (not which queries the run times: each
    /// must be among those), e.g. `A,B` or `A,C:published` (QUERY[:VARIANT],
    /// variant `corrected` when left out) [default: the corrected queries run].
    #[arg(long = "queries", value_delimiter = ',', value_name = "QUERY[:VARIANT],...", requires = "clients", value_parser = mix_query)]
    pub mix: Vec<MixQuery>,

    /// A bound on each phase (one engine, one client count): its window ends
    /// once this many queries were started in it, or at --duration, whichever
    /// comes first.
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "clients", value_parser = crate::options::at_least_one::<u64>)]
    pub max_queries: u64,
}

impl ConcurrencyArgs {
    /// None when no --clients were asked for.
    pub fn options(&self) -> Option<ConcurrencyOptions> {
        if self.clients.is_empty() {
            return None;
        }
        let mut clients = self.clients.clone();
        clients.sort_unstable();
        clients.dedup();
        Some(ConcurrencyOptions {
            clients,
            duration: Duration::from_secs(self.duration),
            warmup: Duration::from_secs(self.warmup),
            max_queries: self.max_queries,
            mix: self.mix.clone(),
            grace: GRACE,
            connect_limit: CONNECT_LIMIT,
        })
    }
}

fn client_count(value: &str) -> Result<usize, String> {
    let n: usize = crate::options::at_least_one(value)?;
    if n > MAX_CLIENTS {
        return Err(format!(
            "at most {MAX_CLIENTS} clients: each is a connection of its own, and more on one machine measure its scheduler, not the engine"
        ));
    }
    Ok(n)
}

fn seconds_at_least_one(value: &str) -> Result<u64, String> {
    let n: u64 = crate::options::at_least_one(value)?;
    if n > MAX_SECONDS {
        return Err(format!("at most {MAX_SECONDS} seconds (an hour) per engine and client count"));
    }
    Ok(n)
}

/// `A`, `a`, `A:published`.
fn mix_query(value: &str) -> Result<MixQuery, String> {
    let (query, variant) = value.split_once(':').unwrap_or((value, ghbench_olap::concurrency::mix::DEFAULT_VARIANT));
    let (query, variant) = (query.trim(), variant.trim());
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain(query) || !plain(variant) {
        return Err(format!("'{value}' is not QUERY or QUERY:VARIANT (e.g. A, or C:published)"));
    }
    Ok(MixQuery { query: query.to_ascii_uppercase(), variant: variant.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_entry_is_a_query_with_its_variant_corrected_unless_said() {
        assert_eq!(mix_query("a").unwrap().to_string(), "A corrected");
        assert_eq!(mix_query("C:published").unwrap().to_string(), "C published");
        assert!(mix_query("A;drop").unwrap_err().contains("is not QUERY or QUERY:VARIANT"));
        assert!(mix_query(":x").is_err());
    }

    #[test]
    fn client_counts_are_bounded() {
        assert_eq!(client_count("4"), Ok(4));
        assert!(client_count("0").is_err());
        assert!(client_count("100000").unwrap_err().starts_with("at most 256 clients"));
    }
}

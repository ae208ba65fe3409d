//! How unevenly events spread over actors (or repositories): a few bots and busy
//! projects make most of an hour, a long tail appears once. Modelled as a Zipf
//! law over a fixed pool, fitted to what one real hour shows: its number of
//! distinct actors and the share of the busiest one.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// The skew of one key (actor login, repository name) in the calibration data,
/// and the Zipf law fitted to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skew {
    /// Events per hour the numbers below were measured over.
    pub events: u64,
    /// Distinct keys per hour.
    pub distinct: u64,
    /// Events of the busiest key per hour.
    pub top: u64,
    /// Zipf exponent: the k-th most active key has weight k^-exponent.
    pub exponent: f64,
    /// Keys in the pool events are drawn from.
    pub pool: u64,
}

/// Draws indexes `0..size`, index k with weight (k+1)^-exponent.
#[derive(Debug, Clone)]
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new(size: usize, exponent: f64) -> Zipf {
        let mut total = 0.0;
        let cumulative = (1..=size.max(1))
            .map(|k| {
                total += (k as f64).powf(-exponent);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    pub fn sample(&self, rng: &mut impl Rng) -> usize {
        let total = *self.cumulative.last().expect("at least one key");
        let u = rng.random::<f64>() * total;
        self.cumulative.partition_point(|c| *c <= u).min(self.cumulative.len() - 1)
    }

    pub fn len(&self) -> usize {
        self.cumulative.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Pools larger than this many times the distinct keys are not considered.
const MAX_POOL_FACTOR: u64 = 8;
const BISECTION_STEPS: usize = 24;

/// The exponent and pool size under which `events` draws give about `distinct`
/// keys and a busiest key with about `top` events.
pub fn fit_zipf(events: u64, distinct: u64, top: u64) -> (f64, u64) {
    if distinct <= 1 || events <= 1 {
        return (0.0, distinct.max(1));
    }
    let max_pool = distinct.saturating_mul(MAX_POOL_FACTOR).max(distinct + 1);
    let target_top = top as f64 / events as f64;
    let (mut lo, mut hi) = (0.0_f64, 2.5_f64);
    let mut best = (1.0, distinct);
    for _ in 0..BISECTION_STEPS {
        let s = (lo + hi) / 2.0;
        let weights: Vec<f64> = (1..=max_pool).map(|k| (k as f64).powf(-s)).collect();
        let pool = pool_for_distinct(&weights, events, distinct);
        let total: f64 = weights[..pool as usize].iter().sum();
        let top_share = weights[0] / total;
        best = (s, pool);
        // A steeper law gives the busiest key a larger share.
        if top_share < target_top {
            lo = s;
        } else {
            hi = s;
        }
    }
    best
}

/// Keys expected among `events` draws from the first `pool` of `weights`.
fn expected_distinct(weights: &[f64], pool: usize, events: u64) -> f64 {
    let total: f64 = weights[..pool].iter().sum();
    let n = events as f64;
    weights[..pool].iter().map(|w| 1.0 - (-n * w / total).exp()).sum()
}

/// Smallest pool (prefix of `weights`) whose expected distinct count in `events`
/// draws reaches `distinct`.
fn pool_for_distinct(weights: &[f64], events: u64, distinct: u64) -> u64 {
    let (mut lo, mut hi) = (distinct as usize, weights.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if expected_distinct(weights, mid, events) >= distinct as f64 {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as u64
}

/// The exponent under which `events` draws from a pool of `pool` keys give about
/// `distinct` keys: how concentrated one kind of event is on the shared pool.
pub fn fit_exponent(events: u64, distinct: u64, pool: u64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 3.0_f64);
    if events == 0 || pool <= 1 {
        return 0.0;
    }
    for _ in 0..BISECTION_STEPS {
        let s = (lo + hi) / 2.0;
        let weights: Vec<f64> = (1..=pool).map(|k| (k as f64).powf(-s)).collect();
        // A steeper law concentrates draws on fewer keys.
        if expected_distinct(&weights, pool as usize, events) > distinct as f64 {
            lo = s;
        } else {
            hi = s;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn fitted_law_reproduces_distinct_and_top() {
        // About what the real hour 2015-01-01-0 shows for actors.
        let (s, pool) = fit_zipf(7702, 3648, 79);
        let zipf = Zipf::new(pool as usize, s);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut counts = vec![0u64; zipf.len()];
        for _ in 0..7702 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        let distinct = counts.iter().filter(|c| **c > 0).count() as f64;
        let top = *counts.iter().max().unwrap() as f64;
        assert!((distinct / 3648.0 - 1.0).abs() < 0.1, "distinct {distinct} (s={s}, pool={pool})");
        assert!((top / 79.0 - 1.0).abs() < 0.35, "top {top} (s={s}, pool={pool})");
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        assert_eq!(fit_zipf(0, 0, 0).1, 1);
        assert_eq!(fit_zipf(5, 1, 5).1, 1);
        let (_, pool) = fit_zipf(100, 100, 1);
        assert!(pool >= 100);
    }
}

//! How new actors and repositories keep arriving as the hours go by: in the
//! real year they do (5,831 made-up actors cannot stand for 212M events), so
//! groups, answers and spills grow with the data.
//!
//! The model is Heaps' law, stated in events: after `n` events (counted from
//! the profile's first hour, at the run's events per hour) `⌊k·nᵝ⌋` distinct
//! keys have appeared. An event is a key's first appearance exactly when that
//! count steps up at it; every other event draws among the keys already
//! arrived, the earliest the busiest (Zipf, at the profile's exponent). So the
//! distinct keys after `n` events are the model's count, not a random number,
//! and any hour is made alone (on any thread, in any order).
//!
//! `k` and `β` are fitted on the calibration files' first appearances, in file
//! order, from [`FIT_FROM`] events on. With one real hour that is the curve
//! within one hour, extrapolated: whether the year's actors keep arriving at
//! that pace cannot be seen here (see docs/guide.md, "Generated data").

use serde::{Deserialize, Serialize};

/// First appearances before this many events are left out of the fit: the
/// first events of a file are all new, whatever the law.
pub const FIT_FROM: u64 = 100;
/// Fewer events than this give no fit worth extrapolating.
pub const LEAST_EVENTS: u64 = 1_000;

/// The arrival laws of a profile (see the module's note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    /// `heaps`: the only model so far.
    pub model: String,
    /// Distinct actors (logins) against events.
    pub actors: Heaps,
    /// Distinct repositories of others (not the actor's own) against events;
    /// an actor's own repositories arrive with it.
    pub repos: Heaps,
    /// The events the fit saw, and the first of them it used.
    pub fitted_events: u64,
    pub fitted_from: u64,
    /// Per event type, the first appearances of repositories of others it
    /// brought: stars find new projects, comments gather on known ones. An
    /// event that brings one takes its type from this mix.
    #[serde(default)]
    pub repo_newcomer_types: std::collections::BTreeMap<String, u64>,
    /// Per event type, of its events on a repository of others seen before,
    /// the share on one first seen by an event of its own type: comments
    /// follow comments on the same issues, pushes the same projects.
    #[serde(default)]
    pub repo_same_type_repeats: std::collections::BTreeMap<String, f64>,
}

impl Growth {
    /// Per type of `types` (in their order), its share of the events that
    /// bring a new repository of others; the types' own shares when none were counted.
    pub fn newcomer_shares(&self, types: &[crate::profile::TypeProfile]) -> Vec<f64> {
        let total = self.repo_newcomer_types.values().sum::<u64>();
        match total {
            0 => types.iter().map(|t| t.share.max(0.0)).collect(),
            _ => types
                .iter()
                .map(|t| {
                    self.repo_newcomer_types.get(&t.name).copied().unwrap_or(0) as f64
                        / total as f64
                })
                .collect(),
        }
    }
}

/// What calibration counts of repositories of others by event type (see
/// [`Growth::repo_newcomer_types`] and [`Growth::repo_same_type_repeats`]).
#[derive(Debug, Default)]
pub struct RepoTypes {
    first_type: std::collections::HashMap<String, String>,
    newcomers: std::collections::BTreeMap<String, u64>,
    /// Per type: repeats, and those on a repository first seen by its type.
    repeats: std::collections::BTreeMap<String, (u64, u64)>,
}

impl RepoTypes {
    pub fn observe(&mut self, kind: &str, repo: &str) {
        match self.first_type.get(repo) {
            None => {
                self.first_type.insert(repo.to_string(), kind.to_string());
                *self.newcomers.entry(kind.to_string()).or_default() += 1;
            }
            Some(first) => {
                let slot = self.repeats.entry(kind.to_string()).or_default();
                slot.0 += 1;
                slot.1 += u64::from(first == kind);
            }
        }
    }
}

/// `⌊k·nᵝ⌋` keys after `n` events.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Heaps {
    pub k: f64,
    pub beta: f64,
}

impl Growth {
    /// `Heaps' law fitted on 7,702 events: actors 2.33·n^0.823, others' repositories 0.79·n^0.83`.
    pub fn said(&self) -> String {
        format!(
            "Heaps' law fitted on {} events: actors {}, others' repositories {}",
            self.fitted_events,
            self.actors.said(),
            self.repos.said()
        )
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.model != "heaps" {
            return Err(format!(
                "growth model '{}' is not one this ghbench makes (heaps)",
                self.model
            ));
        }
        for (what, law) in [("actors", &self.actors), ("repos", &self.repos)] {
            if !(law.k > 0.0 && law.k.is_finite() && law.beta > 0.0 && law.beta < 1.0) {
                return Err(format!(
                    "growth of {what}: k {} and beta {} must be positive, beta below 1",
                    law.k, law.beta
                ));
            }
        }
        Ok(())
    }
}

impl Heaps {
    pub fn said(&self) -> String {
        format!("{:.3}·n^{:.3}", self.k, self.beta)
    }

    /// Keys arrived after `n` events (never more than `n`).
    pub fn arrived(&self, n: u64) -> u64 {
        ((self.k * (n as f64).powf(self.beta)).floor() as u64).min(n)
    }

    /// Whether event `n` (counted from 1) is a key's first appearance, and
    /// then the key's index (keys are numbered in the order they arrive).
    pub fn newcomer(&self, n: u64) -> Option<u64> {
        let before = self.arrived(n.saturating_sub(1));
        (n >= 1 && self.arrived(n) > before).then_some(before)
    }

    /// New keys per event at event `n`: the share of events that are first appearances there.
    pub fn rate(&self, n: u64) -> f64 {
        (self.k * self.beta * (n.max(1) as f64).powf(self.beta - 1.0)).min(1.0)
    }

    /// The event at which key `index` first appears.
    pub fn arrival(&self, index: u64) -> u64 {
        let guess = (((index + 1) as f64 / self.k).powf(1.0 / self.beta))
            .ceil()
            .max(1.0) as u64;
        // Float rounding may put the guess an event or two off.
        let mut n = guess.saturating_sub(2).max(1);
        while self.arrived(n) <= index {
            n += 1;
        }
        n
    }

    /// Distinct keys after `n` events as the generator makes them: one
    /// first appearance per event at most, so at the very start (where the
    /// law would bring several at once) fewer than [`Heaps::arrived`].
    pub fn distinct_after(&self, n: u64) -> u64 {
        // From here on the law steps by one at most: every step is a newcomer.
        let one_by_one = (self.k * self.beta).powf(1.0 / (1.0 - self.beta)).ceil() as u64 + 2;
        let early = (1..=n.min(one_by_one))
            .filter(|&m| self.newcomer(m).is_some())
            .count() as u64;
        match n > one_by_one {
            true => early + self.arrived(n) - self.arrived(one_by_one),
            false => early,
        }
    }

    /// The least-squares line through `(events, distinct)` on log–log axes,
    /// from [`FIT_FROM`] events on; None with too few points or a law that
    /// does not grow sublinearly.
    pub fn fit(curve: &[(u64, u64)]) -> Option<Heaps> {
        let logs: Vec<(f64, f64)> = curve
            .iter()
            .filter(|(n, d)| *n >= FIT_FROM && *d > 0)
            .map(|&(n, d)| ((n as f64).ln(), (d as f64).ln()))
            .collect();
        if logs.len() < 2 {
            return None;
        }
        let count = logs.len() as f64;
        let (mean_x, mean_y) = (
            logs.iter().map(|p| p.0).sum::<f64>() / count,
            logs.iter().map(|p| p.1).sum::<f64>() / count,
        );
        let sxx: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        let sxy: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let beta = sxy / sxx;
        let law = Heaps {
            k: (mean_y - beta * mean_x).exp(),
            beta,
        };
        // A line of slope 1 is every event new: nothing to extrapolate.
        (sxx > 0.0 && beta > 0.0 && beta < 0.99).then_some(law)
    }
}

/// First appearances counted as events go by: `(events so far, distinct so
/// far)` after every event.
#[derive(Debug, Default)]
pub struct Arrivals {
    seen: std::collections::HashSet<String>,
    pub curve: Vec<(u64, u64)>,
    events: u64,
}

impl Arrivals {
    /// One more event, with its key when it has one of this kind; whether
    /// the key appears for the first time.
    pub fn observe(&mut self, key: Option<&str>) -> bool {
        self.events += 1;
        let new =
            key.is_some_and(|key| !self.seen.contains(key) && self.seen.insert(key.to_string()));
        self.curve.push((self.events, self.seen.len() as u64));
        new
    }
}

/// The growth of a calibration: None when its files hold too few events.
pub fn fit(actors: &Arrivals, repos: &Arrivals, types: RepoTypes) -> Option<Growth> {
    let events = actors.events;
    if events < LEAST_EVENTS {
        return None;
    }
    Some(Growth {
        model: "heaps".into(),
        actors: Heaps::fit(&actors.curve)?,
        repos: Heaps::fit(&repos.curve)?,
        fitted_events: events,
        fitted_from: FIT_FROM,
        repo_same_type_repeats: types
            .repeats
            .into_iter()
            .map(|(kind, (all, same))| (kind, same as f64 / all.max(1) as f64))
            .collect(),
        repo_newcomer_types: types.newcomers,
    })
}

/// Which actors and repositories the hours draw on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pools {
    /// New ones keep arriving, as the profile's growth says.
    Growing,
    /// The same fixed pools in every hour (every ghbench before growth).
    Fixed,
}

impl Pools {
    /// `profile` as these pools have it; an error when growing pools are
    /// asked of a profile without growth.
    pub fn apply(self, mut profile: crate::Profile, name: &str) -> Result<crate::Profile, String> {
        match self {
            Pools::Fixed => profile.growth = None,
            Pools::Growing if profile.growth.is_none() => {
                return Err(format!(
                    "profile {name} says nothing of how actors and repositories keep arriving (calibrated on fewer than {LEAST_EVENTS} events, or by an older ghbench): calibrate it again, or generate with --pools fixed"
                ))
            }
            Pools::Growing => {}
        }
        Ok(profile)
    }

    /// `growing (Heaps' law …)` or `fixed`, for manifests and records.
    pub fn said(growth: Option<&Growth>) -> String {
        growth.map_or_else(
            || "fixed pools".to_string(),
            |g| format!("growing pools ({})", g.said()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACTORS: Heaps = Heaps {
        k: 2.33,
        beta: 0.823,
    };

    #[test]
    fn newcomers_step_the_count_and_arrivals_invert_it() {
        let mut distinct = 0;
        for n in 1..=50_000u64 {
            if let Some(index) = ACTORS.newcomer(n) {
                assert_eq!(
                    index,
                    ACTORS.arrived(n - 1),
                    "keys are numbered in arrival order"
                );
                assert_eq!(ACTORS.arrival(index), n, "key {index}");
                distinct += 1;
            }
            if n % 997 == 0 || n == 50_000 {
                assert_eq!(ACTORS.distinct_after(n), distinct, "after {n} events");
            }
        }
        // Past the first few dozen events, every step of the law is one newcomer.
        assert_eq!(
            ACTORS.distinct_after(10_000_000) - ACTORS.distinct_after(50_000),
            ACTORS.arrived(10_000_000) - ACTORS.arrived(50_000)
        );
    }

    #[test]
    fn a_fit_recovers_the_law_it_was_drawn_from() {
        let curve: Vec<(u64, u64)> = (1..=20_000).map(|n| (n, ACTORS.arrived(n))).collect();
        let law = Heaps::fit(&curve).unwrap();
        assert!(
            (law.beta - ACTORS.beta).abs() < 0.01 && (law.k / ACTORS.k - 1.0).abs() < 0.05,
            "{law:?}"
        );
        // Every event new: linear, not a Heaps law to extrapolate.
        assert_eq!(
            Heaps::fit(&(1..=2_000).map(|n| (n, n)).collect::<Vec<_>>()),
            None
        );
    }
}

//! The made-up actors and repositories of one run. Built from the seed alone, so
//! every hour of a run (generated on any thread) draws from the same people and
//! projects, with the skew the profile measured.

use std::collections::HashSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::profile::Profile;
use crate::skew::Zipf;
use crate::text;

/// GitHub user ids of early 2015 were below about ten million.
const MAX_USER_ID: u64 = 10_500_000;
const MAX_REPO_ID: u64 = 29_000_000;
/// Own repositories per actor; the first is the busiest.
const OWN_REPOS: u64 = 4;

pub struct Actor {
    pub id: u64,
    pub login: String,
    /// The type this actor's focused events take (index into the profile's types).
    pub main_type: usize,
    /// Per type, the repository of others this actor's focused events go to (index into the pool).
    pub favourite_repos: Vec<usize>,
}

pub struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    /// Where the owner stands on the scale from person (1) to organisation (0):
    /// events carry `org` when it is below their type's org chance, so a repository
    /// is an org's for every type or for the org-heavy types only.
    pub org_rank: f64,
    pub org_id: u64,
}

pub struct Pools {
    seed: u64,
    actors: Vec<Actor>,
    actor_pick: Zipf,
    repos: Vec<Repo>,
    /// Per type: how its events spread over `repos`.
    repo_picks: Vec<Zipf>,
}

/// Stable 64-bit mixing (splitmix64): derives independent seeds from a run's seed.
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Pools {
    pub fn new(profile: &Profile, seed: u64) -> Pools {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, 0x706f_6f6c));
        let mut logins = HashSet::new();
        let shares: Vec<(usize, u64)> =
            profile.types.iter().enumerate().map(|(i, t)| (i, (t.share * 1e9) as u64)).collect();
        let repo_picks: Vec<Zipf> =
            profile.types.iter().map(|t| Zipf::new(profile.repos.pool as usize, t.repo_exponent)).collect();
        let actors = (0..profile.actors.pool)
            .map(|i| {
                let len = rng.random_range(4..14);
                let mut login = text::name(&mut rng, len);
                if !logins.insert(login.clone()) {
                    login = format!("{login}{i}");
                    logins.insert(login.clone());
                }
                let main_type = crate::event::pick(&shares, &mut rng).copied().unwrap_or(0);
                let favourite_repos = repo_picks.iter().map(|pick| pick.sample(&mut rng)).collect();
                Actor { id: rng.random_range(1..MAX_USER_ID), login, main_type, favourite_repos }
            })
            .collect();
        let repos = (0..profile.repos.pool)
            .map(|_| {
                let (owner_len, name_len) = (rng.random_range(3..13), rng.random_range(3..16));
                let owner = text::name(&mut rng, owner_len);
                let name = text::name(&mut rng, name_len);
                let org_rank = rng.random::<f64>();
                Repo { id: rng.random_range(1..MAX_REPO_ID), owner, name, org_rank, org_id: rng.random_range(1..MAX_USER_ID) }
            })
            .collect();
        Pools {
            seed,
            actors,
            actor_pick: Zipf::new(profile.actors.pool as usize, profile.actors.exponent),
            repos,
            repo_picks,
        }
    }

    /// An actor, busy ones more often; returns its index too.
    pub fn actor(&self, rng: &mut impl Rng) -> (usize, &Actor) {
        let i = self.actor_pick.sample(rng);
        (i, &self.actors[i])
    }

    /// A repository of someone else: the actor's favourite when `focused`, else
    /// any, busy ones more often.
    pub fn other_repo(&self, actor: usize, kind: usize, focused: bool, rng: &mut impl Rng) -> &Repo {
        let i = if focused { self.actors[actor].favourite_repos[kind] } else { self.repo_picks[kind].sample(rng) };
        &self.repos[i]
    }

    /// One of the actor's own repositories (its main one when `focused`), the
    /// same names in every hour of a run. Never an organisation's.
    pub fn own_repo(&self, actor: usize, focused: bool, rng: &mut impl Rng) -> Repo {
        // Else 1/2, 1/4, ...: most of an actor's activity is in one repository.
        let k = if focused { 0 } else { (0..OWN_REPOS - 1).take_while(|_| rng.random_bool(0.5)).count() as u64 };
        let mut named = ChaCha8Rng::seed_from_u64(mix(mix(self.seed, actor as u64), k));
        let len = named.random_range(3..16);
        let name = text::name(&mut named, len);
        Repo { id: named.random_range(1..MAX_REPO_ID), owner: self.actors[actor].login.clone(), name, org_rank: 1.0, org_id: 0 }
    }
}

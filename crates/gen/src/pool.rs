//! The made-up actors and repositories of one run. Built from the seed alone, so
//! every hour of a run (generated on any thread) draws from the same people and
//! projects, with the skew the profile measured.

use std::borrow::Cow;
use std::collections::HashSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::growth::Growth;
use crate::profile::Profile;
use crate::skew::Zipf;
use crate::text;

/// GitHub user ids of early 2015 were below about ten million.
const MAX_USER_ID: u64 = 10_500_000;
const MAX_REPO_ID: u64 = 29_000_000;
/// Own repositories per actor; the first is the busiest.
const OWN_REPOS: u64 = 4;

#[derive(Clone)]
pub struct Actor {
    pub id: u64,
    pub login: String,
    /// The type this actor's focused events take (index into the profile's types).
    pub main_type: usize,
    /// Per type, the repository of others this actor's focused events go to (index into the pool).
    pub favourite_repos: Vec<usize>,
}

#[derive(Clone)]
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
    /// Per type, its share of events (in billionths): the main type of an actor made on demand.
    shares: Vec<(usize, u64)>,
    /// Pools that grow with the events (see [`crate::growth`]): the fixed
    /// pools above are then the first to arrive, more are made on demand.
    growth: Option<Growing>,
}

struct Growing {
    law: Growth,
    actor_exponent: f64,
    /// Per type: its Zipf exponent over the repositories of others arrived.
    repo_exponents: Vec<f64>,
    /// The types of the events that bring new repositories of others (cumulative).
    newcomer_types: Vec<f64>,
    /// Per type: the chance its event on a known repository of others goes
    /// to one its own type brought.
    same_type: Vec<f64>,
}

/// Draws for a repository of one type before giving up on the type's own.
const SAME_TYPE_TRIES: usize = 64;

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
        let shares: Vec<(usize, u64)> = profile
            .types
            .iter()
            .enumerate()
            .map(|(i, t)| (i, (t.share * 1e9) as u64))
            .collect();
        let repo_picks: Vec<Zipf> = profile
            .types
            .iter()
            .map(|t| Zipf::new(profile.repos.pool as usize, t.repo_exponent))
            .collect();
        let actors: Vec<Actor> = (0..profile.actors.pool)
            .map(|i| {
                let len = rng.random_range(4..14);
                let mut login = text::name(&mut rng, len);
                if !logins.insert(login.clone()) {
                    login = format!("{login}{i}");
                    logins.insert(login.clone());
                }
                let main_type = crate::event::pick(&shares, &mut rng).copied().unwrap_or(0);
                let favourite_repos = repo_picks
                    .iter()
                    .map(|pick| pick.sample(&mut rng))
                    .collect();
                Actor {
                    id: rng.random_range(1..MAX_USER_ID),
                    login,
                    main_type,
                    favourite_repos,
                }
            })
            .collect();
        let repos = (0..profile.repos.pool)
            .map(|_| {
                let (owner_len, name_len) = (rng.random_range(3..13), rng.random_range(3..16));
                let owner = text::name(&mut rng, owner_len);
                let name = text::name(&mut rng, name_len);
                let org_rank = rng.random::<f64>();
                Repo {
                    id: rng.random_range(1..MAX_REPO_ID),
                    owner,
                    name,
                    org_rank,
                    org_id: rng.random_range(1..MAX_USER_ID),
                }
            })
            .collect();
        let growth = profile.growth.clone().map(|law| Growing {
            actor_exponent: profile.actors.exponent,
            repo_exponents: profile.types.iter().map(|t| t.repo_exponent).collect(),
            newcomer_types: crate::event::running_sum(
                law.newcomer_shares(&profile.types).into_iter(),
            ),
            same_type: profile
                .types
                .iter()
                .map(|t| {
                    law.repo_same_type_repeats
                        .get(&t.name)
                        .copied()
                        .unwrap_or(0.0)
                        .clamp(0.0, 1.0)
                })
                .collect(),
            law,
        });
        Pools {
            seed,
            actors,
            actor_pick: Zipf::new(profile.actors.pool as usize, profile.actors.exponent),
            repos,
            repo_picks,
            shares,
            growth,
        }
    }

    /// The actor of event `n` (counted from the profile's first hour), busy
    /// ones more often; returns its index too. With growth, a newcomer when
    /// the law says one arrives at `n`.
    pub fn actor(&self, n: u64, rng: &mut impl Rng) -> (usize, Cow<'_, Actor>) {
        let i = match &self.growth {
            None => self.actor_pick.sample(rng),
            Some(g) => match g.law.actors.newcomer(n) {
                Some(index) => index as usize,
                None => zipf_index(g.law.actors.arrived(n - 1), g.actor_exponent, rng),
            },
        };
        (i, self.actor_at(i))
    }

    fn actor_at(&self, i: usize) -> Cow<'_, Actor> {
        match self.actors.get(i) {
            Some(actor) => Cow::Borrowed(actor),
            None => {
                let mut rng =
                    ChaCha8Rng::seed_from_u64(mix(mix(self.seed, 0x0061_6374_6f72), i as u64));
                let len = rng.random_range(2..9);
                // The index makes the login unique, as GitHub's are.
                let login = format!("{}-{}", text::name(&mut rng, len), base36(i as u64));
                let main_type = crate::event::pick(&self.shares, &mut rng)
                    .copied()
                    .unwrap_or(0);
                Cow::Owned(Actor {
                    id: rng.random_range(1..MAX_USER_ID),
                    login,
                    main_type,
                    favourite_repos: Vec::new(),
                })
            }
        }
    }

    fn repo_at(&self, i: usize) -> Cow<'_, Repo> {
        match self.repos.get(i) {
            Some(repo) => Cow::Borrowed(repo),
            None => {
                let mut rng = ChaCha8Rng::seed_from_u64(mix(mix(self.seed, 0x7265_706f), i as u64));
                let (owner_len, name_len) = (rng.random_range(3..13), rng.random_range(2..10));
                let owner = text::name(&mut rng, owner_len);
                let name = format!("{}-{}", text::name(&mut rng, name_len), base36(i as u64));
                Cow::Owned(Repo {
                    id: rng.random_range(1..MAX_REPO_ID),
                    owner,
                    name,
                    org_rank: rng.random::<f64>(),
                    org_id: rng.random_range(1..MAX_USER_ID),
                })
            }
        }
    }

    /// With growth, the repository of others that first appears at event
    /// `n`, if one does, and the type of the event that brings it.
    pub fn new_shared_repo(&self, n: u64) -> Option<(Cow<'_, Repo>, usize)> {
        let g = self.growth.as_ref()?;
        let index = g.law.repos.newcomer(n)?;
        Some((self.repo_at(index as usize), self.brought_by(g, n)))
    }

    /// The type of the event `n` that brings a repository: drawn from `n`
    /// alone, so a later hour knows which type brought each repository.
    fn brought_by(&self, g: &Growing, n: u64) -> usize {
        crate::event::draw(
            &g.newcomer_types,
            &mut ChaCha8Rng::seed_from_u64(mix(mix(self.seed, 0x006e_6577_7479_7065), n)),
        )
    }

    /// A repository of others among the first `arrived`, for an event of
    /// type `kind`: with the type's chance, one its type brought (the Zipf
    /// draw repeated until one is, a few dozen times at most).
    fn known_repo(&self, g: &Growing, arrived: u64, kind: usize, rng: &mut impl Rng) -> usize {
        let exponent = g.repo_exponents[kind];
        let mut i = zipf_index(arrived, exponent, rng);
        if rng.random_bool(g.same_type[kind]) {
            for _ in 0..SAME_TYPE_TRIES {
                if self.brought_by(g, g.law.repos.arrival(i as u64)) == kind {
                    break;
                }
                i = zipf_index(arrived, exponent, rng);
            }
        }
        i
    }

    /// With growth, the share of events at `n` that bring a new repository of
    /// others (they take one whatever their type); 0 without.
    pub fn new_repo_rate(&self, n: u64) -> f64 {
        self.growth.as_ref().map_or(0.0, |g| g.law.repos.rate(n))
    }

    /// Whether a repository of others exists to draw at event `n` (with
    /// growth, none has arrived before the first).
    pub fn has_shared_repo(&self, n: u64) -> bool {
        self.growth
            .as_ref()
            .is_none_or(|g| g.law.repos.arrived(n - 1) > 0)
    }

    /// A repository of someone else at event `n`: the actor's favourite when
    /// `focused`, else any, busy ones more often (with growth, among those
    /// arrived: an actor's favourites among those arrived when it did).
    pub fn other_repo(
        &self,
        actor: usize,
        kind: usize,
        focused: bool,
        n: u64,
        rng: &mut impl Rng,
    ) -> Cow<'_, Repo> {
        let i = match &self.growth {
            None if focused => self.actors[actor].favourite_repos[kind],
            None => self.repo_picks[kind].sample(rng),
            Some(g) => match focused {
                true => {
                    let arrived = g.law.actors.arrival(actor as u64);
                    let mut favourite = ChaCha8Rng::seed_from_u64(mix(
                        mix(self.seed, 0x0066_6176),
                        mix(actor as u64, kind as u64),
                    ));
                    self.known_repo(
                        g,
                        g.law.repos.arrived(arrived).min(g.law.repos.arrived(n - 1)),
                        kind,
                        &mut favourite,
                    )
                }
                false => self.known_repo(g, g.law.repos.arrived(n - 1), kind, rng),
            },
        };
        self.repo_at(i)
    }

    /// One of the actor's own repositories (its main one when `focused`), the
    /// same names in every hour of a run. Never an organisation's.
    pub fn own_repo(&self, actor: usize, login: &str, focused: bool, rng: &mut impl Rng) -> Repo {
        // Else 1/2, 1/4, ...: most of an actor's activity is in one repository.
        let k = if focused {
            0
        } else {
            (0..OWN_REPOS - 1)
                .take_while(|_| rng.random_bool(0.5))
                .count() as u64
        };
        let mut named = ChaCha8Rng::seed_from_u64(mix(mix(self.seed, actor as u64), k));
        let len = named.random_range(3..16);
        let name = text::name(&mut named, len);
        Repo {
            id: named.random_range(1..MAX_REPO_ID),
            owner: login.to_string(),
            name,
            org_rank: 1.0,
            org_id: 0,
        }
    }
}

/// An index among the first `arrived` (at least one), index k with weight (k+1)^-exponent.
fn zipf_index(arrived: u64, exponent: f64, rng: &mut impl Rng) -> usize {
    match rand_distr::Zipf::new(arrived.max(1) as f64, exponent) {
        Ok(zipf) => (rng.sample(zipf) as usize).saturating_sub(1),
        Err(_) => 0,
    }
}

/// `i` in base 36, as short as it goes.
fn base36(mut i: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(i % 36) as usize]);
        i /= 36;
        if i == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).expect("ASCII digits")
}

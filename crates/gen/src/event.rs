//! Generated events: the GH Archive 2015 envelope (`id`, `type`, `actor`, `repo`,
//! `payload`, `public`, `created_at`, sometimes `org`) around a payload grown from
//! the type's shape, sized after the type's real size distribution.

use std::borrow::Cow;

use ghbench_core::Hour;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use crate::pool::{mix, Pools, Repo};
use crate::profile::{Profile, ProfileError, TypeProfile, SIZE_QUANTILES};
use crate::shape::{Node, StrKind, StrStat};
use crate::text::{self, Context};

/// Makes the events of any hour for one profile and seed.
pub struct Generator {
    profile: Profile,
    seed: u64,
    pools: Pools,
    origin: Hour,
    plans: Vec<TypePlan>,
    /// Cumulative type shares, for picking a type.
    type_cumulative: Vec<f64>,
    type_focus: f64,
    /// With growth: the types of events that bring new repositories.
    newcomer_types: Option<NewcomerTypes>,
}

/// The type mix of events that bring a new repository of others, and what
/// the other events' mix becomes so every type keeps its share.
struct NewcomerTypes {
    /// Per type (the profile's order), its share of first appearances.
    shares: Vec<f64>,
}

impl NewcomerTypes {
    fn new(profile: &Profile) -> Option<NewcomerTypes> {
        Some(NewcomerTypes { shares: profile.growth.as_ref()?.newcomer_shares(&profile.types) })
    }

    /// The type of an event that brings no new repository, at a newcomer
    /// `rate`: each type's share among such events is what leaves its overall
    /// share as measured, (share − rate·newcomer share) / (1 − rate), as far
    /// as none goes below 0. The actor's main type is taken (with chance
    /// `focus`) as far as that share allows; the rest is drawn to make it up.
    fn other_type(&self, rate: f64, focus: f64, main: usize, types: &[TypeProfile], rng: &mut impl Rng) -> usize {
        let wanted: Vec<f64> = types.iter().zip(&self.shares).map(|(t, new)| ((t.share - rate * new) / (1.0 - rate).max(1e-9)).max(0.0)).collect();
        let share = |t: usize| types[t].share.max(1e-12);
        if rng.random_bool(focus) && rng.random_bool((wanted[main] / share(main)).min(1.0)) {
            return main;
        }
        draw(&running_sum((0..types.len()).map(|t| wanted[t] - focus * wanted[t].min(share(t)))), rng)
    }
}

pub(crate) fn running_sum(items: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut total = 0.0;
    items
        .map(|x| {
            total += x.max(0.0);
            total
        })
        .collect()
}

/// An index drawn by cumulative weights.
pub(crate) fn draw(cumulative: &[f64], rng: &mut impl Rng) -> usize {
    let u = rng.random::<f64>() * cumulative.last().copied().unwrap_or(0.0);
    cumulative.partition_point(|c| *c <= u).min(cumulative.len().saturating_sub(1))
}

/// Payloads grown per event at most, looking for one that fits the drawn size:
/// small events then have few commits and short texts, as real ones do.
const SIZE_TRIES: usize = 4;

/// What the generator derives once per type.
struct TypePlan {
    /// Path (keys, `[]` for an array's first item) of the free-text field that
    /// takes up the difference between an event's shape and its drawn size.
    filler: Option<Vec<String>>,
    actions: Vec<(String, u64)>,
    comments: Vec<(u64, u64)>,
}

impl Generator {
    pub fn new(profile: Profile, seed: u64) -> Result<Generator, ProfileError> {
        profile.validate().map_err(|reason| ProfileError::Invalid { path: "<in memory>".into(), reason })?;
        let origin = profile.ids.origin_hour.parse().expect("validated");
        let pools = Pools::new(&profile, seed);
        let plans = profile.types.iter().map(TypePlan::new).collect();
        let type_cumulative = running_sum(profile.types.iter().map(|t| t.share));
        let type_focus = profile.type_focus();
        let newcomer_types = NewcomerTypes::new(&profile);
        Ok(Generator { profile, seed, pools, origin, plans, type_cumulative, type_focus, newcomer_types })
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The RNG of one hour and purpose: the same for a seed and hour on any thread.
    pub fn hour_rng(&self, hour: Hour, purpose: u64) -> ChaCha8Rng {
        let stem = hour.stem();
        // FNV-1a of the stem: stable across releases, unlike std's hasher.
        let h = stem.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        ChaCha8Rng::seed_from_u64(mix(mix(self.seed, h), purpose))
    }

    /// `count` events of `hour`, one JSON text each, in time order.
    pub fn events(&self, hour: Hour, count: u64) -> Vec<String> {
        let mut rng = self.hour_rng(hour, 0);
        let mut seconds: Vec<u32> = (0..count).map(|_| rng.random_range(0..3600)).collect();
        seconds.sort_unstable();
        let ids = &self.profile.ids;
        let hours_since = (hour.date() - self.origin.date()).num_days() * 24 + i64::from(hour.hour()) - i64::from(self.origin.hour());
        let mut id = (ids.origin_id as i64 + hours_since * ids.per_hour as i64).max(1) as u64;
        // Other (private) events take ids in between: gaps average per_hour / count.
        let max_gap = (2 * ids.per_hour / count.max(1)).max(1);
        let prefix = hour.to_string();
        // The events before this hour, as the pools' growth counts them:
        // every hour since the profile's first at this run's size.
        let before = u64::try_from(hours_since).unwrap_or(0).saturating_mul(count);
        seconds
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                id += rng.random_range(1..=max_gap);
                let created_at = format!("{prefix}:{:02}:{:02}Z", s / 60, s % 60);
                self.event(&mut rng, id, &created_at, before + i as u64 + 1)
            })
            .collect()
    }

    /// Event `n` (counted from 1 at the profile's first hour).
    fn event(&self, rng: &mut ChaCha8Rng, id: u64, created_at: &str, n: u64) -> String {
        let (actor_index, actor) = self.pools.actor(n, rng);
        let new_repo = self.pools.new_shared_repo(n);
        let t = match (&new_repo, &self.newcomer_types) {
            // The type that brings it, as the real hours' newcomers had.
            (Some((_, kind)), _) => *kind,
            (None, Some(newcomers)) => newcomers.other_type(self.pools.new_repo_rate(n), self.type_focus, actor.main_type, &self.profile.types, rng),
            _ if rng.random_bool(self.type_focus) => actor.main_type,
            _ => draw(&self.type_cumulative, rng),
        };
        let (profile, plan) = (&self.profile.types[t], &self.plans[t]);
        let focused = rng.random_bool(profile.repo_focus());
        // With growth, an event that brings a new repository of others takes
        // it; the others take the actor's own more often, so each type's
        // share of own repositories stays as measured where it can.
        let own_share = (profile.own_repo_share / (1.0 - self.pools.new_repo_rate(n)).max(1e-9)).clamp(0.0, 1.0);
        let repo: Cow<'_, Repo> = match new_repo {
            Some((new, _)) => new,
            None if rng.random_bool(own_share) || !self.pools.has_shared_repo(n) => Cow::Owned(self.pools.own_repo(actor_index, &actor.login, focused, rng)),
            None => self.pools.other_repo(actor_index, t, focused, n, rng),
        };
        // Own repositories never carry an org, so the others make up the type's share.
        let org_chance = profile.org_share / (1.0 - profile.own_repo_share).max(1e-9);
        let org = (repo.org_rank < org_chance).then_some(repo.org_id);
        let ctx = Context { login: &actor.login, owner: &repo.owner, repo: &repo.name, created_at };
        let target = draw_size(&profile.size_quantiles, rng);
        let mut best: Option<(Value, String)> = None;
        for _ in 0..SIZE_TRIES {
            let mut payload = grow(&profile.payload, plan.filler.as_deref(), &ctx, rng);
            plan.set_known_fields(&mut payload, rng);
            let event = envelope(id, &profile.name, actor.id, &ctx, repo.id, org, payload);
            let line = serde_json::to_string(&event).expect("values serialise");
            let fits = line.len() <= target;
            if best.as_ref().is_none_or(|(_, b)| line.len() < b.len()) {
                best = Some((event, line));
            }
            if fits {
                break;
            }
        }
        let (mut event, mut line) = best.expect("at least one try");
        if target > line.len() {
            let filler = plan.filler.as_deref().and_then(|path| slot(event.get_mut("payload").expect("set"), path));
            if let Some(Value::String(s)) = filler {
                text::push_text(s, rng, target - line.len());
                line = serde_json::to_string(&event).expect("values serialise");
            }
        }
        line
    }
}

/// The envelope every 2015 event has, in GH Archive's key order.
fn envelope(id: u64, kind: &str, actor_id: u64, ctx: &Context, repo_id: u64, org: Option<u64>, payload: Value) -> Value {
    let full_name = format!("{}/{}", ctx.owner, ctx.repo);
    let mut e = Map::new();
    e.insert("id".into(), Value::from(id.to_string()));
    e.insert("type".into(), Value::from(kind));
    e.insert("actor".into(), account(actor_id, ctx.login, "users"));
    let mut r = Map::new();
    r.insert("id".into(), Value::from(repo_id));
    let url = format!("https://api.github.com/repos/{full_name}");
    r.insert("name".into(), Value::from(full_name));
    r.insert("url".into(), Value::from(url));
    e.insert("repo".into(), Value::Object(r));
    e.insert("payload".into(), payload);
    e.insert("public".into(), Value::Bool(true));
    e.insert("created_at".into(), Value::from(ctx.created_at));
    if let Some(org_id) = org {
        e.insert("org".into(), account(org_id, ctx.owner, "orgs"));
    }
    Value::Object(e)
}

/// `actor` and `org` objects: `{id, login, gravatar_id, url, avatar_url}`.
fn account(id: u64, login: &str, kind: &str) -> Value {
    let mut a = Map::new();
    a.insert("id".into(), Value::from(id));
    a.insert("login".into(), Value::from(login));
    a.insert("gravatar_id".into(), Value::from(""));
    a.insert("url".into(), Value::from(format!("https://api.github.com/{kind}/{login}")));
    a.insert("avatar_url".into(), Value::from(format!("https://avatars.githubusercontent.com/u/{id}?")));
    Value::Object(a)
}

/// A size drawn from the quantiles, interpolating between them.
fn draw_size(quantiles: &[u64], rng: &mut impl Rng) -> usize {
    let pos = rng.random::<f64>() * (SIZE_QUANTILES - 1) as f64;
    let i = (pos as usize).min(SIZE_QUANTILES - 2);
    let (lo, hi) = (quantiles[i] as f64, quantiles[i + 1] as f64);
    (lo + (hi - lo) * (pos - i as f64)).round() as usize
}

pub(crate) fn pick<'a, T>(items: &'a [(T, u64)], rng: &mut impl Rng) -> Option<&'a T> {
    let total: u64 = items.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let mut u = rng.random_range(0..total);
    items.iter().find(|(_, n)| {
        let hit = u < *n;
        u = u.saturating_sub(*n);
        hit
    }).map(|(v, _)| v)
}

impl TypePlan {
    fn new(t: &TypeProfile) -> TypePlan {
        let root = t.payload.n.max(1) as f64;
        let mut best: Option<(f64, Vec<String>)> = None;
        t.payload.visit_strings(&mut Vec::new(), &mut |path, s| {
            let score = s.n as f64 / root * s.mean_len;
            if s.kind == Some(StrKind::Text) && s.vocab.is_none() && best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, path.to_vec()));
            }
        });
        TypePlan {
            filler: best.map(|(_, path)| path),
            actions: t.actions.clone(),
            comments: t.issue_comments.iter().map(|(c, n)| (*c, *n)).collect(),
        }
    }

    /// Fields the benchmark's queries read get their real distributions, and
    /// PushEvent's counts agree with its commits.
    fn set_known_fields(&self, payload: &mut Value, rng: &mut impl Rng) {
        let Some(p) = payload.as_object_mut() else { return };
        if let Some(action) = pick(&self.actions, rng) {
            p.insert("action".into(), Value::from(action.as_str()));
        }
        if let Some(issue) = p.get_mut("issue").and_then(Value::as_object_mut) {
            if let Some(c) = pick(&self.comments, rng) {
                issue.insert("comments".into(), Value::from(*c));
            }
        }
        if let Some(commits) = p.get("commits").and_then(Value::as_array).map(Vec::len) {
            for key in ["size", "distinct_size"] {
                if p.contains_key(key) {
                    p.insert(key.into(), Value::from(commits));
                }
            }
        }
    }
}

/// The value at `path` (`[]` is an array's first item).
fn slot<'v>(mut value: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    for key in path {
        value = if key == "[]" { value.as_array_mut()?.first_mut()? } else { value.as_object_mut()?.get_mut(key)? };
    }
    Some(value)
}

/// A value with the shape `node` describes. `filler` is the remaining path to the
/// filler field: it is left empty here and padded once the event's size is known.
fn grow(node: &Node, filler: Option<&[String]>, ctx: &Context, rng: &mut impl Rng) -> Value {
    let kinds = [
        node.null,
        node.bool.as_ref().map_or(0, |s| s.n),
        node.int.as_ref().map_or(0, |s| s.n),
        node.float.as_ref().map_or(0, |s| s.n),
        node.string.as_ref().map_or(0, |s| s.n),
        node.array.as_ref().map_or(0, |s| s.n),
        node.object.as_ref().map_or(0, |s| s.n),
    ];
    let total: u64 = kinds.iter().sum();
    if total == 0 {
        return Value::Null;
    }
    let mut u = rng.random_range(0..total);
    let kind = kinds.iter().position(|n| {
        let hit = u < *n;
        u = u.saturating_sub(*n);
        hit
    });
    let child = |key: &str| filler.and_then(|f| f.split_first()).filter(|(head, _)| *head == key).map(|(_, rest)| rest);
    match kind {
        Some(1) => {
            let b = node.bool.as_ref().expect("counted");
            Value::Bool(rng.random_bool(b.true_n as f64 / b.n as f64))
        }
        Some(2) => {
            let s = node.int.as_ref().expect("counted");
            Value::from(log_uniform(s.min, s.max, rng))
        }
        Some(3) => {
            let s = node.float.as_ref().expect("counted");
            Value::from(if s.max > s.min { rng.random_range(s.min..s.max) } else { s.min })
        }
        Some(4) => {
            let s = node.string.as_ref().expect("counted");
            Value::from(if filler == Some(&[]) { String::new() } else { string(s, ctx, rng) })
        }
        Some(5) => {
            let a = node.array.as_ref().expect("counted");
            let lens: Vec<(u64, u64)> = a.lens.iter().map(|(l, n)| (*l, *n)).collect();
            let len = pick(&lens, rng).copied().unwrap_or(0);
            match &a.item {
                Some(item) => {
                    (0..len).map(|i| grow(item, if i == 0 { child("[]") } else { None }, ctx, rng)).collect()
                }
                None => Value::Array(Vec::new()),
            }
        }
        Some(6) => {
            let o = node.object.as_ref().expect("counted");
            let mut map = Map::new();
            for (key, field) in &o.fields {
                if rng.random_bool((field.n as f64 / o.n.max(1) as f64).min(1.0)) {
                    map.insert(key.clone(), grow(field, child(key), ctx, rng));
                }
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

/// Counts and ids span orders of magnitude: a log-uniform draw keeps both small
/// numbers (issue numbers, sizes) and large ones (ids) plausible.
fn log_uniform(min: i64, max: i64, rng: &mut impl Rng) -> i64 {
    if max <= min {
        return min;
    }
    if min < 0 {
        return rng.random_range(min..=max);
    }
    let (lo, hi) = (((min + 1) as f64).ln(), ((max + 1) as f64).ln());
    ((rng.random_range(lo..=hi).exp() - 1.0).round() as i64).clamp(min, max)
}

fn string(s: &StrStat, ctx: &Context, rng: &mut impl Rng) -> String {
    if let Some(vocab) = &s.vocab {
        return pick(vocab, rng).cloned().unwrap_or_default();
    }
    let len = (s.mean_len * rng.random_range(0.5..1.5)).round() as usize;
    match s.kind {
        Some(StrKind::Timestamp) => ctx.created_at.to_string(),
        Some(StrKind::Sha) => text::hex(rng, 40),
        Some(StrKind::Email) => format!("{}@{}.com", text::name(rng, len.saturating_sub(8).max(3)), text::word(rng, 2)),
        Some(StrKind::Path) => match &s.template {
            Some(t) => text::fill_template(t, ctx, rng),
            None => text::name(rng, len),
        },
        // Short texts are names (logins, branches); long ones are prose.
        _ if s.mean_len < 1.0 => String::new(),
        _ if s.mean_len < 24.0 => text::name(rng, len),
        _ => text::text(rng, len),
    }
}

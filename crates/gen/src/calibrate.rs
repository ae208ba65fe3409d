//! Measures real hours into a `Profile`: the event-type mix, payload shapes per
//! type, action and comment-count mixes, event sizes, id growth, and how skewed
//! actors and repositories are. Reads each file once, streaming.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use serde_json::Value;

use crate::growth::Arrivals;
use crate::profile::{Focus, IdClock, Profile, TypeProfile, FORMAT, SIZE_QUANTILES};
use crate::shape::Node;
use crate::skew::{fit_exponent, fit_zipf, Skew};

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("no files to calibrate on")]
    NoFiles,
    #[error("cannot read {path}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("no usable GH Archive events in {0} (every line lacked type, actor.login, repo.name or a payload object)")]
    NoEvents(String),
}

/// A calibration's profile, and what it had to skip.
#[derive(Debug)]
pub struct Calibration {
    pub profile: Profile,
    pub events: u64,
    /// Lines that were not events (bad JSON, missing keys); they do not shape the profile.
    pub skipped: u64,
}

#[derive(Default)]
struct TypeAcc {
    count: u64,
    own: u64,
    orgs: u64,
    /// Events that follow an earlier one of the same actor, and of those the ones on the same repository.
    repeats: u64,
    same_repo: u64,
    /// Events per repository of others (not the actor's own), over all hours.
    other_repos: HashMap<String, u64>,
    sizes: Vec<u64>,
    actions: BTreeMap<String, u64>,
    comments: BTreeMap<u64, u64>,
    payload: Node,
}

/// What one file (one hour) shows.
#[derive(Default)]
struct HourAcc {
    events: u64,
    actors: HashMap<String, u64>,
    /// Repositories of events whose repository is not the actor's own.
    other_repos: HashMap<String, u64>,
    min_id: Option<u64>,
    max_id: u64,
    /// `2015-01-01T00`, from the first event.
    hour: Option<String>,
    /// Per actor, the type and repository of its last event.
    last: HashMap<String, (String, String)>,
    /// Events that follow an earlier one of the same actor; and of those, the
    /// ones with the same type.
    repeats: u64,
    same_type: u64,
}

/// Reads `files` (gzip or plain JSON lines) into a profile.
pub fn calibrate(files: &[PathBuf]) -> Result<Calibration, CalibrateError> {
    if files.is_empty() {
        return Err(CalibrateError::NoFiles);
    }
    let mut types: BTreeMap<String, TypeAcc> = BTreeMap::new();
    let mut hours = Vec::new();
    let (mut orgs, mut skipped, mut sizes) = (0u64, 0u64, Vec::new());
    // First appearances over all files in the order given: how keys keep arriving.
    let (mut actor_arrivals, mut repo_arrivals) = (Arrivals::default(), Arrivals::default());
    let mut repo_types = crate::growth::RepoTypes::default();
    for path in files {
        let mut hour = HourAcc::default();
        let read_err = |source| CalibrateError::Read { path: path.clone(), source };
        for line in open_lines(path).map_err(read_err)? {
            // A line that is not UTF-8 is a damaged event like any other: skipped, counted.
            let Ok(line) = String::from_utf8(line.map_err(read_err)?) else {
                skipped += 1;
                continue;
            };
            let value = serde_json::from_str::<Value>(&line).ok();
            let Some(event) = value.as_ref().and_then(Event::from_value) else {
                skipped += u64::from(!line.trim().is_empty());
                continue;
            };
            let size = line.len() as u64;
            sizes.push(size);
            orgs += u64::from(event.org);
            actor_arrivals.observe(Some(event.login));
            repo_arrivals.observe((!event.own_repo).then_some(event.repo));
            if !event.own_repo {
                repo_types.observe(event.kind, event.repo);
            }
            let same_repo = hour.observe(&event);
            let t = types.entry(event.kind.to_string()).or_default();
            t.repeats += u64::from(same_repo.is_some());
            t.same_repo += u64::from(same_repo == Some(true));
            if !event.own_repo {
                *t.other_repos.entry(event.repo.to_string()).or_default() += 1;
            }
            t.count += 1;
            t.own += u64::from(event.own_repo);
            t.orgs += u64::from(event.org);
            t.sizes.push(size);
            if let Some(action) = event.payload.get("action").and_then(Value::as_str) {
                *t.actions.entry(action.to_string()).or_default() += 1;
            }
            if let Some(c) = event.payload.pointer("/issue/comments").and_then(Value::as_u64) {
                *t.comments.entry(c).or_default() += 1;
            }
            t.payload.observe(event.payload);
        }
        hours.push(hour);
    }
    let events = sizes.len() as u64;
    if events == 0 {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        return Err(CalibrateError::NoEvents(names.join(", ")));
    }
    let hour_count = hours.len() as f64;
    let per_hour = |f: &dyn Fn(&HourAcc) -> u64| (hours.iter().map(f).sum::<u64>() as f64 / hour_count).round() as u64;
    let actors = mean_skew(&hours, |h| &h.actors);
    let repos = mean_skew(&hours, |h| &h.other_repos);
    // Id growth comes from the hour with the smallest ids; data without ids or
    // times still calibrates, from 2015-01-01T00.
    let first = hours.iter().filter(|h| h.min_id.is_some()).min_by_key(|h| h.min_id);
    let origin_hour = first
        .and_then(|h| h.hour.clone())
        .or_else(|| hours.iter().find_map(|h| h.hour.clone()))
        .filter(|h| h.parse::<ghbench_core::Hour>().is_ok())
        .unwrap_or_else(|| "2015-01-01T00".into());
    let ids = IdClock {
        origin_hour,
        origin_id: first.and_then(|h| h.min_id).unwrap_or(1),
        per_hour: per_hour(&|h| h.min_id.map_or(0, |min| h.max_id - min + 1)).max(1),
    };
    let mut types: Vec<TypeProfile> =
        types.into_iter().map(|(name, acc)| acc.finish(name, events, hours.len() as u64, repos.pool)).collect();
    types.sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.name.cmp(&b.name)));
    sizes.sort_unstable();
    let profile = Profile {
        schema: crate::profile::PROFILE_SCHEMA.into(),
        format: FORMAT,
        source: files.iter().map(|f| f.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())).collect(),
        events_per_hour: per_hour(&|h| h.events),
        org_share: orgs as f64 / events as f64,
        mean_size: sizes.iter().sum::<u64>() as f64 / events as f64,
        median_size: median(&sizes),
        ids,
        actors,
        repos,
        focus: Focus {
            repeat_type: ratio(hours.iter().map(|h| h.same_type).sum(), hours.iter().map(|h| h.repeats).sum()),
        },
        types,
        growth: crate::growth::fit(&actor_arrivals, &repo_arrivals, repo_types),
    };
    Ok(Calibration { profile, events, skipped })
}

fn open_lines(path: &Path) -> std::io::Result<std::io::Split<BufReader<Box<dyn Read>>>> {
    let file = std::fs::File::open(path)?;
    let reader: Box<dyn Read> =
        if path.extension().is_some_and(|e| e == "gz") { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) };
    Ok(BufReader::with_capacity(256 << 10, reader).split(b'\n'))
}

/// The parts of an event calibration looks at.
struct Event<'a> {
    kind: &'a str,
    id: Option<u64>,
    login: &'a str,
    repo: &'a str,
    own_repo: bool,
    org: bool,
    created_at: &'a str,
    payload: &'a Value,
}

impl<'a> Event<'a> {
    /// `None` for lines that are not GH Archive events.
    fn from_value(value: &'a Value) -> Option<Event<'a>> {
        let login = value.pointer("/actor/login")?.as_str()?;
        let repo = value.pointer("/repo/name")?.as_str()?;
        Some(Event {
            kind: value.get("type")?.as_str()?,
            id: value.get("id").and_then(Value::as_str).and_then(|s| s.parse().ok()),
            login,
            repo,
            own_repo: repo.split('/').next() == Some(login),
            org: value.get("org").is_some_and(Value::is_object),
            created_at: value.get("created_at").and_then(Value::as_str).unwrap_or(""),
            payload: value.get("payload").filter(|p| p.is_object())?,
        })
    }
}

impl HourAcc {
    /// Returns, when the actor had an earlier event, whether it was on the same repository.
    fn observe(&mut self, e: &Event) -> Option<bool> {
        self.events += 1;
        *self.actors.entry(e.login.to_string()).or_default() += 1;
        if !e.own_repo {
            *self.other_repos.entry(e.repo.to_string()).or_default() += 1;
        }
        if let Some(id) = e.id {
            self.min_id = Some(self.min_id.map_or(id, |m| m.min(id)));
            self.max_id = self.max_id.max(id);
        }
        let now = (e.kind.to_string(), e.repo.to_string());
        if self.hour.is_none() {
            self.hour = e.created_at.get(..13).map(str::to_string);
        }
        let (kind, repo) = self.last.insert(e.login.to_string(), now)?;
        self.repeats += 1;
        self.same_type += u64::from(kind == e.kind);
        Some(repo == e.repo)
    }
}

impl TypeAcc {
    fn finish(mut self, name: String, all_events: u64, hours: u64, pool: u64) -> TypeProfile {
        let other_events: u64 = self.other_repos.values().sum();
        let repo_exponent = fit_exponent(other_events / hours, self.other_repos.len() as u64 / hours, pool);
        self.payload.finish();
        self.sizes.sort_unstable();
        let last = self.sizes.len() - 1;
        let size_quantiles =
            (0..SIZE_QUANTILES).map(|i| self.sizes[(i * last + (SIZE_QUANTILES - 1) / 2) / (SIZE_QUANTILES - 1)]).collect();
        let mut actions: Vec<(String, u64)> = self.actions.into_iter().collect();
        actions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        TypeProfile {
            name,
            share: self.count as f64 / all_events as f64,
            own_repo_share: self.own as f64 / self.count as f64,
            org_share: self.orgs as f64 / self.count as f64,
            repeat_repo: ratio(self.same_repo, self.repeats),
            repo_exponent,
            size_quantiles,
            actions,
            issue_comments: self.comments,
            payload: self.payload,
        }
    }
}

/// The skew per hour, averaged over the hours, then fitted.
fn mean_skew(hours: &[HourAcc], counts: impl Fn(&HourAcc) -> &HashMap<String, u64>) -> Skew {
    let n = hours.len().max(1) as f64;
    let mean = |f: &dyn Fn(&HashMap<String, u64>) -> u64| (hours.iter().map(|h| f(counts(h))).sum::<u64>() as f64 / n).round() as u64;
    let events = mean(&|c| c.values().sum());
    let distinct = mean(&|c| c.len() as u64);
    let top = mean(&|c| c.values().copied().max().unwrap_or(0));
    let (exponent, pool) = fit_zipf(events, distinct, top);
    Skew { events, distinct, top, exponent, pool }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn median(sorted: &[u64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_input_calibrates_into_a_usable_profile_or_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.json");
        let lines = [
            r#"{"type":"WatchEvent","actor":{"login":"ann"},"repo":{"name":"bob/x"},"payload":{"action":"started"}}"#,
            "not json",
            r#"{"type":"PushEvent","actor":{"login":"bob"},"repo":{"name":"bob/x"},"payload":{"size":1}}"#,
            r#"{"type":"PushEvent","actor":{"login":"bob"},"repo":{"name":"bob/x"},"payload":null}"#,
        ];
        std::fs::write(&file, lines.join("\n")).unwrap();
        let c = calibrate(std::slice::from_ref(&file)).unwrap();
        assert_eq!((c.events, c.skipped), (2, 2));
        let profile = Profile::from_json(&c.profile.to_json(), "test").unwrap();
        let gen = crate::Generator::new(profile, 1).unwrap();
        assert_eq!(gen.events("2015-06-01T12".parse().unwrap(), 10).len(), 10);

        std::fs::write(&file, "junk\n[1]\n").unwrap();
        assert!(calibrate(&[file]).unwrap_err().to_string().contains("no usable GH Archive events"));
        assert!(matches!(calibrate(&[]), Err(CalibrateError::NoFiles)));
    }
}

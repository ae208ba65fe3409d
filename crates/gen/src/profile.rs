//! What the generator knows about real hours: aggregates and shapes measured by
//! `calibrate`, never the text of a real event. Stored as JSON; the default one,
//! made from the shared real hour 2015-01-01-0, ships inside the binary.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::shape::Node;
use crate::skew::Skew;

/// Bumped when the meaning of a field changes; older profiles are refused.
pub const FORMAT: u32 = 1;
/// Points of `size_quantiles`: every 5%, from the smallest to the largest event.
pub const SIZE_QUANTILES: usize = 21;

const DEFAULT_JSON: &str = include_str!("../profiles/default.json");

/// The schema a profile names, as every JSON ghbench writes does; its
/// version is [`FORMAT`].
pub const PROFILE_SCHEMA: &str = "ghbench-gen-profile/1";

fn profile_schema() -> String {
    PROFILE_SCHEMA.into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// `ghbench-gen-profile/1` (absent in profiles written before it).
    #[serde(default = "profile_schema")]
    pub schema: String,
    pub format: u32,
    /// File names the profile was measured on (names only, never their content).
    pub source: Vec<String>,
    /// Mean events per hour of the source: the default `--events`.
    pub events_per_hour: u64,
    /// Share of events with an `org`.
    pub org_share: f64,
    /// Mean and median event size in bytes (one JSON line without its newline).
    pub mean_size: f64,
    pub median_size: f64,
    pub ids: IdClock,
    pub actors: Skew,
    pub repos: Skew,
    pub focus: Focus,
    /// Event types, most frequent first.
    pub types: Vec<TypeProfile>,
    /// How new actors and repositories keep arriving as hours go by (see
    /// [`crate::growth`]); None: fixed pools, every hour drawing on the same
    /// actors and repositories (as every profile before it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<crate::growth::Growth>,
}

/// Event ids grow through the year: an hour's ids start at
/// `origin_id + hours since origin_hour × per_hour`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdClock {
    /// `2015-01-01T00`
    pub origin_hour: String,
    pub origin_id: u64,
    pub per_hour: u64,
}

/// How much an actor sticks to one kind of work within an hour: bots push to one
/// repository, a triager opens issues in one project. Measured over consecutive
/// events of the same actor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Focus {
    /// Chance that an actor's next event has the type of its previous one.
    pub repeat_type: f64,
}

impl Profile {
    /// Chance that an event takes its actor's main type instead of a draw from
    /// the mix. Two events share a type when both take the main type, or by chance
    /// (probability `b`, the sum of squared shares): repeat = f² + b(1 − f²).
    pub fn type_focus(&self) -> f64 {
        let b: f64 = self.types.iter().map(|t| t.share * t.share).sum();
        ((self.focus.repeat_type - b) / (1.0 - b).max(1e-9)).clamp(0.0, 1.0).sqrt()
    }

}

impl TypeProfile {
    /// Chance that an event of this type is on its actor's favourite repository;
    /// chance repeats are rare enough to ignore: repeat ≈ g².
    pub fn repo_focus(&self) -> f64 {
        self.repeat_repo.clamp(0.0, 1.0).sqrt()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TypeProfile {
    /// `PushEvent`, `IssuesEvent`, ...
    pub name: String,
    /// Share of all events.
    pub share: f64,
    /// Share of these events whose repository belongs to the actor (`actor/...`).
    pub own_repo_share: f64,
    /// Share of these events with an `org`.
    pub org_share: f64,
    /// Chance that an event of this type is on the repository of its actor's
    /// previous event (when there was one): watching is spread, wiki edits are not.
    pub repeat_repo: f64,
    /// Zipf exponent of this type's events over the shared pool of others'
    /// repositories: comments gather on few projects, stars spread.
    pub repo_exponent: f64,
    /// Event size in bytes at every 5% (see `SIZE_QUANTILES`).
    pub size_quantiles: Vec<u64>,
    /// `payload.action` values and their counts (e.g. IssuesEvent: opened, closed, reopened).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<(String, u64)>,
    /// `payload.issue.comments` value → number of events with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub issue_comments: BTreeMap<u64, u64>,
    /// Shape of `payload`.
    pub payload: Node,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}")]
    Read { path: String, source: std::io::Error },
    #[error("profile {path} is not a ghbench profile")]
    Parse { path: String, source: serde_json::Error },
    #[error("profile {path} has format {found}, this ghbench reads format {FORMAT}: calibrate it again")]
    Format { path: String, found: u32 },
    #[error("profile {path} is unusable: {reason}")]
    Invalid { path: String, reason: String },
}

impl Profile {
    /// The profile made from the shared real hour 2015-01-01-0.
    pub fn default_profile() -> Profile {
        Profile::from_json(DEFAULT_JSON, "<built-in default>").expect("the built-in profile is valid (checked by tests)")
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ProfileError::Read { path: path.display().to_string(), source })?;
        Profile::from_json(&text, &path.display().to_string())
    }

    pub fn from_json(text: &str, path: &str) -> Result<Profile, ProfileError> {
        // Check the format first, so an old profile gets the useful message.
        #[derive(Deserialize)]
        struct Header {
            format: u32,
        }
        let header: Header =
            serde_json::from_str(text).map_err(|source| ProfileError::Parse { path: path.into(), source })?;
        if header.format != FORMAT {
            return Err(ProfileError::Format { path: path.into(), found: header.format });
        }
        let profile: Profile =
            serde_json::from_str(text).map_err(|source| ProfileError::Parse { path: path.into(), source })?;
        profile.validate().map_err(|reason| ProfileError::Invalid { path: path.into(), reason })?;
        Ok(profile)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("profiles serialise")
    }

    /// What the generator relies on, so a hand-edited profile fails here and not mid-run.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.types.is_empty() || self.types.iter().all(|t| t.share <= 0.0) {
            return Err("no event types with a positive share".into());
        }
        for t in &self.types {
            if !(t.share >= 0.0 && t.share.is_finite()) {
                return Err(format!("type {} has share {}", t.name, t.share));
            }
            if t.size_quantiles.len() != SIZE_QUANTILES {
                return Err(format!("type {} has {} size quantiles, expected {SIZE_QUANTILES}", t.name, t.size_quantiles.len()));
            }
            if t.payload.object.is_none() {
                return Err(format!("type {} has no payload object shape", t.name));
            }
        }
        if self.actors.pool == 0 || self.repos.pool == 0 {
            return Err("actor and repository pools must not be empty".into());
        }
        if !(0.0..=1.0).contains(&self.org_share) {
            return Err(format!("org_share {} is not a share", self.org_share));
        }
        self.ids.origin_hour.parse::<ghbench_core::Hour>().map_err(|e| e.to_string())?;
        self.growth.as_ref().map_or(Ok(()), crate::growth::Growth::validate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_profile_loads() {
        let p = Profile::default_profile();
        assert!(p.types.len() >= 10);
        assert!(p.events_per_hour > 1000);
    }

    #[test]
    fn bad_profiles_get_clear_errors() {
        let err = Profile::from_json("{not json", "x.json").unwrap_err().to_string();
        assert!(err.contains("x.json") && err.contains("not a ghbench profile"), "{err}");
        let err = Profile::from_json(r#"{"format": 99}"#, "x.json").unwrap_err().to_string();
        assert!(err.contains("format 99"), "{err}");
        let mut p = Profile::default_profile();
        p.types.clear();
        let err = Profile::from_json(&p.to_json(), "x.json").unwrap_err().to_string();
        assert!(err.contains("no event types"), "{err}");
    }
}

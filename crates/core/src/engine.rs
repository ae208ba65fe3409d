//! What an engine is, as data: its name, what it can do, what documents it
//! can store, and the options it takes. The engines themselves live in their
//! own folders (`crates/engines/*`, the normalized engine's too; its mapping
//! is the `crates/normalize` library) and are listed once, in the registry;
//! nothing here names a particular one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// An engine's name, e.g. `postgres`: the key in `--engines`, in results and in
/// ledgers. Open-ended (any registered engine), read and written by serde as
/// a plain string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Engine(Cow<'static, str>);

impl Engine {
    /// An engine's own name, for its registration.
    pub const fn named(name: &'static str) -> Engine {
        Engine(Cow::Borrowed(name))
    }

    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, not `write_str`: tables align engine names with `{:<9}`.
        f.pad(&self.0)
    }
}

impl From<&str> for Engine {
    fn from(name: &str) -> Engine {
        Engine(Cow::Owned(name.to_string()))
    }
}

impl PartialEq<str> for Engine {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// What an engine can do; reports and commands ask these instead of naming engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    /// Reached over the network; has a URL and a server build to describe.
    pub server: bool,
    /// Takes the catalog's index definitions (`queries/<engine>/indexes.*`).
    pub indexes: bool,
    /// ghbench can restart it for a true cold run (when it manages it).
    pub restartable: bool,
    /// Keeps its data across a crash of ghbench or of itself.
    pub durable: bool,
    /// Its server is one `just setup` starts only where it can (Citus, where
    /// its extension is installed or built): a run whose `--engines` was left
    /// to its default goes on without it, saying so in one line, when it
    /// does not answer. Records written before it say nothing: false.
    #[serde(default)]
    pub optional: bool,
}

/// What an engine's clean JSON text may not be. ghbench applies the strictest
/// limits of every registered engine to every line, so all engines always hold
/// the same documents (see `ghbench_ingest::clean`); what an engine cannot
/// store beyond these, its encoder refuses (e.g. BSON's nesting limit).
#[derive(Debug, Clone, Copy, Default)]
pub struct DocumentLimits {
    /// Largest document, in bytes of its JSON text.
    pub max_bytes: Option<usize>,
    /// Strings may not hold `\u0000` (such escapes are removed, the line kept).
    pub refuses_nul: bool,
    /// Most keys one object may have (e.g. a layout with a column per key).
    pub max_object_keys: Option<usize>,
    /// Deepest nesting of objects and arrays, the document itself being
    /// level 1 (MariaDB before 12.2 refuses JSON nested deeper than 32).
    pub max_depth: Option<usize>,
}

/// One command-line option an engine takes, e.g. its server's URL. Added to
/// every command that reaches engines; read back into an [`EngineConfig`].
#[derive(Debug, Clone, Copy)]
pub struct EngineOption {
    /// The flag without its dashes, e.g. `pg-url`; also the key in [`EngineConfig`].
    pub long: &'static str,
    /// An environment variable that supplies it, e.g. `DATABASE_URL`.
    pub env: Option<&'static str>,
    pub default: Option<&'static str>,
    pub value_name: &'static str,
    pub help: &'static str,
    /// May hold a password: its value is never shown (not even from the environment in `--help`).
    pub secret: bool,
}

/// An engine's registration: everything known about it before connecting.
#[derive(Debug, Clone)]
pub struct EngineSpec {
    pub engine: Engine,
    /// Other names `--engines` accepts, e.g. `pg`, `postgresql`.
    pub aliases: &'static [&'static str],
    /// One line for `--help` and `doctor`, e.g. `PostgreSQL, one jsonb column`.
    pub about: &'static str,
    pub capabilities: Capabilities,
    pub limits: DocumentLimits,
    pub options: &'static [EngineOption],
    /// In the default `--engines` list.
    pub default: bool,
    /// Where to point users whose server cannot be reached, e.g. `--pg-url or DATABASE_URL`.
    pub connect_hint: &'static str,
}

impl EngineSpec {
    /// This engine in another setup (`postgres-tuned`), as an engine of its
    /// own: its name and one-line description, no aliases (they stay this
    /// engine's), not in the default `--engines` (which replays the paper).
    /// Made once, when the registry is built, and kept for the run.
    pub fn for_setup(&self, engine: &str, about: &str) -> EngineSpec {
        let about: &'static str = Box::leak(about.to_string().into_boxed_str());
        EngineSpec { engine: Engine::from(engine), aliases: &[], about, default: false, ..self.clone() }
    }

    /// True for the engine's name or one of its aliases, in any case.
    pub fn answers_to(&self, name: &str) -> bool {
        let name = name.trim();
        self.engine.name().eq_ignore_ascii_case(name) || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// The values of an engine's options for one run (flag, environment or default).
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    values: BTreeMap<&'static str, String>,
}

impl EngineConfig {
    pub fn with(mut self, long: &'static str, value: impl Into<String>) -> Self {
        self.values.insert(long, value.into());
        self
    }

    /// The option's value, or its declared default.
    pub fn get<'a>(&'a self, option: &EngineOption) -> Option<&'a str> {
        self.values.get(option.long).map(String::as_str).or(option.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_written_before_the_optional_flag_reads_as_not_optional() {
        let old: Capabilities = serde_json::from_str(r#"{"server":true,"indexes":true,"restartable":true,"durable":true}"#).unwrap();
        assert!(!old.optional && old.server);
        let new = Capabilities { optional: true, ..old };
        assert_eq!(serde_json::from_str::<Capabilities>(&serde_json::to_string(&new).unwrap()).unwrap(), new);
    }


    #[test]
    fn engines_read_back_from_json_as_they_were_written() {
        let engine = Engine::named("postgres");
        let json = serde_json::to_string(&engine).unwrap();
        assert_eq!(json, "\"postgres\"");
        let back: Engine = serde_json::from_str(&json).unwrap();
        assert_eq!(back, engine);
        assert_eq!(format!("[{:<9}]", engine), "[postgres ]");
    }

    #[test]
    fn options_fall_back_to_their_default() {
        const URL: EngineOption =
            EngineOption { long: "x-url", env: None, default: Some("x://default"), value_name: "URL", help: "", secret: true };
        assert_eq!(EngineConfig::default().get(&URL), Some("x://default"));
        assert_eq!(EngineConfig::default().with("x-url", "x://given").get(&URL), Some("x://given"));
    }
}

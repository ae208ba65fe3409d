//! Options every command shares, flattened into each subcommand, and the
//! engines' own options, added from the registry.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args};
use ghbench_core::{Engine, EngineConfig, EngineOption, Hour, HourRange, TableName};
use ghbench_engine::{Backend, EnginePlugin, Loader, Registry};

#[derive(Args, Debug, Clone)]
pub struct ConnOptions {
    /// Engines to use, comma-separated (the list and the default come from the registry).
    #[arg(long, value_delimiter = ',', value_name = "ENGINE,...")]
    pub engines: Vec<String>,

    /// Table (or collection) name [default: github<year>, e.g. github2015].
    #[arg(long)]
    pub table: Option<TableName>,
}

impl ConnOptions {
    pub fn table_or(&self, year: i32) -> TableName {
        self.table.clone().unwrap_or_else(|| TableName::for_year(year))
    }
}

/// Adds `--engines`' list and default, and every engine's options, to a command.
pub fn add_engine_args(command: clap::Command, registry: &Registry) -> clap::Command {
    let listed: Vec<String> = registry.plugins().map(|p| format!("{} ({})", p.spec().engine, p.spec().about)).collect();
    let default: &'static str = Box::leak(registry.default_engines().into_boxed_str());
    let embedded: Vec<String> = registry.embedded().map(|p| p.spec().engine.to_string()).collect();
    let fallback = match embedded.is_empty() {
        true => String::new(),
        false => format!(" Left to its default with no server answering, {} (no server) stands in, said in one line.", embedded.join(", ")),
    };
    let command = command.mut_arg("engines", |arg| {
        arg.default_value(default).help(format!("Engines to use, comma-separated: {}.{fallback}", listed.join("; ")))
    });
    add_options(command, registry.options())
}

/// Adds one engine's options to a command of its own (e.g. `normalize`).
pub fn add_options_of(command: clap::Command, registry: &Registry, engine: &str) -> clap::Command {
    add_options(command, registry.options().filter(|(e, _)| e.name() == engine))
}

fn add_options<'a>(mut command: clap::Command, options: impl Iterator<Item = (&'a Engine, &'a EngineOption)>) -> clap::Command {
    let mut added: Vec<&str> = Vec::new();
    for (engine, option) in options {
        // Engines on one server share its option (the same `EngineOption`).
        if added.contains(&option.long) {
            continue;
        }
        added.push(option.long);
        let mut arg = Arg::new(option.long).long(option.long).value_name(option.value_name).help(format!("[{engine}] {}", option.help));
        if let Some(env) = option.env {
            // clap writes an unset variable as `[env: NAME=]`, as if it were set
            // to nothing: show a value only when there is one (and no secret).
            let unset = std::env::var_os(env).is_none();
            arg = arg.env(env).hide_env_values(option.secret || unset);
        }
        if let Some(default) = option.default {
            arg = arg.default_value(default);
        }
        command = command.arg(arg);
    }
    command
}

/// The registry and every engine's configuration for this run.
pub struct Engines {
    registry: Registry,
    configs: BTreeMap<Engine, EngineConfig>,
    /// `--engines` was left to its default: the embedded engines may stand in
    /// for servers that do not answer (see [`Engines::select_reachable`]).
    engines_defaulted: bool,
}

/// How long a server of the default engines may take to answer before the
/// embedded engines stand in (a refused connection fails at once).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One engine chosen for the run, with its configuration.
#[derive(Clone)]
pub struct Selected {
    pub plugin: Arc<dyn EnginePlugin>,
    pub config: EngineConfig,
}

impl Selected {
    pub fn engine(&self) -> &Engine {
        &self.plugin.spec().engine
    }

    pub fn loader(&self) -> Arc<dyn Loader> {
        self.plugin.loader(&self.config)
    }

    pub async fn backend(&self, table: &TableName) -> Result<Box<dyn Backend>> {
        self.plugin.backend(&self.config, table).await
    }
}

/// Whether each of `engines`' servers answers, by its index in `engines`
/// (in the order they answer): all at once, since a server that is down can
/// take the whole probe time to say so. A server that refused the login
/// answered: its error is the user's to see (exit 2), not a reason to go on
/// without it.
async fn probe_all(engines: &[&Selected], table: &TableName) -> Vec<(usize, std::result::Result<(), String>)> {
    let mut probes = tokio::task::JoinSet::new();
    for (index, engine) in engines.iter().enumerate() {
        let (loader, table, name) = (engine.loader(), table.clone(), engine.engine().clone());
        probes.spawn(async move {
            let answer = match tokio::time::timeout(PROBE_TIMEOUT, loader.connect(&table)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) if e.login_refused() => Ok(()),
                Ok(Err(e)) => Err(format!("{name} at {}: {}", e.url, e.reason)),
                Err(_) => Err(format!("{name} at {}: no answer in {} s", loader.location(), PROBE_TIMEOUT.as_secs())),
            };
            (index, answer)
        });
    }
    let mut answers = Vec::new();
    while let Some(probe) = probes.join_next().await {
        // A probe that panicked answered nothing.
        answers.push(probe.unwrap_or_else(|e| (usize::MAX, Err(format!("a probe failed: {e}")))));
    }
    answers
}

impl Engines {
    /// Reads each engine's options from the command's arguments (flag,
    /// environment or default); commands without engines have none.
    pub fn from_matches(registry: Registry, matches: Option<&ArgMatches>) -> Engines {
        let mut configs = BTreeMap::new();
        for plugin in registry.plugins() {
            let mut config = EngineConfig::default();
            for option in plugin.spec().options {
                let value = matches.and_then(|m| m.try_get_one::<String>(option.long).ok().flatten());
                if let Some(value) = value {
                    config = config.with(option.long, value.clone());
                }
            }
            configs.insert(plugin.spec().engine.clone(), config);
        }
        let engines_defaulted = matches.is_some_and(|m| {
            m.try_contains_id("engines").unwrap_or(false) && m.value_source("engines") == Some(ValueSource::DefaultValue)
        });
        Engines { registry, configs, engines_defaulted }
    }

    /// Every registered engine with its configuration, chosen or not (to
    /// put back what one of them left changed on its server).
    pub fn every(&self) -> Vec<Selected> {
        self.registry.plugins().map(|plugin| Selected { plugin: plugin.clone(), config: self.configs.get(&plugin.spec().engine).cloned().unwrap_or_default() }).collect()
    }

    /// The engines `--engines` names, each once, in the order given.
    pub fn select(&self, conn: &ConnOptions) -> Result<Vec<Selected>> {
        let names = if conn.engines.is_empty() {
            self.registry.default_engines().split(',').map(str::to_string).collect()
        } else {
            conn.engines.clone()
        };
        Ok(self.registry.resolve(&names)?.into_iter().map(|plugin| self.configured(plugin)).collect())
    }

    /// The engines for a run on `table`: those of `--engines`; but when
    /// `--engines` was left to its default and no server of the selected
    /// engines answers, the engines that need no server (polars), said in one
    /// line, so ghbench works on a machine without a database.
    pub async fn select_reachable(&self, conn: &ConnOptions, table: &TableName) -> Result<Vec<Selected>> {
        let selected = self.select_present(conn, table).await?;
        let servers: Vec<&Selected> = selected.iter().filter(|s| s.plugin.spec().capabilities.server).collect();
        let embedded: Vec<Selected> = self.registry.embedded().map(|p| self.configured(p.clone())).collect();
        if !self.engines_defaulted || embedded.is_empty() || servers.is_empty() {
            return Ok(selected);
        }
        let mut unreachable = Vec::new();
        for (index, answer) in probe_all(&servers, table).await {
            match answer {
                Ok(()) => return Ok(selected),
                Err(why) => unreachable.push((index, why)),
            }
        }
        unreachable.sort();
        let unreachable: Vec<String> = unreachable.into_iter().map(|(_, why)| why).collect();
        let names = embedded.iter().map(|s| s.engine().to_string()).collect::<Vec<_>>().join(",");
        eprintln!("note: no database server answers ({}); using {names} alone (no server needed); pass --engines to choose", unreachable.join("; "));
        Ok(embedded)
    }

    /// The engines `--engines` names; but when it was left to its default,
    /// without the optional ones (see `Capabilities::optional`) whose server
    /// does not answer, each said in one line.
    pub async fn select_present(&self, conn: &ConnOptions, table: &TableName) -> Result<Vec<Selected>> {
        let mut selected = self.select(conn)?;
        if !self.engines_defaulted {
            return Ok(selected);
        }
        let optional: Vec<&Selected> = selected.iter().filter(|s| s.plugin.spec().capabilities.optional).collect();
        // Engines of one server (citus and citus-tuned on one coordinator) said in one line.
        let mut answers = probe_all(&optional, table).await;
        // In the registry's order, whichever answered first.
        answers.sort_by_key(|(index, _)| *index);
        let mut absent: Vec<(String, String, Vec<ghbench_core::Engine>)> = Vec::new();
        for (index, answer) in answers {
            if let (Err(why), Some(engine)) = (answer, optional.get(index)) {
                let server = engine.loader().location();
                match absent.iter_mut().find(|(at, ..)| *at == server) {
                    Some((_, _, engines)) => engines.push(engine.engine().clone()),
                    None => absent.push((server, why, vec![engine.engine().clone()])),
                }
            }
        }
        for (_, why, engines) in &absent {
            let names = engines.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            let (what, whose) = if engines.len() == 1 { ("an optional engine", "its") } else { ("optional engines", "their") };
            eprintln!("note: {why}; going on without {names} ({what}: `just setup` starts {whose} server where it can; pass --engines to choose)");
        }
        selected.retain(|s| !absent.iter().any(|(.., engines)| engines.contains(s.engine())));
        Ok(selected)
    }

    fn configured(&self, plugin: Arc<dyn EnginePlugin>) -> Selected {
        let config = self.configs.get(&plugin.spec().engine).cloned().unwrap_or_default();
        Selected { plugin, config }
    }

    /// The cleaning policy of the registered engines.
    pub fn policy(&self) -> ghbench_ingest::clean::Policy {
        self.registry.policy()
    }

    /// One engine, by name, with its configuration.
    pub fn one(&self, name: &str) -> Result<Selected> {
        Ok(self.configured(self.registry.resolve(&[name])?.remove(0)))
    }

    /// Resolves one engine name, e.g. `--baseline`'s.
    pub fn find(&self, name: &str) -> Result<Engine> {
        Ok(self.registry.resolve(&[name])?.remove(0).spec().engine.clone())
    }
}

/// Connects a backend per engine, in order.
pub async fn connect_backends(engines: &[Selected], table: &TableName) -> Result<Vec<Box<dyn Backend>>> {
    let mut backends = Vec::new();
    for engine in engines {
        backends.push(engine.backend(table).await?);
    }
    Ok(backends)
}

/// Which hours a command works on: `--year`, or `--from` with `--to` or
/// `--hours`. One set of options for every command (`ingest`, `download`,
/// `gen`, `bench`); a command may give `--from` a default.
#[derive(Args, Debug, Clone, Default)]
pub struct HourArgs {
    /// Every hour of this year (e.g. 2015).
    #[arg(long, conflicts_with_all = ["from", "to", "hours"])]
    pub year: Option<i32>,

    /// First hour, e.g. 2015-01-01T00 (also accepts GH Archive's 2015-01-01-0).
    #[arg(long)]
    pub from: Option<Hour>,

    /// Last hour, inclusive [default: the --from hour].
    #[arg(long, conflicts_with = "hours")]
    pub to: Option<Hour>,

    /// Number of hours starting at --from.
    #[arg(long, value_parser = at_least_one::<u32>)]
    pub hours: Option<u32>,
}

impl HourArgs {
    /// The hours asked for; `--from` must be given.
    pub fn range(&self) -> Result<HourRange> {
        self.range_from(None)
    }

    /// The hours asked for, `--from` defaulting to `default_from` when given.
    pub fn range_from(&self, default_from: Option<Hour>) -> Result<HourRange> {
        Ok(match (self.year, self.from.or(default_from)) {
            (Some(year), _) => HourRange::year(year)?,
            (None, Some(from)) => match (self.to, self.hours) {
                (Some(to), _) => HourRange::new(from, to)?,
                (None, Some(n)) => HourRange::starting_at(from, n)?,
                (None, None) => HourRange::new(from, from)?,
            },
            (None, None) if self.to.is_some() || self.hours.is_some() => bail!("--to and --hours count from --from: add --from 2015-01-01T00"),
            (None, None) => bail!("choose the hours: --year 2015, or --from 2015-01-01T00 with --to or --hours"),
        })
    }

    /// Whether any option says how many hours (not only where they start).
    pub fn says_how_many(&self) -> bool {
        self.year.is_some() || self.to.is_some() || self.hours.is_some()
    }
}

/// A clap value parser for a whole number of at least 1 (hours, events, runs,
/// seconds), saying so in words rather than as a range of the type's limits.
pub fn at_least_one<T: std::str::FromStr + PartialOrd + From<u8>>(value: &str) -> std::result::Result<T, String> {
    match value.trim().parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(_) => Err(format!("'{value}' is not a whole number")),
    }
}

/// Checks before any work that a folder option can be a folder: one naming a
/// file, or a path through one, would otherwise fail only when first written
/// (for --quarantine-dir, at the first bad line, hours in). `holds`: what the
/// folder is for, e.g. `for the results`.
pub fn check_folder(option: &str, dir: &Path, holds: &str) -> Result<()> {
    let what_to_do = format!("give a folder {holds} (it is created when missing)");
    // The nearest part of the path that exists must be a folder.
    for part in dir.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(part) {
            Ok(found) if found.is_dir() => return Ok(()),
            Ok(_) if part == dir => bail!("{option} {} is a file, not a folder; {what_to_do}", dir.display()),
            Ok(_) => bail!("{option} {} cannot be made: {} is a file, not a folder; {what_to_do}", dir.display(), part.display()),
            Err(_) => continue,
        }
    }
    Ok(())
}

/// `--pools`: which actors and repositories generated hours draw on.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolsArg {
    /// New actors and repositories keep arriving as the events grow (Heaps'
    /// law, fitted on the profile's real hours: see the guide).
    #[default]
    Growing,
    /// The same 5,831 actors and 3,318 shared repositories in every hour,
    /// as ghbench generated before growth (records before it used these).
    Fixed,
}

impl PoolsArg {
    pub fn pools(self) -> ghbench_gen::growth::Pools {
        match self {
            PoolsArg::Growing => ghbench_gen::growth::Pools::Growing,
            PoolsArg::Fixed => ghbench_gen::growth::Pools::Fixed,
        }
    }
}

//! Options every command shares, flattened into each subcommand, and the
//! engines' own options, added from the registry.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{bail, Result};
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
    let command = command.mut_arg("engines", |arg| {
        arg.default_value(default).help(format!("Engines to use, comma-separated: {}.", listed.join("; ")))
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
        let mut arg = Arg::new(option.long)
            .long(option.long)
            .value_name(option.value_name)
            .help(format!("[{engine}] {}", option.help))
            .hide_env_values(option.secret);
        if let Some(env) = option.env {
            arg = arg.env(env);
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
}

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
        Engines { registry, configs }
    }

    /// The engines `--engines` names, each once, in the order given.
    pub fn select(&self, conn: &ConnOptions) -> Result<Vec<Selected>> {
        let names = if conn.engines.is_empty() {
            self.registry.default_engines().split(',').map(str::to_string).collect()
        } else {
            conn.engines.clone()
        };
        let chosen = self.registry.resolve(&names)?;
        Ok(chosen
            .into_iter()
            .map(|plugin| {
                let config = self.configs.get(&plugin.spec().engine).cloned().unwrap_or_default();
                Selected { plugin, config }
            })
            .collect())
    }

    /// The cleaning policy of the registered engines.
    pub fn policy(&self) -> ghbench_ingest::clean::Policy {
        self.registry.policy()
    }

    /// One engine, by name, with its configuration.
    pub fn one(&self, name: &str) -> Result<Selected> {
        let plugin = self.registry.resolve(&[name])?.remove(0);
        let config = self.configs.get(&plugin.spec().engine).cloned().unwrap_or_default();
        Ok(Selected { plugin, config })
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

/// Which hours a command works on: `--year`, or `--from` with `--to` or `--hours`.
#[derive(Args, Debug)]
pub struct HourArgs {
    /// Every hour of this year (e.g. 2015).
    #[arg(long, conflicts_with_all = ["from", "to", "hours"])]
    pub year: Option<i32>,

    /// First hour, e.g. 2015-01-01T00 (also accepts GH Archive's 2015-01-01-0).
    #[arg(long)]
    pub from: Option<Hour>,

    /// Last hour, inclusive [default: the --from hour].
    #[arg(long, requires = "from", conflicts_with = "hours")]
    pub to: Option<Hour>,

    /// Number of hours starting at --from.
    #[arg(long, requires = "from")]
    pub hours: Option<u32>,
}

impl HourArgs {
    pub fn range(&self) -> Result<HourRange> {
        Ok(match (self.year, self.from) {
            (Some(year), _) => HourRange::year(year)?,
            (None, Some(from)) => match (self.to, self.hours) {
                (Some(to), _) => HourRange::new(from, to)?,
                (None, Some(n)) => HourRange::starting_at(from, n)?,
                (None, None) => HourRange::new(from, from)?,
            },
            (None, None) => bail!("choose the hours: --year 2015, or --from 2015-01-01T00 with --to or --hours"),
        })
    }
}

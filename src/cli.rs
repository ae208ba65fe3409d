//! Argument parsing and dispatch: the engines' own options are added to every
//! command that reaches engines, from the registry.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use ghbench_engine::Registry;

use crate::commands;
use crate::options::Engines;
use crate::outcome::{status, Finished};

#[derive(Parser)]
#[command(name = "ghbench", version = env!("GHBENCH_VERSION"), about, long_about = "\
Benchmark PostgreSQL jsonb against MongoDB (or a MongoDB-wire server) on GitHub Archive \
analytics, reproducing the OLAP part of the 2019 OnGres benchmark.

Start the servers with `just setup` and `source .ghbench/env`; the defaults of the \
engines' connection options match what it starts.",
after_help = "\
Exit status, the same for every command:
  0    done, and the results are whole and verified
  1    the run finished and wrote its files, but its results cannot be trusted as they
       stand (engines disagree, hours failed or partial, a wrong answer under load, a
       failed phase, a partial record); the files and messages say what
  2    an error stopped it (bad usage, a server that cannot be reached, a table that
       does not exist, a file that cannot be written)
  130  interrupted by Ctrl-C (143: SIGTERM, 129: SIGHUP, 141: its output closed), after
       cancelling what ran on the servers and putting back what it changed on them

A command that writes files names them on the last line of standard error:
`wrote PATH PATH ...` (the JSON record first; paths quoted as a shell reads them).")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load GH Archive hours into every engine (resumable, exactly once per hour).
    Ingest(commands::ingest::IngestArgs),
    /// Mirror a range of hours into a local folder (resumable, checked, 404s recorded).
    Download(commands::download::DownloadArgs),
    /// Check the connections and show each server's product, version and settings.
    Doctor(commands::doctor::DoctorArgs),
    /// Create the paper's five indexes on every engine (idempotent), timing each.
    Index(commands::index::IndexArgs),
    /// Run Queries A-D on every engine: timed, verified across engines, reported.
    Query(commands::query::QueryArgs),
    /// Derive the normalized engine's relational tables from a loaded jsonb table, or --verify them.
    Normalize(commands::normalize::NormalizeArgs),
    /// The whole benchmark in one command: data, load, indexes, cold and hot queries, sizes, report (--scale: at several sizes).
    Bench(Box<commands::bench::BenchArgs>),
    /// Show a saved query result again, or compare two.
    Report(commands::report::ReportArgs),
    /// Serve a folder of hour files over HTTP on loopback, like data.gharchive.org.
    Serve(commands::serve::ServeArgs),
    /// Write synthetic GH Archive hours calibrated on real ones (or --calibrate a profile).
    Gen(commands::gen::GenArgs),
    /// The process polars' queries run in (started by ghbench itself).
    #[command(hide = true, name = "polars-worker")]
    PolarsWorker(commands::polars_worker::WorkerArgs),
}

/// Parses `args` (the program name first) and runs the command with the
/// registry's engines; errors are printed, the exit status says how it went.
pub fn run(registry: Registry, args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> ExitCode {
    let mut command = Cli::command();
    // The commands that reach engines are those that flatten `ConnOptions`
    // (they have `--engines`): each also takes every engine's options.
    let reaching: Vec<String> = command
        .get_subcommands()
        .filter(|sub| sub.get_arguments().any(|arg| arg.get_id() == "engines"))
        .map(|sub| sub.get_name().to_string())
        .collect();
    for name in &reaching {
        command = command.mut_subcommand(name, |sub| crate::options::add_engine_args(sub, &registry));
    }
    // `bench` is the whole benchmark: by default on every engine.
    let every: &'static str = Box::leak(registry.all_engines().into_boxed_str());
    command = command.mut_subcommand("bench", |sub| {
        sub.mut_arg("engines", |arg| arg.default_value(every))
            .mut_arg("table", |arg| arg.help("Base of the tables' names: each size gets its own, e.g. bench_6h_e7702_s42 [default: bench]"))
            // `--gen 6`, as bench first spelled the size of generated data.
            .mut_arg("hours", |arg| arg.alias("gen").help("Hours from --from (2015-01-01T00 unless given): generated ones, or --source's"))
            .mut_arg("from", |arg| arg.help("First hour [default: 2015-01-01T00]"))
    });
    // `normalize` makes one engine's tables: it takes that engine's options.
    command = command.mut_subcommand("normalize", |sub| crate::options::add_options_of(sub, &registry, commands::normalize::ENGINE));
    let matches = match command.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => e.exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Command::PolarsWorker(args) = &cli.command {
        // No runtime, no signal handling: it ends with its standard input, or
        // with ghbench (a write to ghbench gone ends it quietly).
        restore_default_sigpipe();
        return commands::polars_worker::run(args);
    }
    let sub = matches.subcommand().map(|(_, m)| m);
    // The journal of server changes sits beside the servers file, where
    // `scripts/setup.sh` reads it too.
    let servers_file = servers_file(sub);
    ghbench_core::changes::set_dir(ghbench_core::changes::dir_beside(&servers_file));
    let reaches_servers = matches.subcommand_name().is_some_and(|name| reaching.iter().any(|r| r == name));
    let engines = Engines::from_matches(registry, sub);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(status::ERROR);
        }
    };
    let is_doctor = matches!(cli.command, Command::Doctor(_));
    let managed = commands::servers::ManagedServers::load(&servers_file, false).ok().flatten();
    let command = async {
        if reaches_servers {
            // What a ghbench that ended left changed on the servers goes
            // back before this one measures anything.
            commands::leftovers::before_command(managed.as_ref(), &engines, is_doctor).await?;
        }
        match cli.command {
            Command::Ingest(args) => commands::ingest::run(args, &engines).await,
            Command::Download(args) => commands::download::run(args).await,
            Command::Doctor(args) => commands::doctor::run(args, &engines).await,
            Command::Serve(args) => off_the_runtime(move || commands::serve::run(args)).await,
            Command::Index(args) => commands::index::run(args, &engines).await,
            Command::Query(args) => commands::query::run(args, &engines).await,
            Command::Normalize(args) => commands::normalize::run(args, &engines).await,
            Command::Bench(args) => commands::bench::run(*args, &engines).await,
            Command::Report(args) => off_the_runtime(move || commands::report::run(args)).await,
            Command::Gen(args) => off_the_runtime(move || commands::gen::run(args)).await,
            Command::PolarsWorker(_) => unreachable!("answered before the runtime starts"),
        }
    };
    // A panic (a write to a closed output, or a bug) must not skip putting
    // the servers back: it ends the command as a signal would.
    let command = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(command));
    let ended = runtime.block_on(async {
        let ended = tokio::select! {
            result = command => match result {
                Ok(result) => Ended::Ran(result),
                Err(panic) => Ended::Panicked(crate::interrupt::panic_message(panic.as_ref())),
            },
            signal = crate::interrupt::signalled() => Ended::Interrupted(signal),
        };
        // The command's future is dropped by now: work it left running on a
        // server (a query past a limit, an abandoned client, or all of it when
        // interrupted) is cancelled before ghbench exits.
        let cancelled = match ended {
            Ended::Interrupted(_) | Ended::Panicked(_) => ghbench_core::stop::cancel_all().await,
            Ended::Ran(_) => ghbench_core::stop::settle().await,
        };
        (ended, cancelled)
    });
    let (ended, cancelled) = ended;
    let stopped = match ended {
        Ended::Ran(result) => {
            // A restart that failed part way (a cold run's) may have left its
            // server stopped: it goes back before ghbench exits.
            runtime.block_on(commands::leftovers::put_back_own(managed.as_ref(), &engines, Vec::new()));
            return ran_to_its_end(result, &cancelled);
        }
        Ended::Interrupted(signal) => (signal, None),
        Ended::Panicked(message) if crate::interrupt::is_broken_pipe(&message) => (crate::interrupt::Signal::BrokenPipe, None),
        // Its output could not be written (a full disk): an error, not a bug.
        Ended::Panicked(message) if message.starts_with("failed printing to std") => {
            (crate::interrupt::Signal::Panic, Some(format!("error: its output could not be written ({message})")))
        }
        // A bug: ended as for a signal, but said as the bug it is.
        Ended::Panicked(message) => (crate::interrupt::Signal::Panic, Some(format!("error: ghbench stopped on an internal error (a bug: please report it): {message}"))),
    };
    // Stopped part way: every line from here on is said with `note`, which
    // cannot fail on a closed stderr.
    let (signal, error) = stopped;
    crate::interrupt::say(signal, &cancelled);
    // Servers a bench put under a memory limit go back as setup left them,
    // and whatever else this ghbench still has changed (a server stopped by a
    // cold run's restart, a parameter).
    runtime.block_on(async {
        let restarted = commands::bench::limits::restore_after_signal().await;
        commands::leftovers::put_back_own(managed.as_ref(), &engines, restarted).await;
    });
    match error {
        Some(said) => crate::interrupt::note(&said),
        None => crate::interrupt::say_exit(signal),
    }
    for line in crate::outcome::kept_so_far() {
        crate::interrupt::note(&line);
    }
    // Not through the runtime's drop, which would wait for work on blocking
    // threads (a polars query) to end by itself.
    std::process::exit(signal.exit_code());
}

/// A command that works without the runtime (serve's loop, gen's hours, a
/// report), run on a thread of its own: on the runtime's it would keep the
/// signal handler from being heard (serve ignored SIGTERM and Ctrl-C), and a
/// signal ends ghbench whatever that thread does. A panic in it is ghbench's.
async fn off_the_runtime(work: impl FnOnce() -> anyhow::Result<Finished> + Send + 'static) -> anyhow::Result<Finished> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the command's thread ended: {e}")),
    }
}

/// The exit of a command that ran to its end, well or not.
fn ran_to_its_end(result: anyhow::Result<Finished>, cancelled: &[String]) -> ExitCode {
    use crate::interrupt::note;
    for line in cancelled {
        note(&format!("note: ghbench stopped waiting for {line}"));
    }
    match result {
        Ok(finished) => {
            if let Some(line) = finished.untrusted_line() {
                note(&line);
            }
            // Last, so a script finds it with `tail -n 1`.
            if let Some(line) = finished.wrote_line() {
                note(&line);
            }
            finished.exit_code()
        }
        Err(e) => {
            note(&format!("error: {e:#}"));
            for line in crate::outcome::kept_so_far() {
                note(&line);
            }
            ExitCode::from(status::ERROR)
        }
    }
}

/// How a command ended: it ran to its end (well or not), a signal stopped
/// it, or it panicked (a write to a closed output, or a bug).
enum Ended {
    Ran(anyhow::Result<Finished>),
    Interrupted(crate::interrupt::Signal),
    Panicked(String),
}

/// The servers file this command reads (`--servers`, else `GHBENCH_SERVERS`,
/// else where `just setup` writes it).
fn servers_file(sub: Option<&clap::ArgMatches>) -> std::path::PathBuf {
    sub.and_then(|m| m.try_get_one::<std::path::PathBuf>("servers").ok().flatten().cloned())
        .or_else(|| std::env::var_os("GHBENCH_SERVERS").filter(|v| !v.is_empty()).map(Into::into))
        .unwrap_or_else(|| commands::servers::DEFAULT_SERVERS_FILE.into())
}

/// The polars worker dies quietly with ghbench, as command-line tools do
/// when their reader goes (Rust ignores SIGPIPE otherwise).
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called before any thread of the worker exists; resetting a
    // signal's disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

//! ghbench: benchmark PostgreSQL jsonb against MongoDB on GitHub Archive data.
//! A thin binary: argument parsing, progress display and rendering; the work
//! lives in the crates under `crates/`.

mod commands;
mod options;
mod progress;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ghbench", version, about, long_about = "\
Benchmark PostgreSQL jsonb against MongoDB (or a MongoDB-wire server) on GitHub Archive \
analytics, reproducing the OLAP part of the 2019 OnGres benchmark.

Start the servers with `just setup` and `source .ghbench/env`; the defaults of --pg-url \
and --mongo-url match what it starts.")]
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
    /// Show a saved query result again, or compare two.
    Report(commands::report::ReportArgs),
    /// Serve a folder of hour files over HTTP on loopback, like data.gharchive.org.
    Serve(commands::serve::ServeArgs),
    /// Write synthetic GH Archive hours calibrated on real ones (or --calibrate a profile).
    Gen(commands::gen::GenArgs),
}

fn main() -> std::process::ExitCode {
    restore_default_sigpipe();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ingest(args) => commands::ingest::run(args).await,
            Command::Download(args) => commands::download::run(args).await,
            Command::Doctor(args) => commands::doctor::run(args).await,
            Command::Serve(args) => commands::serve::run(args),
            Command::Index(args) => commands::index::run(args).await,
            Command::Query(args) => commands::query::run(args).await,
            Command::Report(args) => commands::report::run(args),
            Command::Gen(args) => commands::gen::run(args),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Rust ignores SIGPIPE, so `ghbench report x.json | head` would panic in
/// `println!`; like other command-line tools, end quietly instead.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; resetting a
    // signal's disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

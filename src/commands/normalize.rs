//! `ghbench normalize`: the normalized engine's tables derived from a table
//! already loaded as `jsonb`, or (`--verify N`) the round trip checked.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ghbench_core::TableName;
use ghbench_ingest::source::{Source, DEFAULT_SOURCE};
use indicatif::{ProgressBar, ProgressStyle};

use crate::options::Engines;

/// The engine whose tables this command makes.
pub const ENGINE: &str = "normalized";

#[derive(Args, Debug)]
pub struct NormalizeArgs {
    /// The collection: its jsonb table, and the root of its derived tables
    /// (schema normalized) [default: github2015].
    #[arg(long)]
    pub table: Option<TableName>,

    /// Instead of deriving: rebuild N random documents from the derived tables
    /// and compare them, values and types, with their originals (every
    /// document when there are fewer). A difference fails with its path.
    #[arg(long, value_name = "N", value_parser = crate::options::at_least_one::<u64>)]
    pub verify: Option<u64>,

    /// For --verify: where the hour files of documents loaded by `ghbench
    /// ingest` are (a URL or a folder; their originals are read again there).
    #[arg(long, default_value = DEFAULT_SOURCE)]
    pub source: String,

    /// Also write the summary (tables, rows, bytes, times; or the check) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub async fn run(args: NormalizeArgs, engines: &Engines) -> Result<ExitCode> {
    let table = args.table.clone().unwrap_or_else(|| TableName::for_year(super::olap::DEFAULT_YEAR));
    let engine = engines.one(ENGINE)?;
    let url = engine.config.get(&ghbench_postgres::URL).unwrap_or_default().to_string();
    match args.verify {
        Some(n) => verify(&args, &url, &table, n, engines).await,
        None => derive(&args, &url, &table).await,
    }
}

async fn derive(args: &NormalizeArgs, url: &str, table: &TableName) -> Result<ExitCode> {
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template("normalize [{bar:30}] {human_pos}/{human_len} documents  {elapsed_precise} (eta {eta})").expect("template"));
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let derivation = ghbench_normalized::from_jsonb::derive(url, table, &progress).await;
    bar.finish_and_clear();
    let d = derivation?;
    println!("{:<40} {:>12} {:>12}  path", "derived table", "rows", "MB");
    for t in &d.tables {
        let path = if t.path.is_empty() { "(documents)" } else { &t.path };
        println!("{:<40} {:>12} {:>12.1}  {path}", t.name, t.rows, t.bytes as f64 / 1e6);
    }
    let (rows, bytes) = d.tables.iter().fold((0, 0), |(r, b), t| (r + t.rows, b + t.bytes));
    println!("{:<40} {:>12} {:>12.1}", format!("{} tables", d.tables.len()), rows, bytes as f64 / 1e6);
    println!(
        "normalized {} documents of '{table}' ({} hours) in {:.2} s ({:.0} documents/s); {} in {:.2} s",
        d.documents,
        d.hours,
        d.seconds,
        d.documents as f64 / d.seconds.max(1e-9),
        d.upkeep.step,
        d.upkeep.seconds
    );
    write_json(args, &d)?;
    Ok(ExitCode::SUCCESS)
}

async fn verify(args: &NormalizeArgs, url: &str, table: &TableName, n: u64, engines: &Engines) -> Result<ExitCode> {
    let source = Source::parse(&args.source)?;
    let report = ghbench_normalized::verify::verify(url, table, n, &source, &engines.policy()).await?;
    write_json(args, &report)?;
    for m in report.mismatches.iter().take(20) {
        println!("DIFFERS document {} ({}): {}", m.did, m.original, m.difference);
    }
    if report.mismatches.is_empty() {
        println!("verified {} documents of '{table}': each rebuilt from the derived tables equals its original", report.checked);
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} of {} documents differ from their originals", report.mismatches.len(), report.checked);
        Ok(ExitCode::FAILURE)
    }
}

fn write_json(args: &NormalizeArgs, value: &impl serde::Serialize) -> Result<()> {
    match &args.json {
        Some(path) => super::olap::write(path, &(serde_json::to_string_pretty(value)? + "\n")),
        None => Ok(()),
    }
}

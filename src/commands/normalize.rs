//! `ghbench normalize`: the normalized engine's tables derived from a table
//! already loaded as `jsonb`, or (`--verify N`) the round trip checked.

use anyhow::Result;
use clap::Args;
use ghbench_core::TableName;
use ghbench_ingest::source::{Source, DEFAULT_SOURCE};
use indicatif::{ProgressBar, ProgressStyle};

use crate::options::Engines;
use crate::outcome::Finished;
use crate::output::{screen_beside, write_summary, Target};

/// The schemas and versions of `--json`'s summary (docs/results-schema.md).
pub const NORMALIZE_SCHEMA: &str = "ghbench-normalize/1";
pub const NORMALIZE_VERIFY_SCHEMA: &str = "ghbench-normalize-verify/1";

/// The engine whose tables this command makes.
pub const ENGINE: &str = "normalized";

#[derive(Args, Debug)]
#[command(after_help = "\
Exit status: 0 derived (or every document verified); 1 --verify found documents that
differ from their originals; 2 an error stopped it (a server that cannot be reached, a
table that does not exist); 130 on Ctrl-C. The last line on standard error names the
file --json wrote.")]
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

    /// Also write the summary (tables, rows, bytes, times; or the check) as
    /// JSON to FILE (`-`: standard output, the table then on standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<Target>,
}

pub async fn run(args: NormalizeArgs, engines: &Engines) -> Result<Finished> {
    if let Some(target) = &args.json {
        target.check("--json")?;
    }
    let table = args.table.clone().unwrap_or_else(|| TableName::for_year(super::olap::DEFAULT_YEAR));
    let engine = engines.one(ENGINE)?;
    let url = engine.config.get(&ghbench_postgres::URL).unwrap_or_default().to_string();
    match args.verify {
        Some(n) => verify(&args, &url, &table, n, engines).await,
        None => derive(&args, &url, &table).await,
    }
}

async fn derive(args: &NormalizeArgs, url: &str, table: &TableName) -> Result<Finished> {
    let screen = screen_beside(args.json.as_ref());
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template("normalize [{bar:30}] {human_pos}/{human_len} documents  {elapsed_precise} (eta {eta})").expect("template"));
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let derivation = ghbench_normalized::from_jsonb::derive(url, table, &progress).await;
    bar.finish_and_clear();
    let d = derivation?;
    screen.line(format!("{:<40} {:>12} {:>12}  path", "derived table", "rows", "MB"));
    for t in &d.tables {
        let path = if t.path.is_empty() { "(documents)" } else { &t.path };
        screen.line(format!("{:<40} {:>12} {:>12.1}  {path}", t.name, t.rows, t.bytes as f64 / 1e6));
    }
    let (rows, bytes) = d.tables.iter().fold((0, 0), |(r, b), t| (r + t.rows, b + t.bytes));
    screen.line(format!("{:<40} {:>12} {:>12.1}", format!("{} tables", d.tables.len()), rows, bytes as f64 / 1e6));
    screen.line(format!(
        "normalized {} documents of '{table}' ({} hours) in {:.2} s ({:.0} documents/s); {} in {:.2} s",
        d.documents,
        d.hours,
        d.seconds,
        d.documents as f64 / d.seconds.max(1e-9),
        d.upkeep.step,
        d.upkeep.seconds
    ));
    write_summary(args.json.as_ref(), NORMALIZE_SCHEMA, &d)
}

async fn verify(args: &NormalizeArgs, url: &str, table: &TableName, n: u64, engines: &Engines) -> Result<Finished> {
    let screen = screen_beside(args.json.as_ref());
    let source = Source::parse(&args.source)?;
    let report = ghbench_normalized::verify::verify(url, table, n, &source, &engines.policy()).await?;
    let finished = write_summary(args.json.as_ref(), NORMALIZE_VERIFY_SCHEMA, &report)?;
    for m in report.mismatches.iter().take(20) {
        screen.line(format!("DIFFERS document {} ({}): {}", m.did, m.original, m.difference));
    }
    if report.mismatches.is_empty() {
        screen.line(format!("verified {} documents of '{table}': each rebuilt from the derived tables equals its original", report.checked));
    } else {
        screen.line(format!("{} of {} documents differ from their originals", report.mismatches.len(), report.checked));
    }
    Ok(finished.trusted_if(report.mismatches.is_empty()))
}

//! `ghbench query`: Queries A–D on every engine, timed, verified across
//! engines, written as JSON and Markdown and shown as a table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use ghbench_olap::render::{no_disagreement, print_servers, problems, reconnect_notes, results_table, seconds, Style};
use ghbench_olap::runner::{ClearCaches, Progress, RunEvent};
use indicatif::{ProgressBar, ProgressStyle};

use super::concurrency::ConcurrencyArgs;
use super::olap::{RunPlan, ensure_output_dir, measure, output_path, write, write_markdown_with_charts, CatalogOptions, TimingArgs, DEFAULT_YEAR};
use crate::options::{connect_backends, ConnOptions, Engines};

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench query --all                       # A-D, both variants, 3 runs each
  ghbench query A C --variant corrected --repeat 5
  ghbench query --all --cold                # drop the OS page cache before each query
  ghbench query --all --clients 1,4,16 --duration 60
                                            # then 1, 4 and 16 clients at once per engine
  ghbench query --all --query-timeout 2h    # stop any run past two hours (default: no limit)

No time limit applies unless --query-timeout gives one: ghbench's sessions turn off a
server's or role's defaults. Ctrl-C cancels what ghbench runs on the servers, says
what it cancelled and exits 130.

Before timing, compares what the engines hold (their ingest ledgers, hour by hour,
and each table's row count) and says first when they differ.
Exits non-zero when the engines' results disagree or they hold different data, a
query failed or was cut by --query-timeout, or an answer under load is wrong or a
phase of clients fails (after writing the files).")]
pub struct QueryArgs {
    #[command(flatten)]
    pub conn: ConnOptions,

    #[command(flatten)]
    pub catalog: CatalogOptions,

    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,

    /// Queries to run, e.g. `A C`.
    #[arg(value_name = "QUERY", required_unless_present = "all", conflicts_with = "all")]
    pub names: Vec<String>,

    /// Run every query.
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub timing: TimingArgs,

    /// Before each query's first run: drop the OS page cache and clear what each
    /// server can clear without a restart (an extra run, recorded apart).
    #[arg(long)]
    pub cold: bool,

    /// The engine the others are compared with in the "faster by" columns
    /// (the paper's (S-F)/S) [default: the first of --engines].
    #[arg(long, value_name = "ENGINE")]
    pub baseline: Option<String>,

    /// Folder for the JSON record, the Markdown report and its SVG charts
    /// (`olap-<time>.json`, `.md` and `-charts/`).
    #[arg(long, default_value = "results")]
    pub output: PathBuf,

    /// Go on with the unfinished run of this record (a run stopped part way
    /// leaves one, written after every query): its queries are kept, the rest
    /// run, and the record is finished in place. Give the same command it was
    /// started with; refused, saying what changed, when the data, the servers,
    /// their settings, the query texts, the timing options or ghbench differ.
    #[arg(long, value_name = "RECORD")]
    pub resume: Option<PathBuf>,
}

pub async fn run(args: QueryArgs, registry: &Engines) -> Result<ExitCode> {
    let catalog = args.catalog.load()?;
    ensure_output_dir(&args.output)?;
    let table = args.conn.table_or(DEFAULT_YEAR);
    let options = args.timing.options(&catalog, args.names.iter().map(|q| q.to_ascii_uppercase()).collect(), args.cold)?;
    let selected = registry.select_reachable(&args.conn, &table).await?;
    let baseline = match &args.baseline {
        Some(name) => {
            let engine = registry.find(name)?;
            if !selected.iter().any(|s| s.engine() == &engine) {
                bail!("--baseline {engine} is not among --engines ({})", selected.iter().map(|s| s.engine().to_string()).collect::<Vec<_>>().join(","));
            }
            Some(engine)
        }
        None => selected.first().map(|s| s.engine().clone()),
    };
    let mut backends = connect_backends(&selected, &table).await?;
    let progress = QueryProgress::new();
    // Written after every query (unfinished) and again at the end; a resumed
    // run finishes the record it went on from.
    let resume = match &args.resume {
        Some(path) => Some((super::resume::unfinished(path)?, path.clone())),
        None => None,
    };
    let json_path = match &args.resume {
        Some(path) => path.clone(),
        None => output_path(&args.output, "olap", "json"),
    };
    let plan = RunPlan { queries: options, baseline, concurrency: args.concurrency.options(), record_to: Some(json_path.clone()), resume };
    let measured = measure(&mut backends, &catalog, plan, &table, &progress, &ClearCaches).await;
    progress.bar.finish_and_clear();
    let (record, warning) = measured?;

    write(&json_path, &serde_json::to_string_pretty(&record)?)?;
    let md_path = json_path.with_extension("md");
    let charts_dir = write_markdown_with_charts(&record, &md_path)?;

    println!("{}", results_table(&record, Style::Terminal));
    // Again beside the numbers it invalidates.
    for line in &warning {
        eprintln!("{line}");
    }
    print_servers(&record.context);
    println!("{}; {}", record.context.cold.label, ghbench_olap::render::limit_label(&record.context));
    let problems = problems(&record);
    for line in reconnect_notes(&record).iter().chain(&problems) {
        eprintln!("{line}");
    }
    for backend in &backends {
        backend.close().await;
    }
    println!("wrote {}, {} and its charts in {}", json_path.display(), md_path.display(), charts_dir.display());
    Ok(if problems.is_empty() && no_disagreement(&record) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One bar over every run, ticking on its own so the elapsed time moves
/// during a long query; indicatif draws only on a terminal.
pub struct QueryProgress {
    pub bar: ProgressBar,
}

impl Default for QueryProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl QueryProgress {
    pub fn new() -> Self {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{prefix}[{bar:30}] {pos}/{len} runs  {elapsed_precise}  {msg}")
                .expect("template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(500));
        QueryProgress { bar }
    }
}

impl QueryProgress {
    /// On the bar; and, when there is no bar (output to a file or pipe), as a
    /// line for the steps worth a log: each query's first run, each cooling.
    fn say(&self, what: &str, worth_a_line: bool) {
        if self.bar.is_hidden() && worth_a_line {
            eprintln!("{}{:>5.0} s  {what}", self.bar.prefix(), self.bar.elapsed().as_secs_f64());
        }
        self.bar.set_message(what.to_string());
    }
}

impl Progress for QueryProgress {
    fn event(&self, event: RunEvent<'_>) {
        match event {
            RunEvent::Planned { runs } => self.bar.set_length(runs),
            RunEvent::Cooling { engine, variant, query, how } => self.say(&format!("{query} {variant} on {engine}: making it cold ({how})"), true),
            RunEvent::Running { engine, variant, query, label } => {
                let first = label == "cold run" || label.starts_with("run 1/") || label == ghbench_olap::runner::MEASURED_PLAN;
                self.say(&format!("{query} {variant} on {engine}: {label}"), first)
            }
            RunEvent::Ran { engine, seconds: s } => {
                self.bar.inc(1);
                self.bar.set_message(format!("{engine}: {} s", seconds(s)));
            }
            RunEvent::QueryDone { .. } => {}
            RunEvent::Loading { engine, clients, seconds } => {
                self.say(&format!("{engine}: {} at once for {seconds:.0} s (concurrency phase, warm-up included)", ghbench_olap::concurrency::clients_said(clients)), true)
            }
        }
    }
}

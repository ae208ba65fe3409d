//! `ghbench query`: Queries A–D on every engine, timed, verified across
//! engines, written as JSON and Markdown and shown as a table.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use ghbench_report::{charts, markdown_with_charts, problems, reconnect_notes, results_table, seconds, server_lines, Style};
use ghbench_olap::runner::{Progress, RunEvent};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::concurrency::ConcurrencyArgs;
use super::olap::{answers_dir, KeptAsItGoes, RunPlan, measure, write_charts, CatalogOptions, TimingArgs, DEFAULT_YEAR};
use crate::options::{connect_backends, ConnOptions, Engines};
use crate::outcome::Finished;
use crate::output::{MarkdownArg, ResultsArgs, RunFiles};
use crate::progress::Log;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench query --all                       # A-D, both variants, 3 runs each
  ghbench query A C --variant corrected --repeat 5
  ghbench query --all --cold                # a true cold first run: servers restarted, page cache dropped
  ghbench query --all --cold=clear          # page cache and the servers' own caches cleared, no restart
  ghbench query --all --cold --disk riops=1000,rbps=262MB
                                            # the servers read through a throttle (root): an EBS io1 volume of 1,000 IOPS
  ghbench query --all --json -              # the record on standard output (tables on standard error)
  ghbench query --all --clients 1,4,16 --duration 60
                                            # then 1, 4 and 16 clients at once per engine
  ghbench query --all --query-timeout 2h    # stop any run past two hours (default: no limit)

--disk restarts the servers `just setup` started inside a block I/O cgroup throttling
the disk under their data (and puts them back afterwards, after a Ctrl-C too); polars'
workers start inside one of their own; the page cache is dropped first. The record
names the device, the rules, how the kernel enforced them and what it counted.

No time limit applies unless --query-timeout gives one: ghbench's sessions turn off a
server's or role's defaults. Ctrl-C cancels what ghbench runs on the servers, says
what it cancelled and exits 130.

Before timing, compares what the engines hold (their ingest ledgers, hour by hour,
and each table's row count) and says first when they differ.
Writes olap-<time>.json, .md and -charts/ in --output (results/); the last line on
standard error names them.

Exit status: 0 every answer verified; 1 finished, files written, but not to be trusted
as it stands: the engines' results disagree or they hold different data, a query failed
or was cut by --query-timeout, an answer under load is wrong or a phase of clients
failed, or the record was resumed (said by the line before the last); 2 an error stopped it (bad options, a server that cannot be reached, a table
that does not exist); 130 on Ctrl-C.")]
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

    /// The engine the others are compared with in the "faster by" columns
    /// (the paper's (S-F)/S) [default: the first of --engines].
    #[arg(long, value_name = "ENGINE")]
    pub baseline: Option<String>,

    /// `olap-<time>.json`, `.md` and `-charts/` in --output.
    #[command(flatten)]
    pub results: ResultsArgs,

    #[command(flatten)]
    pub markdown: MarkdownArg,

    /// Go on with the unfinished run of this record (a run stopped part way
    /// leaves one, written after every query): its queries are kept, the rest
    /// run, and the record is finished in place. Give the same command it was
    /// started with; refused, saying what changed, when the data, the servers,
    /// their settings, the indexes, the memory limits, the query texts, the
    /// timing options or ghbench differ.
    #[arg(long, value_name = "RECORD")]
    pub resume: Option<PathBuf>,
}

pub async fn run(args: QueryArgs, registry: &Engines) -> Result<Finished> {
    let catalog = args.catalog.load()?;
    let markdown = args.markdown.markdown.as_ref();
    args.results.check(markdown)?;
    let screen = args.results.screen(markdown);
    let table = args.conn.table_or(DEFAULT_YEAR);
    let options = args.timing.options(&catalog, args.names.iter().map(|q| q.to_ascii_uppercase()).collect())?;
    let managed = args.timing.managed_servers(args.timing.disk.is_some())?;
    let selected = registry.select_reachable(&args.conn, &table).await?;
    // Checked before a server is touched; then the servers restart inside it.
    let limits = super::bench::limits::Limits::of(None, args.timing.disk.as_ref(), false);
    let under_limit = match &limits {
        Some(limits) => {
            let disk = limits.disk.as_ref().expect("asked for");
            // `start` refuses a server `just setup` did not start before it touches any.
            super::bench::disk::check_can_throttle(disk, &selected, managed.as_ref())?;
            Some(super::bench::limits::UnderLimit::start(limits, &selected, managed.as_ref(), &|line| eprintln!("{line}")).await?)
        }
        None => None,
    };
    let measured = measure_under(&args, registry, &catalog, options, &selected, managed.as_ref(), limits.as_ref(), &table).await;
    if let Some(under) = under_limit {
        under.end(&|line| eprintln!("{line}")).await;
    }
    let (record, warning, json_path) = measured?;


    let json = serde_json::to_string_pretty(&record)?;
    let charts = charts(&record)?;
    let files = RunFiles { json_path: &json_path, json: &json, charts_at: |md: &Path| write_charts(md, &charts), render: |link: &str| markdown_with_charts(&record, &charts, link) };
    let mut finished = files.write(&args.results, markdown)?;
    let answers = answers_dir(&json_path);
    if answers.is_dir() {
        finished = finished.wrote(answers);
    }

    screen.line(results_table(&record, Style::Terminal));
    // Again beside the numbers it invalidates.
    for line in &warning {
        eprintln!("{line}");
    }
    screen.lines(server_lines(&record.context));
    screen.line(format!("{}; {}", record.context.cold.label, ghbench_report::limit_label(&record.context)));
    let problems = problems(&record);
    for line in reconnect_notes(&record).iter().chain(&problems) {
        eprintln!("{line}");
    }
    Ok(finished.trusted_unless(&problems, record.no_disagreement()))
}

/// The run itself, on servers already under `limits` (if any): the
/// engines connected, the queries timed and verified, the record kept as
/// it goes; the record, the data warning and where the record is.
#[allow(clippy::too_many_arguments)]
async fn measure_under(
    args: &QueryArgs,
    registry: &Engines,
    catalog: &ghbench_olap::Catalog,
    options: ghbench_olap::runner::QueryOptions,
    selected: &[crate::options::Selected],
    managed: Option<&super::servers::ManagedServers>,
    limits: Option<&super::bench::limits::Limits>,
    table: &ghbench_core::TableName,
) -> Result<(ghbench_olap::RunRecord, Vec<String>, PathBuf)> {
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
    let mut backends = connect_backends(selected, table).await?;
    let progress = QueryProgress::new();
    // Written after every query (unfinished) and again at the end; a resumed
    // run finishes the record it went on from.
    let resume = match &args.resume {
        Some(path) => Some((super::resume::unfinished(path)?, answers_dir(path))),
        None => None,
    };
    let json_path = match &args.resume {
        Some(path) => path.clone(),
        None => args.results.record_path("olap"),
    };
    crate::outcome::written_as_it_goes(&json_path);
    crate::outcome::written_as_it_goes(&answers_dir(&json_path));
    let cooler = args.timing.cooler(selected, managed, table, limits.cloned());
    if options.cold {
        for line in cooler.describe() {
            progress.bar.suspend(|| eprintln!("cold: {line}"));
        }
    }
    let before_runs = super::bench::limits::drop_page_cache_under(limits, &|line| progress.bar.suspend(|| eprintln!("{line}")));
    let plan = RunPlan { queries: options, baseline, concurrency: args.concurrency.options(), record_to: Some(KeptAsItGoes::at(&json_path)), resume, cold_method: args.timing.cold_method(), before_runs };
    let measured = measure(&mut backends, catalog, plan, table, &progress, &cooler).await;
    progress.bar.finish_and_clear();
    for backend in &backends {
        backend.close().await;
    }
    let (record, warning) = measured?;
    Ok((record, warning, json_path))
}

/// One bar over every run, ticking on its own so the elapsed time moves
/// during a long query; indicatif draws only on a terminal. Off one (a log,
/// CI) a timestamped line says each cooling and each run as it ends, and a
/// run still going says so every minute (a query of hours on a year of data).
pub struct QueryProgress {
    pub bar: ProgressBar,
    log: Arc<Log>,
    /// The run going on, and since when: what the minute's line names.
    current: Arc<Mutex<Option<(String, Instant)>>>,
    /// Stops the minute's lines when the progress is dropped.
    done: Arc<AtomicBool>,
}

/// How often a long run says it is still going, off a terminal.
const STILL_RUNNING_EVERY: Duration = Duration::from_secs(60);

impl Default for QueryProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl QueryProgress {
    pub fn new() -> Self {
        let multi = MultiProgress::new();
        let bar = multi.add(ProgressBar::new(0));
        bar.set_style(
            ProgressStyle::with_template("{prefix}[{bar:30}] {pos}/{len} runs  {elapsed_precise}  {msg}")
                .expect("template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(500));
        let (log, current, done) = (Arc::new(Log::new(multi)), Arc::new(Mutex::new(None)), Arc::new(AtomicBool::new(false)));
        if !log.on_terminal() {
            let (log, current, done) = (log.clone(), current.clone(), done.clone());
            std::thread::spawn(move || still_running(&log, &current, &done));
        }
        QueryProgress { bar, log, current, done }
    }

    /// On the bar; and, when there is no bar, as a log line when `worth_a_line`.
    fn say(&self, what: &str, worth_a_line: bool) {
        if worth_a_line {
            self.log.log_only(format!("{}{what}", self.bar.prefix()));
        }
        self.bar.set_message(what.to_string());
    }
}

impl Drop for QueryProgress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Every [`STILL_RUNNING_EVERY`] that one run has gone on, a line naming it
/// and how long it has run, until `done`.
fn still_running(log: &Log, current: &Mutex<Option<(String, Instant)>>, done: &AtomicBool) {
    let mut said_at = Instant::now();
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(500));
        let running = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some((what, since)) = running else { continue };
        if since.elapsed() >= STILL_RUNNING_EVERY && said_at.elapsed() >= STILL_RUNNING_EVERY {
            log.log_only(format!("{what}: still running after {:.0} min", since.elapsed().as_secs_f64() / 60.0));
            said_at = Instant::now();
        }
    }
}

impl Progress for QueryProgress {
    fn event(&self, event: RunEvent<'_>) {
        match event {
            RunEvent::Planned { runs } => self.bar.set_length(runs),
            RunEvent::Cooling { engine, variant, query, how } => self.say(&format!("{query} {variant} on {engine}: making it cold ({how})"), true),
            RunEvent::Running { engine, variant, query, label } => {
                let what = format!("{query} {variant} on {engine}: {label}");
                *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some((format!("{}{what}", self.bar.prefix()), Instant::now()));
                self.say(&what, false)
            }
            RunEvent::Ran { engine, seconds: s } => {
                let ran = self.current.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some((what, _)) = ran {
                    self.log.log_only(format!("{what} in {} s", seconds(s)));
                }
                self.bar.inc(1);
                self.bar.set_message(format!("{engine}: {} s", seconds(s)));
            }
            // A run that failed said no `Ran`: it is not running any more.
            RunEvent::QueryDone { .. } => drop(self.current.lock().unwrap_or_else(|p| p.into_inner()).take()),
            RunEvent::Loading { engine, clients, seconds } => {
                self.say(&format!("{engine}: {} at once for {seconds:.0} s (concurrency phase, warm-up included)", ghbench_olap::concurrency::clients_said(clients)), true)
            }
        }
    }
}

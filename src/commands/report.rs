//! `ghbench report`: re-renders a saved run (table, Markdown, or an HTML
//! page with charts), or compares two.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use ghbench_olap::bench::{BenchRecord, BENCH_SCHEMA};
use ghbench_olap::record::{RunRecord, INDEX_SCHEMA};
use ghbench_olap::render::bench::{bench_markdown, bench_problems, largest, size_text, BenchCharts};
use ghbench_olap::render::concurrency::concurrency_text;
use ghbench_olap::render::regime::regime_text;
use ghbench_olap::render::{bench_comparison, bench_html, comparison, data_warning, html, markdown, no_disagreement, print_servers, problems, results_table, Style, DEFAULT_NOISE};

use super::olap::write;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench report results/olap-20260101T120000Z.json              # the table again
  ghbench report --markdown results/olap-20260101T120000Z.json   # the Markdown report
  ghbench report --html results/olap-20260101T120000Z.json       # writes results/olap-20260101T120000Z.html
  ghbench report --html results/olap-20260101T120000Z.json --out report.html
  ghbench report before.json after.json                          # after vs before: every query, variant
                                                                 # and engine of either (faster, slower,
                                                                 # failed, only in one, answers differ)
  ghbench report bench-old.json bench-new.json                   # two benches, size by size
  ghbench report --html results/bench-20260101T120000Z.json      # a whole `ghbench bench` (sizes, growth)

The HTML page needs nothing else to be read: charts are inline SVG, styles are in
the page, nothing is fetched from the network.

Exit status, showing one file: 0 when its results are whole and verified; 1 when
they cannot be trusted as they stand (engines disagree, a failure, or a partial
record: unfinished, or resumed from a run that stopped), as the run that wrote it
exited. Comparing two files exits 0.")]
pub struct ReportArgs {
    /// One results JSON file to show, or two to compare (the second against the first).
    #[arg(required = true, num_args = 1..=2, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,

    /// Print Markdown instead of a terminal table.
    #[arg(long, conflicts_with = "html")]
    pub markdown: bool,

    /// Write one self-contained HTML page of the run: per query a table and a chart
    /// (median, min-max whiskers, ✓/✗ verification), load throughput and storage
    /// charts, each engine's server and caveat, the data it held, the environment and
    /// the paper's published numbers. Prints where it wrote it.
    #[arg(long)]
    pub html: bool,

    /// Where --html writes the page [default: beside FILE.json, with .html].
    #[arg(long, value_name = "FILE.html", requires = "html")]
    pub out: Option<PathBuf>,

    /// When comparing: medians within this fraction of each other count as the same.
    #[arg(long, default_value_t = DEFAULT_NOISE)]
    pub noise: f64,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let saved = args.files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let style = if args.markdown { Style::Markdown } else { Style::Terminal };
    match saved.as_slice() {
        [Saved::Bench(bench)] => return show_bench(bench, &args),
        [_, _] if args.html => bail!("--html renders one results file; to compare two, leave it out"),
        [Saved::Bench(a), Saved::Bench(b)] => {
            print!("{}", bench_comparison(a, b, args.noise, style));
            return Ok(ExitCode::SUCCESS);
        }
        // A query run against a bench: the bench's size that holds as many events.
        [Saved::Run(a), Saved::Bench(b)] => {
            print!("{}", comparison(a, size_like(b, a, &args.files[1])?, args.noise, style));
            return Ok(ExitCode::SUCCESS);
        }
        [Saved::Bench(a), Saved::Run(b)] => {
            print!("{}", comparison(size_like(a, b, &args.files[0])?, b, args.noise, style));
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let records: Vec<&RunRecord> = saved.iter().map(Saved::run).collect::<Result<_>>()?;
    match records.as_slice() {
        [one] if args.html => {
            let path = args.out.clone().unwrap_or_else(|| args.files[0].with_extension("html"));
            write(&path, &html(one)?)?;
            println!("wrote {}", path.display());
        }
        [one] if args.markdown => println!("{}", markdown(one)),
        [one] => {
            for line in data_warning(&one.context) {
                println!("{line}");
            }
            println!("{}", results_table(one, style));
            print_servers(&one.context);
            println!("{}; recorded {}", one.context.cold.label, one.context.started_at);
            for line in problems(one) {
                println!("{line}");
            }
        }
        [a, b] => print!("{}", comparison(a, b, args.noise, style)),
        _ => unreachable!("clap allows one or two files"),
    }
    // One record: the status its run exited with, so a script can tell a
    // partial or unverified record from its file alone.
    Ok(match records.as_slice() {
        [one] if !(problems(one).is_empty() && no_disagreement(one)) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// The run of `bench`'s size that holds as many events as `run` (the first
/// engine's ledger), or why there is none.
fn size_like<'a>(bench: &'a BenchRecord, run: &RunRecord, path: &Path) -> Result<&'a RunRecord> {
    let events = |r: &RunRecord| r.context.engines.first().and_then(|e| e.data.as_ref()).map(|d| d.events);
    let wanted = events(run);
    if let Some(size) = bench.sizes.iter().find(|s| wanted.is_some() && events(&s.run) == wanted) {
        return Ok(&size.run);
    }
    let held: Vec<String> = bench.sizes.iter().map(|s| format!("{} h = {} events", s.hours, s.events().map_or("?".into(), |n| n.to_string()))).collect();
    bail!(
        "the query run holds {} events, and no size of the bench {} does ({}): compare it with a bench or a query run on the same data",
        wanted.map_or("an unknown number of".into(), |n| n.to_string()),
        path.display(),
        held.join(", ")
    )
}

/// A results file: one query run, or a whole `ghbench bench`.
enum Saved {
    Run(Box<RunRecord>),
    Bench(BenchRecord),
}

impl Saved {
    fn run(&self) -> Result<&RunRecord> {
        match self {
            Saved::Run(run) => Ok(run),
            Saved::Bench(bench) => largest(bench).context("the bench record holds no size"),
        }
    }
}

fn load(path: &Path) -> Result<Saved> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let schema = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.get("schema")?.as_str().map(str::to_string));
    // An index record is this ghbench's own, of any version: not one of
    // another ghbench, as an unknown schema is said to be.
    let kind = |schema: &str| schema.split_once('/').map(|(kind, _)| kind.to_string());
    if let Some(schema) = schema.as_deref().filter(|s| kind(s) == kind(INDEX_SCHEMA)) {
        bail!(
            "{} is a `ghbench index` record ({schema}): report shows query and bench results (results/olap-*.json, results/bench-*.json), not index builds; this file's build times are in its JSON (engines[].indexes[].seconds), and each query or bench result lists the index sizes it ran with",
            path.display()
        );
    }
    if schema.as_deref() == Some(BENCH_SCHEMA) {
        let bench = serde_json::from_str(&text).with_context(|| format!("{}: not a readable bench record", path.display()))?;
        return Ok(Saved::Bench(bench));
    }
    Ok(Saved::Run(Box::new(RunRecord::read(&text).with_context(|| path.display().to_string())?)))
}

/// One bench record: its page, its Markdown (without the chart files, which
/// `ghbench bench` wrote beside it), or its tables.
fn show_bench(bench: &BenchRecord, args: &ReportArgs) -> Result<ExitCode> {
    let run = largest(bench).context("the bench record holds no size")?;
    if args.html {
        let path = args.out.clone().unwrap_or_else(|| args.files[0].with_extension("html"));
        write(&path, &bench_html(bench, &BenchCharts::draw(bench)?)?)?;
        println!("wrote {}", path.display());
    } else if args.markdown {
        println!("{}\n---\n\n{}", bench_markdown(bench, &BenchCharts::default(), ""), markdown(run));
    } else {
        for size in &bench.sizes {
            println!("{}", size_text(size));
            if let Some(text) = concurrency_text(&size.run, Style::Terminal) {
                println!("{text}");
            }
        }
        if let Some(text) = regime_text(bench) {
            println!("{text}");
        }
        print_servers(&run.context);
        println!("first runs: {}; recorded {}", run.context.cold.label, run.context.started_at);
        for line in bench_problems(bench) {
            println!("{line}");
        }
    }
    let verified = bench.sizes.iter().all(|s| s.verdict().1);
    Ok(if bench_problems(bench).is_empty() && verified { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}


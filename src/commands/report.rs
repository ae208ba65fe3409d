//! `ghbench report`: re-renders a saved run (table, Markdown, or an HTML
//! page with charts), or compares two.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use ghbench_olap::bench::{BenchRecord, BENCH_SCHEMA};
use ghbench_olap::record::{RunRecord, INDEX_SCHEMA};
use ghbench_report::bench::{bench_markdown, bench_problems, largest, size_text, BenchCharts};
use ghbench_report::concurrency::concurrency_text;
use ghbench_report::regime::regime_text;
use ghbench_report::{bench_comparison, bench_html, comparison, data_warning, html, markdown, problems, results_table, server_lines, Style, DEFAULT_NOISE};

use crate::outcome::{Finished, Screen};
use crate::output::Target;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench report results/olap-20260101T120000Z.json              # the table again
  ghbench report results/olap-20260101T120000Z.json --markdown -    # the Markdown report
  ghbench report results/olap-20260101T120000Z.json --html report.html
  ghbench report before.json after.json                          # after vs before: every query, variant
                                                                 # and engine of either (faster, slower,
                                                                 # failed, only in one, answers differ)
  ghbench report bench-old.json bench-new.json                   # two benches, size by size
  ghbench report results/bench-20260101T120000Z.json --html -    # a whole `ghbench bench` (sizes, growth)

The HTML page needs nothing else to be read: charts are inline SVG, styles are in
the page, nothing is fetched from the network.

Exit status, showing one file: 0 when its results are whole and verified; 1 when
they cannot be trusted as they stand (engines disagree, a failure, or a partial
record: unfinished, or resumed from a run that stopped), as the run that wrote it
exited. Comparing two files exits 0. 2: an error (a file that cannot be read or is
not a results record).")]
pub struct ReportArgs {
    /// One results JSON file to show, or two to compare (the second against the first).
    #[arg(required = true, num_args = 1..=2, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,

    /// The Markdown report instead of a terminal table, to FILE (`-`:
    /// standard output; without its charts, which the run wrote beside its record).
    #[arg(long, value_name = "FILE", conflicts_with = "html")]
    pub markdown: Option<Target>,

    /// One self-contained HTML page of the run, to FILE (`-`: standard
    /// output): per query a table and a chart (median, min-max whiskers, ✓/✗
    /// verification), load throughput and storage charts, each engine's
    /// server and caveat, the data it held, the environment and the paper's
    /// published numbers.
    #[arg(long, value_name = "FILE")]
    pub html: Option<Target>,

    /// When comparing: medians within this fraction of each other count as the same.
    #[arg(long, default_value_t = DEFAULT_NOISE)]
    pub noise: f64,
}

pub fn run(args: ReportArgs) -> Result<Finished> {
    args.check_targets()?;
    let saved = args.files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let style = if args.markdown.is_some() { Style::Markdown } else { Style::Terminal };
    let compared = |text: String| -> Result<Finished> {
        Ok(Finished::ok().wrote_all(args.markdown.as_ref().unwrap_or(&Target::Stdout).write(&text)?))
    };
    match saved.as_slice() {
        [Saved::Bench(bench)] => return show_bench(bench, &args),
        [_, _] if args.html.is_some() => bail!("--html renders one results file; to compare two, leave it out"),
        [Saved::Bench(a), Saved::Bench(b)] => return compared(bench_comparison(a, b, args.noise, style)),
        // A query run against a bench: the bench's size that holds as many events.
        [Saved::Run(a), Saved::Bench(b)] => return compared(comparison(a, size_like(b, a, &args.files[1])?, args.noise, style)),
        [Saved::Bench(a), Saved::Run(b)] => return compared(comparison(size_like(a, b, &args.files[0])?, b, args.noise, style)),
        _ => {}
    }
    let records: Vec<&RunRecord> = saved.iter().map(Saved::run).collect::<Result<_>>()?;
    let one = match records.as_slice() {
        [one] => *one,
        [a, b] => return compared(comparison(a, b, args.noise, style)),
        _ => unreachable!("clap allows one or two files"),
    };
    let problems = problems(one);
    // One record: the status its run exited with, so a script can tell a
    // partial or unverified record from its file alone.
    let trusted = problems.is_empty() && one.no_disagreement();
    let finished = match (&args.html, &args.markdown) {
        (Some(page), _) => {
            why_untrusted(&problems);
            Finished::ok().wrote_all(page.write(&html(one)?)?)
        }
        (None, Some(target)) => {
            why_untrusted(&problems);
            Finished::ok().wrote_all(target.write(&markdown(one))?)
        }
        (None, None) => {
            let screen = Screen::new(false);
            screen.lines(data_warning(&one.context));
            screen.line(results_table(one, style));
            screen.lines(server_lines(&one.context));
            screen.line(format!("{}; recorded {}", one.context.cold.label, one.context.started_at));
            screen.lines(&problems);
            Finished::ok()
        }
    };
    Ok(finished.trusted_if(trusted))
}

/// Why a record cannot be trusted as it stands, on standard error, where a
/// page or Markdown written to a file leaves the exit status 1 unexplained.
fn why_untrusted(problems: &[String]) {
    for line in problems {
        eprintln!("{line}");
    }
}

impl ReportArgs {
    /// A page or report written over a results file would lose it: refused,
    /// as is a `.json` target (most likely a results file taken for one).
    fn check_targets(&self) -> Result<()> {
        for (option, target) in [("--html", &self.html), ("--markdown", &self.markdown)] {
            let Some(target) = target else { continue };
            if let Target::File(path) = target {
                let same = |file: &PathBuf| file == path || std::fs::canonicalize(file).ok().is_some_and(|f| std::fs::canonicalize(path).ok() == Some(f));
                if self.files.iter().any(same) || path.extension().is_some_and(|e| e == "json") {
                    bail!("{option} {} would write over a results file: give the page's own file (e.g. report.html), or - for standard output", path.display());
                }
            }
            target.check(option)?;
        }
        Ok(())
    }
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
fn show_bench(bench: &BenchRecord, args: &ReportArgs) -> Result<Finished> {
    // A bench stopped in its first size shows what it finished there.
    let run = largest(bench).or(bench.measuring.as_ref().map(|m| &m.run)).context("the bench record holds no size")?;
    let problems = bench_problems(bench);
    let finished = if let Some(page) = &args.html {
        why_untrusted(&problems);
        Finished::ok().wrote_all(page.write(&bench_html(bench, &BenchCharts::draw(bench)?)?)?)
    } else if let Some(target) = &args.markdown {
        why_untrusted(&problems);
        Finished::ok().wrote_all(target.write(&format!("{}\n---\n\n{}", bench_markdown(bench, &BenchCharts::default(), ""), markdown(run)))?)
    } else {
        let screen = Screen::new(false);
        screen.lines(ghbench_report::bench::head_lines(bench));
        for size in bench.sizes.iter().chain(&bench.measuring) {
            screen.line(size_text(size));
            if let Some(text) = concurrency_text(&size.run, Style::Terminal) {
                screen.line(text);
            }
        }
        if let Some(text) = regime_text(bench) {
            screen.line(text);
        }
        screen.lines(server_lines(&run.context));
        screen.line(format!("first runs: {}; recorded {}", run.context.cold.label, run.context.started_at));
        screen.lines(&problems);
        Finished::ok()
    };
    let verified = bench.sizes.iter().all(|s| s.verdict().1);
    Ok(finished.trusted_unless(&problems, verified))
}


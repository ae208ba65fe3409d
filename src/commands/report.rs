//! `ghbench report`: re-renders a saved run, or compares two.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;
use ghbench_olap::record::RunRecord;
use ghbench_olap::render::{comparison, data_warning, markdown, print_servers, problems, results_table, Style, DEFAULT_NOISE};

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench report results/olap-20260101T120000Z.json              # the table again
  ghbench report --markdown results/olap-20260101T120000Z.json   # the Markdown report
  ghbench report before.json after.json                          # after vs before, per query")]
pub struct ReportArgs {
    /// One results JSON file to show, or two to compare (the second against the first).
    #[arg(required = true, num_args = 1..=2, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,

    /// Print Markdown instead of a terminal table.
    #[arg(long)]
    pub markdown: bool,

    /// When comparing: medians within this fraction of each other count as the same.
    #[arg(long, default_value_t = DEFAULT_NOISE)]
    pub noise: f64,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let records = args.files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let style = if args.markdown { Style::Markdown } else { Style::Terminal };
    match records.as_slice() {
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
    Ok(ExitCode::SUCCESS)
}

fn load(path: &Path) -> Result<RunRecord> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    RunRecord::read(&text).with_context(|| path.display().to_string())
}

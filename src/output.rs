//! One output contract for every command that writes results: `--output DIR`
//! for the full set (record, Markdown, charts, page), and `--json FILE` /
//! `--markdown FILE` where a user wants one file, `-` meaning standard output.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context as _, Result};
use clap::Args;

use crate::commands::olap::write;
use crate::outcome::Screen;

/// A file option's value: a path, or `-` for standard output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl FromStr for Target {
    type Err = String;

    fn from_str(value: &str) -> std::result::Result<Target, String> {
        match value {
            "" => Err("give a file, or - for standard output".into()),
            "-" => Ok(Target::Stdout),
            path => Ok(Target::File(PathBuf::from(path))),
        }
    }
}

impl Target {
    pub fn is_stdout(&self) -> bool {
        matches!(self, Target::Stdout)
    }

    /// Checked before any work, so a run of hours is not lost at its end to
    /// a path that names a folder, lies under a file or cannot be written:
    /// its folder is made and the file tried (a file that was not there
    /// before is not left behind).
    pub fn check(&self, option: &str) -> Result<()> {
        let Target::File(path) = self else { return Ok(()) };
        if path.is_dir() {
            bail!("{option} {} is a folder; give a file (or - for standard output)", path.display());
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::options::check_folder(option, parent, "to hold the file")?;
            std::fs::create_dir_all(parent).with_context(|| format!("creating the folder of {option} {}", path.display()))?;
        }
        let existed = path.exists();
        std::fs::OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("{option} {} cannot be written", path.display()))?;
        if !existed {
            std::fs::remove_file(path).with_context(|| format!("{option} {}", path.display()))?;
        }
        Ok(())
    }

    /// Writes `text` there (a file whole or not at all); the path written,
    /// None for standard output.
    pub fn write(&self, text: &str) -> Result<Option<PathBuf>> {
        match self {
            Target::Stdout => {
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
                Ok(None)
            }
            Target::File(path) => {
                write(path, text)?;
                Ok(Some(path.clone()))
            }
        }
    }
}

/// `--output DIR` and `--json FILE`: what every command that writes a
/// results record takes.
#[derive(Args, Debug, Clone)]
pub struct ResultsArgs {
    /// Folder for the results: the JSON record (`<command>-<UTC time>.json`),
    /// and where the command makes them its Markdown report, charts and page
    /// beside it. Created when missing.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub output: PathBuf,

    /// Also write the JSON record to FILE (`-`: standard output; the tables
    /// then go to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<Target>,
}

/// `--markdown FILE`: the Markdown report as one file (its charts in
/// `<FILE's stem>-charts/` beside it), or `-` for standard output.
#[derive(Args, Debug, Clone)]
pub struct MarkdownArg {
    /// Also write the Markdown report to FILE, its charts in a folder beside
    /// it (`-`: standard output, linking the charts in --output's folder).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<Target>,
}

impl ResultsArgs {
    /// Checks every path before any work: the folder can be made, the file
    /// options are files, at most one takes standard output.
    pub fn check(&self, markdown: Option<&Target>) -> Result<()> {
        crate::commands::olap::ensure_output_dir(&self.output)?;
        if let Some(json) = &self.json {
            json.check("--json")?;
        }
        if let Some(markdown) = markdown {
            markdown.check("--markdown")?;
        }
        if self.json.as_ref().is_some_and(Target::is_stdout) && markdown.is_some_and(Target::is_stdout) {
            bail!("--json - and --markdown - would both write to standard output; send one to a file");
        }
        Ok(())
    }

    /// Where the human-readable view goes (standard error when a file
    /// option took standard output).
    pub fn screen(&self, markdown: Option<&Target>) -> Screen {
        Screen::new(self.json.as_ref().is_some_and(Target::is_stdout) || markdown.is_some_and(Target::is_stdout))
    }

    /// A new record's path in the folder: `<kind>-<UTC time>.json`.
    pub fn record_path(&self, kind: &str) -> PathBuf {
        crate::commands::olap::output_path(&self.output, kind, "json")
    }

    /// Writes the record's JSON to `--json`'s target too, when given; what
    /// it wrote.
    pub fn also_json(&self, json: &str) -> Result<Option<PathBuf>> {
        match &self.json {
            Some(target) => target.write(json),
            None => Ok(None),
        }
    }
}

/// A JSON document ghbench writes, named by its schema and version first
/// (`"schema": "ghbench-ingest/1"`), the value's fields after it.
#[derive(serde::Serialize)]
pub struct Schemed<'a, T: serde::Serialize> {
    pub schema: &'static str,
    #[serde(flatten)]
    pub body: &'a T,
}

impl<'a, T: serde::Serialize> Schemed<'a, T> {
    pub fn json(schema: &'static str, body: &'a T) -> Result<String> {
        Ok(serde_json::to_string_pretty(&Schemed { schema, body })? + "\n")
    }
}

/// The Markdown report to `target`: a file gets its charts in a folder of its
/// own beside it (via `write_charts(md_path) -> charts folder name`), while
/// standard output links those already in `charts_dir`. `render(link)` makes
/// the Markdown with charts linked under `link`. What it wrote.
pub fn markdown_to(
    target: &Target,
    charts_dir: &Path,
    write_charts: impl FnOnce(&Path) -> Result<(PathBuf, String)>,
    render: impl FnOnce(&str) -> String,
) -> Result<Vec<PathBuf>> {
    match target {
        Target::Stdout => {
            target.write(&render(&charts_dir.to_string_lossy()))?;
            Ok(Vec::new())
        }
        Target::File(path) => {
            let (dir, name) = write_charts(path)?;
            write(path, &render(&name))?;
            Ok(vec![path.clone(), dir])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dash_is_standard_output_and_nothing_is_refused_as_empty() {
        assert_eq!("-".parse::<Target>(), Ok(Target::Stdout));
        assert_eq!("a.json".parse::<Target>(), Ok(Target::File("a.json".into())));
        assert!("".parse::<Target>().is_err());
    }

    #[test]
    fn a_file_option_naming_a_folder_or_a_path_under_a_file_is_refused_before_work() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Target::File(dir.path().to_path_buf());
        assert!(folder.check("--json").unwrap_err().to_string().contains("is a folder"));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let under = Target::File(file.join("a.json"));
        assert!(format!("{:#}", under.check("--json").unwrap_err()).contains("is a file, not a folder"));
        let new = dir.path().join("new/a.json");
        assert!(Target::File(new.clone()).check("--json").is_ok());
        assert!(!new.exists(), "the file tried is not left behind");
    }

    #[test]
    fn only_one_option_may_take_standard_output() {
        let args = ResultsArgs { output: tempfile::tempdir().unwrap().path().join("r"), json: Some(Target::Stdout) };
        let err = args.check(Some(&Target::Stdout)).unwrap_err().to_string();
        assert!(err.contains("both write to standard output"), "{err}");
        assert!(args.check(Some(&Target::File("r.md".into()))).is_ok());
    }
}

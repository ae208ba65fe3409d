//! One output contract for every command that writes results: `--output DIR`
//! for the full set (record, Markdown, charts, page), and `--json FILE` /
//! `--markdown FILE` where a user wants one file, `-` meaning standard output.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context as _, Result};
use clap::Args;

use crate::commands::olap::write;
use crate::outcome::{Finished, Screen};

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
        // A pipe is not opened to try it: that would wait for its reader.
        if in_place(path) {
            return Ok(());
        }
        // A file is written beside its path and renamed over it (see
        // `olap::write`): what is tried is that file, in that folder.
        let beside = crate::commands::olap::beside(path);
        std::fs::OpenOptions::new().create(true).append(true).open(&beside).with_context(|| format!("{option} {} cannot be written", path.display()))?;
        std::fs::remove_file(&beside).with_context(|| format!("{option} {}", path.display()))?;
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
            Target::File(path) if in_place(path) => {
                std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
                Ok(Some(path.clone()))
            }
            Target::File(path) => {
                write(path, text)?;
                Ok(Some(path.clone()))
            }
        }
    }
}

/// A path that exists and is not a regular file (a named pipe, `/dev/stdout`,
/// a shell's `>(…)`): written in place, never replaced by a file.
fn in_place(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// `--output DIR` and `--json FILE`: what every command that writes a
/// results record takes.
#[derive(Args, Debug, Clone)]
pub struct ResultsArgs {
    /// Folder for the results: the JSON record (`olap-`, `bench-` or
    /// `index-<UTC time>.json`), and beside it the command's Markdown report,
    /// charts and page. Created when missing.
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

/// A run's files: `record` (its JSON) at `json_path`, the Markdown report
/// beside it with its charts (`charts_at(md_path)` writes them, giving their
/// folder and the name to link), then --json's and --markdown's files.
/// `render(link)` is the Markdown with its charts linked under `link`. What
/// it wrote, the record first.
pub struct RunFiles<'a, C, R> {
    pub json_path: &'a Path,
    pub json: &'a str,
    pub charts_at: C,
    pub render: R,
}

impl<C: Fn(&Path) -> Result<(PathBuf, String)>, R: Fn(&str) -> String> RunFiles<'_, C, R> {
    pub fn write(self, results: &ResultsArgs, markdown: Option<&Target>) -> Result<Finished> {
        write(self.json_path, self.json)?;
        let md_path = self.json_path.with_extension("md");
        let (charts_dir, link) = (self.charts_at)(&md_path)?;
        write(&md_path, &(self.render)(&link))?;
        let mut finished = Finished::ok().wrote(self.json_path).wrote(&md_path).wrote(&charts_dir).wrote_all(results.also_json(self.json)?);
        if let Some(target) = markdown {
            finished = finished.wrote_all(markdown_to(target, &charts_dir, &self.charts_at, &self.render)?);
        }
        Ok(finished)
    }
}

/// Where the human-readable view of a command with one `--json` summary
/// (`ingest`, `normalize`) goes: standard error when `--json -` took standard output.
pub fn screen_beside(json: Option<&Target>) -> Screen {
    Screen::new(json.is_some_and(Target::is_stdout))
}

/// `value`, named by `schema`, to `--json`'s target when one was given; what it wrote.
pub fn write_summary(json: Option<&Target>, schema: &'static str, value: &impl serde::Serialize) -> Result<Finished> {
    Ok(match json {
        Some(target) => Finished::ok().wrote_all(target.write(&Schemed::json(schema, value)?)?),
        None => Finished::ok(),
    })
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
fn markdown_to(target: &Target, charts_dir: &Path, write_charts: impl Fn(&Path) -> Result<(PathBuf, String)>, render: impl Fn(&str) -> String) -> Result<Vec<PathBuf>> {
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
    fn a_pipe_is_written_in_place_not_replaced_by_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path in a folder of the test's own.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read_to_string(fifo).unwrap()
        });
        let target = Target::File(fifo.clone());
        assert_eq!(target.write("{\"schema\": \"x\"}").unwrap(), Some(fifo.clone()));
        assert_eq!(reader.join().unwrap(), "{\"schema\": \"x\"}");
        assert!(!std::fs::metadata(&fifo).unwrap().is_file(), "still a pipe");
    }

    #[test]
    fn only_one_option_may_take_standard_output() {
        let args = ResultsArgs { output: tempfile::tempdir().unwrap().path().join("r"), json: Some(Target::Stdout) };
        let err = args.check(Some(&Target::Stdout)).unwrap_err().to_string();
        assert!(err.contains("both write to standard output"), "{err}");
        assert!(args.check(Some(&Target::File("r.md".into()))).is_ok());
    }
}

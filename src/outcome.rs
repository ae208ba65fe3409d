//! How a command ended, said the same way by every command: its exit status
//! has one meaning per code, and its last line on standard error names the
//! files it wrote, so a script needs neither to parse messages nor to guess
//! the newest file in a folder.

use std::fmt::Display;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit statuses (`ghbench --help` and the guide say them).
pub mod status {
    /// The run finished and its results are whole and verified.
    pub const OK: u8 = 0;
    /// The run finished and wrote its files, but its results cannot be
    /// trusted as they stand: engines disagree, hours failed or are partial,
    /// an answer under load was wrong, a phase failed, the record is partial.
    pub const UNTRUSTED: u8 = 1;
    /// An error stopped it: bad usage, a server that cannot be reached, a
    /// table that does not exist, a file that cannot be written.
    pub const ERROR: u8 = 2;
    /// Ctrl-C (SIGINT); SIGTERM is 143, as shells count (128 + the signal).
    pub const INTERRUPTED: u8 = 130;
}

/// What a command that ran to its end reports: whether its results can be
/// trusted, and the files and folders it wrote, the record first.
#[derive(Debug, Default)]
#[must_use]
pub struct Finished {
    untrusted: bool,
    wrote: Vec<PathBuf>,
}

impl Finished {
    /// Results whole and verified (so far: see [`Finished::trusted_if`]).
    pub fn ok() -> Finished {
        Finished::default()
    }

    /// Trusted only if `trusted` (and if it was before).
    pub fn trusted_if(mut self, trusted: bool) -> Finished {
        self.untrusted |= !trusted;
        self
    }

    /// Adds a file or folder it wrote (kept in the order written).
    pub fn wrote(mut self, path: impl Into<PathBuf>) -> Finished {
        self.wrote.push(path.into());
        self
    }

    /// Adds what another step wrote.
    pub fn wrote_all(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Finished {
        self.wrote.extend(paths);
        self
    }

    /// This and `then` (a step run after it): trusted only if both are,
    /// with everything both wrote.
    pub fn and(self, then: Finished) -> Finished {
        self.trusted_if(then.is_trusted()).wrote_all(then.wrote)
    }

    pub fn is_trusted(&self) -> bool {
        !self.untrusted
    }

    /// The last line on standard error, when it wrote anything:
    /// `wrote PATH PATH …`, each path quoted as a POSIX shell reads it.
    pub fn wrote_line(&self) -> Option<String> {
        if self.wrote.is_empty() {
            return None;
        }
        let paths: Vec<String> = self.wrote.iter().map(|p| quoted(p)).collect();
        Some(format!("wrote {}", paths.join(" ")))
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(if self.untrusted { status::UNTRUSTED } else { status::OK })
    }
}

/// `path` as a shell word: as it is when it needs no quoting.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    match shlex::try_quote(&text) {
        Ok(word) => word.into_owned(),
        // A path with a NUL byte cannot exist; said as it is.
        Err(_) => text.into_owned(),
    }
}

/// Records written as a run goes (after every query, or every size of a
/// bench): however the command ends, an error or Ctrl-C included, the one
/// on disk is named, so going on with `--resume` needs no guessing.
static WRITTEN_AS_IT_GOES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// `path` is written as the run goes (see [`kept_so_far`]).
pub fn written_as_it_goes(path: &Path) {
    WRITTEN_AS_IT_GOES.lock().unwrap_or_else(|p| p.into_inner()).push(path.to_path_buf());
}

/// For a command that did not finish: what it kept of its run, said in two
/// lines, the second the `wrote …` line (empty when nothing is on disk yet).
pub fn kept_so_far() -> Vec<String> {
    let kept: Vec<PathBuf> = WRITTEN_AS_IT_GOES.lock().unwrap_or_else(|p| p.into_inner()).iter().filter(|p| p.exists()).cloned().collect();
    let Some(record) = kept.first() else { return Vec::new() };
    // One written whole (the error came after it): nothing to go on with.
    if unfinished(record) == Some(false) {
        return vec![Finished::ok().wrote_all(kept).wrote_line().expect("a path")];
    }
    let resume = format!("note: what was measured so far is kept in {}: give the same command with --resume {} to go on", quoted(record), quoted(record));
    vec![resume, Finished::ok().wrote_all(kept).wrote_line().expect("a path")]
}

/// Whether the record at `path` says it is unfinished (None: unreadable).
fn unfinished(path: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(path).ok()?;
    let record: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(!record.get("finished")?.as_bool()?)
}

/// Where the human-readable view goes: standard output, unless a file
/// option (`--json -`, `--markdown -`) took standard output for itself.
#[derive(Debug, Clone, Copy)]
pub struct Screen {
    to_stderr: bool,
}

impl Screen {
    pub fn new(stdout_taken: bool) -> Screen {
        Screen { to_stderr: stdout_taken }
    }

    pub fn line(&self, text: impl Display) {
        // A closed pipe is not an error here: the run goes on and writes its
        // files (SIGPIPE is ignored; `print!` would panic and end it as for a signal).
        let _ = if self.to_stderr { writeln!(std::io::stderr(), "{text}") } else { writeln!(std::io::stdout(), "{text}") };
    }

    pub fn lines(&self, lines: impl IntoIterator<Item = impl Display>) {
        for line in lines {
            self.line(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_run_is_untrusted_once_any_step_says_so() {
        let f = Finished::ok().trusted_if(true).trusted_if(false).trusted_if(true);
        assert!(!f.is_trusted());
        assert_eq!(f.exit_code(), ExitCode::from(status::UNTRUSTED));
        assert_eq!(Finished::ok().exit_code(), ExitCode::from(status::OK));
    }

    #[test]
    fn the_wrote_line_quotes_paths_a_shell_would_split() {
        assert_eq!(Finished::ok().wrote_line(), None);
        let f = Finished::ok().wrote("results/olap-1.json").wrote("my results/olap-1.md");
        assert_eq!(f.wrote_line().unwrap(), "wrote results/olap-1.json 'my results/olap-1.md'");
    }
}

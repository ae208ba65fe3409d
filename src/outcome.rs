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
    /// Why it is not to be trusted, in words, when the command said.
    why: Vec<String>,
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

    /// Trusted only if `problems` (the loud lines a run printed: `RESUMED: …`,
    /// `40 h: MISMATCH …`) is empty and `verified`; if not, why is kept for
    /// the line that explains the exit status.
    pub fn trusted_unless(mut self, problems: &[String], verified: bool) -> Finished {
        if let Some(why) = why_untrusted(problems, verified) {
            self.untrusted = true;
            self.why.push(why);
        }
        self
    }

    /// The line saying why the exit status is 1, when it is.
    pub fn untrusted_line(&self) -> Option<String> {
        self.untrusted.then(|| {
            let why = if self.why.is_empty() { "see the lines above".to_string() } else { self.why.join("; ") };
            format!("exit status {}, its results not to be trusted as they stand: {why}", status::UNTRUSTED)
        })
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
    pub fn and(mut self, then: Finished) -> Finished {
        let trusted = then.is_trusted();
        self.why.extend(then.why);
        self.trusted_if(trusted).wrote_all(then.wrote)
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

/// What the loud lines of a run say is wrong, by kind, in words (None:
/// nothing, and every query verified). A line is read past the size or
/// limit it is about (`40 h: `, `under a … limit …: `); indented lines go
/// on the line above; a line of no known kind is pointed to.
fn why_untrusted(problems: &[String], verified: bool) -> Option<String> {
    // Longer marks first: `MISMATCH under load` is not `MISMATCH`.
    const KINDS: [(&str, &str); 9] = [
        ("UNFINISHED", "it stopped before the end (UNFINISHED)"),
        ("RESUMED", "its numbers come from more than one run (RESUMED: a resumed run always says so, by its exit status too)"),
        ("MISMATCH under load", "an answer under load was wrong (MISMATCH under load)"),
        ("FAILED under load", "a phase of many clients failed (FAILED under load)"),
        ("ERRORS under load", "queries failed under load (ERRORS under load)"),
        ("MISMATCH", "the engines' answers disagree (MISMATCH)"),
        ("TIMED OUT", "a query was cut by --query-timeout (TIMED OUT)"),
        ("FAILED", "a query failed (FAILED)"),
        ("indexes failed", "an engine's indexes failed (indexes failed)"),
    ];
    let mut said: Vec<&str> = Vec::new();
    let mut unknown = false;
    for line in problems.iter().filter(|line| !line.starts_with(char::is_whitespace)) {
        let about = past_where(line);
        let kind = KINDS.iter().find(|(mark, _)| about.starts_with(mark) || (*mark == "indexes failed" && about.contains(": indexes failed: ")));
        match kind {
            Some((_, why)) if !said.contains(why) => said.push(why),
            Some(_) => {}
            None => unknown = true,
        }
    }
    let answers_said = said.iter().any(|why| why.contains("(MISMATCH)") || why.contains("(FAILED)") || why.contains("(TIMED OUT)"));
    if !verified && !answers_said {
        said.push("not every query was verified: see the report");
    }
    if unknown {
        said.push("see the lines above");
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// A loud line past the size (`40 h: `) or limit (`under a … limit …: `) it is about.
fn past_where(line: &str) -> &str {
    let sized = line.split_once(" h: ").filter(|(hours, _)| !hours.is_empty() && hours.bytes().all(|b| b.is_ascii_digit()));
    let line = sized.map_or(line, |(_, rest)| rest);
    match line.strip_prefix("under a ") {
        Some(rest) => rest.split_once(": ").map_or(line, |(_, about)| about),
        None => line,
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

/// For a command that did not finish: what it kept of its run (its
/// UNFINISHED line), how to go on, and the `wrote …` line last (nothing when
/// nothing is on disk yet).
pub fn kept_so_far() -> Vec<String> {
    let registered: Vec<PathBuf> = WRITTEN_AS_IT_GOES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // A name claimed and never written (stopped before its first query): its
    // claim goes, or it would stay beside the results for good.
    for path in registered.iter().filter(|p| !p.exists()) {
        let _ = std::fs::remove_file(crate::commands::olap::claim_of(path));
    }
    let kept: Vec<PathBuf> = registered.into_iter().filter(|p| p.exists()).collect();
    let Some(record) = kept.first() else { return Vec::new() };
    // One written whole (the error came after it): nothing to go on with.
    if unfinished(record) == Some(false) {
        return vec![Finished::ok().wrote_all(kept).wrote_line().expect("a path")];
    }
    let resume = format!("note: what was measured so far is kept in {}: give the same command with --resume {} to go on", quoted(record), quoted(record));
    let what = what_it_holds(record).map(|line| format!("note: {line}"));
    what.into_iter().chain([resume]).chain(Finished::ok().wrote_all(kept).wrote_line()).collect()
}

/// What an unfinished record holds, as `report` says it (its UNFINISHED line).
fn what_it_holds(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    if let Ok(bench) = serde_json::from_str::<ghbench_olap::bench::BenchRecord>(&text) {
        return ghbench_report::bench::partial_lines(&bench).into_iter().next();
    }
    let run: ghbench_olap::RunRecord = serde_json::from_str(&text).ok()?;
    ghbench_report::problems(&run).into_iter().find(|line| line.starts_with("UNFINISHED"))
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
    fn an_untrusted_run_says_why_by_the_kinds_of_its_loud_lines() {
        assert_eq!(Finished::ok().trusted_unless(&[], true).untrusted_line(), None);
        let resumed = ["RESUMED: sizes 40 h measured by the bench started 2026-11-29T10:00:00Z, which stopped; the rest by this one".to_string()];
        let line = Finished::ok().trusted_unless(&resumed, true).untrusted_line().unwrap();
        assert!(line.starts_with("exit status 1,") && line.contains("more than one run (RESUMED"), "{line}");
        let two = ["40 h: MISMATCH B corrected: polars disagrees".to_string(), "under a 1 GiB limit (5×): FAILED A corrected on postgres: gone".to_string()];
        let line = Finished::ok().trusted_unless(&two, true).untrusted_line().unwrap();
        assert!(line.contains("answers disagree (MISMATCH)") && line.contains("a query failed (FAILED)"), "{line}");
        let line = Finished::ok().trusted_unless(&[], false).untrusted_line().unwrap();
        assert!(line.contains("not every query was verified"), "{line}");
        let line = Finished::ok().trusted_unless(&["something new".to_string()], true).untrusted_line().unwrap();
        assert!(line.ends_with("see the lines above"), "{line}");
        // Under load is its own kind; a known kind does not hide an unknown one or an unverified query.
        let load = ["40 h: MISMATCH under load B corrected on postgres (2 clients; client 1 at 3.0 s): rows differ".to_string(), "    first difference".to_string(), "40 h: something new".to_string()];
        let line = Finished::ok().trusted_unless(&load, false).untrusted_line().unwrap();
        assert!(line.contains("answer under load was wrong") && !line.contains("answers disagree (MISMATCH)"), "{line}");
        assert!(line.contains("not every query was verified") && line.ends_with("see the lines above"), "{line}");
        // An engine's error text is not read as a kind: a time-out whose message says FAILED is one.
        let timed_out = ["TIMED OUT A corrected on polars: FAILED to answer within 1 s".to_string()];
        let line = Finished::ok().trusted_unless(&timed_out, false).untrusted_line().unwrap();
        assert!(line.contains("(TIMED OUT)") && !line.contains("(FAILED)"), "{line}");
        let indexes = ["40 h: postgres: indexes failed: out of disk".to_string()];
        assert!(Finished::ok().trusted_unless(&indexes, true).untrusted_line().unwrap().contains("indexes failed"));
        assert_eq!(past_where("under a 323.9 MiB limit (5×), 1,000 read IOPS, 131 MB/s read: FAILED A"), "FAILED A");
        // A step that said no reason still explains the status.
        assert!(Finished::ok().trusted_if(false).untrusted_line().unwrap().contains("see the lines above"));
    }

    #[test]
    fn the_wrote_line_quotes_paths_a_shell_would_split() {
        assert_eq!(Finished::ok().wrote_line(), None);
        let f = Finished::ok().wrote("results/olap-1.json").wrote("my results/olap-1.md");
        assert_eq!(f.wrote_line().unwrap(), "wrote results/olap-1.json 'my results/olap-1.md'");
    }
}

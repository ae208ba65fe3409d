// The commit ghbench is built from, compiled into the binary: a record names
// the ghbench that made its numbers, and `--resume` refuses to go on with
// another (the current directory's checkout may not be the one built, or be
// no checkout at all). Uncommitted changes to what the binary is built from
// are said, with a digest of them, so two different uncommitted builds of one
// commit are not taken for one ghbench.
//
// Written here rather than with a crate: the ones that do this (vergen, built)
// re-run on a new commit but not on an edited file in another crate of the
// workspace, which would leave a stale "no uncommitted changes" in the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the binary is built from: changes elsewhere (tests, docs) change no number.
const SOURCES: &[&str] = &["src", "crates", "queries", "Cargo.toml", "Cargo.lock", "build.rs"];

/// `git args`, without taking git's optional locks: a build must not
/// rewrite the index (which would make cargo build again) or hold its lock
/// while the user commits.
fn git(args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git").arg("--no-optional-locks").args(args).output().ok().filter(|o| o.status.success())?;
    Some(out.stdout)
}

fn git_text(args: &[&str]) -> Option<String> {
    git(args).map(|out| String::from_utf8_lossy(&out).trim().to_string())
}

/// The commit, and whether (Some) the sources differ from it.
struct Built {
    commit: String,
    dirty: Option<bool>,
}

fn main() {
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // `ghbench --version`: the version alone, or with the build it names.
    let said = match built() {
        Some(Built { commit, dirty: Some(true) }) => format!("{version} (commit {commit}, with uncommitted changes)"),
        Some(Built { commit, dirty: Some(false) }) => format!("{version} (commit {commit})"),
        Some(Built { commit, dirty: None }) => format!("{version} (commit {commit}, uncommitted changes unknown)"),
        None => version,
    };
    println!("cargo:rustc-env=GHBENCH_VERSION={said}");
}

/// Says the commit and the changes to cargo; None when not built from a
/// checkout of ghbench itself.
fn built() -> Option<Built> {
    // Only ghbench's own checkout: a copy built inside another repository
    // (`cargo package`, a home folder kept in git) is not that repository's commit.
    let here = std::env::var("CARGO_MANIFEST_DIR").ok().and_then(|d| std::fs::canonicalize(d).ok())?;
    let top = git_text(&["rev-parse", "--show-toplevel"]).and_then(|d| std::fs::canonicalize(d).ok())?;
    if top != here {
        return None;
    }
    // A new commit or a checkout moves HEAD, the branch it names, or the packed refs.
    let (git_dir, common_dir) = (PathBuf::from(git_text(&["rev-parse", "--git-dir"])?), PathBuf::from(git_text(&["rev-parse", "--git-common-dir"])?));
    let branch = git_text(&["symbolic-ref", "-q", "HEAD"]);
    let watched = [Some(git_dir.join("HEAD")), branch.map(|b| common_dir.join(b)), Some(common_dir.join("packed-refs"))];
    for path in watched.into_iter().flatten().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let commit = git_text(&["rev-parse", "HEAD"])?;
    println!("cargo:rustc-env=GHBENCH_GIT_COMMIT={commit}");
    let short = commit[..12.min(commit.len())].to_string();
    let with_sources = |args: &[&str]| git(&[args, &["--"], SOURCES].concat());
    let (Some(diff), Some(new_files)) = (with_sources(&["diff", "--no-ext-diff", "--binary", "HEAD"]), with_sources(&["ls-files", "-z", "--others", "--exclude-standard"])) else {
        return Some(Built { commit: short, dirty: None });
    };
    let dirty = !diff.is_empty() || !new_files.is_empty();
    println!("cargo:rustc-env=GHBENCH_GIT_DIRTY={dirty}");
    if dirty {
        // New files count with their contents (the diff leaves them out).
        let mut hasher = blake3::Hasher::new();
        hasher.update(&diff);
        for name in new_files.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            hasher.update(name).update(&[0]);
            hasher.update(&std::fs::read(Path::new(&String::from_utf8_lossy(name).to_string())).unwrap_or_default());
        }
        println!("cargo:rustc-env=GHBENCH_GIT_CHANGES=blake3:{}", hasher.finalize().to_hex());
    }
    Some(Built { commit: short, dirty: Some(dirty) })
}

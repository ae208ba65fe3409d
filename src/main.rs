//! ghbench: benchmark PostgreSQL jsonb against MongoDB on GitHub Archive data.
//! A thin binary: the commands live in the library (`src/cli.rs`), the
//! engines in their folders, listed once in `src/registry.rs`.

fn main() -> std::process::ExitCode {
    restore_default_sigpipe();
    ghbench_polars::prefer_async_reads();
    // polars' queries run in worker processes of this program, so one can be
    // stopped. On Linux by /proc/self/exe: this very file, even if a build
    // replaced the one at its path during a long run.
    let this_file = std::path::PathBuf::from("/proc/self/exe");
    if let Ok(program) = if this_file.exists() { Ok(this_file) } else { std::env::current_exe() } {
        ghbench_polars::worker::serve_queries_with(program);
    }
    ghbench::cli::run(ghbench::registry::builtin(), std::env::args_os())
}

/// Rust ignores SIGPIPE, so `ghbench report x.json | head` would panic in
/// `println!`; like other command-line tools, end quietly instead.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; resetting a
    // signal's disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

//! ghbench: benchmark PostgreSQL jsonb against MongoDB on GitHub Archive data.
//! A thin binary: the commands live in the library (`src/cli.rs`), the
//! engines in their folders, listed once in `src/registry.rs`.

fn main() -> std::process::ExitCode {
    quiet_about_closed_output();
    ghbench::interrupt::note_ignored_signals();
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

/// Rust ignores SIGPIPE, so a write to a closed standard output or error
/// fails and `println!` panics. ghbench keeps it so, rather than dying at
/// once: a bench holding servers under a memory limit must put them back
/// first (`ghbench::cli` catches the panic and ends as for a signal, 141).
/// That panic is expected, not a bug: it is not reported (`report x.json |
/// head` ends quietly).
fn quiet_about_closed_output() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !ghbench::interrupt::is_broken_pipe(&ghbench::interrupt::panic_message(info.payload())) {
            report(info);
        }
    }));
}

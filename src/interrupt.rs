//! Ctrl-C (SIGINT), SIGTERM and SIGHUP (a closed terminal or ssh session):
//! ghbench stops, cancels what it left running on the servers (see
//! `ghbench_core::stop`), puts back what it changed on them (see
//! `ghbench_core::changes`), says what it did, and exits 128 + the signal's
//! number (130, 143, 129), as shells expect of an interrupted program. A
//! closed standard output or error (`| head`, a reader gone) ends it the same
//! way, with 141 (SIGPIPE's): what it says on the way out then goes nowhere,
//! and nothing it writes can stop it before the servers are put back.

/// The signal that stopped ghbench.
#[derive(Debug, Clone, Copy)]
pub enum Signal {
    Interrupt,
    Terminate,
    Hangup,
    /// Not a signal caught: a write to a closed standard output or error
    /// (SIGPIPE is ignored, so the write fails instead of ending ghbench).
    BrokenPipe,
    /// Not a signal either: a bug (exit 2, said as such).
    Panic,
}

impl Signal {
    /// 128 + the signal's number.
    pub fn exit_code(self) -> i32 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
            Signal::Hangup => 129,
            Signal::BrokenPipe => 141,
            Signal::Panic => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "interrupted (Ctrl-C)",
            Signal::Terminate => "terminated (SIGTERM)",
            Signal::Hangup => "hung up (SIGHUP: its terminal closed)",
            Signal::BrokenPipe => "its output was closed",
            Signal::Panic => "stopped by an internal error",
        }
    }
}

/// Resolves when ghbench is asked to stop. Where a handler cannot be
/// installed it never resolves (the signal then ends ghbench as it would
/// any program).
pub async fn signalled() -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        // A signal ghbench was started ignoring stays ignored: `nohup
        // ghbench bench …` must outlive its ssh session, and a background
        // job of a script (`&`) is not for the terminal's Ctrl-C.
        let listen = |number: i32, kind: SignalKind| async move {
            match (ignored(number), signal(kind)) {
                (false, Ok(mut stream)) => {
                    stream.recv().await;
                }
                _ => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = listen(libc::SIGINT, SignalKind::interrupt()) => Signal::Interrupt,
            _ = listen(libc::SIGTERM, SignalKind::terminate()) => Signal::Terminate,
            _ = listen(libc::SIGHUP, SignalKind::hangup()) => Signal::Hangup,
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Signal::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}

/// Whether signal `number` was set to be ignored when ghbench started (read
/// before tokio installs a handler for it, which `signalled` does only then).
#[cfg(unix)]
fn ignored(number: i32) -> bool {
    static STARTED_IGNORING: std::sync::OnceLock<[bool; 3]> = std::sync::OnceLock::new();
    let at_start = STARTED_IGNORING.get_or_init(|| [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].map(disposition_is_ignore));
    match number {
        libc::SIGINT => at_start[0],
        libc::SIGTERM => at_start[1],
        libc::SIGHUP => at_start[2],
        _ => false,
    }
}

#[cfg(unix)]
fn disposition_is_ignore(number: i32) -> bool {
    // SAFETY: sigaction(2) with no new action only reads the current one
    // into a zeroed struct this function owns.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(number, std::ptr::null(), &mut current) == 0 && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Reads which signals ghbench was started ignoring: call first thing, before
/// any handler is installed.
pub fn note_ignored_signals() {
    #[cfg(unix)]
    let _ = ignored(0);
}

/// What ghbench cancelled on its way out (the exit status is said last, by [`say_exit`]).
pub fn say(signal: Signal, cancelled: &[String]) {
    if cancelled.is_empty() && matches!(signal, Signal::BrokenPipe | Signal::Panic) {
        // `ghbench report x.json | head`: nothing to say, the reader has what it wanted.
        return;
    }
    if cancelled.is_empty() {
        note(&format!("{}: no query, plan or index build of ghbench's was running on a server", signal.name()));
        return;
    }
    note(&format!("{}: cancelling what ghbench was running on the servers:", signal.name()));
    for line in cancelled {
        note(&format!("  {line}"));
    }
}

pub fn say_exit(signal: Signal) {
    if !matches!(signal, Signal::BrokenPipe) {
        note(&format!("exit {}", signal.exit_code()));
    }
}

/// A line on standard error that cannot fail (stderr may be closed on the way out).
pub use ghbench_core::note;

/// Whether a panic is a write to a closed standard output or error (std's
/// `print!` family panics so: "failed printing to stdout: Broken pipe").
pub fn is_broken_pipe(message: &str) -> bool {
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

/// A panic's message, for [`is_broken_pipe`] and for people.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "a panic".into())
}

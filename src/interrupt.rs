//! Ctrl-C (SIGINT) and SIGTERM: ghbench stops, cancels what it left running
//! on the servers (see `ghbench_core::stop`), says what it cancelled, and
//! exits 130 (143 for SIGTERM), as shells expect of an interrupted program.

/// The signal that stopped ghbench.
#[derive(Debug, Clone, Copy)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    /// 128 + the signal's number.
    pub fn exit_code(self) -> i32 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "interrupted (Ctrl-C)",
            Signal::Terminate => "terminated (SIGTERM)",
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
        let (Ok(mut interrupt), Ok(mut terminate)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt.recv() => Signal::Interrupt,
            _ = terminate.recv() => Signal::Terminate,
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

/// What ghbench cancelled on its way out (the exit status is said last, by [`say_exit`]).
pub fn say(signal: Signal, cancelled: &[String]) {
    if cancelled.is_empty() {
        eprintln!("{}: no query, plan or index build of ghbench's was running on a server", signal.name());
        return;
    }
    eprintln!("{}: cancelling what ghbench was running on the servers:", signal.name());
    for line in cancelled {
        eprintln!("  {line}");
    }
}

pub fn say_exit(signal: Signal) {
    eprintln!("exit {}", signal.exit_code());
}

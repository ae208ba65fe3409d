//! Running a program from a test: a test of a hang must not hang itself, and
//! what the program said belongs in the test's log.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Standard output then standard error, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Runs `command` to its end, or kills it after `limit` and fails the test.
pub fn output_within(command: &mut Command, limit: Duration) -> Output {
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run the program");
    wait_within(child, limit)
}

/// Waits for `child` to end, or kills it after `limit` and fails the test.
pub fn wait_within(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            child.kill().expect("kill");
            let out = child.wait_with_output().expect("output");
            panic!("the program still ran after {limit:?}: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// A child process of the test, killed if the test ends before it does: a
/// failed assertion must not leave a ghbench running that restarts servers
/// or holds locks after the test is gone.
pub struct Owned(Option<Child>);

impl Owned {
    /// Started with Ctrl-C, SIGTERM and SIGHUP doing what they do by
    /// default, however the tests were started: from a background job
    /// (`cargo test &`) every child starts ignoring SIGINT, which ghbench
    /// honours (as under `nohup`), and a test that signals its child would
    /// fail for how it was run.
    pub fn spawn(command: &mut Command) -> Owned {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: between fork and exec only signal(2), which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                for number in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(number, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        Owned(Some(command.spawn().expect("run the program")))
    }

    pub fn id(&self) -> u32 {
        self.child().id()
    }

    pub fn child(&self) -> &Child {
        self.0.as_ref().expect("not yet waited for")
    }

    /// Its standard error, to read as it goes (spawned with it piped).
    pub fn take_stderr(&mut self) -> std::process::ChildStderr {
        self.0.as_mut().expect("not yet waited for").stderr.take().expect("standard error piped, and taken once")
    }

    /// Its standard output, to read as it goes (spawned with it piped).
    pub fn take_stdout(&mut self) -> std::process::ChildStdout {
        self.0.as_mut().expect("not yet waited for").stdout.take().expect("standard output piped, and taken once")
    }

    pub fn still_running(&mut self) -> bool {
        self.0.as_mut().expect("not yet waited for").try_wait().expect("wait").is_none()
    }

    /// Its output once it ends, or killed after `limit` and the test failed (see [`wait_within`]).
    pub fn wait_within(mut self, limit: Duration) -> Output {
        wait_within(self.0.take().expect("waited for once"), limit)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

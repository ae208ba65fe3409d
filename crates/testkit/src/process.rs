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

//! The machine a run happened on, read from /proc (Linux;
//! anything unreadable is left out rather than guessed).

use std::process::Command;

use crate::record::Machine;

pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    Machine {
        cpu_model: field(&cpuinfo, "model name").map(str::to_string),
        logical_cores: std::thread::available_parallelism().ok().map(|n| n.get()),
        memory_bytes: memory_bytes(),
        os_release: std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| format!("Linux {}", s.trim())),
        disk: None,
    }
}

/// This machine's memory (`MemTotal:       24684084 kB`).
pub fn memory_bytes() -> Option<u64> {
    ghbench_core::size::machine_memory()
}

/// The value of the first `key : value` line.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The command line for the record, with anything that may hold a password hidden.
pub fn redacted_arguments(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|arg| match arg.split_once("://") {
            Some(_) => match arg.split_once('=') {
                // `--pg-url=postgres://...`
                Some((flag, url)) if flag.starts_with("--") => format!("{flag}={}", ghbench_core::redact_url(url)),
                _ => ghbench_core::redact_url(&arg),
            },
            None if arg.to_ascii_lowercase().contains("password") => "<hidden>".to_string(),
            None => arg,
        })
        .collect()
}

/// What [`drop_os_page_cache`] did.
pub struct PageCacheDrop {
    pub dropped: bool,
    /// For people, e.g. `OS page cache dropped (sync; echo 3 > …)`.
    pub action: String,
}

/// Drops the OS page cache (Linux, needs root). Says what happened.
pub fn drop_os_page_cache() -> PageCacheDrop {
    // Dirty pages are not dropped: write them out first.
    let synced = Command::new("sync").status().map(|s| s.success()).unwrap_or(false);
    let (dropped, action) = match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        Ok(()) if synced => (true, "OS page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)".to_string()),
        Ok(()) => (true, "OS page cache dropped (echo 3 > /proc/sys/vm/drop_caches; sync failed, dirty pages kept)".to_string()),
        Err(e) => (false, format!("OS page cache NOT dropped: /proc/sys/vm/drop_caches: {e}")),
    };
    PageCacheDrop { dropped, action }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_the_record() {
        let args = redacted_arguments(
            ["ghbench", "--pg-url=postgres://u:s3cret@h/db", "mongodb://u:s3cret@h/", "--table", "t", "password=s3cret"]
                .map(String::from),
        );
        assert!(args.iter().all(|a| !a.contains("s3cret")), "{args:?}");
        assert_eq!(args[3..5], ["--table", "t"]);
    }

    #[test]
    fn reads_proc_style_fields() {
        assert_eq!(field("processor\t: 0\nmodel name\t: AMD EPYC\n", "model name"), Some("AMD EPYC"));
        let m = machine();
        assert!(m.logical_cores.unwrap_or(1) >= 1);
    }
}

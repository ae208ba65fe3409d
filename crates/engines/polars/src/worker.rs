//! polars' queries in a child process of ghbench (`ghbench polars-worker`):
//! a query ghbench stops waiting for (`--query-timeout`, an abandoned
//! client, Ctrl-C) is stopped by ending its process, as a server's query is
//! cancelled; and the process can be held under a memory limit of its own
//! without limiting ghbench. One process per backend (per client in the
//! concurrency phase), started when the backend prepares its first query
//! (not timed), kept while the backend lives, like a server's session.
//!
//! The protocol is a line of JSON each way: a [`Request`] (the query file)
//! in, a [`Reply`] (its rows, or the error) out; the worker says it is ready
//! once polars' thread pool is up and the table's ledger read, so no timed
//! query pays for either.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use ghbench_core::stop::Cancel;
use ghbench_core::TableName;
use ghbench_engine::query::QueryFile;
use ghbench_engine::rows::Row;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use ghbench_engine::cgroup::{CgroupError, MemoryCgroup};
use ghbench_engine::throttle::{BlockDevice, DiskRules, IoCgroup};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Set (to anything), polars' queries run in ghbench's own process, as
/// before the workers: to measure what the worker costs, side by side.
pub const IN_PROCESS: &str = "GHBENCH_POLARS_IN_PROCESS";

/// The subcommand of ghbench that serves queries.
pub const SUBCOMMAND: &str = "polars-worker";

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Makes every polars backend of this process run its queries in child
/// processes of `program` (`<program> polars-worker`): ghbench's `main`
/// names itself. Without it (ghbench used as a library) queries run in the
/// caller's process, where nothing can stop one.
pub fn serve_queries_with(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The memory cgroup every worker starts in, when ghbench runs under a
/// memory limit (`bench --memory`): the worker is where polars reads and
/// computes, so the limit is the engine's, as a server's is.
static MEMORY_LIMIT: std::sync::Mutex<Option<MemoryCgroup>> = std::sync::Mutex::new(None);

/// Starts every worker from now on inside a memory cgroup of `bytes`
/// (`ghbench/polars-<pid>-<n>`, no swap); None: without one (the cgroup made
/// before is removed once empty). Each limit gets a cgroup of its own, so
/// its peak is about that limit alone and removing the last one spares it.
pub fn limit_memory(bytes: Option<u64>) -> Result<(), CgroupError> {
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    // A killed ghbench's workers left their cgroups, empty but limited (and
    // in v1 their blkio twins).
    ghbench_engine::cgroup::remove_abandoned("polars");
    ghbench_engine::throttle::remove_abandoned("polars");
    let name = |n: u32| format!("polars-{}-{n}", std::process::id());
    let cgroup = bytes.map(|bytes| MemoryCgroup::create(&name(MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)), bytes)).transpose()?;
    let mut slot = MEMORY_LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(before) = std::mem::replace(&mut *slot, cgroup) {
        before.remove();
    }
    Ok(())
}

/// The memory cgroup workers start in, if any.
pub fn memory_limit() -> Option<MemoryCgroup> {
    MEMORY_LIMIT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The block I/O cgroup every worker starts in under a disk limit (`--disk`):
/// the worker reads the table's files, so the throttle is the engine's.
static DISK_LIMIT: std::sync::Mutex<Option<IoCgroup>> = std::sync::Mutex::new(None);

/// Starts every worker from now on inside a block I/O cgroup holding `rules`
/// on `device` (`ghbench/polars-io-<pid>-<n>`); None: without one (the one
/// made before is removed once empty).
pub fn limit_disk(limit: Option<(&BlockDevice, &DiskRules)>) -> Result<(), String> {
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    // A killed ghbench's workers left their cgroups, rules and all.
    for prefix in ["polars-io", "polars"] {
        ghbench_engine::throttle::remove_abandoned(prefix);
    }
    let cgroup = match limit {
        Some((device, rules)) => {
            // Under a memory limit too, the throttle goes on that cgroup (its
            // blkio twin in v1, the same folder in v2): a process is in one
            // cgroup per hierarchy, and a second would take it out of the first.
            let name = match memory_limit() {
                Some(memory) => memory.path.trim_start_matches("/ghbench/").to_string(),
                None => format!("polars-io-{}-{}", std::process::id(), MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
            };
            let cgroup = IoCgroup::create(&name)?;
            if let Err(e) = cgroup.set(device, rules) {
                cgroup.remove();
                return Err(e);
            }
            Some(cgroup)
        }
        None => None,
    };
    let mut slot = DISK_LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(before) = std::mem::replace(&mut *slot, cgroup) {
        before.remove();
    }
    Ok(())
}

/// The block I/O cgroup workers start in, if any.
pub fn disk_limit() -> Option<IoCgroup> {
    DISK_LIMIT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The program queries run in, if any.
pub fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// The first line a worker reads: the table's files its backend listed.
#[derive(Serialize, Deserialize)]
struct Files {
    files: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Request {
    path: String,
    text: String,
    /// Run on an empty frame of the table's schema, not on its files: the
    /// code the query takes paged in before its timed run (see [`Worker::warm`]).
    #[serde(default)]
    warm: bool,
}

#[derive(Serialize, Deserialize)]
enum Reply {
    /// Sent once, when polars' thread pool is up.
    Ready,
    Rows(Vec<Row>),
    Error(String),
}

/// The worker's side: answers each query of its standard input on its
/// standard output, until the input closes (its backend was dropped).
/// `warm`: event lines each query is first run on, from memory (see
/// [`Worker::warm`]; none: warmed on an empty frame).
pub fn serve(dir: &Path, table: &TableName, warm: Vec<String>) -> anyhow::Result<()> {
    // Named so in the kernel's counters and `ps` (started as /proc/self/exe, it was `exe`).
    // SAFETY: prctl(2) with a NUL-terminated name of at most 16 bytes.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"polars-worker".as_ptr());
    }
    let mut input = std::io::stdin().lock().lines();
    // First, the files its backend listed: every worker of a run (one per
    // client) reads the very files the run's record names, whatever a load
    // commits meanwhile.
    let files: Files = serde_json::from_str(&input.next().ok_or_else(|| anyhow::anyhow!("no file list on standard input"))??)?;
    let backend = crate::backend::PolarsBackend::open_here_reading(dir, table, files.files)?;
    let mut out = std::io::stdout().lock();
    // A query of two numbers brings polars' thread pool and streaming
    // engine up before ghbench times anything.
    use polars::prelude::*;
    df!("warm" => [1i64, 2])?.lazy().select([col("warm").sum()]).collect_with_engine(crate::backend::ENGINE)?;
    // The table's ledger read and its files checked now, not in a timed run;
    // what fails here is said by the first query, which tries again.
    let _ = backend.table_files();
    answer(&mut out, &Reply::Ready)?;
    for line in input {
        let request: Request = serde_json::from_str(&line?)?;
        let query = QueryFile { path: request.path, text: request.text };
        let ran = match request.warm {
            true => {
                let warmed = backend.warm_here(&query, &warm).map(|()| Vec::new());
                // What warming allocated goes back to the system, not kept
                // by malloc under the worker's memory limit.
                // SAFETY: glibc's malloc_trim(3), no pointers involved.
                #[cfg(target_env = "gnu")]
                unsafe {
                    libc::malloc_trim(0);
                }
                warmed
            }
            false => backend.run_here(&query),
        };
        let reply = match ran {
            Ok(rows) => Reply::Rows(rows),
            Err(e) => Reply::Error(format!("{e:#}")),
        };
        answer(&mut out, &reply)?;
    }
    Ok(())
}

fn answer(out: &mut impl Write, reply: &Reply) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, reply)?;
    out.write_all(b"\n")?;
    Ok(out.flush()?)
}

/// Reads the worker's program whole in this process, outside the worker's
/// limits, so that its code is in the page cache, charged to ghbench's own
/// cgroup, before a worker starts under a memory limit or a disk throttle.
/// Otherwise a worker started after the page cache was dropped (a cold run)
/// pages in ghbench's binary inside the limits meant for polars' data: a
/// trial saw a worker under a 65 MiB limit refault 815,638 times on a
/// 27 MiB table (a debug build is 388 MB), and workers read 204 MiB
/// through a throttle for a 4.7 MiB table. A server's program is a few
/// MB (postgres's 9 MB). A failure only loses that head start.
async fn cache_program(program: &Path) {
    let program = program.to_path_buf();
    let _ = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::io::Read as _;
        let mut file = std::fs::File::open(&program)?;
        let mut block = vec![0u8; 1 << 20];
        while file.read(&mut block)? > 0 {}
        Ok(())
    })
    .await;
}

/// A worker process, from its backend's side.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The queries (by path) this process has run once on an empty frame.
    warmed: std::collections::HashSet<String>,
}

impl Worker {
    /// Starts `program polars-worker` on the table's `files` (as its backend
    /// listed them) and waits until it is ready.
    pub async fn start(program: &Path, dir: &Path, table: &TableName, files: Vec<String>) -> anyhow::Result<Worker> {
        let mut command = Command::new(program);
        command.arg(SUBCOMMAND).arg("--polars-dir").arg(dir).args(["--table", table.as_str()]);
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        #[cfg(target_os = "linux")]
        // SAFETY: between fork and exec only prctl(2), async-signal-safe, is
        // called: the worker dies with the ghbench that started it, even when
        // that one is killed outright and runs no destructor.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let (memory, disk) = (memory_limit(), disk_limit());
        if memory.is_some() || disk.is_some() {
            cache_program(program).await;
        }
        if let Some(cgroup) = memory {
            cgroup.enter_on_spawn(command.as_std_mut()).map_err(|e| anyhow::anyhow!("starting the polars worker inside the memory cgroup {}: {e}", cgroup.path))?;
        }
        if let Some(cgroup) = disk {
            cgroup.enter_on_spawn(command.as_std_mut()).map_err(|e| anyhow::anyhow!("starting the polars worker inside the block I/O cgroup {}: {e}", cgroup.path))?;
        }
        let mut child = command.spawn().map_err(|e| anyhow::anyhow!("starting the polars worker ({} {SUBCOMMAND}): {e}", program.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut worker = Worker { child, stdin, stdout, warmed: Default::default() };
        let mut line = serde_json::to_vec(&Files { files })?;
        line.push(b'\n');
        worker.stdin.write_all(&line).await?;
        worker.stdin.flush().await?;
        match worker.read().await? {
            Reply::Ready => Ok(worker),
            _ => anyhow::bail!("the polars worker did not say it was ready"),
        }
    }

    /// The worker's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The query's rows, computed in the worker; the outer error says the
    /// worker itself failed (it cannot be used again), the inner one that the
    /// query did (in polars' words).
    pub async fn run(&mut self, query: &QueryFile) -> anyhow::Result<Result<Vec<Row>, String>> {
        self.ask(query, false).await
    }

    /// Runs `query` once on generated events held in memory, the first time
    /// this process is asked it (not timed: from `prepare`). A worker started
    /// afresh for a cold run would otherwise page in the code the query takes
    /// (the Parquet reader, SQL, planner, group-by, sort: ghbench's own
    /// binary, 2-27 MB per query of a debug or a release build on the real
    /// hour, whose file is 2.4 MB) inside the timed run, through the disk
    /// throttle meant for the table's files, where a server's code is paged
    /// in by its restart. A failure here is left to the timed run to say.
    pub async fn warm(&mut self, query: &QueryFile) -> anyhow::Result<()> {
        if self.warmed.contains(&query.path) {
            return Ok(());
        }
        let _ = self.ask(query, true).await?;
        self.warmed.insert(query.path.clone());
        Ok(())
    }

    async fn ask(&mut self, query: &QueryFile, warm: bool) -> anyhow::Result<Result<Vec<Row>, String>> {
        let mut line = serde_json::to_vec(&Request { path: query.path.clone(), text: query.text.clone(), warm })?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await?;
        match self.read().await? {
            Reply::Rows(rows) => Ok(Ok(rows)),
            Reply::Error(e) => Ok(Err(e)),
            Reply::Ready => anyhow::bail!("the polars worker answered out of turn"),
        }
    }

    async fn read(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line).await? == 0 {
            let status = self.child.wait().await.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            anyhow::bail!("the polars worker ended ({status})");
        }
        Ok(serde_json::from_str(&line)?)
    }

    /// What ends the worker's query: the process killed (SIGKILL), for
    /// ghbench's registry of running work.
    pub fn stopper(&self) -> Cancel {
        let pid = self.child.id();
        Arc::new(move || {
            Box::pin(async move {
                let Some(pid) = pid else { return Err("the polars worker had already ended".to_string()) };
                // SAFETY: kill(2) on the worker this ghbench started; at worst it already ended.
                match unsafe { libc::kill(pid as i32, libc::SIGKILL) } {
                    0 => Ok("its polars worker process killed (the query stopped)".to_string()),
                    _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) => Ok("its polars worker process had ended".to_string()),
                    _ => Err(format!("killing the polars worker {pid}: {}", std::io::Error::last_os_error())),
                }
            })
        })
    }

    /// Kills the worker and waits for it to end (its query with it).
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

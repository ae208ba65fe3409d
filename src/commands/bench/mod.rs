//! `ghbench bench`: the whole benchmark in one command, as ClickBench runs it
//! per system: data, load (timed, one engine at a time), indexes (timed),
//! queries (cold and hot, verified), sizes, and one results file with its
//! Markdown and HTML reports. `--scale` repeats it at several sizes, each in
//! tables of its own, and fits how each engine's time grows with the data.

mod data;
pub mod disk;
mod disk_plan;
pub mod limits;
pub mod memory;
mod regime;
mod resume;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use ghbench_core::{summarise_hours, Hour, HourRange, TableName};
use ghbench_ingest::{ingest, HourStatus, IngestOptions, IngestSummary};
use ghbench_olap::bench::{engine_growth, growth, BenchRecord, DataDamage, LoadMemory, LoadRecord, SizeRecord, BENCH_SCHEMA};
use ghbench_olap::record::IndexEngineRecord;
use ghbench_report::bench::{bench_markdown, bench_problems, largest, size_text, BenchCharts};
use ghbench_report::concurrency::concurrency_text;
use ghbench_report::{bench_html, Style, markdown_with_charts, server_lines, reconnect_notes, seconds};
use ghbench_olap::concurrency::ConcurrencyOptions;
use ghbench_olap::record::RunRecord;
use ghbench_olap::runner::QueryOptions;
use ghbench_olap::{Backend, Catalog};

use self::data::{Data, Origin};
use super::concurrency::ConcurrencyArgs;
use super::index::build_indexes;
use super::olap::{answers_dir, measure, plan_concurrency, write, write_charts, CatalogOptions, KeptAsItGoes, RunPlan, TimingArgs};
use super::query::QueryProgress;
use crate::options::{connect_backends, ConnOptions, Engines, HourArgs, Selected};
use crate::outcome::{Finished, Screen};
use crate::output::{MarkdownArg, ResultsArgs, RunFiles};
use crate::progress::IngestProgress;

/// Where a bench's hours start when --from is not given: the paper's first hour.
fn default_first_hour() -> Hour {
    Hour::new(chrono::NaiveDate::from_ymd_opt(2015, 1, 1).expect("a date"), 0).expect("an hour")
}

/// The table names' stem when --table is not given: `bench_6h_e7702_s42_20150101t00`.
const DEFAULT_BASE: &str = "bench";

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ghbench bench --hours 6 --cold                   # 6 generated hours, true cold runs, every engine
                                                   # (--engines' default here: all of them)
  ghbench bench --scale 1,6,24,96 --events-per-hour 25000
  ghbench bench --source ./mirror --from 2015-01-01T00 --hours 24 --engines postgres,polars
  ghbench bench --hours 6 --json run.json          # also the record at a path of your choosing
  ghbench bench --hours 6 --clients 1,2,4,8 --duration 60
                                                   # then 1, 2, 4 and 8 clients at once per engine

Each size loads into tables of its own (named after --table, the size and the data:
generated hours by events per hour, seed and first hour; a --source by its first
hour and a digest of its location; a digest of all that where it would not leave room
for the index names), checked hour by hour against the files asked for,
one engine at a time, so no load waits on another; PostgreSQL tables are vacuumed and
analysed as part of their load. A rerun reuses what each engine's ledger lists as loaded
(its load time then says so) unless --fresh.

The data is generated (`ghbench gen`'s realistic hours) unless --source names real
ones; --hours gives the size from --from (2015-01-01T00 unless given), as for `ingest`.

--cold (--cold=restart): before each query's first run, a server that `just setup`
started (listed in --servers) is restarted and the OS page cache dropped, an engine
without a server starts afresh: a true cold run, labelled so. Other servers get the page
cache dropped and what they clear themselves, labelled as not truly cold, as every server
does with --cold=clear. The other runs are hot.

--memory SIZE: the servers `just setup` started are restarted inside a memory cgroup of
SIZE (page cache included, no swap; cgroup v1 or v2, as root), their memory settings
scaled as the paper's stood to its 64 GiB (shared_buffers 3/16, work_mem 1/64, the
WiredTiger cache as MongoDB sizes it by default, at most half the limit), polars'
workers start inside one too, and the page cache is dropped before the queries. Every
cold restart goes back inside and is checked; the record keeps each engine's limit,
data ÷ memory, and the kernel's counters (peak, times the limit was hit, OOM kills,
refaults); an OOM kill is recorded as one. SIZE is kept in whole pages and may not
exceed this machine's memory. A server ghbench did not start is refused before any data
is made (a running server cannot be moved under a limit). Afterwards the servers are
restarted as setup left them, after a Ctrl-C too.

--disk riops=1000,rbps=262MB: the servers `just setup` started are restarted inside a
block I/O cgroup whose throttle holds their reads on the disk under their data to that
many operations (riops) and bytes (rbps) a second, and writes where the kernel enforces
it (wiops, wbps: cgroup v2 throttles buffered writes, v1 only those a process issues
itself); polars' workers start inside one too, and the page cache is dropped before the
queries so what they read goes through the throttle, the load and index builds too. It
models a slower disk, such as an EBS volume of 1,000 provisioned IOPS (which counts a
read of up to 256 KiB as one: 262 MB/s at most, 131 MB/s for a kernel reading 128 KiB
at a time, see --iops-size); the record says what this machine's
disk reads free, in random pages a second. Every cold restart goes back inside and is checked;
the record keeps each engine's device, rules, how the kernel enforced them and the bytes
and reads it counted over the runs, and every label says so. Needs root, a blkio (v1) or
io (v2) controller and data on a block device (not a tmpfs); refused before any data is
made otherwise. With --memory both hold at once. Afterwards the servers are restarted as
setup left them, after a Ctrl-C too.

--regime 0.25,1,5: the paper's regime in one run. After the queries with memory free,
the same tables are queried again under limits chosen, as --memory sets one, so the
first engine's data (table and indexes; postgres's, the paper's jsonb, by default) is
each ratio times its memory, largest memory first. One load serves every point (it runs
without a limit: the limits come from what it stored); each point is written to the
record as it finishes. The reports add each engine's bytes per event, the times at every
memory, the kernel's counters under each limit, and per engine a log–log chart of time
against memory with a dashed line where its data stops fitting. A limit under 64 MiB (too
little for a server) or above this machine's memory is refused before the first point.

--preset paper2019: the paper's OLAP machine as one run: --regime 5 --regime-iops
free,5000,1000 --iops-size 128KiB --disk rbps=437MB --rounds (and --cold unless given),
PostgreSQL with the
paper's planner settings (random_page_cost 1.3, default_statistics_target 200,
effective_cache_size 9/16 of its memory) from before the load on, the published texts
beside the corrected. The record keeps the preset written down value by value, with
why, its source and which values are inferred; the reports show each engine's events
per second beside the paper's. Two options narrow it (at ten million events each disk
point of both texts takes about an hour): --regime-iops with some of its points (e.g.
1000) and --variant with one text; the record's preset then says NARROWED and to what.

--regime 5 --regime-iops free,5000,1000: a disk axis. At every ratio, one point per read
IOPS given (`free`: the disk as it is), the servers restarted inside the memory limit
and a throttle of that many reads a second, as --disk sets one (--disk rbps=437MB
holds the bandwidth at each point and for the queries with memory free; --disk riops= is
refused beside it, as it would hold those queries alone); a point given twice is
measured once. The kernel
counts a request as one read whatever its size (here readahead makes a scan's requests
megabytes large); --iops-size 128KiB caps each throttled point's bandwidth at IOPS x 128
KiB, as a volume metered per I/O delivers to a kernel reading ahead 128 KiB at a time
(Linux's default; EBS counts up to 256 KiB as one I/O). The reports add per
engine and ratio a chart of time against read IOPS, the free disk at its measured
random-read rate.

Damaged input (empty, truncated or corrupt files, quarantined lines) is shown under
each load table and in every report, as `ghbench ingest` shows it; as there, a damaged
local file loads the lines it holds, and a retried load says so beside its time.

Writes bench-<time>.json (everything), .md, -charts/ and .html in --output (results/);
the last line on standard error names them.

Exit status: 0 all measured and verified (damaged input is shown, its readable lines
loaded); 1 finished but not to be trusted as it stands: an engine's indexes or a query
failed (or was cut by --query-timeout), the answers disagree, or an answer under load
(--clients) is wrong or a phase of clients failed, or the record was resumed (its numbers
come from more than one run: said by the line before the last); 2 an error stopped it
(bad options, a server that cannot be reached, an hour missing at the source or that
failed to load: nothing is measured then); 130 on Ctrl-C, after cancelling what ran on
the servers.")]
pub struct BenchArgs {
    #[command(flatten)]
    pub conn: ConnOptions,

    #[command(flatten)]
    pub catalog: CatalogOptions,

    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,

    #[command(flatten)]
    pub streams: super::ingest::LoadStreams,

    /// Which hours: --hours N (from --from, 2015-01-01T00 by default), --to, or --year.
    #[command(flatten)]
    pub hours: HourArgs,

    /// Events per generated hour [default: the built-in profile's, 7,702 as in the real hour].
    #[arg(long, value_name = "N", value_parser = crate::options::at_least_one::<u64>, conflicts_with = "source")]
    pub events_per_hour: Option<u64>,

    /// The generator's seed: the same seed, hours and size give the same events.
    #[arg(long, default_value_t = 42, conflicts_with = "source")]
    pub seed: u64,

    /// Which actors and repositories generated hours draw on: `growing` (new
    /// ones keep arriving as the events grow, as in the real year) or
    /// `fixed` (the same pools every hour, as records before growth used:
    /// GHBENCH_POOLS=fixed reproduces them through the `just bench-*` recipes).
    /// Not used with --source, whose events are not drawn.
    #[arg(long, value_enum, default_value_t, env = "GHBENCH_POOLS")]
    pub pools: crate::options::PoolsArg,

    /// Real hours instead of generated ones: an http(s) base URL or a folder
    /// of YYYY-MM-DD-H.json.gz files.
    #[arg(long, value_name = "URL|DIR")]
    pub source: Option<String>,

    /// Run the benchmark at each of these sizes, in hours from --from (e.g.
    /// 1,6,24,96), and chart how each engine's time grows with the data.
    #[arg(long, value_delimiter = ',', value_name = "HOURS,...", value_parser = crate::options::at_least_one::<u32>)]
    pub scale: Vec<u32>,

    #[command(flatten)]
    pub timing: TimingArgs,

    /// Drop each size's tables and load them again, instead of reusing what is loaded.
    #[arg(long)]
    pub fresh: bool,

    /// Load even if a free-space check would refuse: each engine's load skips
    /// its own check, saying so (a --scale size's plan still says and records
    /// its numbers); a full disk then stops the load. A first size has nothing
    /// measured, so the checks take the hours' JSON size, several times what
    /// polars or PostgreSQL store.
    #[arg(long)]
    pub force: bool,

    /// With --scale: drop each size's tables on every engine once its
    /// queries are measured and recorded, so the disk holds one size at a
    /// time (the generated hours stay; a rerun loads the size again).
    #[arg(long, requires = "scale")]
    pub drop_measured: bool,

    /// Run the servers and polars' workers inside a memory limit of SIZE
    /// (`4GiB`, `768MiB`), as on a machine that small (see below; needs root).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<memory::MemorySize>,

    /// After the queries with memory free, query the same data again under memory
    /// limits chosen so the first engine's data (table and indexes: postgres's, the
    /// paper's jsonb, by default) is each of these multiples of its memory, e.g.
    /// 0.25,1,5: the paper's regime, charted (see below; needs root).
    #[arg(long, value_delimiter = ',', value_name = "RATIO,...", conflicts_with_all = ["memory", "scale"], value_parser = regime::parse_ratio)]
    pub regime: Vec<f64>,

    /// With --regime, a disk axis: at every ratio one point per read IOPS
    /// given, `free` for the disk as it is, e.g. free,5000,1000 (the paper's
    /// two EBS volumes beside this disk); --disk's rbps= holds at each, its
    /// riops= is refused here (see below; needs root).
    #[arg(long, value_delimiter = ',', value_name = "IOPS,...", value_parser = regime::parse_iops)]
    pub regime_iops: Vec<regime::ReadIops>,

    /// With --regime-iops, the most one read operation carries: a throttled
    /// point's read bandwidth is then at most its IOPS times SIZE, as a volume
    /// metered per I/O delivers to a kernel whose reads are that large (EBS
    /// counts an I/O of up to 256 KiB as one; Linux reads ahead 128 KiB by
    /// default: 1,000 IOPS give at most 131 MB/s). --disk's rbps still caps it
    /// where lower (see below).
    #[arg(long, value_name = "SIZE", value_parser = parse_io_size)]
    pub iops_size: Option<u64>,

    /// A machine to reproduce, as the options it stands for (see below):
    /// `paper2019`, the paper's OLAP machine (needs root).
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,

    /// Where generated hours are kept (one folder per size of hour and seed).
    #[arg(long, value_name = "DIR", default_value = ".ghbench/bench")]
    pub data_dir: PathBuf,

    /// Folder for quarantined lines.
    #[arg(long, default_value = ".ghbench/quarantine")]
    pub quarantine_dir: PathBuf,

    /// `bench-<time>.json`, `.md`, `-charts/` and `.html` in --output.
    #[command(flatten)]
    pub results: ResultsArgs,

    #[command(flatten)]
    pub markdown: MarkdownArg,

    /// Go on with the unfinished bench of this record (written after every
    /// query: a bench stopped part way keeps the sizes and queries it
    /// finished): those are kept, the size it stopped in goes on at its next
    /// query, the rest is measured, the record finished in place. Give the
    /// same command; refused, saying what changed, when the data, the engines,
    /// ghbench, the timing options, the query texts, the servers and their
    /// settings, the indexes, the memory limits or the disk's (--disk,
    /// --regime-iops, --iops-size) differ, or when the stopped size's tables
    /// had to be loaded or indexed again.
    #[arg(long, value_name = "RECORD")]
    pub resume: Option<PathBuf>,
}

impl BenchArgs {
    /// The first hour and the sizes in hours from it, smallest first.
    fn sizes(&self) -> Result<(Hour, Vec<u32>)> {
        let first = self.hours.from.unwrap_or_else(default_first_hour);
        let mut sizes = match &self.scale[..] {
            [] if self.hours.says_how_many() => {
                let range = self.hours.range_from(Some(default_first_hour()))?;
                return Ok((range.first, vec![u32::try_from(range.len())?]));
            }
            [] => bail!("say how much data: --hours 6 (generated hours, or with --source), --year 2015, or --scale 1,6,24"),
            _ if self.hours.says_how_many() => bail!("--scale gives the sizes, in hours from --from: leave out --hours, --to and --year"),
            scale => scale.to_vec(),
        };
        sizes.sort_unstable();
        sizes.dedup();
        Ok((first, sizes))
    }

    /// The disk axis asked with what it belongs to (checked here, after a
    /// preset, so a preset's conflicts are said as such).
    fn check_disk_axis(&self) -> Result<()> {
        if !self.regime_iops.is_empty() && self.regime.is_empty() {
            bail!("--regime-iops gives the disk points of a --regime sweep: add --regime (e.g. --regime 5), or use --disk for one throttle");
        }
        // The memory-free queries run under --disk as given, and each point
        // replaces its read IOPS: `free` would then read faster than the
        // baseline it is charted beside.
        if let (false, Some(read_iops)) = (self.regime_iops.is_empty(), self.timing.disk.as_ref().and_then(|disk| disk.rules.read_iops)) {
            bail!("--regime-iops sets the read IOPS at each point, so --disk riops={read_iops} would hold only the queries with memory free (and `free` would drop it): leave riops= out of --disk (its rbps= holds at every point), or add {read_iops} to --regime-iops");
        }
        if let Some(size) = self.iops_size {
            if let Some(iops) = self.regime_iops.iter().filter_map(|point| point.0).find(|iops| iops.saturating_mul(size) < ghbench_olap::throttle::LEAST_RATE) {
                bail!(
                    "--regime-iops {iops} with --iops-size {size} bytes leaves {} B/s: {}; give a larger --iops-size or more IOPS",
                    iops * size,
                    ghbench_olap::throttle::too_slow()
                );
            }
        }
        if self.iops_size.is_some() && self.regime_iops.iter().all(|point| point.0.is_none()) {
            bail!("--iops-size caps each throttled --regime-iops point's read bandwidth: add --regime-iops with read IOPS (e.g. --regime 5 --regime-iops free,1000), or give --disk rbps= for one throttle");
        }
        Ok(())
    }

    fn disk_points(&self) -> regime::DiskPoints {
        regime::DiskPoints { iops: self.regime_iops.clone(), io_size: self.iops_size }
    }

    fn origin(&self) -> Origin {
        match &self.source {
            Some(location) => Origin::Source(location.clone()),
            None => Origin::Generated { seed: self.seed, events_per_hour: self.events_per_hour, pools: self.pools.pools() },
        }
    }
}

/// The most one read carried on the paper's volume: Linux's default
/// readahead window (`VM_READAHEAD_PAGES`), under EBS's 256 KiB unit.
const PAPER_READ_SIZE: u64 = 128 * 1024;

/// `--iops-size`: a size, of one sector (512 bytes) at least.
fn parse_io_size(text: &str) -> Result<u64, String> {
    match ghbench_core::size::parse_size(text)? {
        size if size >= 512 => Ok(size),
        size => Err(format!("{size} bytes is less than one disk sector (512 bytes); give the most one read operation carries, e.g. 128KiB")),
    }
}

/// A machine `--preset` reproduces: the options it stands for, and the
/// setup that writes each down with why and its source.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The paper's OLAP machine (`paper2019.json`).
    Paper2019,
}

impl Preset {
    /// Each value with why and its source, as the record keeps it.
    pub fn setup(self) -> ghbench_core::Setup {
        match self {
            Preset::Paper2019 => serde_json::from_str(include_str!("paper2019.json")).expect("paper2019.json is a setup (checked by a test)"),
        }
    }

    /// The disk points it measures at its memory ratio.
    fn disk_points(self) -> Vec<regime::ReadIops> {
        match self {
            Preset::Paper2019 => vec![regime::ReadIops(None), regime::ReadIops(Some(5000)), regime::ReadIops(Some(1000))],
        }
    }

    /// `args` with the options the preset stands for (--cold stays as asked,
    /// a true cold round if not); refused, naming them, when any of those
    /// options was given too: the preset would silently replace it. Two
    /// narrow it instead, as the record's setup then says (`as_run`): a
    /// --regime-iops of some of its disk points, and --variant (at ten
    /// million events each point of both texts takes about an hour).
    fn apply(self, mut args: BenchArgs) -> Result<BenchArgs> {
        let own_points = self.disk_points();
        if let Some(other) = args.regime_iops.iter().find(|point| !own_points.contains(point)) {
            bail!(
                "--preset {} measures the disk at {}: --regime-iops may pick some of those (e.g. --regime-iops 1000), not {}; give the options it stands for instead of --preset to measure others",
                self.name(),
                regime::points_said(&own_points),
                other
            );
        }
        let given = [
            ("--regime", !args.regime.is_empty()),
            ("--iops-size", args.iops_size.is_some()),
            ("--memory", args.memory.is_some()),
            ("--disk", args.timing.disk.is_some()),
            ("--scale", !args.scale.is_empty()),
            ("--rounds", args.timing.rounds),
            // Its record says a true cold round came first.
            ("--cold=clear", args.timing.cold == Some(super::cold::ColdHow::Clear)),
        ];
        let given: Vec<&str> = given.iter().filter(|(_, given)| *given).map(|(option, _)| *option).collect();
        if !given.is_empty() {
            let why = match given.iter().any(|o| ["--memory", "--scale"].contains(o)) {
                true => " (--memory and --scale do not go with --regime)",
                false => "",
            };
            bail!(
                "--preset {} stands for {} and true cold runs{why}: leave out {}, or give the options it stands for instead of --preset to vary one (`ghbench bench --help` lists them)",
                self.name(),
                self.sets(),
                given.join(" and ")
            );
        }
        match self {
            Preset::Paper2019 => {
                args.regime = vec![5.0];
                if args.regime_iops.is_empty() {
                    args.regime_iops = own_points;
                }
                // Narrowed to `free` alone, no point is throttled for it to cap.
                if args.regime_iops.iter().any(|point| point.0.is_some()) {
                    args.iops_size = Some(PAPER_READ_SIZE);
                }
                args.timing.disk = Some("rbps=437MB".parse().expect("a disk limit"));
                args.timing.rounds = true;
                args.timing.cold = args.timing.cold.or(Some(super::cold::ColdHow::Restart));
            }
        }
        Ok(args)
    }

    fn name(self) -> &'static str {
        match self {
            Preset::Paper2019 => "paper2019",
        }
    }

    /// Its setup as `args` (applied) ran it: written down whole, with what the
    /// user narrowed said as one change more, so no record of some of its
    /// points or texts reads as a record of all of them.
    fn as_run(self, args: &BenchArgs) -> ghbench_core::Setup {
        let mut setup = self.setup();
        let mut narrowed = Vec::new();
        let own_points = self.disk_points();
        let mut points = Vec::new();
        for point in &args.regime_iops {
            if !points.contains(point) {
                points.push(*point);
            }
        }
        if own_points.iter().any(|point| !points.contains(point)) {
            narrowed.push(format!("--regime-iops {}: only these of its disk points ({})", regime::points_said(&points), regime::points_said(&own_points)));
        }
        if args.timing.variant != super::olap::EVERY_VARIANT {
            narrowed.push(format!("--variant {}: only these query texts (it stands for both)", args.timing.variant));
        }
        if !narrowed.is_empty() {
            setup.about = format!("{}; NARROWED: {}", setup.about, narrowed.join("; "));
            setup.changes.push(ghbench_core::Change {
                what: format!("narrowed to {}", narrowed.join("; ")),
                why: "given with the preset: the run measures part of what the preset stands for, the rest as it stands".into(),
                source: "the bench's command line".into(),
            });
        }
        setup
    }

    /// The options it stands for, as the user would give them.
    fn sets(self) -> &'static str {
        match self {
            Preset::Paper2019 => "--regime 5 --regime-iops free,5000,1000 --iops-size 128KiB --disk rbps=437MB --rounds",
        }
    }
}

pub async fn run(args: BenchArgs, registry: &Engines) -> Result<Finished> {
    let started = Instant::now();
    let args = match args.preset {
        Some(preset) => preset.apply(args)?,
        None => args,
    };
    args.check_disk_axis()?;
    let paper_planner = args.preset == Some(Preset::Paper2019);
    let (first_hour, sizes) = args.sizes()?;
    let catalog = args.catalog.load()?;
    let base: TableName = match &args.conn.table {
        Some(table) => table.clone(),
        None => DEFAULT_BASE.parse()?,
    };
    // Checked before any data is made: a typo must not cost a long generation.
    let selected = registry.select(&args.conn)?;
    let options = args.timing.options(&catalog, Vec::new())?;
    let concurrency = plan_concurrency(&catalog, &options, args.concurrency.options())?;
    let managed = args.timing.managed_servers(args.memory.is_some() || args.timing.disk.is_some() || !args.regime.is_empty())?;
    // The sweep's limits come from what is stored; the smallest a point can
    // have stands for them in the checks made before any data.
    let smallest_sweep = (!args.regime.is_empty()).then(|| memory::MemorySize::chosen(ghbench_olap::bench::MIN_REGIME_MEMORY, "--regime (its limits, 64 MiB at least)".into()));
    if let Some(size) = args.memory.as_ref().or(smallest_sweep.as_ref()) {
        memory::check_can_limit(size)?;
    }
    // --regime-iops' throttled points need what --disk needs.
    let first_throttled = args.disk_points().throttles(args.timing.disk.as_ref()).into_iter().flatten().next();
    if let Some(disk) = args.timing.disk.as_ref().or(first_throttled.as_ref()) {
        disk::check_can_throttle(disk, &selected, managed.as_ref())?;
    }
    if let Some(limits) = limits::Limits::of(args.memory.as_ref().or(smallest_sweep.as_ref()), args.timing.disk.as_ref(), paper_planner) {
        limits::servers_to_limit(&limits, &selected, managed.as_ref())?;
    }
    args.results.check(args.markdown.markdown.as_ref())?;
    let screen = args.results.screen(args.markdown.markdown.as_ref());
    crate::options::check_folder("--quarantine-dir", &args.quarantine_dir, "for quarantined lines")?;
    let largest_size = *sizes.last().expect("at least one size");
    let data = Data::prepare(&args.origin(), first_hour, largest_size, &args.data_dir)?;
    if let Some(split) = &data.record.split {
        eprintln!("[bench] data: {}", split.said());
    }
    // Each table leaves room for the index names made from it; every name is
    // checked before any data is made.
    let tables = sizes.iter().map(|&hours| data.table(&base, hours, &catalog)).collect::<Result<Vec<_>>>()?;
    data.make()?;
    let first_table = tables[0].clone();
    let largest_table = tables.last().cloned().expect("at least one size");
    // --fresh never falls back: servers slow to answer must not turn a reload
    // of the databases into one of the embedded engine alone.
    let engines = if args.fresh { registry.select_present(&args.conn, &first_table).await? } else { registry.select_reachable(&args.conn, &first_table).await? };
    let limits = limits::Limits::of(args.memory.as_ref(), args.timing.disk.as_ref(), paper_planner);
    // Beyond memory the disk sets the pace: which one, and how fast it reads
    // (measured free, before any throttle).
    let disk = (limits.is_some() || !args.regime.is_empty()).then(|| {
        let folders = args.timing.managed.data_folders().unwrap_or_default();
        let folder = folders.first().map_or(args.data_dir.clone(), |(_, dir)| dir.clone());
        let disk = ghbench_olap::disk::measure(&folder);
        eprintln!("[bench] disk: {}", disk.said());
        disk
    });
    let under_limit = match &limits {
        Some(limits) => Some(limits::UnderLimit::start(limits, &engines, managed.as_ref(), &|line| eprintln!("[bench] {line}")).await?),
        None => None,
    };
    // The servers go back as setup left them however the bench ends (after a
    // signal, `cli` restores them: see `limits::restore_after_signal`).
    let measured = async {
        let fresh = BenchRecord { schema: BENCH_SCHEMA.into(), data: data.record.clone(), sizes: Vec::new(), growth: Vec::new(), engine_growth: Vec::new(), report_peak_bytes: None, measuring: None, finished: false, resumed: None, regime: None, preset: args.preset.map(|preset| preset.as_run(&args)) };
        // Written after every query and size (unfinished until the report): a
        // bench that stops keeps what it measured; a resumed one finishes its record.
        let (mut record, json_path) = match &args.resume {
            Some(path) => (resume::unfinished_bench(path, &fresh, &sizes, &engines, !args.regime.is_empty())?, path.clone()),
            None => (fresh, args.results.record_path("bench")),
        };
        if let Some(stopped) = record.measuring.as_ref().filter(|_| args.fresh) {
            bail!(
                "--resume {} with --fresh: the {} h size it stopped in would be loaded again, and its kept queries were timed on its tables as they were; leave out --fresh to go on, or start the bench anew",
                json_path.display(),
                stopped.hours
            );
        }
        crate::outcome::written_as_it_goes(&json_path);
        crate::outcome::written_as_it_goes(&answers_dir(&json_path));
        let write_record = |record: &BenchRecord| {
            let written = serde_json::to_string_pretty(record).map_err(anyhow::Error::from).and_then(|text| write(&json_path, &text));
            if let Err(e) = written {
                eprintln!("warning: the record of what was measured so far was not written ({e:#}); the bench goes on");
            }
        };
        let queries = Queries { engines: &engines, managed: managed.as_ref(), catalog: &catalog, options: &options, concurrency: &concurrency, timing: &args.timing, screen, disk: disk.as_ref(), throttle: args.timing.disk.as_ref(), paper_planner };
        for (hours, table) in sizes.into_iter().zip(tables) {
            if record.sizes.iter().any(|s| s.hours == hours) {
                eprintln!("[bench {hours} h] kept from the record it resumes");
                continue;
            }
            let phase = |what: &str| eprintln!("[bench {hours} h, {:>5.0} s] {what}", started.elapsed().as_secs_f64());
            phase(&format!("load into '{table}' on {}", names(&engines)));
            let range = HourRange::starting_at(data.first, hours)?;
            // A cluster's nodes each have a cgroup of their own: all counted.
            let nodes = match args.memory.is_some() {
                true => memory::engines_nodes(&engines, &table).await,
                false => Vec::new(),
            };
            let before_load = args.memory.as_ref().map(|size| memory::cgroup_counters(size, &engines, &nodes)).unwrap_or_default();
            // Before any of the size loads: its whole need against free space.
            let before = record.sizes.last().map(|s| HourRange::starting_at(data.first, s.hours).map(|r| (s, r))).transpose()?;
            // Not for a single size (its one load is checked engine by engine),
            // nor for the size a resumed bench stopped in (loaded already).
            let resuming = record.measuring.as_ref().is_some_and(|m| m.hours == hours);
            let disk_plan = match args.scale.is_empty() || resuming {
                true => None,
                false => Some(disk_plan::check(&engines, &table, &data.source, range, before, args.fresh, args.force, &args.timing.managed.data_folders()?).await?),
            };
            for line in disk_plan.iter().flat_map(|p| &p.lines) {
                phase(&format!("disk: {line}"));
            }
            // ghbench's own peak in each phase of the size.
            let reset = ghbench_core::peak::reset();
            let mut loads = Vec::new();
            for engine in &engines {
                // Its need measured and found to fit: ingest's own check, on the JSON size, would only guess.
                let measured = disk_plan.as_ref().is_some_and(|p| p.measured.contains(engine.engine()));
                loads.push(load(engine, registry, &data, range, &table, &args, measured).await?);
            }
            let backends = connect_backends(&engines, &table).await?;
            phase("indexes");
            let mut indexes = Vec::new();
            for backend in &backends {
                // Under the paper's planner settings its statistics target
                // holds for tables loaded before too: ANALYZE again.
                indexes.push(build_indexes(backend.as_ref(), &catalog, &|_| {}, paper_planner).await);
            }
            // A sweep whose limits cannot be had is refused now, not after the size's queries.
            if let (false, Some(reference)) = (args.regime.is_empty(), backends.first()) {
                if table == largest_table {
                    if let Ok(stored) = reference.sizes().await {
                        regime::reachable(&args.regime, &reference.spec().engine.to_string(), stored.table_bytes + stored.index_bytes, stored.rows)?;
                    }
                }
            }
            let memory_during_load = args.memory.as_ref().map(|size| memory::during_load(size, &engines, &nodes, &before_load)).unwrap_or_default();
            for line in &memory_during_load {
                phase(&format!("memory: {}", line.said()));
            }
            let load_peak = ghbench_core::peak::peak_bytes();
            ghbench_core::peak::reset();
            let answers = answers_dir(&json_path).join(format!("{hours}h"));
            let mut size = SizeSoFar { hours, table: table.to_string(), loads, indexes, memory_during_load };
            // The size a resumed record stopped in: its loads, index builds and
            // finished queries kept, the run going on at its next query.
            let going_on = match record.measuring.take().filter(|m| m.hours == hours) {
                Some(stopped) => {
                    let (kept, run) = SizeSoFar::of(stopped);
                    resume::nothing_redone(&size.loads, &size.indexes, hours)?;
                    let queries: Vec<String> = run.queries.iter().map(|q| format!("{} {}", q.query, q.variant)).collect();
                    phase(&format!("going on from the record it resumes, its loads, index builds and {} kept", match queries.is_empty() {
                        true => "no query".to_string(),
                        false => queries.join(", "),
                    }));
                    size = kept;
                    Some((run, answers.clone()))
                }
                None => None,
            };
            // A resumed size's phases ran partly in another process: no peaks for it.
            let resumed_here = going_on.is_some();
            let keep = KeptAsItGoes { answers, save: Box::new(save_measuring(&json_path, &record, &size)) };
            let run = queries.run(backends, &table, &format!("[bench {hours} h] "), limits.as_ref(), &phase, Some(keep), going_on).await?;
            if let Some(kept) = record.sizes.first() {
                resume::same_run(&kept.run.context, &run.context)?;
            }
            let mut size = size.with_run(run);
            size.disk_plan = disk_plan;
            size.ghbench_memory = (!resumed_here).then(|| ghbench_olap::bench::PhasePeaks { load_bytes: load_peak, queries_bytes: ghbench_core::peak::peak_bytes(), reset });
            if args.drop_measured {
                size.dropped = drop_tables(&engines, &table).await;
                phase(&format!("tables dropped once measured: {}", size.dropped.join("; ")));
            }
            screen.line(size_text(&size));
            if let Some(text) = concurrency_text(&size.run, Style::Terminal) {
                screen.line(text);
            }
            record.sizes.push(size);
            write_record(&record);
        }
        if !args.regime.is_empty() {
            regime::sweep(&mut record, &args.regime, &args.disk_points(), &queries, &largest_table, &write_record).await?;
        }
        record.growth = growth(&record.sizes);
        record.engine_growth = engine_growth(&record.sizes);
        record.finished = true;
        report(&record, &json_path, started.elapsed(), &args, screen)
    }
    .await;
    if let Some(under) = under_limit {
        under.end(&|line| eprintln!("[bench] {line}")).await;
    }
    measured
}

/// What every query run of a bench shares: the engines, the queries and
/// how they are timed. Each size's run and each `--regime` point are runs
/// of it, on their table.
struct Queries<'a> {
    engines: &'a [Selected],
    managed: Option<&'a super::servers::ManagedServers>,
    catalog: &'a Catalog,
    options: &'a QueryOptions,
    concurrency: &'a Option<ConcurrencyOptions>,
    timing: &'a TimingArgs,
    /// Where the tables go (standard error when --json - or --markdown - took standard output).
    screen: Screen,
    /// Measured once where the servers keep their data, under a limit.
    disk: Option<&'a ghbench_olap::disk::Disk>,
    /// `--disk`: the throttle every run of the bench reads through, `--regime`'s points too.
    throttle: Option<&'a disk::DiskArg>,
    /// `--preset paper2019`: every restart keeps the paper's planner settings.
    paper_planner: bool,
}

impl Queries<'_> {
    /// The queries on `table` through `backends` (closed afterwards), under
    /// `limits` when the servers were restarted inside them.
    /// The record so far is kept by `keep` after every query; `resume` goes
    /// on from an unfinished run (its answers' folder beside it).
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        mut backends: Vec<Box<dyn Backend>>,
        table: &TableName,
        prefix: &str,
        limits: Option<&limits::Limits>,
        phase: &dyn Fn(&str),
        keep: Option<KeptAsItGoes>,
        resume: Option<(RunRecord, PathBuf)>,
    ) -> Result<RunRecord> {
        let cooler = self.timing.cooler(self.engines, self.managed, table, limits.cloned());
        let before_runs = limits::drop_page_cache_under(limits, phase);
        if self.options.cold {
            for line in cooler.describe() {
                phase(&format!("cold: {line}"));
            }
        }
        let options = self.options;
        phase(&format!("queries ({}, {} hot run(s){})", options.variants.join(" and "), options.repeat, match options.cold_runs() {
            0 => String::new(),
            1 => " after a cold one".to_string(),
            n => format!(" after {n} cold ones, each made cold on its own"),
        }));
        let baseline = self.engines.first().map(|e| e.engine().clone());
        let progress = QueryProgress::new();
        progress.bar.set_prefix(prefix.to_string());
        let plan = RunPlan { queries: options.clone(), baseline, concurrency: self.concurrency.clone(), record_to: keep, resume, cold_method: self.timing.cold_method(), before_runs };
        let measured = measure(&mut backends, self.catalog, plan, table, &progress, &cooler).await;
        progress.bar.finish_and_clear();
        for backend in &backends {
            backend.close().await;
        }
        let mut run = measured?.0;
        run.context.machine.disk = self.disk.cloned();
        Ok(run)
    }
}

/// A size before its queries: its loads and index builds.
#[derive(Clone)]
struct SizeSoFar {
    hours: u32,
    table: String,
    loads: Vec<LoadRecord>,
    indexes: Vec<IndexEngineRecord>,
    memory_during_load: Vec<LoadMemory>,
}

impl SizeSoFar {
    fn with_run(self, run: RunRecord) -> SizeRecord {
        let SizeSoFar { hours, table, loads, indexes, memory_during_load } = self;
        SizeRecord { hours, table, loads, indexes, run, memory_during_load, dropped: Vec::new(), disk_plan: None, ghbench_memory: None }
    }

    /// A size's record taken apart: what came before its queries, and its run.
    fn of(size: SizeRecord) -> (SizeSoFar, RunRecord) {
        let SizeRecord { hours, table, loads, indexes, run, memory_during_load, .. } = size;
        (SizeSoFar { hours, table, loads, indexes, memory_during_load }, run)
    }
}

/// What keeps a size's record as its queries finish: the bench's record as
/// it stood before the size, with the size and its run so far as the one it
/// is measuring, written whole at `path`.
fn save_measuring(path: &Path, record: &BenchRecord, size: &SizeSoFar) -> impl Fn(&RunRecord) -> Result<()> + Send + Sync + 'static {
    let (path, record, size) = (path.to_path_buf(), record.clone(), size.clone());
    move |run: &RunRecord| {
        let record = BenchRecord { measuring: Some(size.clone().with_run(run.clone())), ..record.clone() };
        write(&path, &serde_json::to_string_pretty(&record)?)
    }
}

/// One engine's load of one size, in a run of its own; hours its ledger
/// lists are reused (unless --fresh). `room_measured`: the size's disk check
/// measured this engine's need and found room, so ingest's guess is not made.
#[allow(clippy::too_many_arguments)]
async fn load(engine: &Selected, registry: &Engines, data: &Data, range: HourRange, table: &TableName, args: &BenchArgs, room_measured: bool) -> Result<LoadRecord> {
    if args.force && !room_measured {
        eprintln!("[bench] {}: loading without its free-space check, as --force asks (a full disk stops the load)", engine.engine());
    }
    let options = IngestOptions {
        hours: range,
        source: data.source.clone(),
        engines: vec![engine.loader()],
        policy: registry.policy(),
        table: table.clone(),
        concurrency: args.streams.hours_at_once(),
        retries: 4,
        timeout: Duration::from_secs(120),
        force: room_measured || args.force,
        server_folders: args.timing.managed.data_folders()?,
        check_stored: false,
        whole_table_timeout: None,
        accept_damaged: false,
        quarantine_dir: args.quarantine_dir.clone(),
        drop: args.fresh,
        dry_run: false,
        reload: Default::default(),
        // A table is reused only with the very files asked for.
        reload_changed: true,
    };
    let progress = Arc::new(IngestProgress::new(std::slice::from_ref(engine.engine())));
    let started = Instant::now();
    let summary = ingest(options, progress.clone()).await?;
    let wall = started.elapsed().as_secs_f64();
    progress.finish();
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    let t = &summary.totals;
    // A rerun cannot bring an hour the source lacks: say what can.
    if t.hours_missing > 0 {
        let missing = summary.hours.iter().filter(|h| h.status == HourStatus::Missing).map(|h| h.hour);
        bail!(
            "{}: {} of the hours asked for are missing at the source ({}), loading '{table}'; a bench measures only the data it names: choose a range the source holds (--from, --hours), or another --source",
            engine.engine(),
            t.hours_missing,
            summarise_hours(missing, 10)
        );
    }
    if t.hours_failed + t.hours_partial > 0 {
        bail!(
            "{}: {} hour(s) failed, {} partly, loading '{table}'; rerun to retry (loaded hours are kept)",
            engine.engine(),
            t.hours_failed,
            t.hours_partial
        );
    }
    let totals = t.engines.get(engine.engine());
    let events = totals.map_or(0, |e| e.stored);
    let upkeep = totals.and_then(|e| e.upkeep.as_ref());
    let loaded = t.hours_loaded as u64;
    Ok(LoadRecord {
        engine: engine.engine().clone(),
        hours_loaded: loaded,
        hours_reused: t.hours_skipped as u64,
        events_loaded: events,
        seconds: (loaded > 0).then_some(wall),
        // Upkeep apart, as every load rate is.
        events_per_second: (loaded > 0 && wall - upkeep.map_or(0.0, |u| u.seconds) > 0.0).then(|| events as f64 / (wall - upkeep.map_or(0.0, |u| u.seconds))),
        concurrency: args.streams.hours_at_once(),
        upkeep: upkeep.map(|u| u.step.clone()),
        upkeep_seconds: upkeep.map(|u| u.seconds),
        retries: t.retries,
        hours_retried: t.hours_retried as u64,
        damage: damage(&summary),
        warnings: summary.warnings.clone(),
    })
}

/// Each engine's table of one size dropped (`--drop-measured`), as said per
/// engine: its data and ledger go, an empty table stays (a few kB) as an
/// engine leaves one when it drops a table to load it afresh.
async fn drop_tables(engines: &[Selected], table: &TableName) -> Vec<String> {
    let mut said = Vec::new();
    for engine in engines {
        let dropped = disk_plan::with_locked_table(engine, table, async |sink: &mut ghbench_ingest::sink::Sink| sink.prepare(true).await.map_err(|e| e.detail()));
        said.push(match dropped.await {
            Ok(()) => format!("{}: dropped", engine.engine()),
            Err(why) => format!("{}: NOT dropped ({why}); drop '{table}' by hand to free its space", engine.engine()),
        });
    }
    said
}

/// What the hours held besides events, as ingest reported it: this run's
/// damaged files and quarantined lines, and what the ledger says of reused hours.
fn damage(summary: &IngestSummary) -> DataDamage {
    let read = summary.hours.iter().filter_map(|h| Some(format!("{}: {}", h.hour, h.decode.as_ref()?.file_defect.as_ref()?)));
    let reused = summary.damaged_copies.iter().map(|c| format!("{} (reused): {}", c.hour, c.detail));
    let mut damaged_hours: Vec<String> = read.chain(reused).collect();
    damaged_hours.dedup();
    DataDamage {
        damaged_hours,
        quarantined: summary.totals.quarantined.iter().map(|(defect, n)| (defect.name().to_string(), *n)).collect(),
        quarantined_reused: summary.kept_quarantined,
        sanitized: summary.totals.sanitized,
        quarantine_dir: Path::new(&summary.quarantine_dir).join(&summary.table).display().to_string(),
    }
}

/// Writes the JSON, the Markdown with its charts and the HTML page (and
/// --json's and --markdown's files); says whether everything was verified.
fn report(record: &BenchRecord, json_path: &Path, took: Duration, args: &BenchArgs, screen: Screen) -> Result<Finished> {
    if largest(record).is_none() {
        bail!("no size was measured");
    }
    // ghbench's own peak while drawing the charts and the page, kept in the record.
    ghbench_core::peak::reset();
    let charts = BenchCharts::draw(record)?;
    let html = bench_html(record, &charts)?;
    let record = &BenchRecord { report_peak_bytes: ghbench_core::peak::peak_bytes(), ..record.clone() };
    let run = largest(record).expect("checked above");
    let json = serde_json::to_string_pretty(record)?;
    let render = |link: &str| format!("{}\n---\n\n{}", bench_markdown(record, &charts, link), markdown_with_charts(run, &charts.largest, link));
    let files = RunFiles { json_path, json: &json, charts_at: |md: &Path| write_charts(md, charts.all()), render };
    let mut finished = files.write(&args.results, args.markdown.markdown.as_ref())?;
    let html_path = json_path.with_extension("html");
    write(&html_path, &html)?;
    finished = finished.wrote(html_path);
    let answers = answers_dir(json_path);
    if answers.is_dir() {
        finished = finished.wrote(answers);
    }

    if let Some(text) = ghbench_report::regime::regime_text(record) {
        screen.line(text);
    }
    if let Some(preset) = &record.preset {
        screen.line(format!("preset: {}", ghbench_report::setup_said(preset).first().cloned().unwrap_or_default()));
    }
    screen.lines(server_lines(&run.context));
    screen.line(format!("first runs: {}", run.context.cold.label));
    if let Some(peak) = record.report_peak_bytes {
        screen.line(format!("ghbench itself: peak {} drawing the charts and the page", ghbench_core::size::said(peak)));
    }
    for g in record.growth.iter().filter(|g| g.seconds_per_million_events.is_some()) {
        let fit = match (g.not_meaningful(), g.seconds_per_million_events, g.exponent) {
            (None, Some(rate), Some(exponent)) => format!("{} s per million events, log-log slope {exponent:.2}", seconds(rate)),
            (why, _, _) => format!("no growth fitted ({})", why.unwrap_or_else(|| "no slope".into())),
        };
        let cold = g.cold.as_ref().map_or_else(String::new, |c| format!("; cold slope {}", c.exponent_said(Some(ghbench_olap::bench::MIN_FIT_SECONDS))));
        let rows = g.rows.as_ref().map_or_else(String::new, |r| format!("; answer rows slope {}", r.exponent_said(None)));
        screen.line(format!("growth {} {} {}: {fit}{cold}{rows}", g.query, g.variant, g.engine));
    }
    if let Some(engines) = ghbench_report::growth::engine_growth_table(record) {
        screen.line(format!("growth of each engine's load, index builds and bytes:\n{}", engines.render(Style::Terminal)));
    }
    for line in ghbench_report::growth::what_grew(record) {
        screen.line(format!("faster than the data: {line}"));
    }
    let problems = bench_problems(record);
    let reconnects = record.sizes.iter().flat_map(|s| reconnect_notes(&s.run).into_iter().map(move |p| format!("{} h: {p}", s.hours)));
    for line in reconnects.chain(problems.iter().cloned()) {
        eprintln!("{line}");
    }
    let verified = record.sizes.iter().all(|s| s.verdict().1);
    eprintln!("bench took {:.0} s", took.as_secs_f64());
    Ok(finished.trusted_unless(&problems, verified))
}

fn names(engines: &[Selected]) -> String {
    engines.iter().map(|e| e.engine().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Bench {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn bench(args: &[&str]) -> BenchArgs {
        Bench::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).unwrap().args
    }

    #[test]
    fn a_preset_refuses_the_options_it_sets_naming_them() {
        let applied = Preset::Paper2019.apply(bench(&["--hours", "1"])).unwrap();
        assert_eq!(applied.regime, vec![5.0]);
        assert_eq!(applied.iops_size, Some(PAPER_READ_SIZE));
        // What --help and the refusal say the preset sets is what it sets.
        let (said, set) = (Preset::Paper2019.sets(), bench(&["--hours", "1", "--regime", "5", "--regime-iops", "free,5000,1000", "--iops-size", "128KiB", "--disk", "rbps=437MB", "--rounds"]));
        assert_eq!((set.regime, set.regime_iops, set.iops_size, set.timing.rounds), (applied.regime, applied.regime_iops, applied.iops_size, applied.timing.rounds), "{said}");
        assert_eq!(set.timing.disk.map(|d| d.rules), applied.timing.disk.map(|d| d.rules));
        let error = Preset::Paper2019.apply(bench(&["--hours", "1", "--memory", "1GiB", "--rounds"])).unwrap_err().to_string();
        assert!(error.contains("--preset paper2019 stands for --regime 5") && error.contains("leave out --memory and --rounds"), "{error}");
        assert!(error.contains("do not go with --regime"), "{error}");
        // What its record says ran: true cold runs.
        let error = Preset::Paper2019.apply(bench(&["--hours", "1", "--variant", "corrected", "--cold=clear"])).unwrap_err().to_string();
        assert!(error.contains("leave out --cold=clear") && !error.contains("--variant") && !error.contains("do not go with --regime"), "{error}");
        assert!(Preset::Paper2019.apply(bench(&["--hours", "1", "--cold=restart", "--variant", "both"])).is_ok());
        let error = Preset::Paper2019.apply(bench(&["--hours", "1", "--regime", "1", "--regime-iops", "1000"])).unwrap_err().to_string();
        assert!(error.contains("leave out --regime,"), "{error}");
        // A disk point it does not stand for is refused, naming the ones it does.
        let error = Preset::Paper2019.apply(bench(&["--hours", "1", "--regime-iops", "free,2000"])).unwrap_err().to_string();
        assert!(error.contains("measures the disk at free,5000,1000") && error.contains("not 2000"), "{error}");
    }

    #[test]
    fn several_cold_runs_go_with_the_preset_which_sets_cold_and_are_refused_without_cold() {
        let with_preset = Preset::Paper2019.apply(bench(&["--hours", "1", "--cold-repeat", "3"])).unwrap();
        let catalog = with_preset.catalog.load().unwrap();
        assert_eq!(with_preset.timing.options(&catalog, Vec::new()).unwrap().cold_runs(), 3);
        let error = bench(&["--hours", "1", "--cold-repeat", "3"]).timing.options(&catalog, Vec::new()).unwrap_err().to_string();
        assert!(error.contains("--cold-repeat 3") && error.contains("add --cold"), "{error}");
    }

    #[test]
    fn a_preset_narrowed_to_some_points_and_one_text_says_so_in_its_record() {
        let whole = Preset::Paper2019.apply(bench(&["--hours", "1"])).unwrap();
        assert_eq!(Preset::Paper2019.as_run(&whole), Preset::Paper2019.setup());
        // All its points given, in its order: the preset as it stands.
        let spelled = Preset::Paper2019.apply(bench(&["--hours", "1", "--regime-iops", "free,5000,1000", "--variant", "both"])).unwrap();
        assert_eq!(Preset::Paper2019.as_run(&spelled), Preset::Paper2019.setup());
        let narrowed = Preset::Paper2019.apply(bench(&["--hours", "1", "--regime-iops", "1000", "--variant", "published"])).unwrap();
        assert_eq!((narrowed.regime_iops.clone(), narrowed.regime.clone(), narrowed.iops_size), (vec![regime::ReadIops(Some(1000))], vec![5.0], Some(PAPER_READ_SIZE)));
        narrowed.check_disk_axis().unwrap();
        let setup = Preset::Paper2019.as_run(&narrowed);
        assert_eq!(setup.changes.len(), Preset::Paper2019.setup().changes.len() + 1);
        let change = setup.changes.last().unwrap();
        assert!(change.what.contains("--regime-iops 1000: only these of its disk points (free,5000,1000)") && change.what.contains("--variant published"), "{}", change.what);
        assert!(setup.about.contains("NARROWED"), "{}", setup.about);
        // The disk free alone: nothing throttled, so no read size to cap.
        let free_alone = Preset::Paper2019.apply(bench(&["--hours", "1", "--regime-iops", "free"])).unwrap();
        assert_eq!(free_alone.iops_size, None);
        free_alone.check_disk_axis().unwrap();
        assert!(Preset::Paper2019.as_run(&free_alone).changes.last().unwrap().what.contains("--regime-iops free: only"));
        // One text alone narrows it too.
        let one_text = Preset::Paper2019.apply(bench(&["--hours", "1", "--variant", "corrected"])).unwrap();
        let setup = Preset::Paper2019.as_run(&one_text);
        assert!(setup.changes.last().unwrap().what.contains("--variant corrected") && !setup.changes.last().unwrap().what.contains("--regime-iops"), "{setup:?}");
    }

    #[test]
    fn a_disk_axis_without_the_sweep_it_belongs_to_is_refused_saying_what_to_add() {
        let error = bench(&["--hours", "1", "--regime-iops", "1000"]).check_disk_axis().unwrap_err().to_string();
        assert!(error.contains("add --regime"), "{error}");
        let error = bench(&["--hours", "1", "--regime", "5", "--iops-size", "128KiB"]).check_disk_axis().unwrap_err().to_string();
        assert!(error.contains("add --regime-iops"), "{error}");
        bench(&["--hours", "1", "--regime", "5", "--regime-iops", "free,1000", "--iops-size", "128KiB"]).check_disk_axis().unwrap();
        // Only `free`: no point for the size to cap.
        let error = bench(&["--hours", "1", "--regime", "5", "--regime-iops", "free", "--iops-size", "128KiB"]).check_disk_axis().unwrap_err().to_string();
        assert!(error.contains("with read IOPS"), "{error}");
        Preset::Paper2019.apply(bench(&["--hours", "1"])).unwrap().check_disk_axis().unwrap();
        // A point whose bandwidth could not start a server.
        let error = bench(&["--hours", "1", "--regime", "0.05", "--regime-iops", "1", "--iops-size", "512"]).check_disk_axis().unwrap_err().to_string();
        assert!(error.contains("leaves 512 B/s") && error.contains("may never start"), "{error}");
        // --disk's read IOPS would hold the baseline alone.
        let error = bench(&["--hours", "1", "--regime", "5", "--regime-iops", "free,1000", "--disk", "riops=500,rbps=400MB"]).check_disk_axis().unwrap_err().to_string();
        assert!(error.contains("riops=500") && error.contains("leave riops= out of --disk"), "{error}");
        bench(&["--hours", "1", "--regime", "5", "--regime-iops", "free,1000", "--disk", "rbps=400MB"]).check_disk_axis().unwrap();
    }

    #[test]
    fn the_paper2019_preset_is_written_down_value_by_value_with_sources() {
        let setup = Preset::Paper2019.setup();
        assert_eq!(setup.name, "paper2019");
        assert!(setup.changes.len() >= 6, "{setup:?}");
        for change in &setup.changes {
            assert!(!change.why.is_empty() && !change.source.is_empty(), "{change:?}");
        }
        // What the paper does not state is said to be inferred.
        assert!(setup.changes.iter().any(|c| c.source.contains("INFERRED: the OLAP volume's IOPS")), "{setup:?}");
    }
}

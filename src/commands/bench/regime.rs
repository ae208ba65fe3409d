//! `bench --regime RATIOS`: the paper's verdict as a function of data ÷
//! memory. After the size's own run (memory free), the same engines are
//! queried again under limits chosen so the first engine's data (table and
//! indexes: postgres's by default, the paper's jsonb) is each ratio times its
//! memory: one load, many memories. Each point restarts the servers inside
//! its limit (`bench --memory`'s machinery) and is written to the record as
//! soon as it is measured, so a sweep that stops keeps its points.
//! `--regime-iops` adds a disk axis: at every ratio, one point per read
//! IOPS asked (`free`, or a throttle as `--disk` sets one), the servers
//! restarted inside both limits.

use anyhow::{bail, Context as _, Result};
use ghbench_olap::bench::{BenchRecord, Regime, RegimePoint, MIN_REGIME_MEMORY};
use ghbench_olap::record::DiskRules;
use ghbench_report::regime::point_text;
use ghbench_core::size::said;
use ghbench_core::TableName;

use super::disk::DiskArg;
use super::limits::{Limits, UnderLimit};
use super::memory::MemorySize;
use super::Queries;
use crate::options::connect_backends;

/// Said in the record: the sweep loads before it knows its memory limits
/// (under `--disk`'s throttle, when one is asked).
fn load_memory(disk: Option<&DiskArg>) -> String {
    let throttle = disk.map_or(String::new(), |d| format!(", under the disk throttle of {} ({})", d.rules.said(), d.asked));
    format!("the load and the index builds ran without a memory limit{throttle} (the sweep's limits are chosen from what they stored)")
}

/// A ratio of data to memory, as `--regime` takes it: positive and finite.
pub fn parse_ratio(text: &str) -> Result<f64, String> {
    let ratio: f64 = text.trim().trim_end_matches(['x', '×']).parse().map_err(|_| format!("'{text}' is not a ratio of data to memory (e.g. 0.25, 1, 5)"))?;
    match ratio.is_finite() && ratio > 0.0 {
        true => Ok(ratio),
        false => Err(format!("'{text}': a ratio of data to memory is above 0")),
    }
}

/// A disk point of `--regime-iops`: read operations a second, or None for
/// the disk free (`free`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadIops(pub Option<u64>);

/// As `--regime-iops` takes it: `free` or the read IOPS.
impl std::fmt::Display for ReadIops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(iops) => write!(f, "{iops}"),
            None => f.write_str("free"),
        }
    }
}

pub fn parse_iops(text: &str) -> Result<ReadIops, String> {
    match text.trim() {
        "free" => Ok(ReadIops(None)),
        n => match n.parse::<u64>() {
            Ok(iops) if iops > 0 && iops <= ghbench_olap::throttle::MOST_IOPS => Ok(ReadIops(Some(iops))),
            _ => Err(format!(
                "'{text}' is not a disk point: read operations a second, from 1 to {} (e.g. 1000), or `free` for the disk as it is",
                ghbench_olap::throttle::MOST_IOPS
            )),
        },
    }
}

/// Disk points as `--regime-iops` takes them: `free,5000,1000`.
pub fn points_said(points: &[ReadIops]) -> String {
    points.iter().map(ReadIops::to_string).collect::<Vec<_>>().join(",")
}

/// The disk points of `--regime-iops`, and `--iops-size`: the largest I/O a
/// throttled point counts as one operation, so its read bandwidth is at most
/// its IOPS times that (as EBS counts an io1 volume's I/Os of up to 256 KiB,
/// and a kernel reading ahead 128 KiB issues a scan's reads that large).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskPoints {
    pub iops: Vec<ReadIops>,
    pub io_size: Option<u64>,
}

impl DiskPoints {
    /// The throttle of each point on top of `--disk`'s; without points, one:
    /// `--disk`'s throttle, or none.
    pub fn throttles(&self, base: Option<&DiskArg>) -> Vec<Option<DiskArg>> {
        if self.iops.is_empty() {
            return vec![base.cloned()];
        }
        let mut throttles = Vec::new();
        for &point in &self.iops {
            let throttle = self.disk_at(base, point);
            // A point asked twice is measured once.
            if !throttles.contains(&throttle) {
                throttles.push(throttle);
            }
        }
        throttles
    }

    /// The throttle of the disk point `iops` on top of `--disk`'s (its read
    /// IOPS replaced; `free` takes them away; its read bandwidth the lesser of
    /// `--disk`'s and IOPS × `--iops-size`); None: nothing left to throttle.
    pub fn disk_at(&self, base: Option<&DiskArg>, iops: ReadIops) -> Option<DiskArg> {
        let mut rules = base.map(|b| b.rules.clone()).unwrap_or_default();
        rules.read_iops = iops.0;
        let mut asked = format!("--regime-iops {iops}");
        if let (Some(n), Some(io_size)) = (iops.0, self.io_size) {
            let bandwidth = n.saturating_mul(io_size);
            rules.read_bytes_per_second = Some(rules.read_bytes_per_second.map_or(bandwidth, |b| b.min(bandwidth)));
            asked.push_str(&format!(" --iops-size {}", said(io_size)));
        }
        let asked = base.map_or(asked.clone(), |b| format!("{} {asked}", b.asked));
        (!rules.is_empty()).then_some(DiskArg { rules, asked })
    }
}

/// Whether every ratio's limit can be had for the reference engine's
/// `bytes`: checked once the data is loaded, before its queries, so a sweep
/// that cannot run stops before the hour they take.
/// `events`: what the data holds, to say the smallest that would do in events.
pub fn reachable(ratios: &[f64], reference: &str, bytes: u64, events: u64) -> Result<()> {
    let machine = ghbench_core::size::machine_memory().context("--regime: this machine's memory (MemTotal in /proc/meminfo) could not be read")?;
    limits(ratios, reference, bytes, machine).map(|_| ()).map_err(|error| {
        let largest = ratios.iter().copied().fold(0.0, f64::max);
        let needed = MIN_REGIME_MEMORY as f64 * largest;
        match (events, needed > bytes as f64) {
            (1.., true) => {
                let per_event = bytes as f64 / events as f64;
                let at_least = (needed / per_event).ceil() as u64;
                error.context(format!(
                    "{reference} stores {per_event:.0} bytes an event here ({} events in {}): --regime {largest} needs about {} events at least",
                    ghbench_olap::record::thousands(events),
                    said(bytes),
                    ghbench_olap::record::thousands(at_least)
                ))
            }
            _ => error,
        }
    })
}

/// The sweep's limits, largest memory first, for the reference engine's
/// stored bytes; refused, before any is measured, when one would not let a
/// server start or is more than this machine has.
fn limits(ratios: &[f64], reference: &str, bytes: u64, machine: u64) -> Result<Vec<(f64, u64)>> {
    let mut ratios = ratios.to_vec();
    ratios.sort_by(f64::total_cmp);
    ratios.dedup();
    ratios
        .into_iter()
        .map(|ratio| {
            let Some(limit) = Regime::limit_for(bytes, ratio) else {
                bail!(
                    "--regime {ratio}: {reference}'s {} of data at {ratio}× memory is a limit of {}, under the {} a server needs to start; at {ratio}× it needs {} of data at least: load more (--hours, --events-per-hour) or ask a smaller ratio",
                    said(bytes),
                    said((bytes as f64 / ratio) as u64),
                    said(MIN_REGIME_MEMORY),
                    said((MIN_REGIME_MEMORY as f64 * ratio) as u64)
                )
            };
            if limit > machine {
                bail!(
                    "--regime {ratio}: {reference}'s {} of data at {ratio}× memory needs {} of memory, more than this machine's {}; ask a larger ratio, or load less data",
                    said(bytes),
                    said(limit),
                    said(machine)
                );
            }
            Ok((ratio, limit))
        })
        .collect()
}

/// Measures every ratio the record does not hold yet, writing the record
/// after each; the servers go back as setup left them however it ends.
pub async fn sweep(record: &mut BenchRecord, ratios: &[f64], disk_points: &DiskPoints, queries: &Queries<'_>, table: &TableName, write_record: &dyn Fn(&BenchRecord)) -> Result<()> {
    let size = record.sizes.last().context("--regime: no size was measured to sweep")?;
    let reference = size.run.context.engines.first().context("--regime: the run has no engine")?;
    let Some(storage) = &reference.storage else {
        bail!("--regime: {} did not say how big its data is ({}), so no limit can be chosen from it", reference.engine, reference.storage_error.as_deref().unwrap_or("no sizes"));
    };
    let bytes = storage.table_bytes + storage.index_bytes;
    let machine = ghbench_core::size::machine_memory().context("--regime: this machine's memory (MemTotal in /proc/meminfo) could not be read")?;
    let limits = limits(ratios, &reference.engine.to_string(), bytes, machine)?;
    let reference = reference.engine.clone();
    let regime = record.regime.get_or_insert_with(|| Regime {
        reference: reference.clone(),
        reference_bytes: bytes,
        ratios: limits.iter().map(|l| l.0).collect(),
        load_memory: load_memory(queries.throttle),
        iops_size: disk_points.io_size,
        points: Vec::new(),
    });
    if regime.reference != reference || regime.reference_bytes != bytes {
        bail!("cannot resume the sweep: its limits were chosen from {}'s {} bytes, the data now holds {bytes} bytes of {reference}; start the bench anew", regime.reference, regime.reference_bytes);
    }
    same_io_size(regime.iops_size, disk_points.io_size, !regime.points.is_empty())?;
    regime.iops_size = disk_points.io_size;
    // A resumed sweep may ask for more ratios than it kept: all are listed, smallest first.
    regime.ratios.extend(limits.iter().map(|l| l.0));
    regime.ratios.sort_by(f64::total_cmp);
    regime.ratios.dedup();
    let say = |line: &str| eprintln!("[regime] {line}");
    let mut under: Option<UnderLimit> = None;
    let mut first_after_resume = record.resumed.is_some();
    let swept = async {
        let disks = disk_points.throttles(queries.throttle);
        if let Some(regime) = &record.regime {
            let kept: Vec<(u64, Option<&DiskRules>)> = regime.points.iter().map(|p| (p.memory_bytes, p.disk.as_ref())).collect();
            same_disk_points(&kept, &limits, &disks)?;
        }
        for ((ratio, limit), disk) in limits.iter().copied().flat_map(|l| disks.iter().map(move |d| (l, d))) {
            let regime = record.regime.as_ref().expect("made above");
            let rules = disk.as_ref().map(|d| d.rules.clone());
            let throttle = rules.as_ref().map_or(String::new(), |r| format!(", {}", r.said()));
            // The same reference bytes and ratio give the same limit: kept.
            if regime.points.iter().any(|p| p.memory_bytes == limit && p.disk == rules) {
                say(&format!("{ratio}×{throttle}: kept from the record it resumes"));
                continue;
            }
            // Only whole points are written: one this bench stopped in goes again from its first query.
            if std::mem::take(&mut first_after_resume) {
                say(&format!("{ratio}×{throttle}: measured whole, from its first query (a point stopped part way keeps none of its queries)"));
            }
            let kept = regime.points.first().map(|p| p.run.context.clone());
            let memory = MemorySize::chosen(limit, format!("--regime {ratio}× (a {} limit)", said(limit)));
            let phase = |what: &str| eprintln!("[regime {ratio}×, {}{throttle}] {what}", said(limit));
            phase(&format!("{reference}'s {} of data at {ratio}× memory: a {} limit{throttle}", said(bytes), said(limit)));
            // The servers move from one limit to the next; `end` once, after the last.
            drop(under.take());
            // A `free` point of --regime-iops reads free whatever setup's throttle.
            let free_disk = disk.is_none() && !disk_points.iops.is_empty();
            let limits = Limits { memory: Some(memory), disk: disk.clone(), paper_planner: queries.paper_planner, free_disk };
            under = Some(UnderLimit::start(&limits, queries.engines, queries.managed, &say).await?);
            let backends = connect_backends(queries.engines, table).await?;
            let run = queries.run(backends, table, &format!("[regime {ratio}×{throttle}] "), Some(&limits), &phase, None, None).await?;
            if let Some(kept) = kept {
                super::resume::same_sweep(&kept, &run.context)?;
            }
            let point = RegimePoint { ratio, memory_bytes: limit, disk: rules, run };
            queries.screen.line(point_text(&point));
            let points = &mut record.regime.as_mut().expect("made above").points;
            points.push(point);
            // Smallest ratio first; at a ratio the fastest disk first (free, then most IOPS).
            points.sort_by(|a, b| a.ratio.total_cmp(&b.ratio).then_with(|| iops_order(&a.disk).cmp(&iops_order(&b.disk))));
            write_record(record);
        }
        Ok(())
    }
    .await;
    if let Some(under) = under {
        under.end(&say).await;
    }
    swept
}

/// A resumed sweep's points asked as its kept ones were: at a memory limit
/// and read IOPS a kept point has, the same throttle (its bandwidth too:
/// `--disk`'s rbps, `--iops-size`), or two points would stand at one place
/// of the chart measured on different disks.
/// `kept`: each kept point's memory limit and throttle.
fn same_disk_points(kept: &[(u64, Option<&DiskRules>)], limits: &[(f64, u64)], disks: &[Option<DiskArg>]) -> Result<()> {
    let read_iops = |rules: Option<&DiskRules>| rules.and_then(|r| r.read_iops);
    for &(ratio, limit) in limits {
        for disk in disks {
            let rules = disk.as_ref().map(|d| &d.rules);
            let differs = kept.iter().find(|(memory, then)| *memory == limit && read_iops(*then) == read_iops(rules) && *then != rules);
            if let Some((_, then)) = differs {
                let said = |r: Option<&DiskRules>| r.map_or("the disk free".to_string(), |r| r.said());
                bail!(
                    "cannot resume the sweep: its point at {ratio}× was measured with {}, and is now asked with {}; give the --disk, --regime-iops and --iops-size it was started with, or start the bench anew",
                    said(*then),
                    said(rules)
                );
            }
        }
    }
    Ok(())
}

/// A resumed sweep's `--iops-size` as its kept points were measured with: a
/// point not yet measured would otherwise read at another bandwidth than
/// the record's command says (a kept free point alone would not show it).
fn same_io_size(then: Option<u64>, now: Option<u64>, points_kept: bool) -> Result<()> {
    if !points_kept || then == now {
        return Ok(());
    }
    let asked = |size: Option<u64>| size.map_or("no --iops-size".to_string(), |s| format!("--iops-size {}", said(s)));
    bail!("cannot resume the sweep: its points were measured with {}, and it is now asked with {}; give the options it was started with, or start the bench anew", asked(then), asked(now))
}

/// Free first, then by read IOPS, most first.
fn iops_order(disk: &Option<DiskRules>) -> (bool, std::cmp::Reverse<u64>) {
    match disk.as_ref().and_then(|d| d.read_iops) {
        None => (false, std::cmp::Reverse(u64::MAX)),
        Some(n) => (true, std::cmp::Reverse(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_points_replace_the_read_iops_and_cap_the_bandwidth_at_iops_times_the_io_size() {
        let base: DiskArg = "rbps=437MB".parse().unwrap();
        let points = DiskPoints { iops: vec![ReadIops(None), ReadIops(Some(5000)), ReadIops(Some(1000))], io_size: Some(256 * 1024) };
        let got = points.throttles(Some(&base));
        let rules: Vec<(Option<u64>, Option<u64>)> = got.iter().map(|d| d.as_ref().map_or((None, None), |d| (d.rules.read_iops, d.rules.read_bytes_per_second))).collect();
        // free keeps --disk's bandwidth; 5,000 × 256 KiB is above it; 1,000 × 256 KiB below.
        assert_eq!(rules, vec![(None, Some(437_000_000)), (Some(5000), Some(437_000_000)), (Some(1000), Some(262_144_000))]);
        assert_eq!(got[2].as_ref().unwrap().asked, "--disk rbps=437MB --regime-iops 1000 --iops-size 256.0 KiB");
        // Without --iops-size the points replace the IOPS alone; without --disk `free` is no throttle.
        let plain = DiskPoints { iops: vec![ReadIops(None), ReadIops(Some(1000))], io_size: None };
        let got = plain.throttles(None);
        assert!(got[0].is_none());
        assert_eq!(got[1].as_ref().unwrap().rules.read_bytes_per_second, None);
        assert_eq!(DiskPoints::default().throttles(Some(&base)), vec![Some(base.clone())]);
        // A point asked twice is measured once.
        let twice = DiskPoints { iops: vec![ReadIops(None), ReadIops(None)], io_size: None };
        assert_eq!(twice.throttles(Some(&base)).len(), 1);
    }

    #[test]
    fn a_resumed_sweep_refuses_a_kept_point_asked_on_another_disk() {
        let limit = 340 << 20;
        let then: DiskRules = ghbench_olap::throttle::parse_rules("riops=1000,rbps=262144000").unwrap();
        let kept = [(limit, None), (limit, Some(&then))];
        let points = |io_size: u64| DiskPoints { iops: vec![ReadIops(None), ReadIops(Some(1000))], io_size: Some(io_size) };
        let base: DiskArg = "rbps=437MB".parse().unwrap();
        let free = DiskRules { read_bytes_per_second: Some(437_000_000), ..Default::default() };
        let kept_free = [(limit, Some(&free)), (limit, Some(&then))];
        // The same throttles: resumed.
        same_disk_points(&kept_free, &[(5.0, limit)], &points(256 * 1024).throttles(Some(&base))).unwrap();
        // Another --iops-size: the 1,000 IOPS point would stand twice.
        let error = same_disk_points(&kept_free, &[(5.0, limit)], &points(128 * 1024).throttles(Some(&base))).unwrap_err().to_string();
        assert!(error.contains("1,000 read IOPS, 262 MB/s read") && error.contains("131 MB/s") && error.contains("--iops-size"), "{error}");
        // Without --disk the free point is another disk than the kept one's 437 MB/s.
        assert!(same_disk_points(&kept_free, &[(5.0, limit)], &points(256 * 1024).throttles(None)).is_err());
        // Another memory limit is another point.
        same_disk_points(&kept, &[(1.0, limit * 5)], &points(128 * 1024).throttles(None)).unwrap();
    }

    #[test]
    fn a_resumed_sweep_refuses_another_iops_size_once_a_point_is_kept() {
        let (kib256, kib128) = (Some(256 * 1024), Some(128 * 1024));
        // Nothing kept: any size goes.
        same_io_size(kib256, kib128, false).unwrap();
        same_io_size(kib256, kib256, true).unwrap();
        same_io_size(None, None, true).unwrap();
        let error = same_io_size(kib256, kib128, true).unwrap_err().to_string();
        assert!(error.contains("--iops-size 256.0 KiB") && error.contains("--iops-size 128.0 KiB") && error.contains("start the bench anew"), "{error}");
        assert!(same_io_size(kib256, None, true).unwrap_err().to_string().contains("no --iops-size"));
    }

    #[test]
    fn ratios_read_as_written_and_refuse_nonsense() {
        assert_eq!(parse_ratio("0.25"), Ok(0.25));
        assert_eq!(parse_ratio("5x"), Ok(5.0));
        assert_eq!(parse_ratio(" 1× "), Ok(1.0));
        assert!(parse_ratio("0").unwrap_err().contains("above 0"));
        assert!(parse_ratio("inf").unwrap_err().contains("above 0"));
        assert!(parse_ratio("half").unwrap_err().contains("not a ratio"));
    }

    #[test]
    fn disk_points_read_as_written_and_say_their_range_when_refused() {
        assert_eq!(parse_iops(" free "), Ok(ReadIops(None)));
        assert_eq!(parse_iops("1000"), Ok(ReadIops(Some(1000))));
        let most = ghbench_olap::throttle::MOST_IOPS;
        assert_eq!(parse_iops(&most.to_string()), Ok(ReadIops(Some(most))));
        for wrong in ["0", "-5", "fast", &(most + 1).to_string()] {
            let error = parse_iops(wrong).unwrap_err();
            assert!(error.contains(&format!("from 1 to {most}")) && error.contains("free"), "{wrong}: {error}");
        }
    }

    #[test]
    fn a_sweep_too_small_says_the_events_it_needs() {
        // 100 MiB of 60,000 events, at 5×: 320 MiB of data, about 196,609 events.
        let error = reachable(&[1.0, 5.0], "postgres", 100 << 20, 60_000).unwrap_err();
        let said = format!("{error:#}");
        assert!(said.contains("postgres stores 1748 bytes an event here (60,000 events in 100.0 MiB): --regime 5 needs about 192,000 events at least"), "{said}");
        assert!(said.contains("needs 320.0 MiB of data at least"), "{said}");
    }

    #[test]
    fn limits_are_whole_pages_largest_memory_first_and_refused_out_of_reach() {
        let gib = 1u64 << 30;
        let got = limits(&[5.0, 0.5, 1.0, 1.0], "postgres", 2 * gib, 24 * gib).unwrap();
        assert_eq!(got.iter().map(|l| l.0).collect::<Vec<_>>(), vec![0.5, 1.0, 5.0]);
        assert_eq!(got[0].1, 4 * gib);
        assert_eq!(got[1].1, 2 * gib);
        assert!(got.iter().all(|l| l.1 % 4096 == 0), "{got:?}");
        let small = limits(&[40.0], "postgres", 2 * gib, 24 * gib).unwrap_err().to_string();
        assert!(small.contains("a limit of 51.2 MiB, under the 64.0 MiB a server needs") && small.contains("needs 2.5 GiB of data at least"), "{small}");
        let large = limits(&[0.05], "postgres", 2 * gib, 24 * gib).unwrap_err().to_string();
        assert!(large.contains("more than this machine's"), "{large}");
    }
}

//! ghbench's own CPU over a phase (`getrusage`), beside how busy the whole
//! machine was (`/proc/stat`): if ghbench used much of the machine, the
//! clients, not the engine, may bound the rate.

use std::time::Instant;

use ghbench_record::concurrency::ClientCpu;

/// CPU counters at one moment.
pub struct Reading {
    at: Instant,
    process_seconds: Option<f64>,
    machine: Option<MachineTicks>,
}

/// Jiffies of all cores since boot: busy and total.
#[derive(Clone, Copy)]
struct MachineTicks {
    busy: u64,
    total: u64,
}

impl Reading {
    pub fn now() -> Reading {
        Reading { at: Instant::now(), process_seconds: process_seconds(), machine: machine_ticks() }
    }

    /// What was used since this reading. `server`: the engine has a server
    /// (else it runs in ghbench's process and its work is counted here).
    pub fn since(&self, server: bool) -> Option<ClientCpu> {
        let later = Reading::now();
        let wall = later.at.duration_since(self.at).as_secs_f64();
        let seconds = later.process_seconds? - self.process_seconds?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let machine_busy = match (self.machine, later.machine) {
            (Some(a), Some(b)) if b.total > a.total => Some(b.busy.saturating_sub(a.busy) as f64 / (b.total - a.total) as f64),
            _ => None,
        };
        Some(ClientCpu { seconds, share_of_machine: if wall > 0.0 { seconds / (wall * cores) } else { 0.0 }, machine_busy, engine_in_process: !server })
    }
}

/// User and system CPU seconds of this process, all its threads.
fn process_seconds() -> Option<f64> {
    // SAFETY: getrusage only writes the struct it is given, zeroed here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

/// The first line of /proc/stat: `cpu user nice system idle iowait irq softirq steal …`.
fn machine_ticks() -> Option<MachineTicks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(stat.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<MachineTicks> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    // Guest time is already counted in user time: only the first eight fields.
    let ticks: Vec<u64> = fields.take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    let total: u64 = ticks.iter().sum();
    Some(MachineTicks { busy: total - idle, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_and_iowait_are_the_machine_s_idle_time() {
        let t = parse_cpu_line("cpu  100 0 50 800 50 0 0 0 0 0").unwrap();
        assert_eq!((t.busy, t.total), (150, 1000));
        assert!(parse_cpu_line("cpu0 1 2 3 4").is_none());
    }

    #[test]
    fn work_in_this_process_is_counted() {
        let before = Reading::now();
        let mut x = 0u64;
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 200 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = before.since(true).unwrap();
        assert!(used.seconds > 0.1, "{:?}", used.seconds);
        assert!(!used.engine_in_process);
    }
}

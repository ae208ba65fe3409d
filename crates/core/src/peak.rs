//! This process's peak resident memory (Linux's `VmHWM`), reset between the
//! phases of a run so each phase's own peak is read: what ghbench itself
//! needs to load, verify and report as the data grows (servers and polars'
//! worker processes are not this process).

/// Starts a new peak from the memory held now (`/proc/self/clear_refs`, Linux
/// 4.0 on); false where it cannot, and then [`peak_bytes`] reads the peak
/// since the process started.
pub fn reset() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The peak resident bytes since the process started or the last [`reset`];
/// None off Linux.
pub fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_peak_forgets_what_was_freed() {
        let Some(before) = peak_bytes() else { return };
        // Touch 64 MiB, then free it: the peak holds it until reset.
        let block = vec![1u8; 64 << 20];
        assert!(block.iter().step_by(4096).all(|b| *b == 1));
        drop(block);
        let high = peak_bytes().unwrap();
        assert!(high >= before + (60 << 20), "peak {high} after 64 MiB, {before} before");
        if reset() {
            let after = peak_bytes().unwrap();
            assert!(after + (60 << 20) <= high, "a reset peak starts from what is held now: {after} against {high}");
        }
    }
}

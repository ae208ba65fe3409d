//! Sizes as a user writes and reads them (`--memory 4GiB`, `768MiB`,
//! `GHBENCH_MEMORY=1.5GiB`): parsed and said by `bytesize`, so every command,
//! script and report spells a size the same way.

use bytesize::ByteSize;

/// The smallest memory limit worth running a server under: PostgreSQL needs
/// about this much to start with small settings, and a limit below it is a typo
/// (`--memory 4` meaning 4 GiB).
pub const SMALLEST_MEMORY: u64 = 64 << 20;

/// The kernel keeps memory limits in whole pages.
const PAGE: u64 = 4096;

/// A size given on the command line: a number and its unit (`4GiB`,
/// `768MiB`, `1.5GiB`; `GB` is 10⁹). Said as clap's value parsers say errors.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let size: ByteSize = text.trim().parse().map_err(|_| format!("'{text}' is not a size; write a number and its unit, e.g. 4GiB, 768MiB (GiB and MiB are binary, GB and MB decimal)"))?;
    Ok(size.as_u64())
}

/// A memory size for a limit: as [`parse_size`], in whole pages (as the
/// kernel keeps it, so what is recorded is what is enforced), at least
/// [`SMALLEST_MEMORY`] and at most `machine` (a limit above the machine's
/// memory limits nothing).
pub fn parse_memory_within(text: &str, machine: Option<u64>) -> Result<u64, String> {
    let bytes = parse_size(text)? / PAGE * PAGE;
    if bytes < SMALLEST_MEMORY {
        return Err(format!("{} is too little memory to run a server in: give at least {} (with a unit, e.g. 768MiB or 4GiB)", said(bytes), said(SMALLEST_MEMORY)));
    }
    if let Some(machine) = machine.filter(|&m| bytes > m) {
        return Err(format!("{} is more than this machine's {}: such a limit would hold nothing back; give less, or leave the option out for the whole machine", said(bytes), said(machine)));
    }
    Ok(bytes)
}

/// [`parse_memory_within`] this machine's memory (`MemTotal`), where it can be read.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    parse_memory_within(text, machine_memory())
}

/// The memory of a server elsewhere, as a user declares it: as
/// [`parse_memory_within`] with no bound (that machine may have more).
pub fn parse_declared_memory(text: &str) -> Result<u64, String> {
    parse_memory_within(text, None)
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
pub fn machine_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
}

/// A size for people in binary units: `768.0 MiB`, `4.0 GiB`.
pub fn said(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_with_their_units_and_said_back() {
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("768MiB"), Ok(768 << 20));
        assert_eq!(parse_size(" 1.5GiB "), Ok(3 << 29));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert!(parse_size("lots").unwrap_err().contains("e.g. 4GiB"));
        assert!(parse_memory("4").unwrap_err().contains("too little memory"), "a bare 4 is 4 bytes, not 4 GiB");
        assert!(!parse_size("abc").unwrap_err().contains("ByteSize"), "no library internals in the message");
        assert_eq!(parse_memory_within("1GB", None), Ok(999_997_440), "whole pages, as the kernel keeps a limit");
        assert!(parse_memory_within("100GiB", Some(24 << 30)).unwrap_err().contains("more than this machine's 24.0 GiB"));
        assert!(parse_memory_within("1PiB", Some(24 << 30)).is_err());
        assert_eq!(said(768 << 20), "768.0 MiB");
        assert_eq!(said(4 << 30), "4.0 GiB");
    }
}

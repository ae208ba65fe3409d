//! Sizes as a user writes and reads them (`--memory 4GiB`, `768MiB`,
//! `GHBENCH_MEMORY=1.5GiB`): parsed and said by `bytesize`, so every command,
//! script and report spells a size the same way.

use bytesize::ByteSize;

/// The smallest memory limit worth running a server under: PostgreSQL needs
/// about this much to start with small settings, and a limit below it is a typo
/// (`--memory 4` meaning 4 GiB).
pub const SMALLEST_MEMORY: u64 = 64 << 20;

/// A size given on the command line: a number and its unit (`4GiB`,
/// `768MiB`, `1.5GiB`; `GB` is 10⁹). Said as clap's value parsers say errors.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let size: ByteSize = text.trim().parse().map_err(|e| format!("'{text}' is not a size ({e}); write a number and its unit, e.g. 4GiB, 768MiB"))?;
    Ok(size.as_u64())
}

/// A memory size for a limit: as [`parse_size`], at least [`SMALLEST_MEMORY`].
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let bytes = parse_size(text)?;
    if bytes < SMALLEST_MEMORY {
        return Err(format!("{} is too little memory to run a server in: give at least {} (with a unit, e.g. 768MiB or 4GiB)", said(bytes), said(SMALLEST_MEMORY)));
    }
    Ok(bytes)
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
        assert_eq!(said(768 << 20), "768.0 MiB");
        assert_eq!(said(4 << 30), "4.0 GiB");
    }
}

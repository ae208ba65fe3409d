//! How ghbench names a file's content: `blake3:` and 64 hex digits of its
//! BLAKE3 hash. The ingest ledgers record it for the file each hour was
//! loaded from, and `ghbench gen`'s manifest for each hour it wrote, so a
//! copy can be told from another.

/// A digest's prefix: the hash it is.
pub const PREFIX: &str = "blake3:";

/// A hash as ghbench records it.
pub fn format(hash: &blake3::Hash) -> String {
    format!("{PREFIX}{}", hash.to_hex())
}

/// The digest of `bytes`.
pub fn of_bytes(bytes: &[u8]) -> String {
    format(&blake3::hash(bytes))
}

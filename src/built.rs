//! The ghbench this binary is: the commit it was built from and its
//! uncommitted changes, compiled in by `build.rs` (None: not built from a
//! git checkout). Records name it; `--resume` goes on only with the same.

pub const COMMIT: Option<&str> = option_env!("GHBENCH_GIT_COMMIT");
/// `true` or `false`.
pub const DIRTY: Option<&str> = option_env!("GHBENCH_GIT_DIRTY");
/// `blake3:…` of the uncommitted changes, when there are any.
pub const CHANGES: Option<&str> = option_env!("GHBENCH_GIT_CHANGES");

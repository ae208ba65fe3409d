//! Synthetic GH Archive hours for ghbench: files named and shaped like the real
//! 2015 ones, deterministic for a seed, calibrated on real hours, optionally
//! damaged with the faults real data has, at any scale.
//!
//! ```no_run
//! let profile = ghbench_gen::Profile::default_profile();
//! let hour = "2015-01-01T00".parse().unwrap();
//! let gzip = ghbench_gen::generate_hour_gzip(profile, 42, hour, 1000).unwrap();
//! ```

pub mod calibrate;
pub mod defects;
pub mod event;
pub mod growth;
pub mod pool;
pub mod profile;
pub mod run;
pub mod shape;
pub mod skew;
pub mod split;
pub mod text;

pub use calibrate::{calibrate, Calibration, CalibrateError};
pub use defects::{DefectOptions, Expected, Injected};
pub use event::Generator;
pub use profile::{Profile, ProfileError};
pub use run::{generate_hour, run, GenError, HourManifest, Manifest, RunOptions, MANIFEST};
pub use split::{split, Split, SplitManifest, SPLIT_MANIFEST};

/// One clean hour as GH Archive serves it (gzip of JSON lines), for benches and tests.
pub fn generate_hour_gzip(profile: Profile, seed: u64, hour: ghbench_core::Hour, events: u64) -> Result<Vec<u8>, ProfileError> {
    let gen = Generator::new(profile, seed)?;
    Ok(generate_hour(&gen, hour, events, DefectOptions::default()).gzip)
}

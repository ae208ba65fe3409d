//! The ghbench command line as a library: [`cli::run`] parses arguments and
//! runs a command with the engines of a [`ghbench_engine::Registry`], so a
//! test can run the real commands with an engine of its own.

pub mod built;
pub mod cli;
pub mod commands;
pub mod interrupt;
pub mod options;
pub mod outcome;
pub mod output;
pub mod progress;
pub mod registry;

//! The `gregor` command's subcommands. Only this folder and `main.rs` print to stdout.

pub mod broker;
pub mod console;
pub mod consume;
pub mod groups;
pub mod perf;
pub mod perf_ceiling;
pub mod perf_e2e;
pub mod topics;
mod topics_wire;

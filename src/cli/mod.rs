//! The `gregor` command's subcommands. Only this folder and `main.rs` print to stdout.

pub mod acls;
pub mod broker;
mod broker_configs;
mod command_config;
pub mod configs;
pub mod console;
pub mod consume;
mod group_offsets;
pub mod groups;
pub mod perf;
pub mod perf_ceiling;
pub mod perf_connect;
pub mod perf_e2e;
pub mod perf_idle;
mod scram;
pub mod topics;
mod topics_wire;
pub mod transactions;

/// Where the tools look for a broker when not told (`--bootstrap-server`), as Kafka's do.
pub const BOOTSTRAP: &str = "127.0.0.1:9092";

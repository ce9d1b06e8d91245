//! Storage: segment files with a sparse offset index and a time index (`segment`, `index`,
//! `time_index`), one partition's
//! `Log`, the disk work it leaves to the maintenance thread (`deferred`), the `checkpoint`
//! files, and the `LogManager` over the data directories.

pub mod checkpoint;
pub mod cleaner;
mod deferred;
mod idempotence;
pub mod index;
pub mod leader_epochs;
pub mod log_config;
pub mod manager;
mod offset_lookup;
pub mod overrides;
pub mod partition_log;
pub mod producer_state;
mod read;
pub mod read_limits;
pub mod segment;
pub mod time_index;
pub mod transactions;
pub mod txn_index;

pub use log_config::{LogConfig, SharedLogConfig};
pub use manager::{LogManager, LogSettings};
pub use partition_log::{Log, LogError};
pub use read_limits::FirstEntry;

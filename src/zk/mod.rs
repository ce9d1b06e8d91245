//! ZooKeeper: the layout as typed functions (`paths`), a session that survives expiry
//! (`client`), the consumer groups' nodes (`groups`), and `ZkElection` for the controller and the coordinator.

pub mod client;
pub mod election;
pub mod groups;
pub mod ids;
pub mod kafka_groups;
pub mod paths;
pub mod pipeline;
mod probe;
pub mod producer_ids;
pub mod stats;
pub mod topic_config;

pub use client::{SessionListener, ZkClient};
pub use election::{ElectionListener, ZkElection};

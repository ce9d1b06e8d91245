//! ZooKeeper: the layout as typed functions (`paths`), a session that survives expiry
//! (`client`) over gregor's own synchronous client (`session`, `jute`, `ops`, `multi`), the consumer groups' nodes (`groups`), and `ZkElection` for the controller and the coordinator.

pub mod acls;
pub mod admin;
pub mod broker_config;
pub mod client;
pub mod client_quotas;
pub mod election;
pub mod entity_config;
pub mod groups;
pub mod ids;
mod jute;
pub mod kafka_groups;
mod multi;
mod ops;
pub mod paths;
pub mod pipeline;
pub mod producer_ids;
pub mod scram_credentials;
pub mod session;
pub mod stats;
pub mod topic_config;
pub mod topic_node;
pub mod txn_offsets;

pub use client::{SessionListener, ZkClient, until_connected};
pub use election::{ElectionListener, ZkElection};
pub use jute::{CreateMode, Stat, WatchedEvent, WatchedEventType, ZkError, ZkResult};

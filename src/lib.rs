//! gregor: a replicated, partitioned commit log in the style of Kafka 0.8.
//!
//! # Layout
//!
//! - [`protocol`]: every byte that crosses a socket (Kafka v0 APIs, controller commands).
//! - [`log`]: segment files, offset index, recovery, retention, high-watermark checkpoints.
//! - [`zk`]: the ZooKeeper layout, a session that survives expiry, and `ZkElection`.
//! - [`network`]: the blocking socket server and a blocking client channel.
//! - [`broker`]: startup, request handlers, `ReplicaManager`, the metadata cache.
//! - [`config`]: `server.properties` with Kafka's key names.
//! - [`metrics`]: Prometheus metrics under the names Kafka's dashboards expect.
//!
//! Everything is synchronous: blocking sockets, one thread per connection, `crossbeam-channel`
//! between threads and `parking_lot` locks around shared state.

pub mod broker;
pub mod client;
pub mod config;
pub mod controller;
pub mod coordinator;
pub mod log;
pub mod metrics;
pub mod network;
pub mod protocol;
pub mod zk;

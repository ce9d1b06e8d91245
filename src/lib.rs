//! gregor: a replicated, partitioned commit log in the style of Kafka 0.8 — a
//! ZooKeeper-elected controller, ISR replication, and a central consumer coordinator — that
//! Kafka's clients and tools use unchanged.
//!
//! # Layout
//!
//! Lowest layer first; each module uses only those above it in this list (`tests/layers.rs`).
//!
//! - [`protocol`]: every byte that crosses a socket — Kafka's APIs, classic and flexible, with
//!   the one table of what is served ([`protocol::header::SUPPORTED_APIS`]), the controller's
//!   commands and the spec coordinator's protocol. Every body is read and written one way:
//!   `Decode` from a `Reader`, `Encode` to an `Out`, each carrying the version and the encoding
//!   the table gives it.
//! - [`security`]: SASL without I/O — PLAIN and SCRAM, both sides of each exchange, Kafka's
//!   JAAS text, the principal a connection acts as.
//! - [`metrics`]: Prometheus metrics under the names Kafka's dashboards expect.
//! - [`network`]: the blocking socket servers and a blocking client channel.
//! - [`config`]: `server.properties`, read through one table of keys ([`config::keys`]).
//! - [`zk`]: gregor's own ZooKeeper client, the layout Kafka uses in it, elections, and the
//!   admin operations that write it.
//! - [`log`]: segment files, indexes, recovery, retention, checkpoints, leader epochs,
//!   idempotent producers' state.
//! - [`controller`]: the spec's controller (replication design, sections A–D).
//! - [`coordinator`]: the spec's consumer coordinator, serving its own protocol and Kafka's
//!   group protocol.
//! - [`broker`]: startup, the request handlers, `ReplicaManager`, replica fetchers, the
//!   metadata cache.
//! - [`client`]: gregor's own producer and consumers (the `gregor` tools use them).
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
pub mod security;
pub mod zk;

//! Clients of a gregor cluster: admin operations on ZooKeeper, metadata, the producer, and the
//! group consumer that speaks the coordinator protocol.

pub mod admin;
pub mod consumer;
pub mod metadata;
pub mod partition_consumer;
pub mod partitioner;
pub mod producer;

//! Clients of a gregor cluster: metadata, the producer, and the
//! group consumer that speaks the coordinator protocol.

pub mod consumer;
pub mod metadata;
pub mod partition_consumer;
pub mod partitioner;
pub mod producer;

//! Clients of a gregor cluster: admin operations on ZooKeeper.

pub mod admin;
pub mod metadata;
pub mod partitioner;
pub mod producer;

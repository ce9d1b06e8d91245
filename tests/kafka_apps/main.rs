//! Kafka's own applications against gregor, in one test binary so that the two JVM-bound
//! tests run side by side: Kafka Connect in distributed mode with the file connectors
//! (`connect`), and a Kafka Streams word count (`streams`).

#[path = "../common/mod.rs"]
mod common;

mod connect;
mod streams;

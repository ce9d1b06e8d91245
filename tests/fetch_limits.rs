//! Fetch byte limits (KIP-74) through the real clients: a 100-partition topic written in
//! 16 KiB batches by Kafka's own ProducerPerformance is read whole by the Java consumer
//! (Kafka's ConsumerPerformance and a KafkaConsumer), confluent-kafka and kafka-python, with
//! the default limits, with 100,000/30,000 bytes, and with 1/1 — where a partition answered
//! with only a piece of a batch stopped the Java consumer ("no complete records were found")
//! and stalled kafka-python. And a follower whose `replica.fetch.max.bytes` is smaller than
//! the partition's batches still copies them and stays in the ISR.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::java::{JavaProgram, kafka_tool};
use common::{run_with_deadline, wait_until};

const PARTITIONS: i32 = 100;
const RECORDS: u64 = 100_000;

/// A one-broker cluster with `topic` of 100 partitions holding `RECORDS` records of 100 bytes,
/// written by Kafka's ProducerPerformance in batches of up to 16 KiB.
fn written_topic(name: &str, topic: &str) -> Cluster {
    let c = Cluster::start(name, 1, &[]);
    c.create_topic(topic, PARTITIONS, 1);
    let (ok, out, err) = run_with_deadline(
        kafka_tool("org.apache.kafka.tools.ProducerPerformance")
            .args(["--topic", topic, "--num-records", &RECORDS.to_string()])
            .args(["--record-size", "100", "--throughput", "-1"])
            .arg("--producer-props")
            .arg(format!("bootstrap.servers={}", c.bootstrap()))
            .args(["batch.size=16384", "linger.ms=20", "acks=1"]),
        "",
        Duration::from_secs(180),
    );
    assert!(
        ok && out.contains(&format!("{RECORDS} records sent")),
        "ProducerPerformance failed:\n{out}\n{err}"
    );
    c
}

/// Kafka's ConsumerPerformance with these consumer settings reads every record.
fn consumer_performance_reads_all(c: &Cluster, topic: &str, settings: &str) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("consumer.properties");
    std::fs::write(&config, settings).unwrap();
    let (ok, out, err) = run_with_deadline(
        kafka_tool("org.apache.kafka.tools.ConsumerPerformance")
            .args(["--bootstrap-server", &c.bootstrap(), "--topic", topic])
            .args(["--messages", &RECORDS.to_string(), "--timeout", "60000"])
            .arg("--consumer.config")
            .arg(&config),
        "",
        Duration::from_secs(180),
    );
    assert!(
        ok && !err.contains("Exception"),
        "ConsumerPerformance with {settings:?} failed:\n{out}\n{err}"
    );
    // Its one line of figures: start, end, MB, MB/s, records, records/s, ...
    let records: Option<u64> = out
        .lines()
        .last()
        .and_then(|l| l.split(',').nth(4))
        .and_then(|n| n.trim().parse().ok());
    assert_eq!(records, Some(RECORDS), "ConsumerPerformance read:\n{out}");
}

/// What ReadAllPartitions.java and read_all_partitions.py both take after the client: the
/// bootstrap, the topic t1, its partitions, the records expected, and the two limits.
fn read_all_args(c: &Cluster, fetch_max: &str, partition_max: &str) -> [String; 6] {
    [
        c.bootstrap(),
        "t1".into(),
        PARTITIONS.to_string(),
        RECORDS.to_string(),
        fetch_max.into(),
        partition_max.into(),
    ]
}

#[test]
fn the_java_consumer_reads_every_partition_whatever_its_fetch_limits() {
    let c = written_topic("fetch-limits-java", "t1");
    consumer_performance_reads_all(&c, "t1", "");
    consumer_performance_reads_all(
        &c,
        "t1",
        "fetch.max.bytes=100000\nmax.partition.fetch.bytes=30000\n",
    );
    consumer_performance_reads_all(&c, "t1", "fetch.max.bytes=1\nmax.partition.fetch.bytes=1\n");
    let reader = JavaProgram::compile("ReadAllPartitions");
    for (fetch_max, partition_max) in [("100000", "30000"), ("1", "1")] {
        let args = read_all_args(&c, fetch_max, partition_max);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = reader.run(&args, Duration::from_secs(150));
        assert!(
            ok,
            "KafkaConsumer with {fetch_max}/{partition_max}:\n{out}\n{err}"
        );
    }
}

#[test]
fn python_clients_read_every_partition_whatever_their_fetch_limits() {
    let c = written_topic("fetch-limits-python", "t1");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/read_all_partitions.py"
    );
    // librdkafka's least fetch.max.bytes is 1000.
    for (client, fetch_max, partition_max) in [
        ("confluent", "100000", "30000"),
        ("confluent", "1000", "1"),
        ("kafka-python", "100000", "30000"),
        ("kafka-python", "1", "1"),
    ] {
        let (ok, out, err) = run_with_deadline(
            common::python().args([script, client]).args(read_all_args(
                &c,
                fetch_max,
                partition_max,
            )),
            "",
            Duration::from_secs(150),
        );
        assert!(
            ok,
            "{client} with {fetch_max}/{partition_max}:\n{out}\n{err}"
        );
    }
}

/// A follower asks 1 MiB per partition (`replica.fetch.max.bytes`) of a partition whose
/// batches are 4 MiB (`message.max.bytes` raised): each comes whole all the same, so the
/// follower's log matches the leader's and it stays in the ISR. Cut at 1 MiB, the follower
/// could append nothing and fetched the same offset for ever.
#[test]
fn a_follower_copies_batches_larger_than_its_fetch_limit() {
    let c = Cluster::start(
        "fetch-limits-follower",
        2,
        &[
            ("message.max.bytes", "5242880"),
            ("replica.fetch.max.bytes", "1048576"),
        ],
    );
    c.create_topic_on("big", "1:2");
    let produce = r#"
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], acks=1, max_request_size=5_000_000,
                  batch_size=5_000_000, linger_ms=0)
for i in range(3):
    p.send("big", value=bytes([65 + i]) * (4 << 20), partition=0).get(timeout=60)
p.close()
"#;
    let (ok, out, err) = run_with_deadline(
        common::python().args(["-c", produce, &format!("127.0.0.1:{}", c.brokers[&1].port)]),
        "",
        Duration::from_secs(120),
    );
    assert!(
        ok,
        "kafka-python could not write 4 MiB batches:\n{out}\n{err}"
    );
    let segment = |id: i32| {
        std::fs::metadata(c.data_dir(id).join("big-0/00000000000000000000.log"))
            .map_or(0, |m| m.len())
    };
    assert!(
        segment(1) > 12 << 20,
        "the leader holds {} bytes",
        segment(1)
    );
    wait_until(
        Duration::from_secs(60),
        "the follower to hold the leader's 4 MiB batches",
        || segment(2) == segment(1),
    );
    wait_until(Duration::from_secs(30), "the follower in the ISR", || {
        c.state("big", 0).map(|s| s.isr) == Some(vec![1, 2])
    });
}

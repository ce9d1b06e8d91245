//! The producer library against a real cluster: nothing it acknowledged is lost across a
//! leader's kill -9, keyed messages land on Kafka's murmur2 partition, and close flushes.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use gregor::client::partitioner::partition_for_key;
use gregor::client::producer::{Producer, ProducerConfig};
use gregor::protocol::fetch::DEBUGGING_REPLICA_ID;
use gregor::protocol::records::decode_deep;

/// (offset, value) of every message of a partition on its current leader.
fn contents(c: &Cluster, topic: &str, p: i32) -> Vec<(i64, Vec<u8>)> {
    let leader = c.wait_leader_serving(topic, p, |_| true);
    let mut client = c.client(leader);
    let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
    loop {
        let next = out.last().map_or(0, |m| m.0 + 1);
        let f = client.fetch_as(DEBUGGING_REPLICA_ID, topic, p, next, 0);
        let msgs = decode_deep(&f.message_set).unwrap();
        if msgs.is_empty() {
            return out;
        }
        out.extend(
            msgs.into_iter()
                .filter(|m| m.offset >= next)
                .map(|m| (m.offset, m.value.unwrap_or_default())),
        );
    }
}

#[test]
fn no_acknowledged_message_is_lost_across_a_leader_kill() {
    let mut c = Cluster::start("prod-noloss", 3, &[("min.insync.replicas", "2")]);
    c.create_topic("t", 2, 3);
    let mut cfg = ProducerConfig::new(&c.bootstrap());
    cfg.acks = -1;
    cfg.retries = 50;
    cfg.retry_backoff = Duration::from_millis(100);
    let producer = Producer::new(cfg).unwrap();
    let victim = c.leader("t", 0);
    let mut handles = Vec::new();
    let mut next = 0u32;
    let mut send = |handles: &mut Vec<_>| {
        handles.push((
            next,
            producer.send("t", None, Some(format!("m-{next}").as_bytes())),
        ));
        next += 1;
    };
    for _ in 0..1000 {
        send(&mut handles);
    }
    c.kill9(victim);
    // Keep sending through the whole failover, until the controller has moved the partition.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while c.leader("t", 0) == victim {
        assert!(
            std::time::Instant::now() < deadline,
            "no new leader for t-0"
        );
        send(&mut handles);
    }
    for _ in 0..1000 {
        send(&mut handles);
    }
    producer.close();
    let mut acked = Vec::new();
    for (i, h) in handles {
        let md = h
            .wait()
            .unwrap_or_else(|e| panic!("message {i} not delivered: {e}"));
        acked.push((i, md));
    }
    let logs: Vec<Vec<(i64, Vec<u8>)>> = (0..2).map(|p| contents(&c, "t", p)).collect();
    for (i, md) in acked {
        let log = &logs[md.partition as usize];
        let m = log
            .iter()
            .find(|m| m.0 == md.offset)
            .unwrap_or_else(|| panic!("message {i} lost at {md:?}"));
        assert_eq!(
            m.1,
            format!("m-{i}").into_bytes(),
            "message {i} at its acknowledged offset"
        );
    }
}

#[test]
fn keyed_messages_follow_kafkas_partitioner_and_close_flushes() {
    let c = Cluster::start("prod-keys", 1, &[]);
    c.create_topic("k", 5, 1);
    let mut cfg = ProducerConfig::new(&c.bootstrap());
    // A long linger: only close (or flush) sends these.
    cfg.linger = Duration::from_secs(60);
    cfg.batch_size = 1 << 20;
    let producer = Producer::new(cfg).unwrap();
    let handles: Vec<_> = (0..100)
        .map(|i| {
            (
                i,
                producer.send(
                    "k",
                    Some(format!("key-{}", i % 10).as_bytes()),
                    Some(format!("v{i}").as_bytes()),
                ),
            )
        })
        .collect();
    producer.close();
    for (i, h) in handles {
        let md = h.wait().expect("close delivers everything accepted");
        assert_eq!(
            md.partition,
            partition_for_key(format!("key-{}", i % 10).as_bytes(), 5),
            "message {i}"
        );
    }
    let total: usize = (0..5).map(|p| contents(&c, "k", p).len()).sum();
    assert_eq!(total, 100);
    // Without a key, messages go round robin over every partition.
    let producer = Producer::new(ProducerConfig::new(&c.bootstrap())).unwrap();
    let parts: std::collections::BTreeSet<i32> = (0..10)
        .map(|_| {
            producer
                .send_blocking("k", None, Some(b"x"))
                .unwrap()
                .partition
        })
        .collect();
    assert_eq!(parts.len(), 5);
}

#[test]
fn producing_to_a_missing_topic_fails_clearly() {
    let c = Cluster::start("prod-missing", 1, &[("auto.create.topics.enable", "false")]);
    let producer = Producer::new(ProducerConfig::new(&c.bootstrap())).unwrap();
    let e = producer
        .send_blocking("absent", None, Some(b"x"))
        .unwrap_err();
    assert!(e.to_string().contains("`absent` does not exist"), "{e}");
    assert!(Producer::new(ProducerConfig::new("127.0.0.1:1")).is_err());
}

/// Found by the chaos run (seed 1): with no retries left, a NOT_LEADER_FOR_PARTITION failed the
/// batch without refreshing metadata, so every later record of that partition went to the old
/// leader — restarted as a follower — and failed too, for good.
#[test]
fn a_producer_without_retries_finds_the_new_leader_for_later_records() {
    let mut c = Cluster::start("prod-noretry", 2, &[]);
    c.create_topic_on("t", "1:2");
    let mut cfg = ProducerConfig::new(&c.bootstrap());
    cfg.acks = 1;
    cfg.retries = 0;
    let producer = Producer::new(cfg).unwrap();
    assert!(producer.send_blocking("t", None, Some(b"before")).is_ok());
    // Leadership moves to broker 2; broker 1 comes back as a follower.
    c.kill9(1);
    c.wait_leader_serving("t", 0, |l| l == 2);
    c.restart(1);
    common::wait_until(
        Duration::from_secs(30),
        "a record to reach the new leader",
        || producer.send_blocking("t", None, Some(b"after")).is_ok(),
    );
    producer.close();
}

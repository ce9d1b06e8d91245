//! Apache Kafka 4.4's everyday tools against gregor, run as an operator runs them, with what
//! they do checked against ZooKeeper and the brokers: `kafka-topics.sh` (create, describe,
//! alter, list, under-replicated partitions, delete), `kafka-configs.sh` (a topic's settings
//! added, described and deleted; a broker's described), `kafka-get-offsets.sh` and
//! `kafka-delete-records.sh`, `kafka-consumer-groups.sh` (describe, state, delete offsets,
//! delete), and the delivery checkers of Kafka's system tests (`kafka-verifiable-producer.sh`,
//! `kafka-verifiable-consumer.sh`).

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{gregor_ok, wait_until};
use gregor::zk::{paths, topic_config};

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const GET_OFFSETS: &str = "org.apache.kafka.tools.GetOffsetShell";
const DELETE_RECORDS: &str = "org.apache.kafka.tools.DeleteRecordsCommand";
const GROUPS: &str = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";

/// Runs a tool that must succeed; its output.
fn ok(c: &Cluster, class: &str, args: &[&str]) -> String {
    let (ok, out, err) = common::java::run_kafka_tool(class, &c.bootstrap(), args);
    assert!(ok, "{class} {args:?}:\n{out}\n{err}");
    out
}

#[test]
fn kafka_topics_creates_describes_alters_lists_and_deletes() {
    let c = Cluster::start("tools-topics", 2, &[]);
    let out = ok(
        &c,
        TOPICS,
        &[
            "--create",
            "--topic",
            "a",
            "--partitions",
            "3",
            "--replication-factor",
            "2",
        ],
    );
    assert_eq!(out.trim(), "Created topic a.");
    let assignment = paths::topic_assignment(&c.zk, "a").unwrap().unwrap();
    assert_eq!(assignment.len(), 3);
    assert!(assignment.values().all(|r| r.len() == 2), "{assignment:?}");
    c.wait_all_led("a");

    let out = ok(&c, TOPICS, &["--describe", "--topic", "a"]);
    let head = out.lines().next().unwrap();
    assert!(
        head.starts_with("Topic: a\tTopicId: ")
            && head.contains("PartitionCount: 3\tReplicationFactor: 2"),
        "{out}"
    );
    for (p, replicas) in &assignment {
        let state = c.state("a", *p).unwrap();
        let join = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
        let row = format!(
            "Topic: a\tPartition: {p}\tLeader: {}\tReplicas: {}\tIsr: {}",
            state.leader,
            join(replicas),
            join(&state.isr)
        );
        assert!(out.contains(&row), "no `{row}` in\n{out}");
    }

    ok(
        &c,
        TOPICS,
        &["--alter", "--topic", "a", "--partitions", "4"],
    );
    wait_until(Duration::from_secs(30), "a fourth partition", || {
        paths::topic_assignment(&c.zk, "a").unwrap().unwrap().len() == 4
    });
    c.wait_all_led("a");
    assert_eq!(ok(&c, TOPICS, &["--list"]).trim(), "a");
    let urp = ["--describe", "--under-replicated-partitions"];
    assert_eq!(ok(&c, TOPICS, &urp).trim(), "", "all in sync");

    ok(&c, TOPICS, &["--delete", "--topic", "a"]);
    wait_until(Duration::from_secs(30), "topic a gone", || {
        paths::topic_assignment(&c.zk, "a").unwrap().is_none()
    });
    wait_until(Duration::from_secs(30), "an empty list", || {
        ok(&c, TOPICS, &["--list"]).trim().is_empty()
    });
}

#[test]
fn kafka_configs_get_offsets_and_delete_records() {
    let c = Cluster::start("tools-configs", 1, &[]);
    c.create_topic("t", 1, 1);
    let topic = ["--entity-type", "topics", "--entity-name", "t"];
    let alter = [
        &topic[..],
        &["--alter", "--add-config", "retention.ms=100000"],
    ]
    .concat();
    assert!(ok(&c, CONFIGS, &alter).contains("Completed updating config for topic t."));
    let set = topic_config::read(&c.zk, "t").unwrap();
    assert_eq!(set.get("retention.ms").map(String::as_str), Some("100000"));
    let out = ok(&c, CONFIGS, &[&topic[..], &["--describe"]].concat());
    assert!(
        out.contains("Dynamic configs for topic t are:") && out.contains("retention.ms=100000"),
        "{out}"
    );
    let delete = [&topic[..], &["--alter", "--delete-config", "retention.ms"]].concat();
    ok(&c, CONFIGS, &delete);
    assert!(topic_config::read(&c.zk, "t").unwrap().is_empty());
    let broker = [
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--describe",
        "--all",
    ];
    let out = ok(&c, CONFIGS, &broker);
    assert!(
        out.contains("All configs for broker 1 are:") && out.contains("broker.id=1"),
        "{out}"
    );

    let b = c.bootstrap();
    gregor_ok(&["produce", "-b", &b, "--topic", "t"], &"m\n".repeat(5));
    let out = ok(&c, GET_OFFSETS, &["--topic", "t"]);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["t:0:5"], "{out}");
    let dir = tempfile::tempdir().unwrap();
    let json = common::write_file(
        dir.path(),
        "delete.json",
        r#"{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}"#,
    );
    let out = ok(&c, DELETE_RECORDS, &["--offset-json-file", &json]);
    assert!(out.contains("partition: t-0\tlow_watermark: 3"), "{out}");
    let out = ok(&c, GET_OFFSETS, &["--topic", "t", "--time", "-2"]);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["t:0:3"], "{out}");
}

/// kafka-consumer-groups.sh on a group it made itself by resetting offsets: described with
/// its lag and state, one partition's offset deleted, then the group deleted.
#[test]
fn kafka_consumer_groups_describes_deletes_offsets_and_deletes_a_group() {
    let c = Cluster::start("tools-groups", 1, &[]);
    c.create_topic("g", 1, 1);
    gregor_ok(
        &["produce", "-b", &c.bootstrap(), "--topic", "g"],
        &"m\n".repeat(4),
    );
    let group = |args: &[&str]| ok(&c, GROUPS, &[&["--group", "kg"], args].concat());
    let committed = || paths::committed_offset(&c.zk, "kg", "g", 0).unwrap();
    group(&[
        "--reset-offsets",
        "--topic",
        "g",
        "--to-offset",
        "1",
        "--execute",
    ]);
    assert_eq!(committed(), Some(1));

    let out = group(&["--describe"]);
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("kg "))
        .expect(&out)
        .split_whitespace()
        .collect();
    assert_eq!(row[..6], ["kg", "g", "0", "1", "4", "3"], "{out}");
    let out = group(&["--describe", "--state"]);
    let row = out.lines().find(|l| l.starts_with("kg ")).expect(&out);
    assert!(
        row.contains("Empty") && row.trim_end().ends_with('0'),
        "{out}"
    );

    let out = group(&["--delete-offsets", "--topic", "g:0"]);
    assert!(
        out.contains("Request succeeded for deleting offsets from group kg."),
        "{out}"
    );
    assert_eq!(committed(), None);
    let out = group(&["--delete"]);
    assert!(
        out.contains("Deletion of requested consumer groups ('kg') was successful."),
        "{out}"
    );
    assert_eq!(ok(&c, GROUPS, &["--list"]).trim(), "");
    let (_, out, err) =
        common::java::run_kafka_tool(GROUPS, &c.bootstrap(), &["--describe", "--group", "kg"]);
    let said = format!("{out}{err}");
    assert!(
        said.contains("Consumer group 'kg' does not exist."),
        "{said}"
    );
}

/// Kafka's own delivery checkers (what its system tests run): VerifiableProducer writes 2,000
/// messages with acks=all, and two VerifiableConsumers in one group, each stopping after 1,000,
/// read every offset of every partition between them, rebalancing as they come and go, and
/// commit up to the log end.
#[test]
fn kafkas_verifiable_producer_and_consumers_deliver_every_message() {
    let c = Cluster::start("tools-verifiable", 1, &[]);
    c.create_topic("v", 4, 1);
    let b = c.bootstrap();
    let produce = ["--topic", "v", "--max-messages", "2000", "--acks", "-1"];
    let out = ok(&c, "org.apache.kafka.tools.VerifiableProducer", &produce);
    assert!(out.contains(r#""sent":2000,"acked":2000"#), "{out}");

    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                let args = ["--topic", "v", "--group-id", "vg", "--max-messages", "1000"];
                let class = "org.apache.kafka.tools.VerifiableConsumer";
                common::java::run_kafka_tool(class, &b, &args)
            })
        })
        .collect();
    // offset → times consumed, per partition.
    let mut seen: std::collections::BTreeMap<(i64, i64), u32> = Default::default();
    for h in consumers {
        let (done, out, err) = h.join().unwrap();
        assert!(done, "{out}\n{err}");
        for line in out
            .lines()
            .filter(|l| l.contains(r#""name":"records_consumed""#))
        {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for p in v["partitions"].as_array().unwrap() {
                let partition = p["partition"].as_i64().unwrap();
                for o in p["minOffset"].as_i64().unwrap()..=p["maxOffset"].as_i64().unwrap() {
                    *seen.entry((partition, o)).or_default() += 1;
                }
            }
        }
    }
    let out = ok(&c, GET_OFFSETS, &["--topic", "v"]);
    let mut total = 0;
    for line in out.lines() {
        let mut f = line.rsplitn(3, ':');
        let end: i64 = f.next().unwrap().parse().unwrap();
        let partition: i64 = f.next().unwrap().parse().unwrap();
        total += end;
        for o in 0..end {
            assert!(
                seen.contains_key(&(partition, o)),
                "v-{partition} offset {o} never read"
            );
        }
        let committed = paths::committed_offset(&c.zk, "vg", "v", partition as i32).unwrap();
        assert_eq!(committed.unwrap_or(0), end, "v-{partition} committed");
    }
    assert_eq!(total, 2000, "{out}");
}

/// `kafka-configs.sh` sets, describes and deletes client and address quotas through
/// AlterClientQuotas and DescribeClientQuotas; what it writes is Kafka's ZooKeeper layout.
#[test]
fn kafka_configs_sets_describes_and_deletes_client_quotas() {
    let c = Cluster::start("tools-quotas", 1, &[]);
    let out = ok(
        &c,
        CONFIGS,
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
            "--add-config",
            "producer_byte_rate=1024,consumer_byte_rate=2048",
        ],
    );
    assert_eq!(out.trim(), "Completed updating config for client slow.");
    ok(
        &c,
        CONFIGS,
        &[
            "--alter",
            "--entity-type",
            "ips",
            "--entity-default",
            "--add-config",
            "connection_creation_rate=50",
        ],
    );
    let describe_slow = || {
        let args = [
            "--describe",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
        ];
        ok(&c, CONFIGS, &args)
    };
    let node = c.zk.get_data("/config/clients/slow").unwrap().0;
    let node: serde_json::Value = serde_json::from_slice(&node).unwrap();
    assert_eq!(
        node,
        serde_json::json!({"version": 1, "config": {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"}})
    );
    let out = describe_slow();
    assert!(
        out.contains("Quota configs for client-id 'slow' are")
            && out.contains("producer_byte_rate=1024.0")
            && out.contains("consumer_byte_rate=2048.0"),
        "{out}"
    );
    let out = ok(
        &c,
        CONFIGS,
        &["--describe", "--entity-type", "ips", "--entity-default"],
    );
    assert!(out.contains("connection_creation_rate=50.0"), "{out}");
    ok(
        &c,
        CONFIGS,
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
            "--delete-config",
            "producer_byte_rate",
        ],
    );
    let out = describe_slow();
    assert!(
        !out.contains("producer_byte_rate") && out.contains("consumer_byte_rate=2048.0"),
        "{out}"
    );
    // A key clients do not take is refused by name.
    let (refused, out, err) = common::java::run_kafka_tool(
        CONFIGS,
        &c.bootstrap(),
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
            "--add-config",
            "connection_creation_rate=5",
        ],
    );
    assert!(
        !refused || (out + &err).contains("connection_creation_rate"),
        "kafka-configs accepted a key clients do not take"
    );
}

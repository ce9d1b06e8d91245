//! `gregor topics` and `gregor reassign` through the built binary: happy paths, and a clear
//! message with a non-zero exit for each kind of bad input.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{assert_cli_fails, gregor_cli, wait_until};

#[test]
fn topics_cli_happy_paths_and_errors() {
    let c = Cluster::start("cli", 2, &[]);
    let zk = c.zk_connect.as_str();
    let (ok, out, err) = gregor_cli(
        &[
            "topics",
            "--zookeeper",
            zk,
            "--create",
            "--topic",
            "a",
            "--partitions",
            "4",
            "--replication-factor",
            "2",
        ],
        "",
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("Created topic \"a\" with 4 partition(s)"),
        "{out}"
    );
    c.wait_all_led("a");
    let (ok, out, _) = gregor_cli(&["topics", "--zookeeper", zk, "--list"], "");
    assert!(ok && out.lines().any(|l| l == "a"), "{out}");
    let (ok, out, _) = gregor_cli(
        &["topics", "--zookeeper", zk, "--describe", "--topic", "a"],
        "",
    );
    assert!(ok);
    assert!(
        out.contains("Topic: a\tPartitionCount: 4\tReplicationFactor: 2"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.contains("Leader:")).count(), 4);
    let (ok, out, _) = gregor_cli(
        &[
            "topics",
            "--zookeeper",
            zk,
            "--describe",
            "--under-replicated",
        ],
        "",
    );
    assert!(ok && out.is_empty(), "nothing under-replicated: {out}");

    let bad: &[(&[&str], &str)] = &[
        (
            &[
                "--create",
                "--topic",
                "a",
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
            "already exists",
        ),
        (
            &[
                "--create",
                "--topic",
                "b",
                "--partitions",
                "1",
                "--replication-factor",
                "3",
            ],
            "replication factor 3 is not possible with 2 live broker(s)",
        ),
        (
            &[
                "--create",
                "--topic",
                "bad/name",
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
            "invalid topic name",
        ),
        (
            &["--create", "--topic", "c", "--replica-assignment", "1:x"],
            "invalid replica assignment",
        ),
        (
            &["--create", "--topic", "c", "--replica-assignment", "1:7"],
            "broker 7 (partition 0) is not live",
        ),
        (
            &["--delete", "--topic", "nope"],
            "topic `nope` does not exist",
        ),
        (
            &["--describe", "--topic", "nope"],
            "topic `nope` does not exist",
        ),
        (&["--create", "--topic", "d"], "--partitions is required"),
    ];
    for (args, want) in bad {
        let mut all = vec!["topics", "--zookeeper", zk];
        all.extend_from_slice(args);
        assert_cli_fails(&all, want);
    }
    let (ok, _, err) = gregor_cli(&["topics", "--zookeeper", zk, "--bogus"], "");
    assert!(!ok && err.contains("--bogus"), "{err}");
    // The chroot forgotten: an error naming it, not an empty answer.
    let root = zk.split('/').next().unwrap();
    let nowhere = format!("{root}/no-such-chroot");
    assert_cli_fails(
        &["topics", "--zookeeper", &nowhere, "--describe"],
        "no gregor cluster at",
    );

    // Reassignment: execute, then verify until complete.
    let file = c.data_dir(1).join("../move.json");
    std::fs::write(
        &file,
        r#"{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2]}]}"#,
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let (ok, out, err) = gregor_cli(&["reassign", "--zookeeper", zk, "--execute", f], "");
    assert!(ok, "{err}");
    assert!(
        out.contains("Started reassignment of 1 partition(s)"),
        "{out}"
    );
    wait_until(
        Duration::from_secs(40),
        "reassign --verify to report completion",
        || {
            let (ok, out, _) = gregor_cli(&["reassign", "--zookeeper", zk, "--verify", f], "");
            ok && out.contains("Reassignment of partition a-0 completed successfully")
        },
    );
    std::fs::write(&file, "{not json").unwrap();
    let (ok, _, err) = gregor_cli(&["reassign", "--zookeeper", zk, "--execute", f], "");
    assert!(!ok && err.contains("not a reassignment"), "{err}");
    let (ok, _, err) = gregor_cli(&["topics", "--zookeeper", "127.0.0.1:1", "--list"], "");
    assert!(!ok && err.contains("cannot reach ZooKeeper"), "{err}");
}

/// `gregor topics --bootstrap-server`: the same operations through the admin APIs, with the
/// broker's messages for bad requests, and nothing asked of ZooKeeper by the tool.
#[test]
fn topics_cli_over_the_admin_apis() {
    let c = Cluster::start("cli-wire", 2, &[]);
    let b = format!("127.0.0.1:{}", c.brokers[&1].port);
    let topics = |args: &[&str]| {
        let mut all = vec!["topics", "--bootstrap-server", b.as_str()];
        all.extend_from_slice(args);
        gregor_cli(&all, "")
    };
    let (ok, out, err) = topics(&[
        "--create",
        "--topic",
        "a",
        "--partitions",
        "4",
        "--replication-factor",
        "2",
        "--config",
        "message.timestamp.type=LogAppendTime",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("Created topic \"a\" with 4 partition(s)"),
        "{out}"
    );
    let config = gregor::zk::topic_config::read(&c.zk, "a").unwrap();
    assert_eq!(config["message.timestamp.type"], "LogAppendTime");
    // Defaults (num.partitions, default.replication.factor) when neither is given.
    let (ok, out, err) = topics(&["--create", "--topic", "d"]);
    assert!(ok && out.contains("with 1 partition(s)"), "{out}{err}");
    let (ok, out, _) = topics(&["--list"]);
    assert!(ok && out.lines().any(|l| l == "a"), "{out}");

    let bad: &[(&[&str], &str)] = &[
        (
            &["--create", "--topic", "a", "--partitions", "1"],
            "already exists",
        ),
        (
            &["--create", "--topic", "b", "--replication-factor", "3"],
            "replication factor 3 is not possible with 2 live broker(s)",
        ),
        (&["--create", "--topic", "bad/name"], "invalid topic name"),
        (
            &["--create", "--topic", "c", "--replica-assignment", "1:x"],
            "invalid replica assignment",
        ),
        (
            &["--create", "--topic", "c", "--replica-assignment", "1:7"],
            "broker 7 (partition 0) is not live",
        ),
        (
            &["--create", "--topic", "c", "--config", "retention.mss=1"],
            "unknown topic configuration key `retention.mss`",
        ),
        (
            &["--alter", "--topic", "a", "--partitions", "2"],
            "the topic has 4 partitions",
        ),
        (&["--delete", "--topic", "nope"], "UnknownTopicOrPartition"),
        (
            &["--describe", "--topic", "nope"],
            "UnknownTopicOrPartition",
        ),
    ];
    for (args, want) in bad {
        let mut all = vec!["topics", "--bootstrap-server", b.as_str()];
        all.extend_from_slice(args);
        assert_cli_fails(&all, want);
    }
    assert_cli_fails(
        &[
            "topics",
            "--bootstrap-server",
            &b,
            "--zookeeper",
            &c.zk_connect,
            "--list",
        ],
        "cannot be used with",
    );

    let (ok, out, err) = topics(&["--alter", "--topic", "a", "--partitions", "6"]);
    assert!(ok, "{err}");
    assert!(out.contains("now has 6 partition(s)"), "{out}");
    let (ok, out, _) = topics(&["--describe", "--topic", "a"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("Topic: a\tPartitionCount: 6\tReplicationFactor: 2"),
        "{out}"
    );
    let (ok, _, err) = topics(&["--delete", "--topic", "a"]);
    assert!(ok, "{err}");
    let (ok, out, _) = topics(&["--list"]);
    assert!(ok && !out.lines().any(|l| l == "a"), "{out}");
    assert_eq!(
        gregor::zk::paths::topic_assignment(&c.zk, "a").unwrap(),
        None
    );
}

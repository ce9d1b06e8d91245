//! gregor's tools take what Kafka's scripts take for the same job (kafka-console-producer,
//! kafka-console-consumer, kafka-topics; the group and reassignment tools are in
//! `cli_group_tools.rs`), do the same with it, and fail at once, saying why, where nothing
//! answers. Each spelling here was refused before.

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{assert_cli_fails, gregor_ok as ok, wait_until};
use gregor::zk::topic_config;

/// `gregor topics` over the wire or through ZooKeeper (`via`), with `rest`.
fn topics_cmd<'a>(via: [&'a str; 2], rest: &[&'a str]) -> Vec<&'a str> {
    ["topics", via[0], via[1]]
        .iter()
        .chain(rest)
        .copied()
        .collect()
}

#[test]
fn console_producer_and_consumer_take_kafkas_flags() {
    // Topics are created on demand here (Kafka's default), so a consumer that asked for one
    // with Metadata v0, as gregor's did, would create it.
    let c = Cluster::start("spell-console", 1, &[("auto.create.topics.enable", "true")]);
    c.create_topic("kv", 1, 1);
    let b = c.bootstrap();
    ok(
        &[
            "produce",
            "--bootstrap-server",
            &b,
            "--topic",
            "kv",
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            "--request-required-acks",
            "all",
            "--compression-codec",
            "gzip",
        ],
        "k1:v1\nk2:v2\nk3:v3\n",
    );
    // --from-beginning without a group, --property print.key=true, --max-messages, -b.
    let out = ok(
        &[
            "consume",
            "-b",
            &b,
            "--topic",
            "kv",
            "--from-beginning",
            "--property",
            "print.key=true",
            "--max-messages",
            "2",
        ],
        "",
    );
    assert_eq!(out, "k1\tv1\nk2\tv2\n");
    // --timeout-ms: the consumer stops once nothing more comes.
    let out = ok(
        &[
            "consume",
            "-b",
            &b,
            "--topic",
            "kv",
            "--from-beginning",
            "--timeout-ms",
            "1500",
        ],
        "",
    );
    assert_eq!(out, "v1\nv2\nv3\n");
    // A missing topic: non-zero, said plainly, and not created by the consumer.
    assert_cli_fails(
        &["consume", "-b", &b, "--topic", "typo", "--exit-at-end"],
        "topic `typo` does not exist",
    );
    assert_cli_fails(
        &["consume", "-b", &b, "--topic", "typo", "--group", "g"],
        "topic `typo` does not exist",
    );
    let topics = ok(&["topics", "--bootstrap-server", &b, "--list"], "");
    assert!(
        !topics.contains("typo"),
        "the consumer created it: {topics}"
    );
    // An illegal name: the same words from both tools.
    for tool in ["produce", "consume"] {
        assert_cli_fails(
            &[tool, "-b", &b, "--topic", "bad/name"],
            "`bad/name` is not a legal topic name",
        );
    }
    assert_cli_fails(
        &[
            "consume",
            "-b",
            &b,
            "--topic",
            "kv",
            "--property",
            "print.value=true",
        ],
        "--property print.value is not known here",
    );
}

#[test]
fn topics_take_kafkas_flags_over_the_wire_and_through_zookeeper() {
    let c = Cluster::start("spell-topics", 2, &[]);
    let b = c.bootstrap();
    for via in [
        ["--bootstrap-server", b.as_str()],
        ["--zookeeper", c.zk_connect.as_str()],
    ] {
        let t = if via[0] == "--zookeeper" {
            "zk"
        } else {
            "wire"
        };
        let topic = |s: &str| format!("{t}-{s}");
        let (a, orders) = (topic("a"), topic("orders"));
        for name in [&a, &orders] {
            ok(
                &topics_cmd(
                    via,
                    &[
                        "--create",
                        "--topic",
                        name,
                        "--partitions",
                        "2",
                        "--replication-factor",
                        "2",
                    ],
                ),
                "",
            );
            c.wait_all_led(name);
        }
        // --if-not-exists and --if-exists make the no-ops succeed.
        let create_a = topics_cmd(
            via,
            &[
                "--create",
                "--topic",
                &a,
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
        );
        ok(&[&create_a[..], &["--if-not-exists"]].concat(), "");
        // "already exists" (ZooKeeper), TopicAlreadyExists (over the wire).
        assert_cli_fails(&create_a, "xists");
        ok(
            &topics_cmd(via, &["--delete", "--topic", &topic("nope"), "--if-exists"]),
            "",
        );
        ok(
            &topics_cmd(
                via,
                &[
                    "--alter",
                    "--topic",
                    &topic("nope"),
                    "--partitions",
                    "3",
                    "--if-exists",
                ],
            ),
            "",
        );
        // --list --topic is a regular expression over whole names.
        let listed = ok(
            &topics_cmd(via, &["--list", "--topic", &format!("{t}-o.*")]),
            "",
        );
        assert_eq!(listed.trim(), orders);
        // --alter --config / --delete-config change the topic's settings.
        ok(
            &topics_cmd(
                via,
                &[
                    "--alter",
                    "--topic",
                    &a,
                    "--config",
                    "retention.ms=60000",
                    "--config",
                    "max.message.bytes=2000",
                ],
            ),
            "",
        );
        let config = topic_config::read(&c.zk, &a).unwrap();
        assert_eq!(
            config.get("retention.ms").map(String::as_str),
            Some("60000")
        );
        ok(
            &topics_cmd(
                via,
                &["--alter", "--topic", &a, "--delete-config", "retention.ms"],
            ),
            "",
        );
        let config = topic_config::read(&c.zk, &a).unwrap();
        assert!(!config.contains_key("retention.ms"), "{config:?}");
        assert_eq!(
            config.get("max.message.bytes").map(String::as_str),
            Some("2000")
        );
        // Nothing under-replicated or unavailable yet.
        for flag in ["--under-replicated-partitions", "--unavailable-partitions"] {
            let out = ok(
                &["topics", via[0], via[1], "--describe", "--topic", &a, flag],
                "",
            );
            assert_eq!(out, "", "{flag}");
        }
    }
    // With broker 2 gone, its replicas are under-replicated everywhere.
    let mut c = c;
    c.kill9(2);
    let b1 = format!("127.0.0.1:{}", c.brokers[&1].port);
    wait_until(Duration::from_secs(30), "the ISRs to shrink", || {
        let out = ok(
            &[
                "topics",
                "--bootstrap-server",
                &b1,
                "--describe",
                "--topic",
                "wire-a",
                "--under-replicated-partitions",
            ],
            "",
        );
        out.lines().count() == 2
    });
}

/// Where nothing answers, the tools say so at once (it took 20 and 31 s before).
#[test]
fn unreachable_brokers_and_zookeeper_fail_at_once() {
    for (args, want) in [
        (
            &[
                "consume",
                "--group",
                "g",
                "--topic",
                "t",
                "--bootstrap-server",
                "127.0.0.1:1",
            ][..],
            "no broker answered",
        ),
        (
            &["topics", "--zookeeper", "127.0.0.1:1/gregor", "--list"][..],
            "Connection refused",
        ),
        (
            &["topics", "--bootstrap-server", "127.0.0.1:1", "--list"][..],
            "no broker answered",
        ),
    ] {
        let start = Instant::now();
        assert_cli_fails(args, want);
        // Generous for a busy machine; the slow failures took 20 s and more.
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{args:?} took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn cluster_script_refuses_a_broker_it_does_not_have() {
    let home = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh");
    for cmd in ["kill", "restart"] {
        let (ok, _, err) = common::run_with_deadline(
            std::process::Command::new("bash")
                .args([script, cmd, "7"])
                .env("GREGOR_HOME", home.path())
                .env("GREGOR_BIN", env!("CARGO_BIN_EXE_gregor")),
            "",
            Duration::from_secs(30),
        );
        assert!(!ok && err.contains("no broker 7"), "{cmd}: {err}");
    }
}

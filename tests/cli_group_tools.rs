//! gregor's group and partition tools take what Kafka's kafka-consumer-groups.sh and
//! kafka-reassign-partitions.sh take for the same job, and do the same with it; and Kafka's
//! own group tool (4.4) works against gregor.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{assert_cli_fails, gregor_cli, gregor_ok as ok, wait_until};

#[test]
fn groups_describe_reset_and_delete_offsets_as_kafkas_tool_does() {
    let c = Cluster::start("spell-groups", 1, &[]);
    c.create_topic("t", 2, 1);
    let b = c.bootstrap();
    ok(&["produce", "-b", &b, "--topic", "t"], &"x\n".repeat(20));
    // A group with committed offsets and no members: commit through the console consumer.
    consume_in_group(&b, "g", 20);
    let described = ok(&["groups", "-b", &b, "--describe", "--group", "g"], "");
    assert!(described.contains("GROUP g:"), "{described}");
    let committed = |out: &str| -> Vec<i64> {
        out.lines()
            .filter(|l| l.starts_with("t "))
            .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap_or(-1))
            .collect()
    };
    // `gregor groups -b B --group g REST`, and the committed column of its --describe.
    let groups = |rest: &[&str]| ok(&[&["groups", "-b", &b, "--group", "g"], rest].concat(), "");
    let committed_now = || committed(&groups(&["--describe"]));
    assert_eq!(committed(&described).iter().sum::<i64>(), 20, "{described}");
    // A dry run changes nothing; --execute does.
    let plan = groups(&["--reset-offsets", "--topic", "t", "--to-earliest"]);
    assert!(plan.contains("dry run"), "{plan}");
    assert_eq!(committed_now().iter().sum::<i64>(), 20);
    groups(&[
        "--reset-offsets",
        "--topic",
        "t",
        "--to-earliest",
        "--execute",
    ]);
    assert_eq!(committed_now(), [0, 0]);
    groups(&[
        "--reset-offsets",
        "--topic",
        "t:1",
        "--shift-by",
        "3",
        "--execute",
    ]);
    assert_eq!(committed_now(), [0, 3]);
    groups(&[
        "--reset-offsets",
        "--all-topics",
        "--to-offset",
        "1000",
        "--execute",
    ]);
    let ends = committed_now();
    assert_eq!(
        ends.iter().sum::<i64>(),
        20,
        "kept within each log: {ends:?}"
    );
    // --delete-offsets removes them; LAG then shows '-', as Kafka's tool shows it.
    let out = groups(&["--delete-offsets", "--topic", "t"]);
    assert_eq!(out.matches("Successful").count(), 2, "{out}");
    let described = groups(&["--describe"]);
    assert!(
        !described.lines().any(|l| l.starts_with("t ")),
        "{described}"
    );
    assert_cli_fails(
        &[
            "groups",
            "-b",
            &b,
            "--group",
            "g",
            "--reset-offsets",
            "--topic",
            "t",
        ],
        "--to-earliest",
    );
    // perf consume reads exactly --messages (it reported whole fetched batches past it).
    let out = ok(
        &[
            "perf",
            "consume",
            "-b",
            &b,
            "--topic",
            "t",
            "--messages",
            "7",
        ],
        "",
    );
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("7 messages,")),
        "{out}"
    );
}

#[test]
fn reassign_takes_kafkas_reassignment_json_file() {
    let c = Cluster::start("spell-reassign", 2, &[]);
    c.create_topic_on("moving", "1");
    let dir = tempfile::tempdir().unwrap();
    let file = common::write_file(
        dir.path(),
        "move.json",
        r#"{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[2]}]}"#,
    );
    let file = file.as_str();
    let zk = c.zk_connect.as_str();
    ok(
        &[
            "reassign",
            "--zookeeper",
            zk,
            "--reassignment-json-file",
            file,
            "--execute",
        ],
        "",
    );
    wait_until(
        Duration::from_secs(60),
        "the reassignment to complete",
        || {
            gregor_cli(
                &[
                    "reassign",
                    "--zookeeper",
                    zk,
                    "--reassignment-json-file",
                    file,
                    "--verify",
                ],
                "",
            )
            .0
        },
    );
    assert_eq!(c.state("moving", 0).map(|s| s.leader), Some(2));
    assert_cli_fails(
        &["reassign", "--zookeeper", zk, "--execute"],
        "--reassignment-json-file",
    );
}

/// Kafka 4.4's kafka-consumer-groups.sh lists groups with their type (ListGroups v5): a group
/// it made itself by resetting offsets and a spec-protocol group are `Classic`, and asking for
/// KIP-848 `consumer` groups lists none instead of failing with "the cluster does not support
/// [Consumer] in LIST_GROUPS API version 4".
#[test]
fn kafkas_group_tool_lists_groups_with_their_type() {
    let c = Cluster::start("spell-group-types", 1, &[]);
    c.create_topic("t", 1, 1);
    let b = c.bootstrap();
    ok(&["produce", "-b", &b, "--topic", "t"], &"x\n".repeat(3));
    let tool = |args: &[&str]| {
        let mut cmd =
            common::java::kafka_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand");
        cmd.args(["--bootstrap-server", &b]).args(args);
        let (ok, out, err) = common::run_with_deadline(&mut cmd, "", Duration::from_secs(120));
        assert!(ok, "kafka-consumer-groups {args:?} failed:\n{out}\n{err}");
        out
    };
    tool(&[
        "--reset-offsets",
        "--group",
        "kg",
        "--topic",
        "t",
        "--to-earliest",
        "--execute",
    ]);
    consume_in_group(&b, "sg", 3);
    let listed = |out: &str| -> Vec<(String, String)> {
        out.lines()
            .skip_while(|l| !l.starts_with("GROUP"))
            .skip(1)
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?.to_owned(), w.next()?.to_owned()))
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let all = tool(&["--list", "--type"]);
    assert_eq!(
        listed(&all),
        [
            ("kg".into(), "Classic".into()),
            ("sg".into(), "Classic".into())
        ],
        "{all}"
    );
    let classic = tool(&["--list", "--type", "classic"]);
    assert_eq!(listed(&classic).len(), 2, "{classic}");
    let consumer = tool(&["--list", "--type", "consumer"]);
    assert_eq!(listed(&consumer), [], "{consumer}");
}

/// Reads `n` messages of topic `t` from the start in `group` with `gregor consume`, which
/// commits them: a group with committed offsets and no members once it returns.
fn consume_in_group(bootstrap: &str, group: &str, n: usize) {
    let n = n.to_string();
    ok(
        &[
            "consume",
            "-b",
            bootstrap,
            "--topic",
            "t",
            "--group",
            group,
            "--from-beginning",
            "--max-messages",
            &n,
        ],
        "",
    );
}

//! `gregor produce`, `gregor consume` and `gregor status` through the built binary.

mod common;

use common::cluster::Cluster;
use common::{assert_cli_fails, gregor_cli};

#[test]
fn produce_consume_and_status_happy_paths_and_errors() {
    let c = Cluster::start("console", 2, &[("auto.create.topics.enable", "false")]);
    c.create_topic("lines", 2, 2);
    let b = format!("127.0.0.1:{}", c.brokers[&1].port);
    let input = "a:1\nb:2\nc:3\nno separator\n";
    for compression in ["none", "gzip", "snappy"] {
        let (ok, _, err) = gregor_cli(
            &[
                "produce",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--key-separator",
                ":",
                "--acks",
                "all",
                "--compression",
                compression,
            ],
            input,
        );
        assert!(ok, "{compression}: {err}");
    }
    let (ok, out, err) = gregor_cli(
        &[
            "consume",
            "--bootstrap",
            &b,
            "--topic",
            "lines",
            "--exit-at-end",
            "--print-key",
        ],
        "",
    );
    assert!(ok, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    let mut want = ["a\t1", "b\t2", "c\t3", "\tno separator"].repeat(3);
    want.sort();
    assert_eq!(lines, want);
    let (ok, out, _) = gregor_cli(
        &[
            "consume",
            "--bootstrap",
            &b,
            "--topic",
            "lines",
            "--partition",
            "0",
            "--offset",
            "latest",
            "--max-messages",
            "0",
            "--print-offset",
        ],
        "",
    );
    assert!(ok && out.is_empty());
    let (ok, out, _) = gregor_cli(
        &[
            "consume",
            "--bootstrap",
            &b,
            "--topic",
            "lines",
            "--max-messages",
            "2",
            "--print-offset",
        ],
        "",
    );
    assert!(ok && out.lines().count() == 2, "{out}");
    let (ok, out, err) = gregor_cli(
        &["status", "--bootstrap", &b, "--zookeeper", &c.zk_connect],
        "",
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("Brokers (2):") && out.contains("Controller: "),
        "{out}"
    );
    assert!(
        out.contains("lines (2 partitions)")
            && out.contains("Partitions: 2, under-replicated: 0, offline: 0"),
        "{out}"
    );

    let bad: &[(&[&str], &str)] = &[
        (
            &["produce", "--bootstrap", &b, "--topic", "absent"],
            "topic `absent` does not exist",
        ),
        (
            &[
                "consume",
                "--bootstrap",
                &b,
                "--topic",
                "absent",
                "--exit-at-end",
            ],
            "topic `absent` does not exist",
        ),
        (
            &["produce", "--bootstrap", "127.0.0.1:1", "--topic", "lines"],
            "no broker answered",
        ),
        (
            &["consume", "--bootstrap", "127.0.0.1:1", "--topic", "lines"],
            "no broker answered",
        ),
        (
            &["status", "--bootstrap", "127.0.0.1:1"],
            "no broker answered",
        ),
        (
            &[
                "produce",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--acks",
                "2",
            ],
            "--acks must be 0, 1 or all",
        ),
        (
            &[
                "produce",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--compression",
                "brotli",
            ],
            "--compression must be none, gzip, snappy, lz4 or zstd",
        ),
        (
            &[
                "produce",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--magic",
                "0",
                "--compression",
                "zstd",
            ],
            "--compression zstd needs --magic 2",
        ),
        (
            &[
                "consume",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--offset",
                "soon",
            ],
            "--offset must be earliest, latest or a number",
        ),
        (
            &[
                "consume",
                "--bootstrap",
                &b,
                "--topic",
                "lines",
                "--partition",
                "9",
            ],
            "has no partition 9",
        ),
        (
            &["consume", "--bootstrap", &b, "--topic", "lines", "--bogus"],
            "--bogus",
        ),
    ];
    for (args, want) in bad {
        assert_cli_fails(args, want);
    }
}

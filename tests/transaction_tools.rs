//! Operators' view of transactions: Apache Kafka 4.4's `kafka-transactions.sh`
//! (TransactionsCommand) and `gregor transactions` list the transactional ids the coordinator
//! knows and describe one (ListTransactions, DescribeTransactions); `find-hanging` finds a
//! transaction a producer left open in a partition without any coordinator knowing it, and
//! `abort` (Kafka's and gregor's) ends such a transaction so read_committed readers move on.

mod common;

use common::cluster::Cluster;
use common::gregor_ok;
use common::java::run_kafka_tool;
use common::prometheus::scrape;
use common::raw_client::{Client, init_producer};
use common::txn::{read_partitions, txn_client, values};
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};

const TOOL: &str = "org.apache.kafka.tools.TransactionsCommand";

fn kafka_transactions(bootstrap: &str, args: &[&str]) -> String {
    let (ok, out, err) = run_kafka_tool(TOOL, bootstrap, args);
    assert!(ok, "kafka-transactions {args:?}: {out}\n{err}");
    out
}

/// A transaction no coordinator knows: an idempotent producer's transactional batch written
/// straight to the partition. Returns its first offset.
fn leave_hanging(c: &mut Client, topic: &str, value: &str) -> i64 {
    let pid = init_producer(c, 4, -1, -1).producer_id;
    let mut b = BatchBuilder::new().idempotent(pid, 0, 0).transactional();
    b.push(&NewRecord {
        timestamp: common::now_ms(),
        key: None,
        value: Some(value.as_bytes()),
        headers: &[],
    });
    let p = c.produce_v(8, -1, topic, 0, &b.finish(0).unwrap());
    assert_eq!(p.error_code, 0);
    p.base_offset
}

/// The row of `id` in a listing, split into its columns.
fn row<'a>(listing: &'a str, id: &str) -> Vec<&'a str> {
    listing
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&id))
        .unwrap_or_else(|| panic!("no {id} in\n{listing}"))
}

#[test]
fn kafka_transactions_and_gregor_transactions_list_describe_and_abort() {
    let cluster = Cluster::start(
        "txn-tools",
        1,
        &[
            ("transaction.state.log.num.partitions", "2"),
            ("transaction.state.log.replication.factor", "1"),
            ("metrics.listener", "127.0.0.1:0"),
        ],
    );
    for t in ["tools", "hang"] {
        cluster.create_topic(t, 1, 1);
        cluster.wait_all_led(t);
    }
    let b = cluster.bootstrap();
    assert_eq!(
        txn_client(&["produce", &b, "tool-a", "tools", "commit:k1:5"]),
        "committed k1\n"
    );
    assert_eq!(
        txn_client(&["hang", &b, "tool-b", "tools", "600000"]),
        "written\n"
    );

    // Kafka's tool: TransactionalId Coordinator ProducerId TransactionState.
    let listed = kafka_transactions(&b, &["list"]);
    assert_eq!(row(&listed, "tool-a")[3], "CompleteCommit", "{listed}");
    assert_eq!(row(&listed, "tool-b")[3], "Ongoing", "{listed}");
    let ours = gregor_ok(&["transactions", "--bootstrap", &b, "--list"], "");
    assert_eq!(row(&ours, "tool-a")[3], "CompleteCommit", "{ours}");
    assert_eq!(row(&ours, "tool-b")[3], "Ongoing", "{ours}");
    assert_eq!(row(&ours, "tool-b")[2], row(&listed, "tool-b")[2]);
    // KIP-1152's pattern (ListTransactions v2) matches the whole id, as Kafka's RE2J
    // `matches()` does: `tool-.` lists both, `.-a` only tool-a, `tool` neither; a pattern
    // that does not compile is refused with INVALID_REGULAR_EXPRESSION.
    let ids = |listing: &str| -> Vec<String> {
        let rows = listing.lines().skip(1);
        rows.filter_map(|l| Some(l.split_whitespace().next()?.to_owned()))
            .collect()
    };
    for (pattern, want) in [
        ("tool-.", &["tool-a", "tool-b"][..]),
        (".*-a", &["tool-a"][..]),
        ("tool", &[][..]),
    ] {
        let theirs = kafka_transactions(&b, &["list", "--transactional-id-pattern", pattern]);
        assert_eq!(ids(&theirs), want, "{pattern}: {theirs}");
        let ours = gregor_ok(
            &[
                "transactions",
                "-b",
                &b,
                "--list",
                "--transactional-id-pattern",
                pattern,
            ],
            "",
        );
        assert_eq!(ids(&ours), want, "{pattern}: {ours}");
    }
    let (ok, _, err) = common::gregor_cli(
        &[
            "transactions",
            "-b",
            &b,
            "--list",
            "--transactional-id-pattern",
            "tool-(",
        ],
        "",
    );
    assert!(!ok && err.contains("InvalidRegularExpression"), "{err}");

    // CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState ...
    // TopicPartitions.
    let described = kafka_transactions(&b, &["describe", "--transactional-id", "tool-b"]);
    let cols: Vec<&str> = described
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        (cols[0], cols[1], cols[4]),
        ("1", "tool-b", "Ongoing"),
        "{described}"
    );
    assert_eq!(cols.last(), Some(&"tools-0"), "{described}");
    // Kafka's spelling works too.
    let ours = gregor_ok(
        &[
            "transactions",
            "--bootstrap-server",
            &b,
            "describe",
            "--transactional-id",
            "tool-b",
        ],
        "",
    );
    let our_cols: Vec<&str> = ours.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(our_cols[..5], cols[..5], "{ours}");
    assert_eq!(our_cols.last(), cols.last());
    let (ok, _, err) = common::gregor_cli(
        &["transactions", "--bootstrap", &b, "--describe", "nobody"],
        "",
    );
    assert!(!ok && err.contains("TransactionalIdNotFound"), "{err}");

    // Transactions left open in `hang` by producers no coordinator knows: Kafka's
    // find-hanging names them; Kafka's abort ends the first, gregor's the second.
    // The metrics: one id committed, one open; the open transaction in `tools`.
    let m = scrape(cluster.metrics_addr(1));
    let ids = "gregor_transaction_coordinator_transactional_ids";
    assert_eq!(m.get(ids, &[("state", "Ongoing")]), Some(1.0));
    assert_eq!(m.get(ids, &[("state", "CompleteCommit")]), Some(1.0));
    assert_eq!(m.get("gregor_log_open_transactions", &[]), Some(1.0));
    // tool-b's 10 records and nothing after them: the LSO is 10 behind the high watermark.
    assert_eq!(
        m.get("gregor_log_last_stable_offset_lag_max", &[]),
        Some(10.0)
    );
    assert!(
        m.get(
            "kafka_server_transaction_coordinator_metrics_partition_load_time_max",
            &[]
        )
        .is_some()
    );

    let mut c = cluster.client(1);
    let first = leave_hanging(&mut c, "hang", "h1");
    let second = leave_hanging(&mut c, "hang", "h2");
    let hanging = kafka_transactions(
        &b,
        &[
            "find-hanging",
            "--broker-id",
            "1",
            "--max-transaction-timeout",
            "0",
        ],
    );
    for offset in [first, second] {
        assert!(
            hanging
                .lines()
                .any(|l| l.starts_with("hang")
                    && l.split_whitespace().any(|c| c == offset.to_string())),
            "{hanging}"
        );
    }
    assert!(
        !hanging.contains("tools"),
        "tool-b's is not hanging: {hanging}"
    );
    kafka_transactions(
        &b,
        &[
            "abort",
            "--topic",
            "hang",
            "--partition",
            "0",
            "--start-offset",
            &first.to_string(),
        ],
    );
    let out = gregor_ok(
        &[
            "transactions",
            "--bootstrap",
            &b,
            "--abort",
            "--topic",
            "hang",
            "--partition",
            "0",
            "--start-offset",
            &second.to_string(),
        ],
        "",
    );
    assert!(
        out.starts_with("aborted the transaction of producer"),
        "{out}"
    );
    // Nothing holds `hang`'s last stable offset now: read_committed reaches its end, and
    // the aborted records are not read.
    let read = read_partitions(&b, "hang", "read_committed");
    assert!(read.values().all(Vec::is_empty), "{read:?}");
    // tool-a's producer and tool-b's, whose transaction still holds `tools`' last stable
    // offset: read_committed reads tool-a's records and stops there.
    let producers = gregor_ok(
        &[
            "transactions",
            "--bootstrap",
            &b,
            "--describe-producers",
            "--topic",
            "tools",
            "--partition",
            "0",
        ],
        "",
    );
    assert_eq!(producers.lines().count(), 3, "{producers}");
    assert_eq!(
        read_partitions(&b, "tools", "read_committed")[&0],
        values("k1", 5)
    );
    assert_eq!(
        read_partitions(&b, "tools", "read_uncommitted")[&0].len(),
        15
    );
}

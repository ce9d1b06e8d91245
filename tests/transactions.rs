//! Transactions on a real broker, the partition's side: transactional batches produced by two
//! producers, one transaction committed and one aborted by WriteTxnMarkers (what the
//! transaction coordinator sends); confluent-kafka (librdkafka) and kafka-python consumers at
//! `read_committed` then read exactly the committed and plain records, and at
//! `read_uncommitted` all of them; the last stable offset holds at an open transaction's
//! first record (Fetch and ListOffsets); markers of an older coordinator epoch or producer
//! epoch are refused with Kafka's codes, a control batch from a client with INVALID_RECORD;
//! Kafka's `kafka-transactions.sh describe-producers` shows the producers and their open
//! transactions (DescribeProducers); after a kill -9 and restart the same records are read.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::Cluster;
use common::raw_client::{Client, init_producer};
use common::run_with_deadline;
use gregor::protocol::ErrorCode;
use gregor::protocol::describe_producers::{DescribeProducersRequest, DescribeProducersResponse};
use gregor::protocol::fetch::{FetchPartition, FetchRequest, FetchResponse, READ_COMMITTED};
use gregor::protocol::offsets::{
    LATEST_TIME, ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition,
};
use gregor::protocol::record_batch::{BatchBuilder, NewRecord, TxnMarker, encode_marker};
use gregor::protocol::txn_markers::{
    TxnMarkerEntry, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};

const TOPIC: &str = "txn";

fn batch(value: &str, producer: Option<(i64, i32)>, transactional: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    if let Some((pid, seq)) = producer {
        b = b.idempotent(pid, 0, seq);
    }
    if transactional {
        b = b.transactional();
    }
    b.push(&NewRecord {
        timestamp: common::now_ms(),
        key: None,
        value: Some(value.as_bytes()),
        headers: &[],
    });
    b.finish(0).unwrap()
}

fn produce(c: &mut Client, set: &[u8]) -> (i16, i64) {
    let p = c.produce_v(8, -1, TOPIC, 0, set);
    (p.error_code, p.base_offset)
}

/// WriteTxnMarkers for partition 0 of the topic; the partition's error code.
fn end_txn(c: &mut Client, pid: i64, epoch: i16, commit: bool, coordinator_epoch: i32) -> i16 {
    let req = WriteTxnMarkersRequest {
        markers: vec![TxnMarkerEntry {
            producer_id: pid,
            producer_epoch: epoch,
            commit,
            topics: vec![(TOPIC.into(), vec![0])],
            coordinator_epoch,
        }],
    };
    let resp: WriteTxnMarkersResponse = c.chan.send(27, 1, &req).unwrap();
    assert_eq!(resp.markers[0].0, pid);
    resp.markers[0].1[0].1[0].1
}

/// The last stable offset as a `read_committed` Fetch (v12) and ListOffsets (v7) give it.
fn last_stable(c: &mut Client) -> (i64, i64) {
    let part = FetchPartition::new(0, 0, 1 << 20);
    let mut req = FetchRequest::new(-1, 0, 1, vec![(TOPIC.into(), vec![part])]);
    req.isolation_level = READ_COMMITTED;
    let f: FetchResponse = c.chan.send(1, 12, &req).unwrap();
    let lso_fetch = f.topics[0].1[0].last_stable_offset;
    let lo = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: READ_COMMITTED,
        topics: vec![(
            TOPIC.into(),
            vec![OffsetsPartition {
                partition: 0,
                time: LATEST_TIME,
                max_num_offsets: 1,
                current_leader_epoch: -1,
            }],
        )],
    };
    let l: ListOffsetsResponse = c.chan.send(2, 7, &lo).unwrap();
    (lso_fetch, l.topics[0].1[0].offset)
}

/// What a consumer read: (offset, value) in order, after checking it reached the end.
fn read(bootstrap: &str, client: &str, isolation: &str) -> Vec<(i64, String)> {
    let mut cmd = common::python();
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/txn_reader.py"
    ))
    .args([client, bootstrap, TOPIC, isolation]);
    let (ok, out, err) = run_with_deadline(&mut cmd, "", Duration::from_secs(90));
    assert!(
        ok && out.lines().last() == Some("end"),
        "{client} {isolation}: {out}\n{err}"
    );
    out.lines()
        .filter_map(|l| l.strip_prefix("rec "))
        .map(|l| {
            let (o, v) = l.split_once(' ').unwrap();
            (o.parse().unwrap(), v.to_owned())
        })
        .collect()
}

/// `kafka-transactions.sh describe-producers` for partition 0: producer id → (epoch, latest
/// coordinator epoch, last sequence, current transaction start offset).
fn describe_producers(bootstrap: &str) -> BTreeMap<i64, (i32, i32, i32, i64)> {
    let (ok, out, err) = common::java::run_kafka_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        bootstrap,
        &["describe-producers", "--topic", TOPIC, "--partition", "0"],
    );
    assert!(ok, "describe-producers: {out}\n{err}");
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // The tool prints an absent coordinator epoch or transaction as `None`.
            let n = |i: usize| match f.get(i) {
                Some(&"None") => Some(-1),
                v => v.and_then(|v| v.parse::<i64>().ok()),
            };
            Some((n(0)?, (n(1)? as i32, n(2)? as i32, n(3)? as i32, n(5)?)))
        })
        .collect()
}

fn values(recs: &[(i64, String)]) -> Vec<&str> {
    recs.iter().map(|(_, v)| v.as_str()).collect()
}

#[test]
fn read_committed_consumers_see_committed_records_only() {
    let mut cluster = Cluster::start("transactions", 1, &[]);
    cluster.create_topic(TOPIC, 1, 1);
    cluster.wait_all_led(TOPIC);
    let b = cluster.bootstrap();
    let mut c = cluster.client(1);
    let a = init_producer(&mut c, 4, -1, -1).producer_id;
    let z = init_producer(&mut c, 4, -1, -1).producer_id;

    assert_eq!(produce(&mut c, &batch("a1", Some((a, 0)), true)), (0, 0));
    assert_eq!(produce(&mut c, &batch("z1", Some((z, 0)), true)), (0, 1));
    assert_eq!(produce(&mut c, &batch("plain", None, false)), (0, 2));
    assert_eq!(produce(&mut c, &batch("a2", Some((a, 1)), true)), (0, 3));
    // Both transactions open: nothing is stable yet.
    assert_eq!(last_stable(&mut c), (0, 0));
    assert!(read(&b, "confluent", "read_committed").is_empty());
    assert_eq!(
        values(&read(&b, "confluent", "read_uncommitted")),
        ["a1", "z1", "plain", "a2"]
    );

    // Kafka's own tool shows both open transactions and each producer's last sequence.
    let producers = describe_producers(&b);
    assert_eq!(producers.get(&a), Some(&(0, -1, 1, 0)), "{producers:?}");
    assert_eq!(producers.get(&z), Some(&(0, -1, 0, 1)), "{producers:?}");

    // A client may not write a marker itself.
    let forged = encode_marker(
        a,
        0,
        TxnMarker {
            commit: true,
            coordinator_epoch: 0,
        },
        1,
    );
    assert_eq!(produce(&mut c, &forged).0, ErrorCode::InvalidRecord.code());

    assert_eq!(end_txn(&mut c, a, 0, true, 5), 0);
    // `z`'s transaction, open from offset 1, still holds the LSO there.
    assert_eq!(last_stable(&mut c), (1, 1));
    assert_eq!(end_txn(&mut c, z, 0, false, 5), 0);
    assert_eq!(last_stable(&mut c), (6, 6));
    // The same through the raw request: both ended, by coordinator epoch 5.
    let req = DescribeProducersRequest {
        topics: vec![(TOPIC.into(), vec![0])],
    };
    let resp: DescribeProducersResponse = c.chan.send(61, 0, &req).unwrap();
    let got: Vec<(i64, i32, i64)> = resp.topics[0].1[0]
        .active_producers
        .iter()
        .map(|p| {
            (
                p.producer_id,
                p.coordinator_epoch,
                p.current_txn_start_offset,
            )
        })
        .collect();
    assert_eq!(got, [(a.min(z), 5, -1), (a.max(z), 5, -1)]);
    // An older coordinator, or the producer's older epoch, is fenced.
    assert_eq!(
        end_txn(&mut c, a, 0, false, 4),
        ErrorCode::TransactionCoordinatorFenced.code()
    );
    assert_eq!(end_txn(&mut c, a, 1, false, 5), 0, "a new epoch's abort");
    assert_eq!(
        end_txn(&mut c, a, 0, true, 5),
        ErrorCode::InvalidProducerEpoch.code()
    );

    let committed = vec![(0, "a1".to_owned()), (2, "plain".into()), (3, "a2".into())];
    assert_eq!(read(&b, "confluent", "read_committed"), committed);
    assert_eq!(read(&b, "kafka-python", "read_committed"), committed);
    assert_eq!(
        values(&read(&b, "kafka-python", "read_uncommitted")),
        ["a1", "z1", "plain", "a2"]
    );

    // The producer state and the aborted-transaction index come back after a kill -9.
    cluster.kill9(1);
    cluster.restart(1);
    common::wait_until(
        Duration::from_secs(30),
        "the restarted broker's LSO",
        || Client::try_connect(cluster.addr(1)).is_some_and(|mut c| last_stable(&mut c) == (7, 7)),
    );
    assert_eq!(read(&b, "confluent", "read_committed"), committed);
}

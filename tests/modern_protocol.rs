//! The modern protocol through the wire, against one in-process broker: format v2 batches
//! stored as produced and read back by every Fetch version (down-converted for v0–v3),
//! flexible versions, ListOffsets by timestamp (exact after a restart, and over segments
//! written before time indexes existed), Metadata's cluster and topic ids, and idempotent
//! producers.

mod common;

use common::*;
use gregor::protocol::ErrorCode;
use gregor::protocol::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use gregor::protocol::offsets::{ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition};
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};
use gregor::protocol::records::decode_deep;

const T0: i64 = 1_700_000_000_000;

/// A batch of `values` with timestamps T0 + 10·i and a header on each.
fn batch(values: &[&str], codec: i8) -> Vec<u8> {
    builder(values).finish(codec).unwrap()
}

fn builder(values: &[&str]) -> BatchBuilder {
    let mut b = BatchBuilder::new();
    for (i, v) in values.iter().enumerate() {
        b.push(&NewRecord {
            timestamp: T0 + 10 * i as i64,
            key: Some(b"key"),
            value: Some(v.as_bytes()),
            headers: &[("trace", Some(b"abc")), ("empty", None)],
        });
    }
    b
}

/// Records in ZooKeeper that broker 1 holds the one partition of `topic`, so that a restart
/// keeps its log (a broker deletes partitions not assigned to it).
fn assign_to_broker_1(zk: &str, topic: &str) {
    let zk = gregor::zk::ZkClient::connect(zk, std::time::Duration::from_secs(6)).unwrap();
    gregor::zk::admin::create_topic(&zk, topic, 1, 1, Some("1")).unwrap();
    zk.close();
}

fn list_at(c: &mut Client, version: i16, topic: &str, time: i64) -> (i16, i64, i64) {
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![(
            topic.into(),
            vec![OffsetsPartition {
                partition: 0,
                time,
                max_num_offsets: 1,
                current_leader_epoch: -1,
            }],
        )],
    };
    let resp = c
        .chan
        .send::<ListOffsetsResponse>(2, version, &req)
        .unwrap();
    let p = &resp.topics[0].1[0];
    (p.error_code, p.offset, p.timestamp)
}

#[test]
fn batches_are_stored_as_produced_and_read_by_every_fetch_version() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-fetch"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[]);
    let mut c = b.client();
    lead(&b, &mut c, 1, "m", 1);
    let sent = batch(&["a", "b", "c"], 0);
    for version in [3, 9] {
        let p = c.produce_v(version, 1, "m", 0, &sent);
        assert_eq!(p.error_code, 0, "v{version}");
    }
    let p = c.produce_v(7, 1, "m", 0, &batch(&["z1", "z2"], 4));
    assert_eq!((p.error_code, p.base_offset, p.log_start_offset), (0, 6, 0));
    // A v4+ fetcher gets the bytes as produced, with only the base offset and the leader's
    // epoch written in (both outside the CRC).
    let f = c.fetch_v(12, -1, "m", 0, 0, 0);
    // The producer wrote -1; the leader its epoch, 0.
    assert_eq!(
        &f.message_set[12..16],
        &0i32.to_be_bytes(),
        "leader epoch stamped"
    );
    assert_eq!(
        f.message_set[16..sent.len()],
        sent[16..],
        "the rest as produced"
    );
    for version in [4, 11, 12] {
        let msgs = decode_deep(&c.fetch_v(version, -1, "m", 0, 0, 0).message_set).unwrap();
        assert_eq!(msgs.len(), 8, "v{version}");
        assert_eq!(msgs[4].value.as_deref(), Some(&b"b"[..]));
        assert_eq!((msgs[4].offset, msgs[4].timestamp), (4, T0 + 10));
        assert_eq!(
            msgs[4].headers[0],
            ("trace".to_owned(), Some(b"abc".to_vec()))
        );
        assert_eq!(msgs[4].headers[1], ("empty".to_owned(), None));
    }
    // A v0–v3 fetcher (a 0.8-era client) gets messages of the format it reads, from its
    // offset on, zstd batches included.
    for (version, magic) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
        let f = c.fetch_v(version, -1, "m", 0, 1, 0);
        let plain: Vec<_> = gregor::protocol::message::iter(&f.message_set)
            .map(|m| m.unwrap())
            .collect();
        assert!(plain.iter().all(|m| m.magic == magic && m.codec() == 0));
        let msgs = decode_deep(&f.message_set).unwrap();
        let offsets: Vec<i64> = msgs.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, (1..8).collect::<Vec<_>>(), "v{version}");
        assert_eq!(msgs[6].value.as_deref(), Some(&b"z2"[..]));
        assert_eq!(msgs[0].timestamp, if magic == 1 { T0 + 10 } else { -1 });
    }
    // Each format only with the versions that carry it.
    let old = message_set(&[b"old"]);
    assert_eq!(
        c.produce_v(3, 1, "m", 0, &old).error_code,
        ErrorCode::InvalidRecord.code()
    );
    assert_eq!(
        c.produce_v(2, 1, "m", 0, &sent).error_code,
        ErrorCode::InvalidRecord.code()
    );
    let two = [sent.clone(), sent.clone()].concat();
    assert_eq!(
        c.produce_v(3, 1, "m", 0, &two).error_code,
        ErrorCode::InvalidRecord.code()
    );
    let mut corrupt = sent.clone();
    let n = corrupt.len();
    corrupt[n - 1] ^= 1;
    assert_eq!(
        c.produce_v(3, 1, "m", 0, &corrupt).error_code,
        ErrorCode::CorruptMessage.code()
    );
    // Nothing refused was stored.
    assert_eq!(list_at(&mut c, 1, "m", -1).1, 8);
}

#[test]
fn log_append_time_replaces_the_producers_timestamps() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-append-time"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[("log.message.timestamp.type", "LogAppendTime")]);
    let mut c = b.client();
    lead(&b, &mut c, 1, "la", 1);
    let p = c.produce_v(3, 1, "la", 0, &batch(&["a", "b"], 0));
    assert!(p.log_append_time_ms > T0, "{p:?}");
    let msgs = decode_deep(&c.fetch("la", 0, 0, 0).message_set).unwrap();
    assert!(msgs.iter().all(|m| m.timestamp == p.log_append_time_ms));
}

#[test]
fn a_topic_can_choose_its_own_timestamp_type() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-topic-time"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[]);
    let mut c = b.client();
    // As `gregor topics --create --config message.timestamp.type=LogAppendTime` writes it.
    let z = gregor::zk::ZkClient::connect(&zk, std::time::Duration::from_secs(6)).unwrap();
    let config =
        gregor::zk::topic_config::parse(&["message.timestamp.type=LogAppendTime".into()]).unwrap();
    gregor::zk::topic_config::write(&z, "appended", &config).unwrap();
    z.close();
    lead(&b, &mut c, 1, "appended", 1);
    lead(&b, &mut c, 1, "created", 1);
    let p = c.produce_v(3, 1, "appended", 0, &batch(&["a"], 0));
    assert!(p.log_append_time_ms > T0, "{p:?}");
    let q = c.produce_v(3, 1, "created", 0, &batch(&["a"], 0));
    assert_eq!(q.log_append_time_ms, -1);
    let msgs = decode_deep(&c.fetch("created", 0, 0, 0).message_set).unwrap();
    assert_eq!(msgs[0].timestamp, T0, "the producer's time");
}

#[test]
fn list_offsets_by_timestamp_is_exact_and_survives_a_restart_and_an_upgrade() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-times"));
    let _controller = FakeController::claim(&zk);
    let tmp = tempfile::tempdir().unwrap();
    // Small segments and index intervals, so that the search crosses segments and entries.
    let props = [
        ("log.segment.bytes", "600"),
        ("log.index.interval.bytes", "100"),
    ];
    let b = TestBroker::start_in(1, &zk, tmp.path(), &props);
    assign_to_broker_1(&zk, "ts");
    let mut c = b.client();
    lead(&b, &mut c, 1, "ts", 1);
    // Data of the 0.8 era first (magic 0 and 1), then batches.
    assert_eq!(c.produce(1, "ts", 0, &[b"v0", b"v1"]).0, 0);
    for i in 0..20 {
        let vals: Vec<String> = (0..3).map(|j| format!("{i}-{j}")).collect();
        let refs: Vec<&str> = vals.iter().map(String::as_str).collect();
        let mut bb = BatchBuilder::new();
        for (j, v) in refs.iter().enumerate() {
            bb.push(&NewRecord {
                timestamp: T0 + 1000 * i + j as i64,
                key: None,
                value: Some(v.as_bytes()),
                headers: &[],
            });
        }
        assert_eq!(
            c.produce_v(3, 1, "ts", 0, &bb.finish(0).unwrap())
                .error_code,
            0
        );
    }
    let check = |c: &mut Client| {
        // Record (i, j) is at offset 2 + 3i + j with time T0 + 1000i + j.
        assert_eq!(list_at(c, 1, "ts", T0 + 5000), (0, 17, T0 + 5000));
        assert_eq!(list_at(c, 7, "ts", T0 + 5001), (0, 18, T0 + 5001));
        assert_eq!(list_at(c, 4, "ts", T0 + 5003), (0, 20, T0 + 6000));
        // Offset 0 is magic 0 (no timestamp); offset 1 magic 1 at T0.
        assert_eq!(
            list_at(c, 1, "ts", 0),
            (0, 1, T0),
            "older than all: the first timestamped one"
        );
        assert_eq!(
            list_at(c, 1, "ts", T0 + 99_999),
            (0, -1, -1),
            "newer than all"
        );
        assert_eq!(
            list_at(c, 7, "ts", -3),
            (0, 61, T0 + 19_002),
            "the largest timestamp"
        );
        assert_eq!(list_at(c, 6, "ts", -2).1, 0);
        assert_eq!(list_at(c, 6, "ts", -1).1, 62);
    };
    check(&mut c);
    drop(c);
    drop(b);
    // A restart recovers the time indexes: the same answers.
    let b = TestBroker::start_in(1, &zk, tmp.path(), &props);
    let mut c = b.client();
    lead(&b, &mut c, 2, "ts", 1);
    check(&mut c);
    drop(c);
    drop(b);
    // An upgrade from a broker without time indexes: they are built from the log.
    let dir = tmp.path().join("ts-0");
    let mut removed = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "timeindex") {
            std::fs::remove_file(p).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 3, "the data spans several segments");
    let b = TestBroker::start_in(1, &zk, tmp.path(), &props);
    let mut c = b.client();
    lead(&b, &mut c, 3, "ts", 1);
    check(&mut c);
    // The old messages are still readable after the upgrade, by new and old fetchers.
    for version in [0, 4] {
        let msgs = decode_deep(&c.fetch_v(version, -1, "ts", 0, 0, 0).message_set).unwrap();
        assert_eq!(msgs[1].value.as_deref(), Some(&b"v1"[..]), "v{version}");
    }
}

#[test]
fn metadata_names_the_cluster_and_each_topic_by_id() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-metadata"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[]);
    let mut c = b.client();
    assign_to_broker_1(&zk, "md");
    lead(&b, &mut c, 1, "md", 1);
    let meta = |c: &mut Client, version: i16| {
        let req = gregor::protocol::metadata::MetadataRequest {
            topics: Some(vec!["md".into()]),
            allow_auto_topic_creation: false,
        };
        c.chan
            .send::<gregor::protocol::metadata::MetadataResponse>(3, version, &req)
            .unwrap()
    };
    let m = meta(&mut c, 12);
    let cluster = m.cluster_id.clone().expect("a cluster id");
    assert_eq!(cluster.len(), 22);
    assert_eq!(
        m.controller_id, 0,
        "the controller that sent UpdateMetadata"
    );
    let id = m.topics[0].topic_id;
    assert_ne!(id, [0; 16]);
    // The leader epoch the controller gave (`lead` makes it 0): clients fence and validate
    // their positions with it (KIP-320).
    assert_eq!(m.topics[0].partitions[0].leader_epoch, 0);
    assert_eq!(
        meta(&mut c, 6).topics[0].partitions[0].leader_epoch,
        -1,
        "v6 has no epoch"
    );
    // Stable across requests, connections and versions that carry it.
    let mut c2 = b.client();
    for v in [9, 10, 11] {
        let again = meta(&mut c2, v);
        assert_eq!(again.cluster_id.as_deref(), Some(cluster.as_str()));
        if v >= 10 {
            assert_eq!(again.topics[0].topic_id, id);
        }
    }
    // v1+: an empty list is no topics; a missing one is not created when not allowed.
    let req = gregor::protocol::metadata::MetadataRequest {
        topics: Some(vec!["nope".into()]),
        allow_auto_topic_creation: false,
    };
    let m = c
        .chan
        .send::<gregor::protocol::metadata::MetadataResponse>(3, 4, &req)
        .unwrap();
    assert_eq!(
        m.topics[0].error_code,
        ErrorCode::UnknownTopicOrPartition.code()
    );
}

#[test]
fn idempotent_producers_are_deduplicated_across_a_restart() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("modern-idempotence"));
    let _controller = FakeController::claim(&zk);
    let tmp = tempfile::tempdir().unwrap();
    let props = [("log.segment.bytes", "400")];
    let b = TestBroker::start_in(1, &zk, tmp.path(), &props);
    assign_to_broker_1(&zk, "idem");
    let mut c = b.client();
    lead(&b, &mut c, 1, "idem", 1);
    let first = init_producer(&mut c, 4, -1, -1);
    assert_eq!((first.error_code, first.producer_epoch), (0, 0));
    let second = init_producer(&mut c, 2, -1, -1);
    assert_ne!(
        second.producer_id, first.producer_id,
        "ids are never reused"
    );
    let pid = first.producer_id;
    let send = |c: &mut Client, epoch: i16, seq: i32, vals: &[&str]| {
        let set = builder(vals).idempotent(pid, epoch, seq).finish(0).unwrap();
        let p = c.produce_v(9, -1, "idem", 0, &set);
        (p.error_code, p.base_offset)
    };
    assert_eq!(send(&mut c, 0, 0, &["a", "b"]), (0, 0));
    assert_eq!(send(&mut c, 0, 2, &["c"]), (0, 2));
    // A retry of either batch: its original offsets, and nothing stored twice.
    assert_eq!(send(&mut c, 0, 0, &["a", "b"]), (0, 0));
    assert_eq!(send(&mut c, 0, 2, &["c"]), (0, 2));
    // A gap, and a producer nobody knows starting mid-sequence, this soon after the broker
    // took the lead: NOT_LEADER (retriable), since the batches before may still be on their
    // way to the old leader (`producer_state::AwaitingEarlierBatch`; later they are
    // OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID, its unit test).
    assert_eq!(
        send(&mut c, 0, 5, &["x"]).0,
        ErrorCode::NotLeaderForPartition.code()
    );
    let stranger = builder(&["s"])
        .idempotent(second.producer_id, 0, 7)
        .finish(0)
        .unwrap();
    assert_eq!(
        c.produce_v(9, 1, "idem", 0, &stranger).error_code,
        ErrorCode::NotLeaderForPartition.code()
    );
    // Bumping the epoch (KIP-360) fences the old one and restarts the sequence.
    let bumped = init_producer(&mut c, 4, pid, 0);
    assert_eq!((bumped.producer_id, bumped.producer_epoch), (pid, 1));
    assert_eq!(send(&mut c, 1, 0, &["d"]), (0, 3));
    assert_eq!(
        send(&mut c, 0, 3, &["late"]).0,
        ErrorCode::InvalidProducerEpoch.code()
    );
    for i in 1..6 {
        assert_eq!(send(&mut c, 1, i, &["e"]), (0, 3 + i64::from(i)));
    }
    drop(c);
    drop(b);
    // After a restart (state from the snapshot and the log after it) a retry is still
    // recognised, and the sequence goes on where it was.
    let b = TestBroker::start_in(1, &zk, tmp.path(), &props);
    let mut c = b.client();
    lead(&b, &mut c, 2, "idem", 1);
    assert_eq!(send(&mut c, 1, 5, &["e"]), (0, 8));
    assert_eq!(send(&mut c, 1, 6, &["f"]), (0, 9));
    // Each value once, in order (a fetch reads one segment: read on until the end).
    let mut values = Vec::new();
    while values.len() < 10 {
        let set = c.fetch("idem", 0, values.len() as i64, 0).message_set;
        let msgs = decode_deep(&set).unwrap();
        assert!(!msgs.is_empty(), "stopped at {values:?}");
        let from = values.len() as i64;
        values.extend(
            msgs.into_iter()
                .filter(|m| m.offset >= from)
                .map(|m| m.value.unwrap()),
        );
    }
    let want: Vec<&[u8]> = vec![b"a", b"b", b"c", b"d", b"e", b"e", b"e", b"e", b"e", b"f"];
    assert_eq!(values, want);
    // A transactional producer asking a broker that does not coordinate its id is told so.
    let req = InitProducerIdRequest {
        transactional_id: Some("tx".into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    };
    let r = c.chan.send::<InitProducerIdResponse>(22, 4, &req).unwrap();
    assert_eq!(r.error_code, ErrorCode::NotCoordinator.code());
}

/// The followers keep the producers' state too: after the leader dies, a producer's retry of
/// a batch the old leader acknowledged is answered by the new leader with the same offsets,
/// and stored once.
#[test]
fn a_leader_change_never_lets_a_retried_batch_in_twice() {
    let mut c = common::cluster::Cluster::start("modern-idem-failover", 3, &[]);
    c.create_topic("fo", 1, 3);
    let leader = c.leader("fo", 0);
    let mut client = c.client(leader);
    let pid = init_producer(&mut client, 4, -1, -1).producer_id;
    let first = builder(&["a", "b"])
        .idempotent(pid, 0, 0)
        .finish(0)
        .unwrap();
    let second = builder(&["c"]).idempotent(pid, 0, 2).finish(0).unwrap();
    assert_eq!(client.produce_v(9, -1, "fo", 0, &first).base_offset, 0);
    assert_eq!(client.produce_v(9, -1, "fo", 0, &second).base_offset, 2);
    drop(client);
    c.kill9(leader);
    wait_until(std::time::Duration::from_secs(30), "a new leader", || {
        let l = c.leader("fo", 0);
        l >= 0 && l != leader
    });
    let new_leader = c.leader("fo", 0);
    let mut client = c.client(new_leader);
    // Until the new leader has taken the partition, it answers NOT_LEADER_FOR_PARTITION.
    let mut answer = |set: &[u8]| {
        let mut got = (0, -1);
        let led = poll_until(
            std::time::Duration::from_secs(30),
            std::time::Duration::from_millis(50),
            || {
                let p = client.produce_v(9, -1, "fo", 0, set);
                got = (p.error_code, p.base_offset);
                p.error_code != ErrorCode::NotLeaderForPartition.code()
            },
        );
        assert!(led, "broker {new_leader} never took the partition");
        got
    };
    assert_eq!(
        answer(&second),
        (0, 2),
        "the retry gets its original offset"
    );
    assert_eq!(answer(&first), (0, 0));
    let next = builder(&["d"]).idempotent(pid, 0, 3).finish(0).unwrap();
    assert_eq!(answer(&next), (0, 3), "and the sequence goes on");
    let msgs = decode_deep(&client.fetch("fo", 0, 0, 0).message_set).unwrap();
    let values: Vec<_> = msgs.iter().map(|m| m.value.clone().unwrap()).collect();
    assert_eq!(
        values,
        [b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]
    );
}

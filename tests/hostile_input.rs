//! Hostile input against a live broker, for every API it serves — Kafka's and the
//! coordinator's: every truncation of a valid request, seeded random mutations of it, unknown
//! versions, and random bytes. Each gets an answer or a closed connection within a deadline; a
//! connection opened before keeps being served; every message stored before stays readable.
//! (Sizes ≤ 0 or above `socket.request.max.bytes`, a frame sent one byte at a time, and more
//! connections than the cap are in `broker_core`; damaged files at start-up in `log` and below.)

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use gregor::protocol::controller::*;
use gregor::protocol::coordinator::{
    self as coord, Empty, PingRequest, RegisterRequest, StartRequest, Subscription,
};
use gregor::protocol::fetch::{FetchPartition, FetchRequest};
use gregor::protocol::group_offsets::*;
use gregor::protocol::header::RequestHeader;
use gregor::protocol::metadata::MetadataRequest;
use gregor::protocol::offsets::{ListOffsetsRequest, OffsetsPartition};
use gregor::protocol::produce::ProduceSets;
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};
use gregor::protocol::{BrokerInfo, Encode, Writer};
use gregor::protocol::{encode_body, encode_classic, header};

const TOPIC: &str = "h";
const STORED: usize = 20;

/// splitmix64, so a failing case can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A Kafka request frame: size, header v0 (v0 ControlledShutdown has no client id), body.
fn kafka_frame(key: i16, version: i16, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    let at = f.reserve_size();
    if key == 7 && version == 0 {
        f.put_i16(key);
        f.put_i16(version);
        f.put_i32(1);
    } else {
        RequestHeader {
            api_key: key,
            api_version: version,
            correlation_id: 1,
            client_id: Some("hostile"),
        }
        .encode(&mut f);
    }
    f.extend_from_slice(body);
    f.patch_size(at);
    f
}

/// A body in the one layout its API has at version 0.
fn body(e: &impl Encode) -> Vec<u8> {
    let mut b = Vec::new();
    encode_classic(e, &mut b);
    b
}

/// One valid request per (api, version) the broker serves, with whether random mutations of
/// it are sent too. Controller commands are trusted input in Kafka's design (no
/// authentication; epochs are their guard): a mutation can be a valid command that changes
/// what the broker stores, so they get truncations, versions and garbage only.
fn valid_requests(me: &BrokerInfo) -> Vec<(String, Vec<u8>, bool)> {
    let state = tps(TOPIC, 0, partition_state(me.id, 1, &[me.id], &[me.id], 1));
    let set = message_set(&[b"mutant"]);
    let mut batch = BatchBuilder::new();
    batch.push(&NewRecord {
        timestamp: 1_700_000_000_000,
        key: Some(b"k"),
        value: Some(b"mutant"),
        headers: &[("h", Some(b"v"))],
    });
    let batch = batch.finish(0).unwrap();
    let produce = |v: i16| {
        let mut b = Vec::new();
        let records = if v >= 3 { &batch[..] } else { &set[..] };
        let sets = ProduceSets {
            acks: 1,
            timeout_ms: 1000,
            topics: &[(TOPIC, vec![(0, records)])],
        };
        encode_body(&sets, &mut b, header::PRODUCE, v);
        b
    };
    let fetch = |v: i16| {
        let mut b = Vec::new();
        encode_body(
            &FetchRequest::new(
                -1,
                0,
                0,
                vec![(TOPIC.into(), vec![FetchPartition::new(0, 0, 1 << 16)])],
            ),
            &mut b,
            header::FETCH,
            v,
        );
        b
    };
    let metadata = |v: i16| {
        let mut b = Vec::new();
        encode_body(
            &MetadataRequest {
                topics: Some(vec![TOPIC.into()]),
                allow_auto_topic_creation: false,
            },
            &mut b,
            header::METADATA,
            v,
        );
        b
    };
    let list = body(&ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![(
            TOPIC.into(),
            vec![OffsetsPartition {
                partition: 0,
                time: -1,
                max_num_offsets: 2,
                current_leader_epoch: -1,
            }],
        )],
    });
    let commit = |v: i16| {
        let mut b = Vec::new();
        encode_body(
            &OffsetCommitRequest {
                group_id: "hg".into(),
                generation_id: -1,
                member_id: String::new(),
                group_instance_id: None,
                retention_time_ms: -1,
                topics: vec![(
                    TOPIC.into(),
                    vec![CommitPartition {
                        partition: 0,
                        offset: 3,
                        timestamp: -1,
                        leader_epoch: -1,
                        metadata: Some("m".into()),
                    }],
                )],
            },
            &mut b,
            header::OFFSET_COMMIT,
            v,
        );
        b
    };
    let offset_fetch = |v: i16| {
        let mut b = Vec::new();
        encode_body(
            &OffsetFetchRequest {
                group_id: "hg".into(),
                topics: Some(vec![(TOPIC.into(), vec![0])]),
                require_stable: false,
            },
            &mut b,
            header::OFFSET_FETCH,
            v,
        );
        b
    };
    let register = RegisterRequest {
        group_id: "hg".into(),
        consumer_id: "hostile".into(),
        auto_commit: true,
        auto_offset_reset: "smallest".into(),
        ping_interval_ms: 1000,
        max_ping_retries: 1,
        subscription: Subscription::Static([(TOPIC.to_owned(), 1)].into()),
    };
    let mut v: Vec<(String, Vec<u8>, bool)> = vec![
        ("Produce v0".into(), kafka_frame(0, 0, &produce(0)), true),
        ("Produce v3".into(), kafka_frame(0, 3, &produce(3)), true),
        ("Produce v9".into(), kafka_frame(0, 9, &produce(9)), true),
        ("Fetch v0".into(), kafka_frame(1, 0, &fetch(0)), true),
        ("Fetch v4".into(), kafka_frame(1, 4, &fetch(4)), true),
        ("Fetch v12".into(), kafka_frame(1, 12, &fetch(12)), true),
        ("ListOffsets v0".into(), kafka_frame(2, 0, &list), true),
        (
            "ListOffsets v7".into(),
            kafka_frame(2, 7, &{
                let mut b = Vec::new();
                encode_body(
                    &ListOffsetsRequest {
                        replica_id: -1,
                        isolation_level: 0,
                        topics: vec![(
                            TOPIC.into(),
                            vec![OffsetsPartition {
                                partition: 0,
                                time: 1_600_000_000_000,
                                max_num_offsets: 1,
                                current_leader_epoch: -1,
                            }],
                        )],
                    },
                    &mut b,
                    header::LIST_OFFSETS,
                    7,
                );
                b
            }),
            true,
        ),
        ("Metadata v1".into(), kafka_frame(3, 1, &metadata(1)), true),
        ("Metadata v9".into(), kafka_frame(3, 9, &metadata(9)), true),
        (
            "Metadata v12".into(),
            kafka_frame(3, 12, &metadata(12)),
            true,
        ),
        (
            "ApiVersions v3".into(),
            kafka_frame(18, 3, &[5, b'j', b'a', b'v', b'a', 2, b'4', 0]),
            true,
        ),
        ("Metadata v0".into(), kafka_frame(3, 0, &metadata(0)), true),
        (
            "LeaderAndIsr v0".into(),
            kafka_frame(
                4,
                0,
                &body(&LeaderAndIsrRequest {
                    controller_id: 0,
                    controller_epoch: 1,
                    partition_states: vec![state.clone()],
                    live_leaders: vec![me.clone()],
                    init: false,
                    broker_epoch: -1,
                }),
            ),
            false,
        ),
        (
            "StopReplica v0".into(),
            kafka_frame(
                5,
                0,
                &body(&StopReplicaRequest {
                    controller_id: 0,
                    controller_epoch: 0,
                    delete_partitions: false,
                    partitions: vec![gregor::protocol::TopicPartition::new(TOPIC, 0)],
                }),
            ),
            false,
        ),
        (
            "UpdateMetadata v3".into(),
            kafka_frame(
                6,
                3,
                &body(&UpdateMetadataRequest {
                    controller_id: 0,
                    controller_epoch: 1,
                    partition_states: vec![state],
                    live_brokers: vec![common::plaintext_endpoints(me.clone())],
                }),
            ),
            false,
        ),
        (
            "ControlledShutdown v0".into(),
            kafka_frame(7, 0, &9i32.to_be_bytes()),
            false,
        ),
        (
            "ControlledShutdown v1".into(),
            kafka_frame(7, 1, &9i32.to_be_bytes()),
            false,
        ),
        (
            "GroupCoordinator v0".into(),
            kafka_frame(10, 0, &{
                let mut b = Vec::new();
                b.put_string("hg");
                b
            }),
            true,
        ),
        ("Consult".into(), coord::frame(coord::CONSULT, &Empty), true),
        (
            "Register".into(),
            coord::frame(coord::REGISTER, &register),
            true,
        ),
        (
            "Ping (to a broker)".into(),
            coord::frame(coord::PING, &PingRequest { num_retries: 0 }),
            true,
        ),
        (
            "Stop (to a broker)".into(),
            coord::frame(coord::STOP, &Empty),
            true,
        ),
        (
            "Start (to a broker)".into(),
            coord::frame(coord::START, &StartRequest { assigned: vec![] }),
            true,
        ),
    ];
    v.extend(group_api_requests(&commit, &offset_fetch));
    for ver in served(18) {
        v.push((
            format!("ApiVersions v{ver}"),
            kafka_frame(18, ver, &[]),
            true,
        ));
    }
    v
}

/// Every group and offset API at every version served. JoinGroup at v0–v3 adds a member and
/// waits for the join (so its mutations are only checked to leave the broker serving); v4+
/// answers MEMBER_ID_REQUIRED at once.
fn group_api_requests(
    commit: &dyn Fn(i16) -> Vec<u8>,
    offset_fetch: &dyn Fn(i16) -> Vec<u8>,
) -> Vec<(String, Vec<u8>, bool)> {
    use gregor::protocol::group_admin::DescribeGroupsRequest as KafkaDescribe;
    use gregor::protocol::group_membership::*;
    let mut v = Vec::new();
    let mut add = |name: String, key: i16, ver: i16, body: Vec<u8>| {
        v.push((name, kafka_frame(key, ver, &body), true));
    };
    let member = GenerationMember {
        group_id: "hg".into(),
        generation_id: 1,
        member_id: "m".into(),
        group_instance_id: None,
    };
    for ver in served(8) {
        add(format!("OffsetCommit v{ver}"), 8, ver, commit(ver));
    }
    for ver in served(9) {
        add(format!("OffsetFetch v{ver}"), 9, ver, offset_fetch(ver));
    }
    for ver in served(10) {
        let mut b = Vec::new();
        encode_body(
            &FindCoordinatorRequest::one("hg", 0),
            &mut b,
            header::FIND_COORDINATOR,
            ver,
        );
        add(format!("FindCoordinator v{ver}"), 10, ver, b);
    }
    for ver in served(16) {
        let mut b = Vec::new();
        encode_body(
            &gregor::protocol::group_admin::ListGroupsRequest {
                states: Some(vec!["Stable".into()]),
                types: Some(vec!["classic".into()]),
            },
            &mut b,
            header::LIST_GROUPS,
            ver,
        );
        add(format!("ListGroups v{ver}"), 16, ver, b);
    }
    for ver in served(11).filter(|v| *v >= 4) {
        let mut b = Vec::new();
        encode_body(
            &JoinGroupRequest {
                group_id: "hg".into(),
                session_timeout_ms: 10_000,
                rebalance_timeout_ms: 10_000,
                member_id: String::new(),
                group_instance_id: None,
                protocol_type: "consumer".into(),
                protocols: vec![JoinProtocol {
                    name: "range".into(),
                    metadata: vec![0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
                }],
                reason: (ver >= 8).then(|| "hostile".into()),
            },
            &mut b,
            header::JOIN_GROUP,
            ver,
        );
        add(format!("JoinGroup v{ver}"), 11, ver, b);
    }
    for ver in served(12) {
        if ver <= 4 {
            let mut b = Vec::new();
            let req = HeartbeatRequest {
                member: member.clone(),
            };
            encode_body(&req, &mut b, header::HEARTBEAT, ver);
            add(format!("Heartbeat v{ver}"), 12, ver, b);
        }
        let mut b = Vec::new();
        encode_body(
            &SyncGroupRequest {
                member: member.clone(),
                protocol_type: (ver >= 5).then(|| "consumer".into()),
                protocol_name: (ver >= 5).then(|| "range".into()),
                assignments: vec![("m".into(), vec![0, 0])],
            },
            &mut b,
            header::SYNC_GROUP,
            ver,
        );
        add(format!("SyncGroup v{ver}"), 14, ver, b);
        let mut b = Vec::new();
        encode_body(
            &LeaveGroupRequest {
                group_id: "hg".into(),
                members: vec![LeavingMember {
                    member_id: "m".into(),
                    group_instance_id: None,
                    reason: None,
                }],
            },
            &mut b,
            header::LEAVE_GROUP,
            ver,
        );
        add(format!("LeaveGroup v{ver}"), 13, ver, b);
    }
    for ver in served(15) {
        let mut b = Vec::new();
        encode_body(
            &KafkaDescribe {
                groups: vec!["hg".into(), "none".into()],
            },
            &mut b,
            header::DESCRIBE_GROUPS,
            ver,
        );
        add(format!("DescribeGroups v{ver}"), 15, ver, b);
    }
    for ver in served(42) {
        let mut b = Vec::new();
        let req = gregor::protocol::group_admin::DeleteGroupsRequest {
            groups: vec!["nope".into()],
        };
        encode_body(&req, &mut b, header::DELETE_GROUPS, ver);
        add(format!("DeleteGroups v{ver}"), 42, ver, b);
    }
    v
}

/// The frame with its body cut to `n` bytes and the size fixed to match.
fn truncated(frame: &[u8], n: usize) -> Vec<u8> {
    let mut f = ((n as i32).to_be_bytes()).to_vec();
    f.extend_from_slice(&frame[4..4 + n]);
    f
}

/// Sends `frame` on a new connection; true when the broker answered something or closed the
/// connection within `limit`.
fn answered_or_closed(addr: SocketAddr, frame: &[u8], limit: Duration) -> bool {
    answered_or_closed_or_waiting(addr, frame, limit).is_some()
}

/// `Some` when the broker answered or closed the connection within `limit`; `None` when the
/// request is still waiting then (the open connection is returned to the caller to drop).
fn answered_or_closed_or_waiting(addr: SocketAddr, frame: &[u8], limit: Duration) -> Option<()> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    if s.write_all(frame).is_err() {
        return Some(()); // already closed on us
    }
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        // An answer (any bytes), or the broker closed the connection (none).
        Ok(0) | Ok(_) => Some(()),
        Err(e) => (!matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ))
        .then_some(()),
    }
}

/// The broker still serves an old connection, and every stored message is there unchanged.
fn still_intact(c: &mut Client, what: &str) {
    let f = c.fetch(TOPIC, 0, 0, 0);
    let vals = values(&f.message_set);
    assert!(
        vals.len() >= STORED,
        "{what}: only {} messages left",
        vals.len()
    );
    for (i, (off, v)) in vals.iter().take(STORED).enumerate() {
        assert_eq!(
            (*off, v.as_slice()),
            (i as i64, format!("stored-{i}").as_bytes()),
            "{what}"
        );
    }
}

#[test]
fn every_api_survives_truncation_mutation_versions_and_garbage() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("hostile"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[("socket.request.max.bytes", "100000")]);
    let mut c = b.client();
    let id = b.broker.id();
    let states = vec![tps(TOPIC, 0, partition_state(id, 1, &[id], &[id], 1))];
    assert_eq!(
        c.leader_and_isr(1, states.clone(), vec![b.info()], false)
            .error_code,
        0
    );
    assert_eq!(c.update_metadata(1, states, vec![b.info()]), 0);
    for i in 0..STORED {
        let v = format!("stored-{i}");
        assert_eq!(c.produce(1, TOPIC, 0, &[v.as_bytes()]).0, 0);
    }
    let addr = b.addr();
    let limit = Duration::from_secs(10);
    let mut rng = Rng(0x5eed);
    let started = Instant::now();
    let mut cases = 0;
    for (name, frame, mutate) in valid_requests(&b.info()) {
        assert!(
            answered_or_closed(addr, &frame, limit),
            "{name}: the valid request"
        );
        let body_len = frame.len() - 4;
        for n in 0..body_len {
            assert!(
                answered_or_closed(addr, &truncated(&frame, n), limit),
                "{name} cut to {n} bytes: neither answered nor closed"
            );
            cases += 1;
        }
        if mutate {
            for round in 0..60 {
                let mut f = frame.clone();
                let flips = 1 + (rng.next() % 4) as usize;
                for _ in 0..flips {
                    let at = 4 + (rng.next() as usize % body_len);
                    f[at] = rng.next() as u8;
                }
                // A mutated Fetch or JoinGroup may legitimately ask to wait (max_wait_ms, a
                // rebalance timeout): then the broker must still serve everyone else.
                let waits = name.starts_with("Fetch") || name.starts_with("JoinGroup");
                if answered_or_closed_or_waiting(addr, &f, limit).is_none() {
                    assert!(
                        waits,
                        "{name}, mutation {round} (seed 0x5eed): neither answered nor closed: {f:?}"
                    );
                    still_intact(&mut c, &format!("{name}, mutation {round}, still waiting"));
                }
                cases += 1;
            }
        }
        still_intact(&mut c, &name);
    }
    // Unknown versions of every Kafka api, and unknown keys.
    for key in [
        0i16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 42, 999, -1,
    ] {
        let f = kafka_frame(key, 77, &[0, 0, 0, 0]);
        assert!(answered_or_closed(addr, &f, limit), "api {key} v77");
        cases += 1;
    }
    // Every api and version the API table serves, with a body too short to be any request:
    // each goes through the dispatcher to its decoder, which refuses it (a table row the
    // dispatcher had no handler for would end the serving thread: `still_intact` below).
    for api in gregor::protocol::header::SUPPORTED_APIS {
        for v in api.min..=api.max {
            let f = kafka_frame(api.key, v, &[0xff, 0x00, 0x7f]);
            assert!(answered_or_closed(addr, &f, limit), "{} v{v}", api.name);
            cases += 1;
        }
    }
    // Random bytes in well-sized frames, including ones that start like a coordinator request.
    for i in 0..300 {
        let n = 1 + (rng.next() % 200) as usize;
        let mut f = (n as i32).to_be_bytes().to_vec();
        f.extend((0..n).map(|_| rng.next() as u8));
        if i % 3 == 0 && n >= 2 {
            f[4..6].copy_from_slice(&(1000 + (i % 6) as i16).to_be_bytes());
        }
        assert!(
            answered_or_closed(addr, &f, limit),
            "random frame {i} (seed 0x5eed): {f:?}"
        );
        cases += 1;
    }
    still_intact(&mut c, "after everything");
    eprintln!("hostile input: {cases} cases in {:?}", started.elapsed());
}

/// A damaged high-watermark checkpoint does not stop a broker: it starts, says what it
/// ignored, and keeps every message (the high watermark restarts from zero and is re-learnt).
#[test]
fn a_bad_checkpoint_file_is_ignored_and_the_data_kept() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("badckpt"));
    let _controller = FakeController::claim(&zk);
    let mut b = TestBroker::start(1, &zk, &[]);
    // Assigned in ZooKeeper, or start-up would delete it as no longer this broker's.
    let zkc = gregor::zk::ZkClient::connect(&zk, Duration::from_secs(10)).unwrap();
    gregor::zk::admin::create_topic(&zkc, TOPIC, 0, 0, Some("1")).unwrap();
    let mut c = b.client();
    let id = b.broker.id();
    let states = vec![tps(TOPIC, 0, partition_state(id, 1, &[id], &[id], 1))];
    c.leader_and_isr(1, states.clone(), vec![b.info()], false);
    for i in 0..STORED {
        let r = c.produce(1, TOPIC, 0, &[format!("stored-{i}").as_bytes()]);
        assert_eq!(r.0, 0);
    }
    let dir = b.take_dir().unwrap();
    drop(c);
    drop(b);
    std::fs::write(
        dir.path().join("replication-offset-checkpoint"),
        "0\nbanana\n",
    )
    .unwrap();
    let b = TestBroker::start_in(1, &zk, dir.path(), &[]);
    let mut c = b.client();
    c.leader_and_isr(2, states, vec![b.info()], false);
    wait_until(
        Duration::from_secs(10),
        "the high watermark to be re-learnt",
        || c.fetch(TOPIC, 0, 0, 0).high_watermark == STORED as i64,
    );
    still_intact(&mut c, "after a bad checkpoint");
}

/// The versions of `key` gregor serves, from its API table.
fn served(key: i16) -> std::ops::RangeInclusive<i16> {
    let api = gregor::protocol::header::SUPPORTED_APIS
        .iter()
        .find(|a| a.key == key)
        .expect("a served api");
    api.min..=api.max
}

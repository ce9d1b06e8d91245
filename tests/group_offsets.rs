//! OffsetCommit, OffsetFetch and GroupCoordinator against a real cluster: raw protocol (v0 and
//! v1, every error case) and kafka-python committing and resuming with a group id.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{Client, run_with_deadline, wait_until};
use gregor::protocol::ErrorCode;
use gregor::protocol::group_offsets::*;
use gregor::zk::paths;

fn commit(
    c: &mut Client,
    version: i16,
    group: &str,
    topic: &str,
    p: i32,
    offset: i64,
    metadata: &str,
) -> i16 {
    let req = OffsetCommitRequest {
        group_id: group.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            topic.into(),
            vec![CommitPartition {
                partition: p,
                offset,
                timestamp: -1,
                leader_epoch: -1,
                metadata: Some(metadata.into()),
            }],
        )],
    };
    c.chan
        .send::<OffsetCommitResponse>(8, version, &req)
        .unwrap()
        .topics[0]
        .1[0]
        .1
}

fn fetch(c: &mut Client, version: i16, group: &str, topic: &str, p: i32) -> (i64, i16) {
    let req = OffsetFetchRequest {
        group_id: group.into(),
        topics: Some(vec![(topic.into(), vec![p])]),
        require_stable: false,
    };
    let r = c
        .chan
        .send::<OffsetFetchResponse>(9, version, &req)
        .unwrap();
    let x = &r.topics[0].1[0];
    (x.offset, x.error_code)
}

#[test]
fn offsets_are_committed_and_fetched_in_zookeeper() {
    let c = Cluster::start("offsets", 2, &[("auto.create.topics.enable", "false")]);
    c.create_topic("t", 2, 2);
    let mut client = c.client(2);
    wait_until(
        Duration::from_secs(30),
        "broker 2 to know the topic",
        || client.metadata(&["t"]).topics[0].error_code == 0,
    );
    // GroupCoordinator (FindCoordinator v0) names the elected coordinator, from any broker.
    let elected = || {
        paths::read_json::<paths::ElectedBroker>(&c.zk, paths::COORDINATOR)
            .unwrap()
            .map(|e| e.brokerid)
    };
    wait_until(Duration::from_secs(30), "a coordinator", || {
        elected().is_some()
    });
    for asked in [1, 2] {
        let req = FindCoordinatorRequest::one("g", 0);
        let gc: FindCoordinatorResponse = c.client(asked).chan.send(10, 0, &req).unwrap();
        let gc = &gc.coordinators[0];
        let id = elected().unwrap();
        assert_eq!(
            (gc.error_code, gc.node_id, gc.port),
            (0, id, i32::from(c.brokers[&id].port))
        );
    }
    // Nothing committed yet: v0 says 3, v1 says no error; both offset -1.
    assert_eq!(
        fetch(&mut client, 0, "g", "t", 0),
        (-1, ErrorCode::UnknownTopicOrPartition.code())
    );
    assert_eq!(fetch(&mut client, 1, "g", "t", 0), (-1, 0));
    assert_eq!(commit(&mut client, 0, "g", "t", 0, 17, ""), 0);
    assert_eq!(commit(&mut client, 1, "g", "t", 1, 99, "meta"), 0);
    assert_eq!(fetch(&mut client, 0, "g", "t", 0), (17, 0));
    assert_eq!(fetch(&mut client, 1, "g", "t", 1), (99, 0));
    // Another broker reads the same offsets: they live in ZooKeeper.
    assert_eq!(fetch(&mut c.client(1), 1, "g", "t", 1), (99, 0));
    assert_eq!(
        paths::committed_offset(&c.zk, "g", "t", 0).unwrap(),
        Some(17)
    );
    // A later commit replaces the offset.
    assert_eq!(commit(&mut client, 1, "g", "t", 0, 18, ""), 0);
    assert_eq!(fetch(&mut client, 1, "g", "t", 0), (18, 0));
    // Errors: unknown partition, metadata too large, a group id that is not a path segment.
    assert_eq!(
        commit(&mut client, 1, "g", "nope", 0, 1, ""),
        ErrorCode::UnknownTopicOrPartition.code()
    );
    assert_eq!(
        fetch(&mut client, 1, "g", "t", 7),
        (-1, ErrorCode::UnknownTopicOrPartition.code())
    );
    assert_eq!(
        commit(&mut client, 1, "g", "t", 0, 1, &"m".repeat(5000)),
        ErrorCode::OffsetMetadataTooLarge.code()
    );
    assert_eq!(
        commit(&mut client, 0, "a/b", "t", 0, 1, ""),
        ErrorCode::InvalidGroupId.code()
    );
    assert_eq!(
        fetch(&mut client, 0, "", "t", 0).1,
        ErrorCode::InvalidGroupId.code()
    );
    assert_eq!(
        fetch(&mut client, 1, "g", "t", 0),
        (18, 0),
        "refused commits changed nothing"
    );
}

#[test]
fn kafka_python_commits_and_resumes_with_a_group_id() {
    let c = Cluster::start("py-offsets", 2, &[]);
    c.create_topic("pyo", 1, 2);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/kafka_python_offsets.py"
    );
    let bootstrap = format!("127.0.0.1:{}", c.brokers[&1].port);
    let (ok, out, err) = run_with_deadline(
        common::python().args([script, &bootstrap, "pyo"]),
        "",
        Duration::from_secs(120),
    );
    assert!(ok, "kafka-python failed:\n{out}\n{err}");
    assert_eq!(out.trim(), "ok");
}

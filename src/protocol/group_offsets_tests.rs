//! Tests of `group_offsets`: every version round-trips, and layouts match the published
//! schemas byte for byte.

use super::*;
use crate::protocol::header::{FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH};
use crate::protocol::{decode_body, encode_body, round_trip_at};

#[test]
fn commit_requests_round_trip_at_every_version() {
    for v in 0..=8 {
        let req = OffsetCommitRequest {
            group_id: "g".into(),
            generation_id: if v >= 1 { 3 } else { -1 },
            member_id: if v >= 1 { "m-1".into() } else { String::new() },
            group_instance_id: (v >= 7).then(|| "i".into()),
            retention_time_ms: if (2..=4).contains(&v) { 1000 } else { -1 },
            topics: vec![(
                "t".into(),
                vec![CommitPartition {
                    partition: 1,
                    offset: 42,
                    timestamp: -1,
                    leader_epoch: if v >= 6 { 5 } else { -1 },
                    metadata: Some("m".into()),
                }],
            )],
        };
        round_trip_at(&req, OFFSET_COMMIT, v);
        let resp = OffsetCommitResponse {
            topics: vec![("t".into(), vec![(0, 22)])],
        };
        round_trip_at(&resp, OFFSET_COMMIT, v);
    }
}

#[test]
fn a_v3_commit_is_kafkas_layout() {
    let req = OffsetCommitRequest {
        group_id: "g".into(),
        generation_id: 2,
        member_id: "m".into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![CommitPartition {
                partition: 0,
                offset: 7,
                timestamp: -1,
                leader_epoch: -1,
                metadata: None,
            }],
        )],
    };
    let mut b = Vec::new();
    encode_body(&req, &mut b, OFFSET_COMMIT, 3);
    #[rustfmt::skip]
    let want = [
        0, 1, b'g', 0, 0, 0, 2, 0, 1, b'm',
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // retention_time_ms -1
        0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, // offset 7, null metadata
    ];
    assert_eq!(b, want);
}

#[test]
fn fetch_round_trips_and_null_topics_mean_all() {
    for v in 0..=7 {
        let req = OffsetFetchRequest {
            group_id: "g".into(),
            topics: Some(vec![("t".into(), vec![0, 1])]),
            require_stable: false,
        };
        round_trip_at(&req, OFFSET_FETCH, v);
        let resp = OffsetFetchResponse {
            topics: vec![(
                "t".into(),
                vec![FetchedOffset {
                    partition: 0,
                    offset: 9,
                    leader_epoch: if v >= 5 { 2 } else { -1 },
                    metadata: "x".into(),
                    error_code: 0,
                }],
            )],
            error_code: if v >= 2 { 16 } else { 0 },
        };
        round_trip_at(&resp, OFFSET_FETCH, v);
    }
    let all = OffsetFetchRequest {
        group_id: "g".into(),
        topics: None,
        require_stable: false,
    };
    round_trip_at(&all, OFFSET_FETCH, 2);
    // v1 has no null array.
    let mut b = Vec::new();
    encode_body(&all, &mut b, OFFSET_FETCH, 1);
    assert!(decode_body::<OffsetFetchRequest>(&b, OFFSET_FETCH, 1).is_err());
}

#[test]
fn find_coordinator_round_trips() {
    for v in 0..=4 {
        let req = FindCoordinatorRequest::one("g", (v >= 1).into());
        round_trip_at(&req, FIND_COORDINATOR, v);
        let resp = FindCoordinatorResponse {
            coordinators: vec![Coordinator {
                key: if v >= 4 { "g".into() } else { String::new() },
                error_code: 0,
                error_message: (v >= 1).then(|| "ok".into()),
                node_id: 2,
                host: "127.0.0.1".into(),
                port: 9092,
            }],
        };
        round_trip_at(&resp, FIND_COORDINATOR, v);
    }
    // v4 (KIP-699) batches keys, each answered with its own coordinator or error.
    let req = FindCoordinatorRequest {
        key_type: 1,
        keys: vec!["t1".into(), "t2".into(), "t3".into()],
    };
    round_trip_at(&req, FIND_COORDINATOR, 4);
    let resp = FindCoordinatorResponse {
        coordinators: vec![
            Coordinator::refused("t1", 15, "none yet".into()),
            Coordinator {
                key: "t2".into(),
                error_code: 0,
                error_message: None,
                node_id: 1,
                host: "h".into(),
                port: 1,
            },
        ],
    };
    round_trip_at(&resp, FIND_COORDINATOR, 4);
}

/// FindCoordinator v4 as its schema lays it out: key type, then a compact array of keys; the
/// answer per key in schema order (key, node, host, port, error, message).
#[test]
fn find_coordinator_v4_matches_the_schema_byte_for_byte() {
    let mut b = Vec::new();
    encode_body(
        &FindCoordinatorRequest {
            key_type: 0,
            keys: vec!["ab".into()],
        },
        &mut b,
        FIND_COORDINATOR,
        4,
    );
    assert_eq!(b, [0, 2, 3, b'a', b'b', 0]);
    let mut b = Vec::new();
    let resp = FindCoordinatorResponse {
        coordinators: vec![Coordinator::refused("k", 15, "x".into())],
    };
    encode_body(&resp, &mut b, FIND_COORDINATOR, 4);
    #[rustfmt::skip]
    let want = [
        0, 0, 0, 0, // throttle_time_ms
        2, // one coordinator
        2, b'k', 255, 255, 255, 255, 1, 255, 255, 255, 255, // key, node_id, empty host, port
        0, 15, 2, b'x', 0, // error_code, error_message, tags
        0,
    ];
    assert_eq!(b, want);
}

/// OffsetCommit v8 (flexible) and OffsetFetch v7 as the schemas lay them out.
#[test]
fn flexible_commit_and_fetch_match_the_schemas_byte_for_byte() {
    let req = OffsetCommitRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: "m".into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![CommitPartition {
                partition: 0,
                offset: 7,
                timestamp: -1,
                leader_epoch: -1,
                metadata: None,
            }],
        )],
    };
    let mut b = Vec::new();
    encode_body(&req, &mut b, OFFSET_COMMIT, 8);
    #[rustfmt::skip]
    let want = [
        2, b'g', 0, 0, 0, 1, 2, b'm', 0, // group, generation, member, null instance
        2, 2, b't', 2, 0, 0, 0, 0, // one topic "t", one partition 0
        0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0, // offset 7, epoch -1, null metadata
        0, 0, 0, // partition, topic and request tags
    ];
    assert_eq!(b, want);
    let mut b = Vec::new();
    let all = OffsetFetchRequest {
        group_id: "g".into(),
        topics: None,
        require_stable: false,
    };
    encode_body(&all, &mut b, OFFSET_FETCH, 7);
    assert_eq!(
        b,
        [2, b'g', 0, 0, 0],
        "null topics, require_stable false, tags"
    );
}

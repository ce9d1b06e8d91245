//! Tests of `group_membership`: every version round-trips, and layouts match the published
//! schemas byte for byte.

use super::*;
use crate::protocol::header::{HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP};
use crate::protocol::{encode_body, round_trip_at};

#[test]
fn join_round_trips_at_every_version() {
    for v in 0..=9 {
        let req = JoinGroupRequest {
            group_id: "g".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: if v >= 1 { 30_000 } else { 10_000 },
            member_id: "".into(),
            group_instance_id: (v >= 5).then(|| "i-1".into()),
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: vec![0, 1, 2],
            }],
            reason: (v >= 8).then(|| "rebalance needed".into()),
        };
        round_trip_at(&req, JOIN_GROUP, v);
        let resp = JoinGroupResponse {
            error_code: 0,
            generation_id: 4,
            protocol_type: (v >= 7).then(|| "consumer".into()),
            protocol_name: "range".into(),
            leader: "m-1".into(),
            member_id: "m-1".into(),
            members: vec![JoinedMember {
                member_id: "m-1".into(),
                group_instance_id: (v >= 5).then(|| "i-1".into()),
                metadata: vec![9],
            }],
        };
        round_trip_at(&resp, JOIN_GROUP, v);
    }
}

#[test]
fn a_v0_join_is_kafkas_layout() {
    let req = JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 6000,
        rebalance_timeout_ms: 6000,
        member_id: "".into(),
        group_instance_id: None,
        protocol_type: "c".into(),
        protocols: vec![JoinProtocol {
            name: "r".into(),
            metadata: vec![7],
        }],
        reason: None,
    };
    let mut b = Vec::new();
    encode_body(&req, &mut b, JOIN_GROUP, 0);
    #[rustfmt::skip]
    let want = [
        0, 1, b'g', 0, 0, 0x17, 0x70, 0, 0, 0, 1, b'c',
        0, 0, 0, 1, 0, 1, b'r', 0, 0, 0, 1, 7,
    ];
    assert_eq!(b, want);
}

#[test]
fn sync_heartbeat_and_leave_round_trip() {
    for v in 0..=5 {
        let member = GenerationMember {
            group_id: "g".into(),
            generation_id: 2,
            member_id: "m".into(),
            group_instance_id: (v >= 3).then(|| "i".into()),
        };
        let heartbeat = HeartbeatRequest {
            member: member.clone(),
        };
        round_trip_at(&heartbeat, HEARTBEAT, v);
        round_trip_at(&HeartbeatResponse { error_code: 27 }, HEARTBEAT, v);
        let sync = SyncGroupRequest {
            member,
            protocol_type: (v >= 5).then(|| "consumer".into()),
            protocol_name: (v >= 5).then(|| "range".into()),
            assignments: vec![("m".into(), vec![1, 2])],
        };
        round_trip_at(&sync, SYNC_GROUP, v);
        let resp = SyncGroupResponse {
            error_code: 27,
            protocol_type: (v >= 5).then(|| "consumer".into()),
            protocol_name: None,
            assignment: vec![3],
        };
        round_trip_at(&resp, SYNC_GROUP, v);
        let leave = LeaveGroupRequest {
            group_id: "g".into(),
            members: vec![LeavingMember {
                member_id: "m".into(),
                group_instance_id: (v >= 3).then(|| "i".into()),
                reason: (v >= 5).then(|| "shutting down".into()),
            }],
        };
        round_trip_at(&leave, LEAVE_GROUP, v);
        let lr = LeaveGroupResponse {
            error_code: 0,
            members: if v >= 3 {
                let mut m = leave.members[0].clone();
                m.reason = None; // not in the response
                vec![(m, 25)]
            } else {
                Vec::new()
            },
        };
        round_trip_at(&lr, LEAVE_GROUP, v);
    }
}

/// JoinGroup v6 (the first flexible one) as the schema lays it out: compact strings and
/// arrays (length + 1), a null instance id (0), tag buffers after the protocol and the body.
#[test]
fn a_v6_join_matches_the_schema_byte_for_byte() {
    let req = JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 6000,
        rebalance_timeout_ms: 6000,
        member_id: "".into(),
        group_instance_id: None,
        protocol_type: "c".into(),
        protocols: vec![JoinProtocol {
            name: "r".into(),
            metadata: vec![7],
        }],
        reason: None,
    };
    let mut b = Vec::new();
    encode_body(&req, &mut b, JOIN_GROUP, 6);
    #[rustfmt::skip]
    let want = [
        2, b'g', 0, 0, 0x17, 0x70, 0, 0, 0x17, 0x70, 1, 0, 2, b'c',
        2, 2, b'r', 2, 7, 0, 0,
    ];
    assert_eq!(b, want);
}

/// Heartbeat v4 and its answer.
#[test]
fn a_v4_heartbeat_matches_the_schema_byte_for_byte() {
    let m = GenerationMember {
        group_id: "g".into(),
        generation_id: 3,
        member_id: "m".into(),
        group_instance_id: None,
    };
    let mut b = Vec::new();
    encode_body(&HeartbeatRequest { member: m }, &mut b, HEARTBEAT, 4);
    assert_eq!(b, [2, b'g', 0, 0, 0, 3, 2, b'm', 0, 0]);
    let mut b = Vec::new();
    encode_body(&HeartbeatResponse { error_code: 27 }, &mut b, HEARTBEAT, 4);
    assert_eq!(b, [0, 0, 0, 0, 0, 27, 0]);
}

/// SyncGroup v5's answer: throttle, error, protocol type and name (compact, nullable), the
/// assignment (compact bytes), tags.
#[test]
fn a_v5_sync_answer_matches_the_schema_byte_for_byte() {
    let resp = SyncGroupResponse {
        error_code: 0,
        protocol_type: Some("c".into()),
        protocol_name: None,
        assignment: vec![1, 2],
    };
    let mut b = Vec::new();
    encode_body(&resp, &mut b, SYNC_GROUP, 5);
    assert_eq!(b, [0, 0, 0, 0, 0, 0, 2, b'c', 0, 3, 1, 2, 0]);
}

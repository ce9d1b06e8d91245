//! Kafka's group protocol on the spec's coordinator, in raw protocol against real brokers:
//! the join/sync/heartbeat/leave cycle byte for byte, every error code a client can meet,
//! static membership, the group kept through a coordinator failover, and hostile groups.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::cluster::Cluster;
use common::{Client, wait_until};
use gregor::protocol::ErrorCode;
use gregor::protocol::coordinator::{self as coord, RegisterRequest, Subscription};
use gregor::protocol::group_admin::*;
use gregor::protocol::group_membership::*;
use gregor::protocol::group_offsets::*;
use gregor::zk::{kafka_groups, paths};

const FAST_GROUPS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.min.session.timeout.ms", "1000"),
];

fn code(e: ErrorCode) -> i16 {
    e.code()
}

/// The elected coordinator, once it is a broker that is running.
fn coordinator_of(c: &Cluster) -> i32 {
    let running: Vec<i32> = c
        .brokers
        .keys()
        .copied()
        .filter(|id| c.is_running(*id))
        .collect();
    let elected = || {
        paths::read_json::<paths::ElectedBroker>(&c.zk, paths::COORDINATOR)
            .ok()
            .flatten()
            .map(|e| e.brokerid)
            .filter(|id| running.contains(id) && c.live().contains(id))
    };
    wait_until(Duration::from_secs(30), "a coordinator", || {
        elected().is_some()
    });
    let id = elected().unwrap();
    // Elected is not yet serving: until startup has read every group, requests get
    // COORDINATOR_LOAD_IN_PROGRESS.
    wait_until(Duration::from_secs(30), "the coordinator to serve", || {
        let probe = member("probe", 1, "m", None);
        Client::try_connect(c.addr(id))
            .is_some_and(|mut cl| heartbeat(&mut cl, &probe) == code(ErrorCode::UnknownMemberId))
    });
    id
}

fn subscription(topics: &[&str]) -> Vec<u8> {
    encode_subscription(&topics.iter().map(|t| t.to_string()).collect::<Vec<_>>())
}

fn join_req(
    group: &str,
    member: &str,
    instance: Option<&str>,
    protocols: &[(&str, Vec<u8>)],
) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: member.into(),
        group_instance_id: instance.map(str::to_owned),
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|(n, m)| JoinProtocol {
                name: (*n).into(),
                metadata: m.clone(),
            })
            .collect(),
        reason: None,
    }
}

fn join(c: &mut Client, v: i16, req: &JoinGroupRequest) -> JoinGroupResponse {
    c.chan.send(11, v, req).unwrap()
}

/// A dynamic member's JoinGroup v5: MEMBER_ID_REQUIRED, then the join with the id given.
fn join_new(c: &mut Client, req: &JoinGroupRequest) -> JoinGroupResponse {
    let first = join(c, 5, req);
    assert_eq!(first.error_code, code(ErrorCode::MemberIdRequired));
    let mut again = req.clone();
    again.member_id = first.member_id;
    join(c, 5, &again)
}

/// The leader rejoins with its id; returns its JoinGroup answer and the other member's id.
fn leader_rejoins(
    c: &mut Client,
    req: &JoinGroupRequest,
    leader: &str,
) -> (JoinGroupResponse, String) {
    let mut again = req.clone();
    again.member_id = leader.to_owned();
    let j = join(c, 5, &again);
    let follower = j
        .members
        .iter()
        .find(|m| m.member_id != leader)
        .expect("a second member")
        .member_id
        .clone();
    (j, follower)
}

fn member(group: &str, generation: i32, id: &str, instance: Option<&str>) -> GenerationMember {
    GenerationMember {
        group_id: group.into(),
        generation_id: generation,
        member_id: id.into(),
        group_instance_id: instance.map(str::to_owned),
    }
}

fn heartbeat(c: &mut Client, m: &GenerationMember) -> i16 {
    let req = HeartbeatRequest { member: m.clone() };
    let r: HeartbeatResponse = c.chan.send(12, 3, &req).unwrap();
    r.error_code
}

fn sync(c: &mut Client, m: &GenerationMember, assignments: &[(&str, &[u8])]) -> SyncGroupResponse {
    let req = SyncGroupRequest {
        member: m.clone(),
        protocol_type: None,
        protocol_name: None,
        assignments: assignments
            .iter()
            .map(|(id, a)| ((*id).to_owned(), a.to_vec()))
            .collect(),
    };
    c.chan.send::<SyncGroupResponse>(14, 3, &req).unwrap()
}

fn commit(c: &mut Client, v: i16, m: &GenerationMember, offset: i64) -> i16 {
    let req = OffsetCommitRequest {
        group_id: m.group_id.clone(),
        generation_id: m.generation_id,
        member_id: m.member_id.clone(),
        group_instance_id: m.group_instance_id.clone(),
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![CommitPartition {
                partition: 0,
                offset,
                timestamp: -1,
                leader_epoch: -1,
                metadata: Some("meta".into()),
            }],
        )],
    };
    c.chan
        .send::<OffsetCommitResponse>(8, v, &req)
        .unwrap()
        .topics[0]
        .1[0]
        .1
}

fn fetch_all(c: &mut Client, group: &str) -> OffsetFetchResponse {
    let req = OffsetFetchRequest {
        group_id: group.into(),
        topics: None,
        require_stable: false,
    };
    c.chan.send::<OffsetFetchResponse>(9, 5, &req).unwrap()
}

fn leave(c: &mut Client, group: &str, ids: &[&str]) -> LeaveGroupResponse {
    let req = LeaveGroupRequest {
        group_id: group.into(),
        members: ids
            .iter()
            .map(|id| LeavingMember {
                member_id: (*id).into(),
                group_instance_id: None,
                reason: None,
            })
            .collect(),
    };
    c.chan.send::<LeaveGroupResponse>(13, 3, &req).unwrap()
}

fn describe(c: &mut Client, group: &str) -> DescribedGroup {
    let req = DescribeGroupsRequest {
        groups: vec![group.into()],
    };
    let r: DescribeGroupsResponse = c.chan.send(15, 4, &req).unwrap();
    r.groups.into_iter().next().unwrap()
}

fn delete(c: &mut Client, group: &str) -> i16 {
    let req = DeleteGroupsRequest {
        groups: vec![group.into()],
    };
    let r: DeleteGroupsResponse = c.chan.send(42, 1, &req).unwrap();
    r.results[0].1
}

#[test]
fn join_sync_heartbeat_leave_commit_and_every_error_code() {
    let c = Cluster::start("kgroups", 2, FAST_GROUPS);
    c.create_topic("t", 1, 2);
    let id = coordinator_of(&c);
    let other = if id == 1 { 2 } else { 1 };
    let mut cc = c.client(id);
    let meta = subscription(&["t"]);
    let req = join_req("g", "", None, &[("range", meta.clone())]);

    // Only the coordinator serves groups; FindCoordinator from anyone names it.
    assert_eq!(
        join(&mut c.client(other), 5, &req).error_code,
        code(ErrorCode::NotCoordinator)
    );
    let find = |key_type: i8| {
        let r = FindCoordinatorRequest::one("g", key_type);
        let found = c
            .client(other)
            .chan
            .send::<FindCoordinatorResponse>(10, 1, &r);
        found.unwrap().coordinators.remove(0)
    };
    wait_until(Duration::from_secs(20), "FindCoordinator to answer", || {
        find(0).error_code == 0
    });
    assert_eq!(find(0).node_id, id);
    // v4 (KIP-699) asks for several keys at once; each is answered under its own name.
    let batch = FindCoordinatorRequest {
        key_type: 0,
        keys: vec!["g".into(), "h".into(), String::new()],
    };
    let found: FindCoordinatorResponse = c.client(other).chan.send(10, 4, &batch).unwrap();
    let answers: Vec<_> = found
        .coordinators
        .iter()
        .map(|f| (f.key.as_str(), f.error_code, f.node_id))
        .collect();
    let invalid = code(ErrorCode::InvalidGroupId);
    assert_eq!(answers, [("g", 0, id), ("h", 0, id), ("", invalid, -1)]);
    // A transactional id's coordinator is another matter: `__transaction_state`'s leader,
    // which a cluster smaller than its replication factor (3) cannot have.
    let txn = find(1);
    assert_eq!(txn.error_code, code(ErrorCode::CoordinatorNotAvailable));
    assert!(txn.error_message.unwrap().contains("__transaction_state"));

    // Requests that cannot join.
    let mut bad = req.clone();
    bad.group_id = String::new();
    assert_eq!(
        join(&mut cc, 5, &bad).error_code,
        code(ErrorCode::InvalidGroupId)
    );
    let mut bad = req.clone();
    bad.session_timeout_ms = 100;
    assert_eq!(
        join(&mut cc, 5, &bad).error_code,
        code(ErrorCode::InvalidSessionTimeout)
    );
    let mut bad = req.clone();
    bad.protocols.clear();
    assert_eq!(
        join(&mut cc, 5, &bad).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    let mut bad = req.clone();
    bad.member_id = "nobody".into();
    assert_eq!(
        join(&mut cc, 5, &bad).error_code,
        code(ErrorCode::UnknownMemberId)
    );

    // One member: MEMBER_ID_REQUIRED, then generation 1 with itself as leader.
    let j1 = join_new(&mut cc, &req);
    assert_eq!((j1.error_code, j1.generation_id), (0, 1));
    assert_eq!(
        (j1.protocol_name.as_str(), &j1.leader),
        ("range", &j1.member_id)
    );
    assert_eq!(j1.members.len(), 1);
    assert_eq!(
        j1.members[0].metadata, meta,
        "the leader gets the member's metadata as sent"
    );
    let m1 = member("g", 1, &j1.member_id, None);
    // Before the leader's SyncGroup: heartbeats are fine, commits are not yet.
    assert_eq!(heartbeat(&mut cc, &m1), 0);
    assert_eq!(
        commit(&mut cc, 2, &m1, 5),
        code(ErrorCode::RebalanceInProgress)
    );
    assert_eq!(
        sync(&mut cc, &m1, &[(&j1.member_id, &[1, 2, 3])]).assignment,
        vec![1, 2, 3]
    );
    // Generation and member checks on Heartbeat and OffsetCommit.
    assert_eq!(
        heartbeat(&mut cc, &member("g", 0, &j1.member_id, None)),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        heartbeat(&mut cc, &member("g", 1, "x", None)),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        heartbeat(&mut cc, &member("nogroup", 1, "x", None)),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        heartbeat(&mut c.client(other), &m1),
        code(ErrorCode::NotCoordinator)
    );
    assert_eq!(commit(&mut cc, 7, &m1, 5), 0);
    assert_eq!(
        commit(&mut cc, 2, &member("g", 5, &j1.member_id, None), 6),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        commit(&mut cc, 2, &member("g", 1, "x", None), 6),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        commit(&mut cc, 1, &member("g", -1, "", None), 6),
        code(ErrorCode::UnknownMemberId),
        "a group with members takes no unmanaged commit"
    );
    assert_eq!(
        commit(&mut c.client(other), 2, &m1, 6),
        code(ErrorCode::NotCoordinator)
    );
    let f = fetch_all(&mut c.client(other), "g");
    assert_eq!(f.error_code, 0);
    assert_eq!(
        (f.topics[0].1[0].offset, f.topics[0].1[0].metadata.as_str()),
        (5, "meta")
    );

    // A member of another kind, or with no protocol in common, cannot join.
    let mut connect = req.clone();
    connect.protocol_type = "connect".into();
    assert_eq!(
        join(&mut cc, 5, &connect).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    let other_proto = join_req("g", "", None, &[("sticky", meta.clone())]);
    assert_eq!(
        join(&mut cc, 5, &other_proto).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    // ...nor can a consumer of the spec's protocol register in it.
    let mut s = TcpStream::connect(c.addr(id)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let register = RegisterRequest {
        group_id: "g".into(),
        consumer_id: "spec-1".into(),
        auto_commit: false,
        auto_offset_reset: "smallest".into(),
        ping_interval_ms: 1000,
        max_ping_retries: 1,
        subscription: Subscription::Static([("t".to_owned(), 1)].into()),
    };
    s.write_all(&coord::frame(coord::REGISTER, &register))
        .unwrap();
    let mut answer = [0u8; 6];
    s.read_exact(&mut answer).unwrap();
    assert_eq!(
        i16::from_be_bytes([answer[4], answer[5]]),
        code(ErrorCode::InconsistentGroupProtocol)
    );

    // A second member: the first learns of the rebalance from its heartbeat and rejoins; the
    // leader's SyncGroup is relayed to the follower byte for byte.
    let (j1b, j2, s2) = std::thread::scope(|scope| {
        let second = scope.spawn(|| {
            let mut c2 = c.client(id);
            let j2 = join_new(&mut c2, &req);
            let s2 = sync(
                &mut c2,
                &member("g", j2.generation_id, &j2.member_id, None),
                &[],
            );
            (j2, s2)
        });
        wait_until(
            Duration::from_secs(20),
            "the rebalance to show in a heartbeat",
            || heartbeat(&mut c.client(id), &m1) == code(ErrorCode::RebalanceInProgress),
        );
        let (j1b, follower) = leader_rejoins(&mut cc, &req, &j1.member_id);
        assert_eq!(j1b.members.len(), 2);
        let m1b = member("g", j1b.generation_id, &j1.member_id, None);
        let mine = sync(
            &mut cc,
            &m1b,
            &[(&j1.member_id, &[10]), (&follower, &[20, 21])],
        );
        assert_eq!(mine.assignment, vec![10]);
        let (j2, s2) = second.join().unwrap();
        (j1b, j2, s2)
    });
    assert_eq!((j1b.generation_id, j2.generation_id), (2, 2));
    assert!(j2.members.is_empty(), "only the leader sees the members");
    assert_eq!((s2.error_code, s2.assignment.clone()), (0, vec![20, 21]));
    let d = describe(&mut c.client(other), "g");
    assert_eq!(
        d.error_code,
        code(ErrorCode::NotCoordinator),
        "only the coordinator describes"
    );
    let d = describe(&mut cc, "g");
    assert_eq!(
        (
            d.state.as_str(),
            d.protocol_type.as_str(),
            d.protocol.as_str()
        ),
        ("Stable", "consumer", "range")
    );
    assert_eq!(d.members.len(), 2);
    assert!(
        d.members
            .iter()
            .all(|m| m.client_id == "gregor-test" && m.client_host == "/127.0.0.1")
    );
    let listed = {
        let r: ListGroupsResponse = cc.chan.send(16, 2, &ListGroupsRequest::default()).unwrap();
        (r.error_code, r.groups)
    };
    assert!(
        listed
            .1
            .iter()
            .any(|g| g.group_id == "g" && g.protocol_type == "consumer")
    );

    // LeaveGroup v3 in a batch: one error per member; the group then rebalances at once.
    let l = leave(&mut cc, "g", &[&j2.member_id, "nobody"]);
    let codes: Vec<i16> = l.members.iter().map(|(_, e)| *e).collect();
    assert_eq!(codes, vec![0, code(ErrorCode::UnknownMemberId)]);
    assert_eq!(delete(&mut cc, "g"), code(ErrorCode::NonEmptyGroup));
    assert_eq!(
        delete(&mut cc, "never-was"),
        code(ErrorCode::GroupIdNotFound)
    );
    assert_eq!(leave(&mut cc, "g", &[&j1.member_id]).members[0].1, 0);
    wait_until(Duration::from_secs(20), "the group to empty", || {
        describe(&mut c.client(id), "g").state == "Empty"
    });
    assert_eq!(
        commit(&mut cc, 1, &member("g", -1, "", None), 9),
        0,
        "an empty group takes unmanaged commits"
    );
    assert_eq!(delete(&mut cc, "g"), 0);
    assert_eq!(describe(&mut cc, "g").state, "Dead");
    assert!(
        fetch_all(&mut cc, "g").topics.is_empty(),
        "deleting a group deletes its offsets"
    );
}

#[test]
fn static_members_rejoin_without_a_rebalance_and_groups_survive_the_coordinator() {
    let c = Cluster::start("kgroups-static", 3, FAST_GROUPS);
    c.create_topic("t", 1, 3);
    let id = coordinator_of(&c);
    let mut cc = c.client(id);
    let meta = subscription(&["t"]);
    let req = join_req("s", "", Some("inst-1"), &[("range", meta)]);
    // A static member joins without the MEMBER_ID_REQUIRED round trip.
    let j = join(&mut cc, 5, &req);
    assert_eq!((j.error_code, j.generation_id), (0, 1));
    let first = member("s", 1, &j.member_id, Some("inst-1"));
    assert_eq!(
        sync(&mut cc, &first, &[(&j.member_id, &[7, 7])]).assignment,
        vec![7, 7]
    );
    // The same instance restarting: a new member id, the same generation and assignment.
    let j2 = join(&mut c.client(id), 5, &req);
    assert_eq!((j2.error_code, j2.generation_id), (0, 1));
    assert_ne!(j2.member_id, j.member_id);
    let second = member("s", 1, &j2.member_id, Some("inst-1"));
    assert_eq!(sync(&mut cc, &second, &[]).assignment, vec![7, 7]);
    assert_eq!(heartbeat(&mut cc, &second), 0, "no rebalance");
    // The old process is fenced.
    assert_eq!(
        heartbeat(&mut cc, &first),
        code(ErrorCode::FencedInstanceId)
    );
    assert_eq!(
        commit(&mut cc, 7, &first, 3),
        code(ErrorCode::FencedInstanceId)
    );
    assert_eq!(commit(&mut cc, 7, &second, 3), 0);
    let stored = kafka_groups::read(&c.zk, "s").unwrap().unwrap();
    assert_eq!((stored.generation, stored.state.as_str()), (1, "Stable"));

    // The coordinator's broker dies: the next one carries the group on, same generation.
    let mut c = c;
    c.kill9(id);
    let id2 = coordinator_of(&c);
    assert_ne!(id2, id);
    wait_until(
        Duration::from_secs(30),
        "the new coordinator to serve the member",
        || match Client::try_connect(c.addr(id2)) {
            Some(mut cl) => {
                let e = heartbeat(&mut cl, &second);
                assert!(
                    ![ErrorCode::UnknownMemberId, ErrorCode::IllegalGeneration]
                        .contains(&ErrorCode::from_code(e)),
                    "the new coordinator lost the group: {e}"
                );
                e == 0
            }
            None => false,
        },
    );
    let mut cc = c.client(id2);
    assert_eq!(sync(&mut cc, &second, &[]).assignment, vec![7, 7]);
    let f = fetch_all(&mut cc, "s");
    assert_eq!(f.topics[0].1[0].offset, 3, "committed offsets are kept");
}

#[test]
fn hostile_groups_get_error_codes_and_others_keep_being_served() {
    let c = Cluster::start(
        "kgroups-hostile",
        1,
        &[
            ("group.initial.rebalance.delay.ms", "0"),
            ("group.max.size", "1000"),
        ],
    );
    let id = coordinator_of(&c);
    let mut cc = c.client(id);
    let req = join_req("crowd", "", None, &[("range", subscription(&["t"]))]);
    // Thousands of would-be members: ids are handed out up to group.max.size, then refused.
    let mut handed = 0;
    let mut refused = 0;
    for _ in 0..2000 {
        match ErrorCode::from_code(join(&mut cc, 5, &req).error_code) {
            ErrorCode::MemberIdRequired => handed += 1,
            ErrorCode::GroupMaxSizeReached => refused += 1,
            e => panic!("unexpected {e:?} after {handed} ids"),
        }
    }
    assert_eq!((handed, refused), (1000, 1000));
    // Oversized metadata is refused, not stored.
    let big = join_req("big", "", None, &[("range", vec![0; 100 * 1024])]);
    assert_eq!(
        join(&mut cc, 5, &big).error_code,
        code(ErrorCode::InvalidRequest)
    );
    // Another group is served all the while.
    let ok = join_new(
        &mut cc,
        &join_req("calm", "", None, &[("range", subscription(&["t"]))]),
    );
    assert_eq!((ok.error_code, ok.generation_id), (0, 1));
}

/// A follower waiting in SyncGroup cannot heartbeat: a leader slower than the follower's
/// session timeout must not get it expired (Kafka keeps members awaiting sync alive), nor may
/// the follower be expired once the assignment comes, before it could heartbeat: its session
/// starts again then (CI of 5607403 saw the timer expire it in the instant between the
/// leader's SyncGroup and the follower's answer: UNKNOWN_MEMBER_ID).
#[test]
fn a_follower_waiting_for_a_slow_leader_keeps_its_place() {
    let c = Cluster::start("kgroups-slow", 1, FAST_GROUPS);
    let id = coordinator_of(&c);
    let mut req = join_req("slow", "", None, &[("range", subscription(&["t"]))]);
    req.session_timeout_ms = 1000;
    let j1 = join_new(&mut c.client(id), &req);
    let leader = member("slow", j1.generation_id, &j1.member_id, None);
    let (follower_sync, follower) = std::thread::scope(|scope| {
        let second = scope.spawn(|| {
            let mut c2 = c.client(id);
            let j2 = join_new(&mut c2, &req);
            let m2 = member("slow", j2.generation_id, &j2.member_id, None);
            (sync(&mut c2, &m2, &[]), m2)
        });
        let mut cl = c.client(id);
        wait_until(Duration::from_secs(20), "the rebalance", || {
            heartbeat(&mut cl, &leader) == code(ErrorCode::RebalanceInProgress)
        });
        let (j, follower) = leader_rejoins(&mut cl, &req, &j1.member_id);
        // The scenario itself, not a wait for a condition: the leader takes three of the
        // follower's session timeouts to assign.
        std::thread::sleep(Duration::from_millis(3000));
        let l = member("slow", j.generation_id, &j1.member_id, None);
        assert_eq!(sync(&mut cl, &l, &[(&follower, &[4, 2])]).error_code, 0);
        let (s, m2) = second.join().unwrap();
        assert_eq!(m2.member_id, follower);
        (s, m2)
    });
    let follower_id = &follower.member_id;
    assert_eq!(
        (follower_sync.error_code, follower_sync.assignment.clone()),
        (0, vec![4, 2]),
        "{follower_id}"
    );
    // The scenario again: the follower heartbeats a fifth of its session after its answer,
    // past a tick or two of the coordinator's timer.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(heartbeat(&mut c.client(id), &follower), 0, "{follower_id}");
}

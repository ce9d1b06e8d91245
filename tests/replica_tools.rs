//! Apache Kafka 4.4's replica tools against gregor: `kafka-leader-election.sh` (ElectLeaders,
//! preferred and unclean), `kafka-reassign-partitions.sh --bootstrap-server`
//! (AlterPartitionReassignments, ListPartitionReassignments) and `kafka-log-dirs.sh`
//! (DescribeLogDirs), run as an operator runs them, with what they report checked against
//! ZooKeeper and the brokers' disks.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{gregor_ok, segment_bytes, wait_until};
use gregor::protocol::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse, PREFERRED};
use gregor::protocol::header::{
    ALTER_PARTITION_REASSIGNMENTS, DESCRIBE_LOG_DIRS, ELECT_LEADERS, LIST_PARTITION_REASSIGNMENTS,
};
use gregor::protocol::log_dirs::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use gregor::protocol::reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use gregor::zk::paths;

const LEADER_ELECTION: &str = "org.apache.kafka.tools.LeaderElectionCommand";
const LOG_DIRS: &str = "org.apache.kafka.tools.LogDirsCommand";
const REASSIGN: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

/// Runs one of Kafka's tool classes against the cluster: (success, stdout, stderr).
fn tool(class: &str, c: &Cluster, args: &[&str]) -> (bool, String, String) {
    common::java::run_kafka_tool(class, &c.bootstrap(), args)
}

/// `kafka-leader-election.sh --election-type TYPE --topic T --partition P`: (success, stdout).
fn elect(c: &Cluster, election: &str, topic: &str, partition: &str) -> (bool, String) {
    let args = [
        "--election-type",
        election,
        "--topic",
        topic,
        "--partition",
        partition,
    ];
    let (ok, out, _) = tool(LEADER_ELECTION, c, &args);
    (ok, out)
}

/// A partition led by its second replica gets its preferred replica back as leader; asked
/// again, or for every partition, the tool is told nothing needed doing; a partition that
/// does not exist is an error the tool reports; a broker that is not the controller sends the
/// admin client on with NOT_CONTROLLER.
#[test]
fn kafka_leader_election_gives_leadership_back_to_the_preferred_replica() {
    let mut c = Cluster::start("tools-preferred", 2, &[]);
    c.create_topic_on("t", "1:2");
    c.terminate(1);
    c.wait_leader_serving("t", 0, |l| l == 2);
    c.restart(1);
    wait_until(Duration::from_secs(60), "broker 1 back in the ISR", || {
        c.state("t", 0).is_some_and(|s| s.isr.contains(&1))
    });
    assert_eq!(c.leader("t", 0), 2);

    let (ok, out) = elect(&c, "PREFERRED", "t", "0");
    assert!(ok, "{out}");
    assert_eq!(
        out.trim(),
        "Successfully completed leader election (PREFERRED) for partitions t-0"
    );
    c.wait_leader_serving("t", 0, |l| l == 1);
    let (ok, out) = elect(&c, "PREFERRED", "t", "0");
    assert!(ok, "{out}");
    assert_eq!(
        out.trim(),
        "Valid replica already elected for partitions t-0"
    );
    let (ok, out, err) = tool(
        LEADER_ELECTION,
        &c,
        &["--election-type", "PREFERRED", "--all-topic-partitions"],
    );
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("Valid replica already elected for partitions t-0"),
        "{out}"
    );

    let (ok, out) = elect(&c, "PREFERRED", "nope", "0");
    assert!(!ok);
    assert!(
        out.contains("UnknownTopicOrPartitionException: nope-0 does not exist"),
        "{out}"
    );

    let other = if c.controller() == Some(1) { 2 } else { 1 };
    let req = ElectLeadersRequest {
        election_type: PREFERRED,
        topic_partitions: Some(vec![("t".into(), vec![0])]),
        timeout_ms: 10_000,
    };
    let resp: ElectLeadersResponse = c.client(other).chan.send(ELECT_LEADERS, 2, &req).unwrap();
    assert_eq!(resp.error_code, 41, "NOT_CONTROLLER from broker {other}");
}

/// A partition whose only ISR member is gone stays offline while the other replica is back
/// (unclean election is off); the preferred election refuses it (its preferred replica is not
/// live); the unclean election the operator asks for makes the returned replica its leader.
/// Broker 3 holds no replica: it keeps a controller alive while 1 and 2 are down.
#[test]
fn kafka_leader_election_unclean_elects_a_replica_outside_the_isr_when_asked() {
    let mut c = Cluster::start("tools-unclean", 3, &[]);
    c.create_topic_on("u", "1:2");
    c.terminate(2);
    wait_until(Duration::from_secs(60), "the ISR to shrink to [1]", || {
        c.state("u", 0).is_some_and(|s| s.isr == [1])
    });
    c.terminate(1);
    wait_until(Duration::from_secs(60), "u-0 to lose its leader", || {
        c.state("u", 0).is_some_and(|s| s.leader == -1)
    });
    c.restart(2);
    // The controller may hear of broker 2 a moment after it registered: until then the
    // election finds no live replica; after, it is refused for want of the preferred one.
    wait_until(
        Duration::from_secs(60),
        "the refusal that names the preferred replica",
        || {
            let (ok, out) = elect(&c, "PREFERRED", "u", "0");
            assert!(!ok, "{out}");
            out.contains("PreferredLeaderNotAvailableException")
        },
    );
    assert_eq!(
        c.state("u", 0).map(|s| s.leader),
        Some(-1),
        "no unclean election by itself"
    );

    let (ok, out) = elect(&c, "UNCLEAN", "u", "0");
    assert!(ok, "{out}");
    assert_eq!(
        out.trim(),
        "Successfully completed leader election (UNCLEAN) for partitions u-0"
    );
    c.wait_leader_serving("u", 0, |l| l == 2);
    assert_eq!(c.state("u", 0).map(|s| s.isr), Some(vec![2]));
}

/// kafka-log-dirs.sh lists each broker's data directory with the partitions of the topics asked
/// for that live there, each with its size on disk; DescribeLogDirs v4 adds the volume's size.
#[test]
fn kafka_log_dirs_describes_each_brokers_directory_and_partition_sizes() {
    let c = Cluster::start("tools-log-dirs", 2, &[]);
    c.create_topic_on("d", "1,1");
    c.create_topic_on("e", "2");
    let b = c.bootstrap();
    gregor_ok(
        &["produce", "-b", &b, "--topic", "d"],
        &"some value\n".repeat(50),
    );

    let (ok, out, err) = tool(LOG_DIRS, &c, &["--describe", "--topic-list", "d"]);
    assert!(ok, "{out}{err}");
    let json = out.lines().find(|l| l.starts_with('{')).expect(&out);
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let brokers = v["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 2, "{json}");
    for entry in brokers {
        let id = entry["broker"].as_i64().unwrap() as i32;
        let dirs = entry["logDirs"].as_array().unwrap();
        assert_eq!(dirs.len(), 1, "{json}");
        let dir = &dirs[0];
        let data = std::path::absolute(c.data_dir(id)).unwrap();
        assert_eq!(dir["logDir"], data.display().to_string());
        assert!(dir["error"].is_null(), "{json}");
        let mut listed: Vec<(String, u64)> = dir["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let name = p["partition"].as_str().unwrap().to_owned();
                (name, p["size"].as_u64().unwrap())
            })
            .collect();
        listed.sort();
        let want: Vec<(String, u64)> = if id == 1 {
            ["d-0", "d-1"]
                .iter()
                .map(|p| (p.to_string(), segment_bytes(&data.join(p))))
                .collect()
        } else {
            Vec::new()
        };
        assert_eq!(listed, want, "broker {id}: {json}");
    }
    let written: u64 = ["d-0", "d-1"]
        .iter()
        .map(|p| segment_bytes(&c.data_dir(1).join(p)))
        .sum();
    assert!(written > 50 * 10, "the produced messages are on disk");

    let resp: DescribeLogDirsResponse = c
        .client(2)
        .chan
        .send(
            DESCRIBE_LOG_DIRS,
            4,
            &DescribeLogDirsRequest { topics: None },
        )
        .unwrap();
    let dir = &resp.dirs[0];
    assert_eq!(dir.topics.len(), 1, "topic e only: {resp:?}");
    assert_eq!(dir.topics[0].0, "e");
    assert!(
        0 < dir.usable_bytes && dir.usable_bytes <= dir.total_bytes,
        "{resp:?}"
    );
}

/// A partition's move through kafka-reassign-partitions.sh, end to end: --generate proposes
/// brokers of the list given, --execute starts the move, --verify sees it complete (and clears
/// the replication throttles, none here: `replication_throttle` moves one with them), and the
/// data is on the new replicas. Then a move that cannot finish —
/// its new replica's broker cannot make the partition's directory (a file has its name) — is
/// listed with what it adds and removes, verified as in progress, and cancelled: the original
/// replicas are back and nothing is listed.
#[test]
fn kafka_reassign_partitions_moves_lists_and_cancels() {
    let c = Cluster::start("tools-reassign", 3, &[]);
    c.create_topic_on("m", "1:2");
    std::fs::write(c.data_dir(1).join("n-0"), "in the way").unwrap();
    c.create_topic_on("n", "2:3");
    let b = c.bootstrap();
    gregor_ok(&["produce", "-b", &b, "--topic", "m"], &"v\n".repeat(200));
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, json: &str| common::write_file(dir.path(), name, json);
    let topics = file("topics.json", r#"{"version":1,"topics":[{"topic":"m"}]}"#);
    let forth = file(
        "forth.json",
        r#"{"version":1,"partitions":[{"topic":"m","partition":0,"replicas":[2,3]}]}"#,
    );
    let stuck = file(
        "stuck.json",
        r#"{"version":1,"partitions":[{"topic":"n","partition":0,"replicas":[1,2]}]}"#,
    );
    let run = |args: &[&str]| {
        let (ok, out, err) = tool(REASSIGN, &c, args);
        assert!(ok, "{args:?}: {out}{err}");
        out
    };

    let out = run(&[
        "--generate",
        "--topics-to-move-json-file",
        &topics,
        "--broker-list",
        "2,3",
    ]);
    let proposal = out.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(proposal).expect(&out);
    let mut proposed: Vec<i64> = v["partitions"][0]["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_i64().unwrap())
        .collect();
    proposed.sort();
    assert_eq!(proposed, [2, 3], "{out}");

    let out = run(&["--execute", "--reassignment-json-file", &forth]);
    assert!(
        out.contains("Successfully started partition reassignment for m-0"),
        "{out}"
    );
    let verify = |f: &str| run(&["--verify", "--reassignment-json-file", f]);
    wait_until(
        Duration::from_secs(60),
        "the move to [2, 3] to complete",
        || verify(&forth).contains("Reassignment of partition m-0 is completed."),
    );
    let node = paths::topic_replicas(&c.zk, "m").unwrap().unwrap();
    assert_eq!(node.assignment[&0], [2, 3]);
    assert!(node.moving.is_empty(), "{node:?}");
    let leader = c.wait_leader_serving("m", 0, |l| l == 2 || l == 3);
    let read = gregor_ok(&["consume", "-b", &b, "--topic", "m", "--exit-at-end"], "");
    assert_eq!(read.lines().count(), 200, "from leader {leader}");

    let out = run(&["--execute", "--reassignment-json-file", &stuck]);
    assert!(
        out.contains("Successfully started partition reassignment for n-0"),
        "{out}"
    );
    let out = run(&["--list"]);
    assert!(
        out.contains("n-0: replicas: 2,3,1. adding: 1. removing: 3."),
        "{out}"
    );
    assert!(verify(&stuck).contains("Reassignment of partition n-0 is still in progress."));
    let out = run(&["--cancel", "--reassignment-json-file", &stuck]);
    assert!(
        out.contains("Successfully cancelled partition reassignment for: n-0"),
        "{out}"
    );
    assert!(run(&["--list"]).contains("No partition reassignments found."));
    let node = paths::topic_replicas(&c.zk, "n").unwrap().unwrap();
    assert_eq!(node.assignment[&0], [2, 3]);
    assert!(node.moving.is_empty(), "{node:?}");
    assert!(
        c.state("n", 0)
            .is_some_and(|s| s.isr.iter().all(|r| [2, 3].contains(r)))
    );
    c.wait_leader_serving("n", 0, |l| l == 2 || l == 3);
}

/// AlterPartitionReassignments' refusals, each with Kafka's error: a broker that is not the
/// controller, a cancel of a partition that is not moving, a target naming a broker that is not
/// live or one broker twice, and (v1) a change of replica count the request does not allow.
#[test]
fn alter_partition_reassignments_refuses_what_kafka_refuses() {
    let c = Cluster::start("tools-reassign-refusals", 2, &[]);
    c.create_topic_on("r", "1:2");
    let ask = |broker: i32, v: i16, allow: bool, replicas: Option<Vec<i32>>| {
        let resp = alter_reassignment(&c, broker, v, allow, "r", replicas);
        let p = resp.results.first().and_then(|(_, ps)| ps.first().cloned());
        (resp.error_code, p.map(|p| (p.error_code, p.error_message)))
    };
    let controller = c.controller().unwrap();
    let other = 3 - controller;
    assert_eq!(
        ask(other, 0, true, Some(vec![2, 1])).0,
        41,
        "NOT_CONTROLLER"
    );
    let refused = |v, allow, replicas| ask(controller, v, allow, replicas).1.unwrap();
    let (code, why) = refused(0, true, None);
    assert_eq!(
        (code, why.as_deref()),
        (85, Some("r-0 is not being reassigned"))
    );
    let (code, why) = refused(0, true, Some(vec![1, 9]));
    assert_eq!((code, why.as_deref()), (39, Some("broker 9 is not live")));
    let (code, _) = refused(0, true, Some(vec![2, 2]));
    assert_eq!(code, 39);
    let (code, _) = refused(1, false, Some(vec![2]));
    assert_eq!(code, 38, "INVALID_REPLICATION_FACTOR");
    assert_eq!(c.state("r", 0).map(|s| s.leader), Some(1), "nothing moved");
    assert_eq!(
        paths::topic_assignment(&c.zk, "r").unwrap().unwrap()[&0],
        [1, 2]
    );
}

/// A move begun under one controller is still known to the next, from the topic node's
/// `adding_replicas` / `removing_replicas`: listed the same, and cancelled.
#[test]
fn a_new_controller_lists_and_cancels_a_move_its_predecessor_began() {
    let mut c = Cluster::start("tools-reassign-failover", 3, &[]);
    std::fs::write(c.data_dir(1).join("n-0"), "in the way").unwrap();
    c.create_topic_on("n", "2:3");
    let first = c.controller().unwrap();
    let alter = |c: &Cluster, broker: i32, replicas: Option<Vec<i32>>| {
        let resp = alter_reassignment(c, broker, 1, true, "n", replicas);
        assert_eq!(resp.error_code, 0, "{resp:?}");
        resp.results[0].1[0].error_code
    };
    assert_eq!(alter(&c, first, Some(vec![1, 2])), 0);
    let listed = |c: &Cluster, broker: i32| {
        let req = ListPartitionReassignmentsRequest {
            timeout_ms: 10_000,
            topics: None,
        };
        c.client(broker)
            .chan
            .send::<ListPartitionReassignmentsResponse>(LIST_PARTITION_REASSIGNMENTS, 0, &req)
            .unwrap()
    };
    let moving = |r: &ListPartitionReassignmentsResponse| {
        r.topics
            .iter()
            .flat_map(|(t, ps)| {
                ps.iter()
                    .map(move |p| (t.clone(), p.adding.clone(), p.removing.clone()))
            })
            .collect::<Vec<_>>()
    };
    let want = vec![("n".to_owned(), vec![1], vec![3])];
    assert_eq!(moving(&listed(&c, first)), want);

    c.terminate(first);
    let mut next = -1;
    wait_until(Duration::from_secs(60), "another controller", || {
        next = c.controller().unwrap_or(first);
        next != first
    });
    wait_until(
        Duration::from_secs(30),
        "the new controller to list the move",
        || {
            let r = listed(&c, next);
            r.error_code == 0 && moving(&r) == want
        },
    );
    assert_eq!(alter(&c, next, None), 0, "cancelled");
    assert!(moving(&listed(&c, next)).is_empty());
    let node = paths::topic_replicas(&c.zk, "n").unwrap().unwrap();
    assert_eq!(node.assignment[&0], [2, 3]);
    assert!(node.moving.is_empty(), "{node:?}");
}

/// A cancel that cannot put the original replicas back — the only one is down — is refused
/// and leaves the move going (still pending, still listed); once it is back, the cancel works.
#[test]
fn a_cancel_that_cannot_restore_the_original_replicas_leaves_the_move_going() {
    let mut c = Cluster::start("tools-reassign-cancel-refused", 3, &[]);
    std::fs::write(c.data_dir(1).join("n-0"), "in the way").unwrap();
    c.create_topic_on("n", "2");
    let alter = |c: &Cluster, replicas: Option<Vec<i32>>| {
        let controller = c.controller().unwrap();
        alter_reassignment(c, controller, 1, true, "n", replicas).results[0].1[0].clone()
    };
    assert_eq!(alter(&c, Some(vec![1])).error_code, 0);
    c.terminate(2);
    wait_until(Duration::from_secs(60), "n-0 offline", || {
        c.state("n", 0).is_some_and(|s| s.leader == -1)
    });
    let refused = alter(&c, None);
    assert_eq!(refused.error_code, 39, "{refused:?}");
    let pending = |c: &Cluster| {
        let node =
            paths::read_json::<paths::ReassignmentRequest>(&c.zk, paths::REASSIGN_PARTITIONS);
        node.unwrap()
            .is_some_and(|r| r.partitions.iter().any(|p| p.topic == "n"))
    };
    assert!(pending(&c), "the move is still pending");
    let node = paths::topic_replicas(&c.zk, "n").unwrap().unwrap();
    assert_eq!(node.moving[&0].adding, [1], "{node:?}");

    c.restart(2);
    wait_until(
        Duration::from_secs(60),
        "the cancel once broker 2 is back",
        || alter(&c, None).error_code == 0,
    );
    assert!(!pending(&c));
    let node = paths::topic_replicas(&c.zk, "n").unwrap().unwrap();
    assert_eq!(node.assignment[&0], [2]);
    assert!(node.moving.is_empty(), "{node:?}");
    c.wait_leader_serving("n", 0, |l| l == 2);
}

/// AlterPartitionReassignments of partition 0 of `topic` (`None`: cancel its move), sent to
/// `broker` at `version`.
fn alter_reassignment(
    c: &Cluster,
    broker: i32,
    version: i16,
    allow_replication_factor_change: bool,
    topic: &str,
    replicas: Option<Vec<i32>>,
) -> AlterPartitionReassignmentsResponse {
    let req = AlterPartitionReassignmentsRequest {
        timeout_ms: 10_000,
        allow_replication_factor_change,
        topics: vec![(topic.into(), vec![(0, replicas)])],
    };
    c.client(broker)
        .chan
        .send(ALTER_PARTITION_REASSIGNMENTS, version, &req)
        .unwrap()
}

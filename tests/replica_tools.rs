//! Apache Kafka 4.4's replica tools against gregor: `kafka-leader-election.sh` (ElectLeaders,
//! preferred and unclean) and `kafka-log-dirs.sh` (DescribeLogDirs), run as an operator runs
//! them, with what they report checked against ZooKeeper and the brokers' disks.

mod common;

use std::path::Path;
use std::time::Duration;

use common::cluster::Cluster;
use common::{gregor_ok, wait_until};
use gregor::protocol::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse, PREFERRED};
use gregor::protocol::header::{DESCRIBE_LOG_DIRS, ELECT_LEADERS};
use gregor::protocol::log_dirs::{DescribeLogDirsRequest, DescribeLogDirsResponse};

const LEADER_ELECTION: &str = "org.apache.kafka.tools.LeaderElectionCommand";
const LOG_DIRS: &str = "org.apache.kafka.tools.LogDirsCommand";

/// Runs one of Kafka's tool classes against the cluster: (success, stdout, stderr).
fn tool(class: &str, c: &Cluster, args: &[&str]) -> (bool, String, String) {
    let mut cmd = common::java::kafka_tool(class);
    cmd.args(["--bootstrap-server", &c.bootstrap()]).args(args);
    common::run_with_deadline(&mut cmd, "", Duration::from_secs(120))
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

/// The bytes of a partition's segment files (`*.log`).
fn segment_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

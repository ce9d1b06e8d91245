//! Real Kafka clients consuming in groups served by the spec's coordinator: librdkafka
//! (confluent-kafka) and kafka-python 3.0.12, each member a process of its own
//! (`tests/clients/group_member.py`) that the test starts, stops, and kills with -9.
//! Every test asserts what a group's user relies on: the partitions are covered, once each;
//! every message produced is consumed; commits hold across restarts and coordinator failover.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::cluster::Cluster;
use common::{die_with_parent, kcat, wait_until};
use gregor::zk::{kafka_groups, paths};
use parking_lot::Mutex;

const BROKER: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.min.session.timeout.ms", "1000"),
];
const LIMIT: Duration = Duration::from_secs(60);

/// One group member process and what it has printed so far.
struct Member {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Member {
    fn start(client: &str, c: &Cluster, group: &str, topic: &str, opts: &[&str]) -> Member {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_member.py");
        let bootstrap = c
            .brokers
            .values()
            .filter(|b| c.is_running(b.id))
            .map(|b| format!("127.0.0.1:{}", b.port))
            .collect::<Vec<_>>()
            .join(",");
        let mut cmd = common::python();
        cmd.args([script, client, &bootstrap, group, topic])
            .args(opts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("python3");
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                l.lock().push(line);
            }
        });
        Member {
            child,
            stdin,
            lines,
        }
    }

    /// Its partitions now (empty before the first rebalance).
    fn assignment(&self) -> BTreeSet<String> {
        self.lines
            .lock()
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("owns"))
            .map(|a| {
                a.trim()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Rebalance callbacks that handed it partitions.
    fn rebalances_seen(&self) -> usize {
        self.lines
            .lock()
            .iter()
            .filter(|l| l.starts_with("assigned"))
            .count()
    }

    /// The values it consumed, with their (partition, offset).
    fn consumed(&self) -> Vec<(i32, i64, String)> {
        self.lines
            .lock()
            .iter()
            .filter_map(|l| {
                let mut w = l.strip_prefix("msg ")?.splitn(3, ' ');
                Some((
                    w.next()?.parse().ok()?,
                    w.next()?.parse().ok()?,
                    w.next()?.to_owned(),
                ))
            })
            .collect()
    }

    /// Closes the consumer cleanly (LeaveGroup) and waits for the process to end.
    fn leave(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"leave\n");
        }
        let lines = self.lines.clone();
        wait_until(LIMIT, "the member to close", || {
            lines.lock().iter().any(|l| l == "closed")
        });
        let _ = self.child.wait();
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The coordinator's stored generation of `group` is Stable with `n` members whose
/// assignments (the "consumer" protocol's layout) cover `want` once each.
fn stored_cover(c: &Cluster, group: &str, n: usize, want: &BTreeSet<String>) -> bool {
    let Some(g) = kafka_groups::read(&c.zk, group).unwrap() else {
        return false;
    };
    if g.state != "Stable" || g.members.len() != n {
        return false;
    }
    let mut seen = BTreeSet::new();
    for m in &g.members {
        let bytes = kafka_groups::from_hex(&m.assignment).unwrap_or_default();
        for (t, ps) in gregor::protocol::group_admin::decode_assignment(&bytes).unwrap_or_default()
        {
            for p in ps {
                if !seen.insert(format!("{t}:{p}")) {
                    return false;
                }
            }
        }
    }
    &seen == want
}

/// The members' assignments are disjoint, none is empty, and together they cover exactly
/// `want` (a member not yet told of the latest rebalance still owns nothing or too much).
fn covers(members: &[&Member], want: &BTreeSet<String>) -> bool {
    let mut seen = BTreeSet::new();
    for m in members {
        let owned = m.assignment();
        if owned.is_empty() {
            return false;
        }
        for p in owned {
            if !seen.insert(p) {
                return false;
            }
        }
    }
    &seen == want
}

fn partitions(topic: &str, n: i32) -> BTreeSet<String> {
    (0..n).map(|p| format!("{topic}:{p}")).collect()
}

fn produce(c: &Cluster, topic: &str, values: &[String]) {
    let broker = c.brokers.values().find(|b| c.is_running(b.id)).unwrap();
    let b = format!("127.0.0.1:{}", broker.port);
    let mut input = values.join("\n");
    input.push('\n');
    kcat(&["-P", "-b", &b, "-t", topic, "-X", "acks=all"], &input);
}

fn all_consumed(members: &[&Member], values: &[String]) -> bool {
    let got: BTreeSet<String> = members
        .iter()
        .flat_map(|m| m.consumed().into_iter().map(|(_, _, v)| v))
        .collect();
    values.iter().all(|v| got.contains(v))
}

/// Three members cover six partitions; one leaves and the others take its partitions before
/// its session could have expired; one is killed -9 and its partitions move after the session
/// timeout; every message produced meanwhile is consumed.
fn cover_leave_and_kill(client: &str) {
    let c = Cluster::start(&format!("grp-{client}"), 3, BROKER);
    c.create_topic("six", 6, 2);
    c.wait_all_led("six");
    let all = partitions("six", 6);
    // A leave must act before this session timeout; a kill shows only after it.
    let opts = ["session_ms=20000", "heartbeat_ms=300"];
    let mut ms: Vec<Member> = (0..3)
        .map(|_| Member::start(client, &c, "g3", "six", &opts))
        .collect();
    wait_until(LIMIT, "three members to cover six partitions", || {
        covers(&[&ms[0], &ms[1], &ms[2]], &all) && ms.iter().all(|m| m.assignment().len() == 2)
    });
    let first: Vec<String> = (0..60).map(|i| format!("a{i}")).collect();
    produce(&c, "six", &first);
    ms[2].leave();
    // The coordinator acts on the leave at once: a generation of the two others, whose stored
    // assignments cover every partition, well before the leaver's 20 s session could expire.
    wait_until(
        Duration::from_secs(15),
        "a generation of the two left",
        || stored_cover(&c, "g3", 2, &all),
    );
    wait_until(LIMIT, "the two left to take over", || {
        covers(&[&ms[0], &ms[1]], &all)
    });
    ms[1].kill9();
    wait_until(LIMIT, "the killed member's partitions to move", || {
        stored_cover(&c, "g3", 1, &all)
    });
    wait_until(LIMIT, "the last member to get every partition", || {
        ms[0].assignment() == all
    });
    let second: Vec<String> = (0..60).map(|i| format!("b{i}")).collect();
    produce(&c, "six", &second);
    let every: Vec<String> = first.iter().chain(&second).cloned().collect();
    wait_until(LIMIT, "every message to be consumed", || {
        all_consumed(&[&ms[0], &ms[1], &ms[2]], &every)
    });
    // `gregor groups` shows the Kafka-protocol group: its kind, state and one member owning
    // all six partitions.
    let addr = format!("127.0.0.1:{}", c.brokers[&1].port);
    let (ok, out, err) = common::gregor_cli(&["groups", "--bootstrap", &addr, "--list"], "");
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["g3", "consumer", "Stable"]),
        "{out}"
    );
    let (ok, out, err) =
        common::gregor_cli(&["groups", "--bootstrap", &addr, "--describe", "g3"], "");
    assert!(ok, "{err}");
    assert!(out.contains("consumer range Stable, 1 member(s)"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("six ")).collect();
    assert_eq!(rows.len(), 6, "{out}");
    let owner = rows[0].split_whitespace().last().unwrap();
    assert!(
        rows.iter()
            .all(|r| r.split_whitespace().last() == Some(owner)),
        "{out}"
    );
    assert!(out.contains(&format!("  {owner}  client ")), "{out}");
}

#[test]
fn librdkafka_members_cover_partitions_leave_and_die() {
    cover_leave_and_kill("confluent");
}

#[test]
fn kafka_python_members_cover_partitions_leave_and_die() {
    cover_leave_and_kill("kafka-python");
}

/// A member that commits and restarts re-reads nothing it committed.
fn commit_and_restart(client: &str) {
    let c = Cluster::start(&format!("grp-commit-{client}"), 1, BROKER);
    c.create_topic("ct", 2, 1);
    c.wait_all_led("ct");
    let first: Vec<String> = (0..20).map(|i| format!("x{i}")).collect();
    produce(&c, "ct", &first);
    let mut m = Member::start(client, &c, "gc", "ct", &["commit=1"]);
    wait_until(LIMIT, "the first run to consume everything", || {
        all_consumed(&[&m], &first)
    });
    let committed = |m: &Member| {
        m.lines
            .lock()
            .iter()
            .filter(|l| l.starts_with("committed"))
            .count()
    };
    wait_until(LIMIT, "every message committed", || {
        committed(&m) >= first.len()
    });
    m.leave();
    let second: Vec<String> = (0..5).map(|i| format!("y{i}")).collect();
    produce(&c, "ct", &second);
    let m2 = Member::start(client, &c, "gc", "ct", &["commit=1"]);
    wait_until(LIMIT, "the second run to consume the new messages", || {
        all_consumed(&[&m2], &second)
    });
    let again: Vec<String> = m2.consumed().into_iter().map(|(_, _, v)| v).collect();
    assert!(
        again.iter().all(|v| !first.contains(v)),
        "re-read committed messages: {again:?}"
    );
}

#[test]
fn librdkafka_commits_and_restarts_without_rereading() {
    commit_and_restart("confluent");
}

#[test]
fn kafka_python_commits_and_restarts_without_rereading() {
    commit_and_restart("kafka-python");
}

/// The coordinator's broker is killed -9 while a group consumes: the group goes on at the new
/// coordinator, everything produced is consumed, and committed offsets are kept.
fn survives_the_coordinator_dying(client: &str) {
    let mut c = Cluster::start(&format!("grp-failover-{client}"), 3, BROKER);
    c.create_topic("ft", 4, 3);
    c.wait_all_led("ft");
    let all = partitions("ft", 4);
    let opts = ["commit=1", "session_ms=10000", "heartbeat_ms=300"];
    let a = Member::start(client, &c, "gf", "ft", &opts);
    let b = Member::start(client, &c, "gf", "ft", &opts);
    wait_until(LIMIT, "two members to cover four partitions", || {
        covers(&[&a, &b], &all)
    });
    let first: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
    produce(&c, "ft", &first);
    wait_until(LIMIT, "the first batch consumed", || {
        all_consumed(&[&a, &b], &first)
    });
    let committed_before: BTreeMap<i32, i64> = (0..4)
        .filter_map(|p| Some((p, paths::committed_offset(&c.zk, "gf", "ft", p).ok()??)))
        .collect();
    let coordinator = paths::read_json::<paths::ElectedBroker>(&c.zk, paths::COORDINATOR)
        .unwrap()
        .unwrap()
        .brokerid;
    c.kill9(coordinator);
    let second: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    produce(&c, "ft", &second);
    wait_until(LIMIT, "the second batch consumed", || {
        all_consumed(&[&a, &b], &second)
    });
    wait_until(LIMIT, "a new coordinator", || {
        paths::read_json::<paths::ElectedBroker>(&c.zk, paths::COORDINATOR)
            .ok()
            .flatten()
            .is_some_and(|e| e.brokerid != coordinator)
    });
    for (p, before) in committed_before {
        let now = paths::committed_offset(&c.zk, "gf", "ft", p)
            .unwrap()
            .unwrap();
        assert!(
            now >= before,
            "partition {p}: committed {before}, now {now}"
        );
    }
    // The members may be rejoining at the new coordinator right now (a member shows no
    // partitions between revoke and assign): what holds is that the group covers every
    // partition again, not at this instant.
    wait_until(LIMIT, "the group to cover every partition again", || {
        covers(&[&a, &b], &all)
    });
}

#[test]
fn librdkafka_group_survives_the_coordinator_dying() {
    survives_the_coordinator_dying("confluent");
}

#[test]
fn kafka_python_group_survives_the_coordinator_dying() {
    survives_the_coordinator_dying("kafka-python");
}

/// A static member restarted within its session timeout gets its partitions back in the same
/// generation, and the other member never rebalances.
#[test]
fn librdkafka_static_member_bounces_without_a_rebalance() {
    let c = Cluster::start("grp-static", 1, BROKER);
    c.create_topic("st", 4, 1);
    c.wait_all_led("st");
    let all = partitions("st", 4);
    let opts = |i: &str| ["session_ms=15000".to_owned(), format!("instance_id={i}")];
    let start = |i: &str| {
        let o = opts(i);
        let o: Vec<&str> = o.iter().map(String::as_str).collect();
        Member::start("confluent", &c, "gs", "st", &o)
    };
    let mut a = start("a");
    let b = start("b");
    wait_until(LIMIT, "two static members to cover four partitions", || {
        covers(&[&a, &b], &all)
    });
    let generation = || {
        kafka_groups::read(&c.zk, "gs")
            .unwrap()
            .map(|g| g.generation)
    };
    wait_until(LIMIT, "the generation to be stored", || {
        kafka_groups::read(&c.zk, "gs")
            .unwrap()
            .is_some_and(|g| g.state == "Stable" && g.members.len() == 2)
    });
    let before = generation();
    let a_parts = a.assignment();
    let b_rebalances = b.rebalances_seen();
    a.kill9();
    let a2 = start("a");
    wait_until(
        LIMIT,
        "the restarted member to get its partitions back",
        || a2.assignment() == a_parts,
    );
    assert_eq!(generation(), before, "no new generation");
    assert_eq!(
        b.rebalances_seen(),
        b_rebalances,
        "the other member did not rebalance"
    );
}

/// Partitions added to a subscribed topic are consumed at once: the coordinator's
/// TopicPartitionChangeListener rebalances the group, long before the client's own metadata
/// refresh (5 minutes: librdkafka's setting here, kafka-python's default) would have noticed.
fn reads_added_partitions_without_a_metadata_refresh(client: &str) {
    let c = Cluster::start(&format!("grp-grow-{client}"), 1, BROKER);
    c.create_topic("gt", 2, 1);
    c.wait_all_led("gt");
    let m = Member::start(
        client,
        &c,
        "gg",
        "gt",
        &["refresh_ms=300000", "heartbeat_ms=300"],
    );
    wait_until(LIMIT, "the member to get both partitions", || {
        m.assignment() == partitions("gt", 2)
    });
    gregor::zk::admin::add_partitions(&c.zk, "gt", 4).unwrap();
    c.wait_all_led("gt");
    wait_until(
        Duration::from_secs(30),
        "the member to get the new partitions",
        || m.assignment() == partitions("gt", 4),
    );
    let b = format!("127.0.0.1:{}", c.brokers[&1].port);
    kcat(&["-P", "-b", &b, "-t", "gt", "-p", "3"], "late\n");
    wait_until(
        LIMIT,
        "the message in a new partition to be consumed",
        || m.consumed().iter().any(|(p, _, v)| *p == 3 && v == "late"),
    );
}

#[test]
fn librdkafka_reads_added_partitions_without_a_metadata_refresh() {
    reads_added_partitions_without_a_metadata_refresh("confluent");
}

#[test]
fn kafka_python_reads_added_partitions_without_a_metadata_refresh() {
    reads_added_partitions_without_a_metadata_refresh("kafka-python");
}

/// Cooperative members (KIP-429) rebalance twice in a row when one joins: the first round
/// revokes what moves, the second hands it over. Both go through the coordinator quickly and
/// the partitions end up covered once each.
#[test]
fn librdkafka_cooperative_sticky_members_share_partitions() {
    let c = Cluster::start("grp-coop", 1, BROKER);
    c.create_topic("co", 6, 1);
    c.wait_all_led("co");
    let all = partitions("co", 6);
    let opts = ["assignor=cooperative-sticky", "heartbeat_ms=300"];
    let a = Member::start("confluent", &c, "gco", "co", &opts);
    wait_until(LIMIT, "the first member to own every partition", || {
        a.assignment() == all
    });
    let b = Member::start("confluent", &c, "gco", "co", &opts);
    wait_until(
        LIMIT,
        "two cooperative members to share six partitions",
        || covers(&[&a, &b], &all) && a.assignment().len() == 3,
    );
    let values: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    produce(&c, "co", &values);
    wait_until(LIMIT, "every message consumed", || {
        all_consumed(&[&a, &b], &values)
    });
}

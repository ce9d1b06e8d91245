//! Partitions made in the network (issue #16): hosts in their own network namespaces
//! (`scripts/hosts.sh`), ZooKeeper as a 3-node ensemble, brokers on their own addresses, and
//! the test's clients on a host of their own. One test per shape of partition, each asserting
//! what a user relies on: no acknowledged write is lost, a broker that cannot be safe stops
//! acknowledging, and after healing every replica is the same. `tests/net_harness.rs` tests
//! the hosts themselves and `scripts/cluster.sh --hosts`.
//!
//! Needs root and `ip netns`; without them each test says why it skips (and fails instead
//! with `GREGOR_REQUIRE_HOSTS=1`, which `scripts/test.sh` sets where namespaces can be made).

mod common;
#[path = "common/lab.rs"]
mod lab;
#[path = "common/lab_checks.rs"]
mod lab_checks;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gregor::protocol::ErrorCode;
use gregor::zk::admin;
use parking_lot::Mutex;

use common::{Client, poll_until, wait_until};
use lab::{Lab, try_produce};
use lab_checks::*;

/// Jepsen's 2013 case: the leader alone with its clients, cut from ZooKeeper and from its
/// followers. It must acknowledge nothing (it cannot shrink the ISR to itself without
/// ZooKeeper), the majority side elects a new leader that takes the clients' writes, and
/// after healing the old leader follows it with the same log.
#[test]
fn a_leader_alone_with_its_clients_acknowledges_nothing_and_the_majority_goes_on() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, lab)) = lab_with_topic("leader_alone", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    lab.cut(&["b1"], &["zk1", "zk2", "zk3", "b2", "b3"]);
    let answers = answers_for(&lab, 1, Duration::from_millis(SESSION_MS * 2));
    assert!(
        !answers.contains_key("0"),
        "the cut-off leader acknowledged writes: {answers:?}"
    );
    wait_until(
        Duration::from_secs(30),
        "a new leader on the majority side",
        || matches!(lab.leader_and_isr(TOPIC, 0), Some((l, _, _)) if l == 2 || l == 3),
    );
    acked.produce(&lab, "majority", 20);
    let mut lab = lab;
    heal_write_and_check(&mut lab, &mut acked);
}

/// The leader keeps ZooKeeper but loses its followers: it shrinks the ISR to itself, and with
/// min.insync.replicas=2 refuses acks=all writes (NOT_ENOUGH_REPLICAS) instead of taking them
/// alone; after healing the followers catch up and rejoin.
#[test]
fn a_leader_without_its_followers_refuses_acks_all_below_min_isr() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = lab_with_topic("leader_without_followers", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    lab.cut(&["b1"], &["b2", "b3"]);
    wait_until(
        Duration::from_secs(30),
        "the ISR shrunk to the leader",
        || matches!(lab.leader_and_isr(TOPIC, 0), Some((1, _, isr)) if isr == [1]),
    );
    let refused = poll_until(Duration::from_secs(10), Duration::from_millis(100), || {
        try_produce(
            lab.addr(1),
            -1,
            TOPIC,
            0,
            &[b"alone"],
            Duration::from_secs(3),
        )
        .is_ok_and(|(code, _)| code == ErrorCode::NotEnoughReplicas.code())
    });
    assert!(
        refused,
        "acks=all below min.insync.replicas was not refused"
    );
    let answers = answers_for(&lab, 1, Duration::from_secs(2));
    assert!(
        !answers.contains_key("0"),
        "the leader acknowledged writes alone: {answers:?}"
    );
    heal_write_and_check(&mut lab, &mut acked);
}

/// The leader cut from ZooKeeper only: it still reaches its followers and clients, so it may
/// acknowledge for a moment; but once the majority has a new leader it acknowledges nothing
/// more (it fences itself when its session is lost, and its followers have moved on), and
/// every write it did acknowledge survives.
#[test]
fn a_leader_cut_from_zookeeper_stops_acknowledging_once_another_leads() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = lab_with_topic("leader_cut_from_zookeeper", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    lab.cut(&["b1"], &["zk1", "zk2", "zk3"]);
    let cut = Instant::now();
    // Writes go on to broker 1 until it refuses one; those acknowledged must survive.
    for i in 0.. {
        let value = format!("during-{i}");
        match try_produce(
            lab.addr(1),
            -1,
            TOPIC,
            0,
            &[value.as_bytes()],
            Duration::from_secs(3),
        ) {
            Ok((0, offset)) => acked.0.push((offset, value)),
            Ok(_) => break,
            Err(e) => panic!("broker 1 stopped answering instead of refusing: {e}"),
        }
        assert!(
            cut.elapsed() < Duration::from_secs(60),
            "broker 1 never stopped acknowledging"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "broker 1 refused its first write {} ms after the cut (session timeout {SESSION_MS} ms)",
        cut.elapsed().as_millis()
    );
    wait_until(
        Duration::from_secs(30),
        "a new leader",
        || matches!(lab.leader_and_isr(TOPIC, 0), Some((l, _, _)) if l == 2 || l == 3),
    );
    let answers = answers_for(&lab, 1, Duration::from_secs(2));
    assert!(
        !answers.contains_key("0"),
        "broker 1 acknowledged writes after another broker took the lead: {answers:?}"
    );
    acked.produce(&lab, "new-leader", 20);
    heal_write_and_check(&mut lab, &mut acked);
}

/// The controller cut from ZooKeeper only: another broker wins the election, the old one
/// stops acting (its commands carry an older epoch), and the new one handles a broker's
/// death; after healing every broker agrees with ZooKeeper on the leader.
#[test]
fn a_controller_cut_from_zookeeper_is_replaced_and_the_new_one_moves_leaders() {
    let _one = ONE_LAB.lock();
    if lab::skipped("net_partitions::controller_cut_from_zookeeper") {
        return;
    }
    common::init_logging();
    let tmp = tempfile::tempdir().unwrap();
    let mut lab = Lab::start(tmp.path(), 4, SESSION_MS, 500, PROPS);
    let old = elected("a controller", || lab.controller());
    let others: Vec<i32> = (1..=4).filter(|id| *id != old).collect();
    let assignment = others
        .iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(":");
    admin::create_topic(lab.zk(), TOPIC, 1, 3, Some(&assignment)).unwrap();
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    let host = Lab::broker_host(old);
    lab.cut(&[&host], &["zk1", "zk2", "zk3"]);
    wait_until(Duration::from_secs(30), "a new controller", || {
        lab.controller().is_some_and(|c| c != old)
    });
    let leader = others[0];
    lab.kill9(leader);
    wait_until(
        Duration::from_secs(30),
        "the new controller to move the lead",
        || matches!(lab.leader_and_isr(TOPIC, 0), Some((l, _, _)) if l >= 0 && l != leader),
    );
    acked.produce(&lab, "moved", 20);
    lab.restart(leader);
    lab.heal();
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
    assert!(lab.controller().is_some());
    let (zk_leader, _, _) = lab.leader_and_isr(TOPIC, 0).unwrap();
    wait_until(
        Duration::from_secs(30),
        "every broker to agree on the leader",
        || {
            lab.broker_ids().iter().all(|id| {
                Client::try_connect(lab.addr(*id)).is_some_and(|mut c| {
                    let m = c.metadata(&[TOPIC]);
                    m.topics[0].partitions[0].leader == zk_leader
                })
            })
        },
    );
    assert_replicas_identical_and_nothing_lost_among(&lab, &acked, &others);
}

/// One-way loss between a follower and the leader, each way in turn: the follower drops out
/// of the ISR, acks=all goes on with the other two, and after healing it catches up.
#[test]
fn one_way_loss_between_follower_and_leader_loses_nothing() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = lab_with_topic("one_way_loss", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    for (from, to) in [("b3", "b1"), ("b1", "b3")] {
        lab.oneway(from, to);
        wait_until(
            Duration::from_secs(30),
            "broker 3 out of the ISR",
            || matches!(lab.leader_and_isr(TOPIC, 0), Some((1, _, isr)) if !isr.contains(&3)),
        );
        acked.produce(&lab, &format!("oneway-{from}-{to}"), 20);
        lab.heal();
        lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
            .unwrap();
    }
    assert_replicas_identical_and_nothing_lost(&lab, &acked);
}

/// ZooKeeper loses its quorum (two of three members cut off), then gets it back; later its
/// leader is killed. The brokers come through both serving, with nothing lost.
#[test]
fn zookeeper_quorum_loss_and_its_leaders_death_lose_nothing() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = lab_with_topic("zookeeper_quorum_loss", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    lab.isolate("zk2");
    lab.isolate("zk3");
    // Longer than a session timeout: every session is lost on the brokers' side.
    let end = Instant::now() + Duration::from_millis(SESSION_MS * 2);
    while Instant::now() < end {
        if let Ok((0, offset)) = try_produce(
            lab.addr(1),
            -1,
            TOPIC,
            0,
            &[b"no-quorum"],
            Duration::from_secs(3),
        ) {
            acked.0.push((offset, "no-quorum".into()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    lab.heal();
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
    acked.produce(&lab, "quorum-back", 20);
    let zk_leader = lab.zookeeper_leader().expect("an ensemble leader");
    lab.kill_zookeeper(zk_leader);
    wait_until(Duration::from_secs(60), "a new ensemble leader", || {
        lab.zookeeper_leader().is_some_and(|l| l != zk_leader)
    });
    lab.start_zookeeper(zk_leader);
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
    acked.produce(&lab, "new-zookeeper-leader", 20);
    assert_replicas_identical_and_nothing_lost(&lab, &acked);
}

/// A leader cut from ZooKeeper just long enough that it counts its session lost (and stops
/// leading) while ZooKeeper, which expires sessions only at tick boundaries, has not expired
/// it yet: the broker comes back in the same session, with its registration never gone, so
/// the controller sees no change and sends nothing. It must lead again by itself. ZooKeeper
/// ticks every 2 s here, so most rounds land in that window; the test says how many did.
#[test]
fn a_leader_back_in_the_same_session_after_counting_it_lost_leads_again() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = start_lab_ticked("same_session_return", 3, 4000, 2000) else {
        return;
    };
    let topics = [(TOPIC, 3)];
    admin::create_topic(lab.zk(), TOPIC, 3, 3, Some("1:2:3,2:3:1,3:1:2")).unwrap();
    lab.wait_healthy(&topics, Duration::from_secs(60)).unwrap();
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    let mut same_session = 0;
    for round in 0..4 {
        // A leader that is not the controller, whose own re-election would send it a fresh
        // LeaderAndIsr and hide the case.
        let controller = elected("a controller", || lab.controller());
        let (p, leader) = (0..3)
            .map(|p| (p, lab.leader_and_isr(TOPIC, p).unwrap().0))
            .find(|(_, l)| *l != controller)
            .expect("a partition led by a broker that is not the controller");
        let registration = |lab: &Lab| {
            let path = format!("/brokers/ids/{leader}");
            lab.zk().exists(&path).unwrap().map(|s| s.czxid)
        };
        let before = registration(&lab);
        lab.cut(&[&Lab::broker_host(leader)], &["zk1", "zk2", "zk3"]);
        wait_until(
            Duration::from_secs(30),
            "the leader to stop leading",
            || {
                try_produce(
                    lab.addr(leader),
                    1,
                    TOPIC,
                    p,
                    &[b"probe"],
                    Duration::from_secs(3),
                )
                .is_ok_and(|(code, _)| code == ErrorCode::NotLeaderForPartition.code())
            },
        );
        lab.heal();
        lab.wait_healthy(&topics, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("round {round}: not healed: {e}"));
        if registration(&lab) == before {
            same_session += 1;
        }
        acked.produce(&lab, &format!("round-{round}"), 5);
    }
    eprintln!("the cut leader came back in the same session in {same_session} of 4 rounds");
    assert_replicas_identical_and_nothing_lost(&lab, &acked);
}

/// A broker's host isolated (its link down) while it leads: the others elect a leader and
/// take writes, and after healing it follows with the same log.
#[test]
fn an_isolated_leader_is_replaced_and_rejoins_with_the_same_log() {
    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = lab_with_topic("isolated_leader", 3, "1:2:3") else {
        return;
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 20);
    lab.isolate("b1");
    wait_until(
        Duration::from_secs(30),
        "a new leader",
        || matches!(lab.leader_and_isr(TOPIC, 0), Some((l, _, isr)) if l != 1 && !isr.contains(&1)),
    );
    acked.produce(&lab, "isolated", 20);
    heal_write_and_check(&mut lab, &mut acked);
}

/// The coordinator cut from its members (the client host) while both kinds of group consume:
/// gregor's consumer in the spec's protocol and librdkafka in Kafka's. Both keep or regain
/// their partitions, consume every acknowledged write at least once, and their committed
/// offsets never go back and reach the log's end after healing.
#[test]
fn groups_cut_from_their_coordinator_consume_everything_and_commit_forward() {
    use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
    use gregor::protocol::coordinator::Subscription;
    use std::io::{BufRead, BufReader};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let _one = ONE_LAB.lock();
    let Some((_tmp, mut lab)) = start_lab("coordinator_cut", 3) else {
        return;
    };
    let coordinator = elected("a coordinator", || lab.coordinator());
    let leader = coordinator % 3 + 1;
    let replicas: Vec<String> = (0..3)
        .map(|i| ((leader - 1 + i) % 3 + 1).to_string())
        .collect();
    create_topic(&mut lab, &replicas.join(":"));
    let boot = lab.bootstrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spec_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let spec = {
        let (boot, stop, seen) = (boot.clone(), stop.clone(), spec_seen.clone());
        std::thread::spawn(move || {
            let mut cfg = ConsumerConfig::new(
                &boot,
                "spec",
                Subscription::Static([(TOPIC.into(), 1)].into()),
            );
            cfg.auto_offset_reset = "smallest".into();
            cfg.ping_interval = Duration::from_millis(500);
            cfg.startup_timeout = Duration::from_secs(60);
            let mut c = GroupConsumer::start(cfg).expect("the spec-protocol consumer starts");
            while !stop.load(Ordering::Acquire) {
                if let Some(r) = c.poll(Duration::from_millis(100)) {
                    let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or(b""));
                    seen.lock().push(v.into_owned());
                }
            }
            c.close();
        })
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_member.py");
    let mut member = common::python();
    member
        .args([
            script,
            "confluent",
            &boot,
            "kafka",
            TOPIC,
            "session_ms=6000",
            "autocommit_ms=500",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    common::die_with_parent(&mut member);
    let mut member = member
        .spawn()
        .expect("confluent-kafka (scripts/test.sh installs it)");
    let kafka_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let reader = {
        let (out, seen) = (member.stdout.take().unwrap(), kafka_seen.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(v) = line
                    .strip_prefix("msg ")
                    .and_then(|r| r.splitn(3, ' ').nth(2))
                {
                    seen.lock().push(v.to_owned());
                }
            }
        })
    };
    let mut highest: BTreeMap<&str, i64> = BTreeMap::new();
    let sample = |lab: &Lab, highest: &mut BTreeMap<&str, i64>| {
        let spec = gregor::zk::paths::committed_offset(lab.zk(), "spec", TOPIC, 0)
            .ok()
            .flatten();
        let kafka = common::committed_offsets(&boot, "kafka", TOPIC)
            .into_iter()
            .find(|(p, _)| *p == 0)
            .map(|(_, o)| o);
        for (group, offset) in [("spec", spec), ("kafka", kafka)] {
            if let Some(o) = offset {
                let h = highest.entry(group).or_insert(o);
                assert!(
                    o >= *h,
                    "{group}'s committed offset went back from {h} to {o}"
                );
                *h = o;
            }
        }
    };
    let consumed_all = |acked: &Acked| {
        [&spec_seen, &kafka_seen].iter().all(|seen| {
            let seen = seen.lock();
            acked.0.iter().all(|(_, v)| seen.contains(v))
        })
    };
    let mut acked = Acked::default();
    acked.produce(&lab, "before", 50);
    wait_until(Duration::from_secs(60), "both groups to consume", || {
        consumed_all(&acked)
    });
    sample(&lab, &mut highest);
    lab.cut(&[&Lab::broker_host(coordinator)], &["client"]);
    acked.produce(&lab, "cut", 50);
    let end = Instant::now() + Duration::from_millis(SESSION_MS * 3);
    while Instant::now() < end {
        sample(&lab, &mut highest);
        std::thread::sleep(Duration::from_millis(500));
    }
    lab.heal();
    acked.produce(&lab, "healed", 50);
    wait_until(
        Duration::from_secs(90),
        "both groups to consume everything",
        || consumed_all(&acked),
    );
    let leader = lab.leader_and_isr(TOPIC, 0).unwrap().0;
    let log_end = Client::connect(lab.addr(leader))
        .list_offsets(TOPIC, 0, -1)
        .1[0];
    wait_until(
        Duration::from_secs(60),
        "both groups to commit the log's end",
        || {
            sample(&lab, &mut highest);
            highest.get("spec") == Some(&log_end) && highest.get("kafka") == Some(&log_end)
        },
    );
    stop.store(true, Ordering::Release);
    spec.join().unwrap();
    common::tell_and_wait(&mut member, b"leave\n", Duration::from_secs(30));
    let _ = reader.join();
}

//! The controller against a real ZooKeeper and brokers as child processes: leaders for new
//! topics, failover on kill -9, unclean election on and off, controller failover and epoch
//! fencing, topic deletion, reassignment, controlled shutdown, and kcat against the cluster.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::*;
use gregor::controller::leader_and_isr::{Update, update_leader_and_isr};
use gregor::protocol::ErrorCode;
use gregor::zk::admin;
use gregor::zk::paths::{self, LeaderAndIsr, PartitionReassignment, ReassignmentRequest};

const LONG: Duration = Duration::from_secs(40);

fn controller_of(c: &Cluster) -> Option<(i32, i32)> {
    let (d, _) = c.zk.get_data(paths::CONTROLLER).ok()?;
    let e: paths::ElectedBroker = serde_json::from_slice(&d).ok()?;
    let (epoch, _) = c.zk.get_data(paths::CONTROLLER_EPOCH).ok()?;
    Some((e.brokerid, String::from_utf8(epoch).ok()?.parse().ok()?))
}

/// Produces `values` with acks=all to the partition's current leader.
fn produce_all(c: &Cluster, topic: &str, p: i32, values: &[&[u8]]) {
    let leader = c.wait_leader_serving(topic, p, |_| true);
    let (e, _) = c.client(leader).produce(-1, topic, p, values);
    assert_eq!(e, 0, "produce to {topic}-{p} on broker {leader}");
}

fn read_all(c: &Cluster, topic: &str, p: i32) -> Vec<Vec<u8>> {
    let leader = c.wait_leader_serving(topic, p, |_| true);
    let mut client = c.client(leader);
    let mut out = Vec::new();
    loop {
        let f = client.fetch(topic, p, out.len() as i64, 0);
        assert_eq!(f.error_code, 0);
        let vs = values(&f.message_set);
        if vs.is_empty() {
            return out;
        }
        out.extend(vs.into_iter().map(|(_, v)| v));
    }
}

#[test]
fn topic_creation_gives_every_partition_a_live_leader_and_metadata_everywhere() {
    let c = Cluster::start("create", 3, &[]);
    c.create_topic("orders", 6, 3);
    let mut leaders = [0; 4];
    for p in 0..6 {
        let s = c.state("orders", p).unwrap();
        assert!(c.live().contains(&s.leader));
        assert_eq!(s.isr.len(), 3);
        leaders[s.leader as usize] += 1;
    }
    assert_eq!(&leaders[1..], &[2, 2, 2], "leaders spread evenly");
    for id in 1..=3 {
        wait_until(LONG, "metadata on every broker", || {
            let m = c.client(id).metadata(&["orders"]);
            m.brokers.len() == 3
                && m.topics[0].partitions.len() == 6
                && m.topics[0].partitions.iter().all(|p| p.leader > 0)
        });
    }
    // Bad input from the admin side gets a clear error.
    assert!(matches!(
        admin::create_topic(&c.zk, "orders", 1, 1, None),
        Err(admin::AdminError::TopicExists(_))
    ));
    assert!(matches!(
        admin::create_topic(&c.zk, "big", 1, 4, None),
        Err(admin::AdminError::InvalidReplicationFactor { .. })
    ));
    assert!(matches!(
        admin::create_topic(&c.zk, "bad name", 1, 1, None),
        Err(admin::AdminError::InvalidTopic(_))
    ));
}

#[test]
fn kill_of_a_leader_elects_a_new_one_from_the_isr() {
    let mut c = Cluster::start("failover", 3, &[]);
    c.create_topic("t", 1, 3);
    produce_all(&c, "t", 0, &[b"one", b"two"]);
    let old = c.leader("t", 0);
    let isr = c.state("t", 0).unwrap().isr;
    c.kill9(old);
    let new = c.wait_leader_serving("t", 0, |l| l != old);
    assert!(isr.contains(&new));
    // Client routing: the other broker's metadata names the new leader, and it serves.
    let other = (1..=3).find(|b| *b != old && *b != new).unwrap();
    wait_until(LONG, "metadata to follow the leader change", || {
        c.client(other).metadata(&["t"]).topics[0].partitions[0].leader == new
    });
    assert_eq!(
        c.client(other).produce(1, "t", 0, &[b"x"]).0,
        ErrorCode::NotLeaderForPartition.code()
    );
    produce_all(&c, "t", 0, &[b"three"]);
    assert_eq!(
        read_all(&c, "t", 0),
        vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
    );
}

/// Topic t-0 on brokers 1 and 2 (broker 3, holding no replica, keeps a controller alive);
/// broker 2 dies first and leaves the ISR, then broker 1 — the whole ISR — dies too.
fn lose_the_whole_isr(c: &mut Cluster) {
    c.create_topic_on("t", "1:2");
    produce_all(c, "t", 0, &[b"kept"]);
    c.kill9(2);
    wait_until(LONG, "broker 2 to leave the ISR", || {
        c.state("t", 0).unwrap().isr == vec![1]
    });
    c.kill9(1);
    wait_until(LONG, "the partition to go offline", || {
        c.leader("t", 0) == -1
    });
}

#[test]
fn without_unclean_election_a_partition_waits_for_its_isr() {
    let mut c = Cluster::start("clean", 3, &[]);
    lose_the_whole_isr(&mut c);
    c.restart(2);
    // Broker 2 is not in the ISR: it must not lead. The controller has handled its return
    // once broker 2's own metadata lists it, with the partition still offline.
    wait_until(LONG, "the controller to handle broker 2's return", || {
        let m = c.client(2).metadata(&["t"]);
        m.brokers.iter().any(|b| b.id == 2)
            && m.topics[0]
                .partitions
                .first()
                .is_some_and(|p| p.leader == -1)
    });
    assert_eq!(c.leader("t", 0), -1);
    assert_eq!(c.state("t", 0).unwrap().isr, vec![1]);
    c.restart(1);
    c.wait_leader_serving("t", 0, |l| l == 1);
    assert_eq!(read_all(&c, "t", 0), vec![b"kept".to_vec()]);
}

#[test]
fn with_unclean_election_a_live_assigned_replica_leads() {
    let mut c = Cluster::start("unclean", 3, &[("unclean.leader.election.enable", "true")]);
    lose_the_whole_isr(&mut c);
    c.restart(2);
    c.wait_leader_serving("t", 0, |l| l == 2);
    assert_eq!(c.state("t", 0).unwrap().isr, vec![2]);
}

#[test]
fn controller_failover_raises_the_epoch_and_brokers_reject_the_old_one() {
    let mut c = Cluster::start("ctrl", 3, &[]);
    c.create_topic("t", 3, 2);
    let (old, old_epoch) = controller_of(&c).unwrap();
    c.kill9(old);
    let mut now = None;
    wait_until(LONG, "a new controller", || {
        now = controller_of(&c).filter(|(id, e)| *id != old && *e > old_epoch);
        now.is_some()
    });
    let (new, epoch) = now.unwrap();
    assert!(epoch > old_epoch);
    for p in 0..3 {
        c.wait_leader_serving("t", p, |l| l != old);
    }
    // A command carrying the deposed controller's epoch is rejected.
    let survivor = (1..=3).find(|b| *b != old).unwrap();
    let r = c
        .client(survivor)
        .stop_replica(old_epoch, true, vec![("t".into(), 0)]);
    assert_eq!(r.error_code, ErrorCode::StaleControllerEpoch.code());
    assert!(c.log_of(new).contains("became controller"));
}

/// A controller deposed in the middle of an event (its ZooKeeper session lost, the client
/// already in a new one) writes no leaderAndISR node: the write belongs to the session that
/// won the election. In the --hosts chaos run a controller resumed from a pause wrote an ISR in
/// its new session before it heard of its resignation; no broker was told of it, and the
/// partition showed under-replicated for good.
#[test]
fn a_leader_and_isr_write_outside_the_electing_session_is_refused() {
    init_logging();
    let zk_connect = format!("{}{}", zk_address(), chroot("deposed"));
    let zk = gregor::zk::ZkClient::connect(&zk_connect, Duration::from_secs(10)).unwrap();
    let state = LeaderAndIsr {
        leader: 1,
        leader_epoch: 3,
        isr: vec![1, 2, 3],
        controller_epoch: 1,
    };
    zk.ensure_path(&paths::topic_path("t")).unwrap();
    paths::write_leader_and_isr(&zk, "t", 0, &state, None).unwrap();
    let tp = gregor::protocol::TopicPartition::new("t", 0);
    let shrink = |cur: &LeaderAndIsr| Some((cur.leader, vec![1, 3]));
    let earlier_session = zk.session_id() ^ 1;
    let r = update_leader_and_isr(&zk, (2, earlier_session), &tp, None, shrink);
    assert_eq!(r, Err(gregor::zk::ZkError::SessionExpired));
    let (now, _) = paths::leader_and_isr(&zk, "t", 0).unwrap().unwrap();
    assert_eq!(now, state, "a deposed controller's write reached ZooKeeper");
    // In its own session the same write goes through.
    let r = update_leader_and_isr(&zk, (2, zk.session_id()), &tp, None, shrink).unwrap();
    assert!(matches!(r, Update::Written(l, _) if l.isr == vec![1, 3]));
}

#[test]
fn a_conditional_leader_and_isr_write_that_loses_a_race_is_retried() {
    init_logging();
    let zk_connect = format!("{}{}", zk_address(), chroot("race"));
    let zk = gregor::zk::ZkClient::connect(&zk_connect, Duration::from_secs(10)).unwrap();
    let first = LeaderAndIsr {
        leader: 1,
        leader_epoch: 3,
        isr: vec![1, 2],
        controller_epoch: 1,
    };
    // A partition's state lives under its topic's node.
    zk.ensure_path(&paths::topic_path("t")).unwrap();
    paths::write_leader_and_isr(&zk, "t", 0, &first, None).unwrap();
    let mut seen = Vec::new();
    let tp = gregor::protocol::TopicPartition::new("t", 0);
    let r = update_leader_and_isr(&zk, (2, zk.session_id()), &tp, None, |cur| {
        seen.push(cur.clone());
        if seen.len() == 1 {
            // Someone else (the old leader shrinking its ISR) writes between our read and write.
            let racing = LeaderAndIsr {
                isr: vec![1],
                ..cur.clone()
            };
            paths::write_leader_and_isr(&zk, "t", 0, &racing, None).unwrap();
        }
        Some((
            2,
            cur.isr
                .iter()
                .copied()
                .filter(|r| *r != 1)
                .chain([2])
                .collect(),
        ))
    })
    .unwrap();
    assert_eq!(seen.len(), 2, "re-read after the lost race");
    assert_eq!(
        seen[1].isr,
        vec![1],
        "second decision sees the racing write"
    );
    match r {
        Update::Written(l, _) => assert_eq!(
            (l.leader, l.leader_epoch, l.isr, l.controller_epoch),
            (2, 4, vec![2], 2)
        ),
        other => panic!("not written: {other:?}"),
    }
}

#[test]
fn a_stale_cached_leader_and_isr_costs_a_reread_never_a_wrong_write() {
    init_logging();
    let zk_connect = format!("{}{}", zk_address(), chroot("cached"));
    let zk = gregor::zk::ZkClient::connect(&zk_connect, Duration::from_secs(10)).unwrap();
    zk.ensure_path(&paths::topic_path("t")).unwrap();
    let old = LeaderAndIsr {
        leader: 1,
        leader_epoch: 3,
        isr: vec![1, 2, 3],
        controller_epoch: 1,
    };
    let v0 = paths::write_leader_and_isr(&zk, "t", 0, &old, None).unwrap();
    // The leader shrank its ISR since the controller cached the state.
    let now = LeaderAndIsr {
        isr: vec![1, 3],
        ..old.clone()
    };
    paths::write_leader_and_isr(&zk, "t", 0, &now, Some(v0)).unwrap();
    let tp = gregor::protocol::TopicPartition::new("t", 0);
    // Broker 1 died: elect the first other ISR member. From the stale copy that is 2, which
    // is no longer in the ISR; the conditional write fails and the fresh state gives 3.
    let elect = |cur: &LeaderAndIsr| {
        let isr: Vec<i32> = cur.isr.iter().copied().filter(|r| *r != 1).collect();
        Some((isr[0], isr))
    };
    let r = update_leader_and_isr(
        &zk,
        (2, zk.session_id()),
        &tp,
        Some((old.clone(), v0)),
        elect,
    )
    .unwrap();
    match r {
        Update::Written(l, _) => assert_eq!((l.leader, l.isr), (3, vec![3])),
        other => panic!("not written: {other:?}"),
    }
    // "Nothing to change" is never taken from a cached copy: the fresh state decides.
    let mut seen = Vec::new();
    let r = update_leader_and_isr(&zk, (2, zk.session_id()), &tp, Some((old, v0)), |cur| {
        seen.push(cur.isr.clone());
        None
    })
    .unwrap();
    assert_eq!(seen, vec![vec![1, 2, 3], vec![3]]);
    assert!(matches!(r, Update::Unchanged(l, _) if l.leader == 3));
}

#[test]
fn topic_deletion_removes_data_on_every_broker() {
    let c = Cluster::start("delete", 3, &[]);
    c.create_topic("doomed", 2, 3);
    produce_all(&c, "doomed", 0, &[b"x"]);
    for id in 1..=3 {
        wait_until(LONG, "replicas to exist", || {
            c.data_dir(id).join("doomed-0").exists()
        });
    }
    admin::delete_topic(&c.zk, "doomed").unwrap();
    for id in 1..=3 {
        for p in 0..2 {
            wait_until(LONG, "partition data to be deleted", || {
                !c.data_dir(id).join(format!("doomed-{p}")).exists()
            });
        }
        wait_until(LONG, "metadata to drop the topic", || {
            c.client(id)
                .metadata(&[])
                .topics
                .iter()
                .all(|t| t.topic != "doomed")
        });
    }
    assert!(matches!(
        admin::delete_topic(&c.zk, "doomed"),
        Err(admin::AdminError::UnknownTopic(_))
    ));
}

#[test]
fn reassignment_moves_replicas_and_keeps_every_message() {
    let c = Cluster::start("reassign", 3, &[]);
    c.create_topic_on("moving", "1");
    let msgs: Vec<Vec<u8>> = (0..100).map(|i| format!("msg-{i}").into_bytes()).collect();
    for chunk in msgs.chunks(10) {
        let refs: Vec<&[u8]> = chunk.iter().map(|v| v.as_slice()).collect();
        produce_all(&c, "moving", 0, &refs);
    }
    let req = ReassignmentRequest {
        version: 1,
        partitions: vec![PartitionReassignment {
            topic: "moving".into(),
            partition: 0,
            replicas: vec![2, 3],
        }],
    };
    admin::request_reassignment(&c.zk, &req).unwrap();
    wait_until(LONG, "the reassignment to finish", || {
        c.zk.exists(paths::REASSIGN_PARTITIONS).unwrap().is_none()
            && paths::topic_assignment(&c.zk, "moving").unwrap().unwrap()[&0] == vec![2, 3]
    });
    let leader = c.wait_leader_serving("moving", 0, |l| l == 2 || l == 3);
    assert!(leader == 2 || leader == 3);
    assert_eq!(read_all(&c, "moving", 0), msgs);
    wait_until(LONG, "the old replica to be deleted", || {
        !c.data_dir(1).join("moving-0").exists()
    });
}

#[test]
fn controlled_shutdown_moves_all_leadership_away_before_exit() {
    let mut c = Cluster::start("ctrlshut", 3, &[]);
    c.create_topic("t", 6, 3);
    let leaving = c.leader("t", 0);
    let st = c.terminate(leaving);
    assert!(st.success(), "clean exit: {st:?}");
    assert!(
        c.log_of(leaving).contains("controlled shutdown complete"),
        "{}",
        c.log_of(leaving)
    );
    // Right after exit, before any session timeout could act, no partition is led by it.
    for p in 0..6 {
        let s = c.state("t", p).unwrap();
        assert_ne!(s.leader, leaving, "partition {p}");
        assert!(!s.isr.contains(&leaving), "partition {p} isr {:?}", s.isr);
    }
    // Bounced at once, the broker is noticed as a new registration: it gets its replicas
    // back and rejoins every ISR.
    c.restart(leaving);
    for p in 0..6 {
        wait_until(LONG, "the restarted broker to rejoin the ISR", || {
            c.state("t", p).unwrap().isr.contains(&leaving)
        });
    }
}

/// A controlled shutdown whose controller stops answering (paused: its session is about to
/// expire) asks the controller elected next as soon as there is one, instead of waiting out
/// `controller.socket.timeout.ms` — ten minutes here, past `terminate`'s own deadline, which
/// the old wait failed.
#[test]
fn a_controlled_shutdown_turns_to_the_next_controller_when_the_one_asked_stops_answering() {
    let mut c = Cluster::start(
        "ctrlshut-paused",
        3,
        &[("controller.socket.timeout.ms", "600000")],
    );
    let controller = c.controller().unwrap();
    let leaving = if controller == 1 { 2 } else { 1 };
    let heir = 6 - leaving - controller;
    c.create_topic_on("t", &format!("{leaving}:{heir}:{controller}"));
    c.pause(controller);
    let st = c.terminate(leaving);
    c.resume(controller);
    assert!(st.success(), "clean exit: {st:?}");
    let log = c.log_of(leaving);
    assert!(
        log.contains(&format!(
            "controller {controller} was replaced while we waited"
        )) && log.contains("controlled shutdown complete"),
        "{log}"
    );
    assert_eq!(c.leader("t", 0), heir);
}

#[test]
fn a_returning_broker_deletes_partitions_of_a_deleted_and_recreated_topic() {
    let mut c = Cluster::start("recreate", 3, &[]);
    c.create_topic("t", 1, 3);
    produce_all(&c, "t", 0, &[b"old"]);
    wait_until(LONG, "broker 3 to hold a replica", || {
        c.data_dir(3).join("t-0").exists()
    });
    c.kill9(3);
    wait_until(LONG, "broker 3 to be gone", || !c.live().contains(&3));
    admin::delete_topic(&c.zk, "t").unwrap();
    wait_until(LONG, "deletion on live brokers", || {
        !c.data_dir(1).join("t-0").exists()
    });
    c.create_topic("t", 1, 2);
    produce_all(&c, "t", 0, &[b"new"]);
    assert!(
        c.data_dir(3).join("t-0").exists(),
        "stale copy still on the stopped broker"
    );
    c.restart(3);
    wait_until(LONG, "the stale partition to be deleted", || {
        !c.data_dir(3).join("t-0").exists()
    });
    assert_eq!(read_all(&c, "t", 0), vec![b"new".to_vec()]);
}

#[test]
fn kcat_lists_produces_and_consumes_against_the_cluster() {
    let c = Cluster::start("kcat", 3, &[]);
    c.create_topic("kc", 3, 3);
    let bootstrap = format!("127.0.0.1:{}", c.brokers[&1].port);
    let listing = kcat(&["-L", "-b", &bootstrap, "-t", "kc", "-m", "10"], "");
    assert!(listing.contains("3 brokers"), "{listing}");
    assert!(
        listing.contains("topic \"kc\" with 3 partitions"),
        "{listing}"
    );
    let lines: Vec<String> = (0..50).map(|i| format!("line-{i}")).collect();
    kcat(
        &["-P", "-b", &bootstrap, "-t", "kc", "-m", "10"],
        &(lines.join("\n") + "\n"),
    );
    let out = kcat(
        &[
            "-C",
            "-b",
            &bootstrap,
            "-t",
            "kc",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-m",
            "10",
        ],
        "",
    );
    let mut got: Vec<&str> = out.lines().collect();
    got.sort();
    let mut want: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_duplicate_broker_id_fails_without_disturbing_the_live_broker() {
    let c = Cluster::start("dupid", 2, &[]);
    c.create_topic_on("t", "2:1");
    let before = c.state("t", 0).unwrap();
    let owner =
        c.zk.exists(&paths::broker_path(2))
            .unwrap()
            .unwrap()
            .ephemeral_owner;
    let dir = tempfile::tempdir().unwrap();
    let err = gregor::broker::Broker::start(broker_config(2, &c.zk_connect, dir.path(), &[]))
        .err()
        .expect("a second broker 2 is refused");
    assert!(err.0.contains("broker id 2 is already registered"), "{err}");
    // The live broker 2 keeps its registration, its leadership and its ISR place.
    let reg =
        c.zk.exists(&paths::broker_path(2))
            .unwrap()
            .expect("registration kept");
    assert_eq!(reg.ephemeral_owner, owner);
    assert_eq!(c.state("t", 0).unwrap(), before);
    assert_eq!(c.client(2).produce(1, "t", 0, &[b"still leader"]).0, 0);
}

/// Writing a partition's first leader and ISR never brings back a topic deleted meanwhile:
/// it used to create every missing parent, so an election racing a deletion (during a
/// controller failover) left an empty `/brokers/topics/[topic]` that hid the deletion, and the
/// live brokers kept the partition (seen in CI by
/// `a_returning_broker_deletes_partitions_of_a_deleted_and_recreated_topic`).
#[test]
fn a_first_leader_write_never_recreates_a_deleted_topic() {
    let c = Cluster::start("no-resurrect", 1, &[]);
    let state = LeaderAndIsr {
        leader: 1,
        leader_epoch: 0,
        isr: vec![1],
        controller_epoch: 1,
    };
    let got = paths::write_leader_and_isr(&c.zk, "gone", 0, &state, None);
    assert_eq!(got, Err(gregor::zk::ZkError::NoNode));
    assert!(c.zk.exists(&paths::topic_path("gone")).unwrap().is_none());
    // Under a topic that exists, the first write creates the partition's node.
    c.create_topic_on("here", "1");
    c.wait_all_led("here");
    c.zk.delete_recursive("/brokers/topics/here/0").unwrap();
    let v = paths::write_leader_and_isr(&c.zk, "here", 0, &state, None).unwrap();
    assert_eq!(v, 0);
    assert_eq!(
        paths::leader_and_isr(&c.zk, "here", 0)
            .unwrap()
            .map(|(l, _)| l),
        Some(state)
    );
}

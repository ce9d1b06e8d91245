//! Requests only brokers send, sent by someone else: a client posing as a follower, or as
//! the controller. With a separate inter-broker listener they are refused on the client one;
//! whatever the listeners, a controller epoch newer than the broker knows is checked against
//! ZooKeeper before it is believed.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::cluster::Cluster;
use common::*;
use gregor::protocol::controller::{ControlledShutdownRequest, ControlledShutdownResponse};
use gregor::zk::paths;

const LISTENERS: [(&str, &str); 4] = [
    (
        "listeners",
        "CLIENT://127.0.0.1:{port},REPLICATION://127.0.0.1:0",
    ),
    (
        "listener.security.protocol.map",
        "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
    ),
    ("inter.broker.listener.name", "REPLICATION"),
    ("min.insync.replicas", "2"),
];

/// The REPLICATION listener's address of broker `id`, from its registration.
fn replication_addr(c: &Cluster, id: i32) -> std::net::SocketAddr {
    let b = paths::live_brokers(&c.zk)
        .unwrap()
        .into_iter()
        .find(|b| b.id == id)
        .and_then(|b| b.on("REPLICATION"))
        .expect("a REPLICATION endpoint registered");
    format!("{}:{}", b.host, b.port).parse().unwrap()
}

#[test]
fn on_the_client_listener_no_one_may_pose_as_a_follower_or_the_controller() {
    let c = Cluster::start("spoof", 3, &LISTENERS);
    c.create_topic("t", 1, 3);
    let leader = c.wait_leader_serving("t", 0, |_| true);
    let followers: Vec<i32> = (1..=3).filter(|id| *id != leader).collect();
    let mut client = c.client(leader);

    // Clients are told client addresses; the brokers replicate over REPLICATION.
    let m = client.metadata(&["t"]);
    let mut ports: Vec<i32> = m.brokers.iter().map(|b| b.port).collect();
    ports.sort();
    let mut expected: Vec<i32> = c.brokers.values().map(|b| i32::from(b.port)).collect();
    expected.sort();
    assert_eq!(ports, expected);
    assert_eq!(client.produce(-1, "t", 0, &[b"replicated"]).0, 0);
    let end = client.list_offsets("t", 0, -1).1[0];

    // Both followers stopped: an acks=all produce must not be acknowledged, however many
    // fetches a client sends in the followers' names at the new end offset.
    for f in &followers {
        c.pause(*f);
    }
    let done = AtomicBool::new(false);
    let produced = std::thread::scope(|s| {
        let spoofer = s.spawn(|| {
            let mut spoof = c.client(leader);
            let mut answers = 0;
            while !done.load(Ordering::Acquire) {
                for f in &followers {
                    let p = spoof.fetch_as(*f, "t", 0, end + 1, 0);
                    assert_eq!(p.error_code, 29, "a fetch as follower {f} is refused");
                    answers += 1;
                }
            }
            answers
        });
        let code = client.produce(-1, "t", 0, &[b"never acknowledged"]).0;
        done.store(true, Ordering::Release);
        assert!(spoofer.join().unwrap() > 0);
        code
    });
    assert!(
        [7, 19, 20].contains(&produced),
        "acknowledged ({produced}) with no follower holding it"
    );
    // The fetches kept no follower in the ISR: the stopped followers fell out of it.
    wait_until(
        Duration::from_secs(20),
        "the ISR to shrink to the leader",
        || c.state("t", 0).is_some_and(|s| s.isr == vec![leader]),
    );

    // The controller's commands, on the client listener: refused outright.
    let state = tps(
        "t",
        0,
        partition_state(leader, 1000, &[leader], &[1, 2, 3], i32::MAX),
    );
    let r = client.leader_and_isr(i32::MAX, vec![state.clone()], vec![], false);
    assert_eq!(r.error_code, 31);
    assert_eq!(
        client.update_metadata(i32::MAX, vec![state.clone()], vec![]),
        31
    );
    assert_eq!(
        client
            .stop_replica(i32::MAX, true, vec![("t".into(), 0)])
            .error_code,
        31
    );
    let shutdown: ControlledShutdownResponse = client
        .chan
        .send(7, 1, &ControlledShutdownRequest { broker_id: leader })
        .unwrap();
    assert_eq!(shutdown.error_code, 31);

    // On the inter-broker listener a forged epoch is checked against ZooKeeper: refused as
    // stale, and the real controller's commands still count afterwards.
    let mut inside = Client::connect(replication_addr(&c, leader));
    let r = inside.leader_and_isr(i32::MAX, vec![state], vec![], false);
    assert_eq!(r.error_code, 11);
    for f in &followers {
        c.resume(*f);
    }
    wait_until(
        Duration::from_secs(30),
        "the followers to register again",
        || c.live().len() == 3,
    );
    c.create_topic("after", 1, 3);
    let l = c.wait_leader_serving("after", 0, |_| true);
    assert_eq!(c.client(l).produce(-1, "after", 0, &[b"x"]).0, 0);
    assert!(
        c.log_of(leader).contains("refusing a fetch as replica"),
        "the refusal is logged"
    );
}

#[test]
fn a_forged_controller_epoch_on_a_shared_listener_is_not_believed() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("forged-epoch"));
    let b = TestBroker::start(1, &zk, &[]);
    let mut c = b.client();
    wait_until(
        Duration::from_secs(20),
        "the broker to be controller",
        || b.broker.controller.is_controller(),
    );
    let state = tps("x", 0, partition_state(1, 0, &[1], &[1], i32::MAX));
    let r = c.leader_and_isr(i32::MAX, vec![state.clone()], vec![b.info()], false);
    assert_eq!(r.error_code, 11, "an epoch ZooKeeper never reached");
    assert_eq!(c.update_metadata(i32::MAX, vec![state], vec![b.info()]), 11);
    // The real controller is not locked out: a new topic gets its leader and takes writes.
    gregor::zk::admin::create_topic(&b.broker.zk, "real", 1, 1, None).unwrap();
    wait_until(
        Duration::from_secs(20),
        "the new topic to take writes",
        || c.produce(1, "real", 0, &[b"v"]).0 == 0,
    );
}

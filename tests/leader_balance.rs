//! Kafka's automatic leader rebalance: after a broker comes back, the controller gives it back
//! the leadership of the partitions it is preferred for, without anyone asking
//! (`auto.leader.rebalance.enable`, on by default), once its share of them led by others
//! passes `leader.imbalance.per.broker.percentage`.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::wait_until;

#[test]
fn leadership_goes_back_to_the_preferred_replica_by_itself() {
    let mut c = Cluster::start(
        "leader-balance",
        2,
        &[("leader.imbalance.check.interval.seconds", "1")],
    );
    c.create_topic_on("t", "1:2,1:2,2:1");
    c.terminate(1);
    for p in 0..3 {
        c.wait_leader_serving("t", p, |l| l == 2);
    }
    c.restart(1);
    wait_until(Duration::from_secs(60), "broker 1 back in the ISRs", || {
        (0..2).all(|p| c.state("t", p).is_some_and(|s| s.isr.contains(&1)))
    });
    for p in 0..2 {
        c.wait_leader_serving("t", p, |l| l == 1);
    }
    assert_eq!(
        c.leader("t", 2),
        2,
        "broker 2 keeps what it is preferred for"
    );
}

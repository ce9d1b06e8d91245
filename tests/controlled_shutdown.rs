//! A clean shutdown of a broker that leads and follows hundreds of partitions: every
//! leadership moves before it exits, and it is not taken back into any ISR on the way out.
//! Its fetchers used to keep running after the controller had removed it from the ISRs, and
//! it was sent LeaderAndIsr as a follower of the partitions moved off it: the leaders took it
//! back into thousands of ISRs (one ZooKeeper write each, inside a fetch the leaving broker
//! then waited 30 s for), and acks=all waited on a broker that was going away.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::wait_until;

const PARTITIONS: i32 = 300;
const LONG: Duration = Duration::from_secs(60);

/// ISR expansions taking `replica` back, as the leaders' logs record them.
fn rejoins(c: &Cluster, leaders: &[i32], replica: i32) -> usize {
    let line = format!("(replica {replica} caught up");
    leaders
        .iter()
        .map(|b| c.log_of(*b).matches(&line).count())
        .sum()
}

#[test]
fn a_broker_shutting_down_cleanly_moves_its_leaders_and_rejoins_no_isr() {
    let mut c = Cluster::start("clean-shutdown", 3, &[]);
    c.create_topic("t", PARTITIONS, 3);
    c.wait_all_led("t");
    wait_until(LONG, "every ISR full", || {
        (0..PARTITIONS).all(|p| c.state("t", p).is_some_and(|s| s.isr.len() == 3))
    });
    let leaving = 2;
    let led = (0..PARTITIONS)
        .filter(|p| c.leader("t", *p) == leaving)
        .count();
    assert!(led > 50, "broker {leaving} leads {led} partitions");
    let before = rejoins(&c, &[1, 3], leaving);

    assert!(c.terminate(leaving).success());
    // What the controller wrote while the broker was leaving, before its registration went:
    // every partition led elsewhere, and no leader had taken it back meanwhile.
    for p in 0..PARTITIONS {
        let s = c.state("t", p).unwrap();
        assert!(s.leader == 1 || s.leader == 3, "t-{p} led by {}", s.leader);
        assert!(!s.isr.contains(&leaving), "t-{p} ISR {:?}", s.isr);
    }
    assert_eq!(
        rejoins(&c, &[1, 3], leaving),
        before,
        "leaders took broker {leaving} back into ISRs while it shut down"
    );
    // The cluster goes on without it: acks=all is not held up by a replica that left.
    wait_until(
        LONG,
        "an acks=all produce answered on every partition",
        || {
            let mut clients = [c.client(1), c.client(3)];
            (0..PARTITIONS).all(|p| {
                let i = if c.leader("t", p) == 1 { 0 } else { 1 };
                clients[i].produce(-1, "t", p, &[b"after"]).0 == 0
            })
        },
    );
}

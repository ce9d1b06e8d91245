//! Ten thousand partitions on three brokers (replication factor 3): created and every one
//! led; the controller killed -9 and, after its failover, every live broker's metadata
//! agreeing with ZooKeeper on every leader; then another broker killed -9 and every partition
//! led again. The
//! controller's ZooKeeper work for them is pipelined (`zk::pipeline`); the times go to
//! `doc/performance.md`, not into these conditions.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::Cluster;
use common::wait_until;
use gregor::zk::admin;
use gregor::zk::{paths, pipeline};

const PARTITIONS: i32 = 10_000;
const LONG: Duration = Duration::from_secs(120);

/// Every partition's leader as ZooKeeper has it (-1: none, or not written yet).
fn zk_leaders(c: &Cluster) -> Vec<i32> {
    let ps: Vec<i32> = (0..PARTITIONS).collect();
    pipeline::map(&ps, |p| {
        paths::leader_and_isr(&c.zk, "big", *p)
            .ok()
            .flatten()
            .map_or(-1, |(l, _)| l.leader)
    })
}

/// Every partition's leader in broker `b`'s metadata, by partition.
fn metadata_leaders(c: &Cluster, b: i32) -> Option<BTreeMap<i32, i32>> {
    let mut client = common::Client::try_connect(c.addr(b))?;
    let m = client.metadata(&["big"]);
    let t = m.topics.into_iter().find(|t| t.topic == "big")?;
    Some(
        t.partitions
            .iter()
            .map(|p| (p.partition, p.leader))
            .collect(),
    )
}

/// Every partition led by a live broker in ZooKeeper, and every live broker's metadata
/// naming the same leaders.
fn all_led_and_agreed(c: &Cluster) -> bool {
    let live = c.live();
    let zk = zk_leaders(c);
    if !zk.iter().all(|l| live.contains(l)) {
        return false;
    }
    let want: BTreeMap<i32, i32> = zk.iter().enumerate().map(|(p, l)| (p as i32, *l)).collect();
    live.iter()
        .filter(|b| c.is_running(**b))
        .all(|b| metadata_leaders(c, *b).as_ref() == Some(&want))
}

#[test]
fn ten_thousand_partitions_are_led_through_a_controller_failover_and_a_broker_death() {
    let mut c = Cluster::start("many", 3, &[]);
    admin::create_topic(&c.zk, "big", PARTITIONS, 3, None).unwrap();
    wait_until(LONG, "every partition led, every broker agreeing", || {
        all_led_and_agreed(&c)
    });
    let first = c.controller().unwrap();
    c.kill9(first);
    wait_until(
        LONG,
        "a new controller, every partition led, brokers agreeing",
        || {
            c.controller().is_some_and(|n| n != first)
                && !c.live().contains(&first)
                && all_led_and_agreed(&c)
        },
    );
    let second = c.controller().unwrap();
    let victim = [1, 2, 3]
        .into_iter()
        .find(|b| *b != first && *b != second)
        .unwrap();
    c.kill9(victim);
    wait_until(LONG, "every partition led again by the last broker", || {
        !c.live().contains(&victim) && all_led_and_agreed(&c)
    });
}

//! No two brokers lead a partition in the same leader epoch: a broker acknowledges writes
//! only as leader, so two leaders of one epoch could both acknowledge writes that only one
//! of them keeps. Read from the brokers' logs, where each takes the lead with
//! `[Broker B topic-P] became leader at epoch E`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cluster::TOPIC;

/// (partition, epoch) → the brokers that became its leader in that epoch, from the lines of
/// one broker's log.
pub fn record_leaders(log: &str, leaders: &mut BTreeMap<(i32, i32), BTreeSet<i32>>) {
    let prefix = "[Broker ";
    for line in log.lines() {
        let Some(at) = line.find(prefix) else {
            continue;
        };
        let rest = &line[at + prefix.len()..];
        let Some((broker, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Some((tp, rest)) = rest.split_once("] became leader at epoch ") else {
            continue;
        };
        let Some(p) = tp.strip_prefix(&format!("{TOPIC}-")) else {
            continue;
        };
        let epoch = rest.split(' ').next().unwrap_or("");
        if let (Ok(b), Ok(p), Ok(e)) = (broker.parse(), p.parse(), epoch.parse()) {
            leaders.entry((p, e)).or_default().insert(b);
        }
    }
}

/// Every (partition, epoch) that more than one broker led, from `dir/broker-*/broker.log`.
pub fn shared_epochs(dir: &Path, brokers: &[i32]) -> Vec<String> {
    let mut leaders = BTreeMap::new();
    for b in brokers {
        let log = dir.join(format!("broker-{b}")).join("broker.log");
        record_leaders(
            &std::fs::read_to_string(log).unwrap_or_default(),
            &mut leaders,
        );
    }
    leaders
        .into_iter()
        .filter(|(_, by)| by.len() > 1)
        .map(|((p, e), by)| format!("partition {p}: brokers {by:?} all led epoch {e}"))
        .collect()
}

#[test]
fn two_brokers_leading_one_epoch_are_found() {
    let mut leaders = BTreeMap::new();
    record_leaders(
        "[2026-12-02T07:24:15Z INFO  gregor::broker::replica_manager] [Broker 1 chaos-3] became leader at epoch 4 (zk version 7, isr [1, 2])\n\
         [x] [Broker 1 other-3] became leader at epoch 5 (zk version 1, isr [1])\n",
        &mut leaders,
    );
    record_leaders(
        "[x] [Broker 2 chaos-3] became leader at epoch 5 (zk version 8, isr [2])\n",
        &mut leaders,
    );
    assert_eq!(leaders.len(), 2);
    assert!(leaders.values().all(|b| b.len() == 1));
    record_leaders(
        "[x] [Broker 3 chaos-3] became leader at epoch 4 (zk version 7, isr [3])\n",
        &mut leaders,
    );
    assert_eq!(leaders[&(3, 4)], BTreeSet::from([1, 3]));
}

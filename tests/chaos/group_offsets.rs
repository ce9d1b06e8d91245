//! The consumer groups' committed offsets, sampled after every episode that heals: a
//! partition's committed offset never goes backwards. A member that lost its partitions and
//! committed late, over the new owner's progress, would make the group read again what it
//! had already handed on. The spec-protocol group's offsets are read from ZooKeeper, the
//! Kafka-protocol group's (`--hosts`) with `gregor groups --describe`, as an operator would.

use std::collections::BTreeMap;

use gregor::zk::paths;

use crate::cluster::{Cluster, GROUP, KAFKA_GROUP, PARTITIONS, TOPIC};
use crate::common::committed_offsets;

#[derive(Debug, Default)]
pub struct GroupOffsets {
    /// (group, partition) → the highest committed offset seen.
    highest: BTreeMap<(&'static str, i32), i64>,
    pub samples: usize,
    pub regressions: usize,
    pub problems: Vec<String>,
}

impl GroupOffsets {
    /// Reads the groups' committed offsets; the Kafka-protocol group's with `kafka_group`.
    pub fn sample(&mut self, env: &dyn Cluster, kafka_group: bool) {
        for p in 0..PARTITIONS {
            if let Ok(Some(offset)) = paths::committed_offset(env.zk(), GROUP, TOPIC, p) {
                self.record(GROUP, p, offset);
            }
        }
        if kafka_group {
            for (p, offset) in committed_offsets(&env.bootstrap(), KAFKA_GROUP, TOPIC) {
                self.record(KAFKA_GROUP, p, offset);
            }
        }
        self.samples += 1;
    }

    pub fn record(&mut self, group: &'static str, p: i32, offset: i64) {
        let highest = self.highest.entry((group, p)).or_insert(offset);
        if offset < *highest {
            self.regressions += 1;
            if self.problems.len() < 20 {
                self.problems.push(format!(
                    "{group} partition {p}: committed offset went back from {highest} to {offset}"
                ));
            }
        } else {
            *highest = offset;
        }
    }
}

#[test]
fn a_committed_offset_that_goes_back_is_a_violation() {
    let mut g = GroupOffsets::default();
    g.record(GROUP, 0, 5);
    g.record(GROUP, 0, 5);
    g.record(GROUP, 0, 9);
    g.record(GROUP, 1, 2);
    g.record(KAFKA_GROUP, 0, 3);
    assert_eq!(g.regressions, 0);
    g.record(GROUP, 0, 7);
    assert_eq!(g.regressions, 1);
    assert!(g.problems[0].contains("from 9 to 7"), "{:?}", g.problems);
}

//! The consumer groups' committed offsets, sampled after every episode that heals: a
//! partition's committed offset never goes backwards. A member that lost its partitions and
//! committed late, over the new owner's progress, would make the group read again what it
//! had already handed on. The spec-protocol group's offsets are read from ZooKeeper, the
//! Kafka-protocol group's (`--hosts`) with `gregor groups --describe`, as an operator would.

use std::collections::BTreeMap;

use gregor::zk::paths;

use crate::cluster::{Cluster, GROUP, KAFKA_GROUP, PARTITIONS, TOPIC};

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
            for (p, offset) in described_offsets(&env.bootstrap()) {
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

/// (partition, committed offset) of the Kafka-protocol group, from the rows of `gregor groups
/// --describe` (TOPIC PARTITION COMMITTED LOG-END LAG OWNER); nothing when it cannot answer.
fn described_offsets(bootstrap: &str) -> Vec<(i32, i64)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gregor"))
        .args([
            "groups",
            "--bootstrap",
            bootstrap,
            "--describe",
            KAFKA_GROUP,
        ])
        .output();
    let Ok(out) = out else { return Vec::new() };
    parse_described(&String::from_utf8_lossy(&out.stdout))
}

fn parse_described(text: &str) -> Vec<(i32, i64)> {
    text.lines()
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            (cols.next() == Some(TOPIC)).then_some(())?;
            let p = cols.next()?.parse().ok()?;
            let committed = cols.next()?.parse().ok()?;
            Some((p, committed))
        })
        .collect()
}

#[test]
fn the_described_offsets_are_read_from_the_cli_table() {
    let table = "GROUP chaos-kafka-group: consumer range Stable, 2 member(s)\n\
                 TOPIC PARTITION COMMITTED LOG-END LAG  OWNER\n\
                 chaos 0 17 20 3  rdkafka-1\n\
                 chaos 1 - 5 5  none\n";
    assert_eq!(parse_described(table), vec![(0, 17)]);
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

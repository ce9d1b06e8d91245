//! The committed prefix, watched during the run. After every episode that heals, each replica
//! is read up to its own high watermark: what it holds there is committed, and must be what
//! every earlier read saw at those offsets, on any replica, and what the final logs hold. The
//! check at the end alone cannot see a divergence truncated away before the end — a replica
//! that served a committed offset with other contents, then was cut back and refilled.

use std::collections::BTreeMap;

use crate::checker::read_committed;
use crate::cluster::{Cluster, PARTITIONS};

#[derive(Debug, Default)]
pub struct CommittedLog {
    /// (partition, offset) → the value first seen committed there, and on which broker.
    entries: BTreeMap<(i32, i64), (String, i32)>,
    /// Reads of a replica's committed prefix taken during the run.
    pub samples: usize,
    /// Committed offsets seen with two different values.
    pub changed: usize,
    pub problems: Vec<String>,
}

impl CommittedLog {
    /// Reads every replica's committed prefix once; a replica that does not answer is left
    /// out of this sample (the final check reads every one or fails).
    pub fn sample(&mut self, env: &dyn Cluster) {
        for p in 0..PARTITIONS {
            for b in env.replicas(p) {
                if let Ok(entries) = read_committed(env, b, p) {
                    self.record(p, b, &entries);
                    self.samples += 1;
                }
            }
        }
    }

    /// What broker `b` holds committed in partition `p`.
    pub fn record(&mut self, p: i32, b: i32, entries: &[(i64, String)]) {
        for (offset, v) in entries {
            match self.entries.get(&(p, *offset)) {
                None => {
                    self.entries.insert((p, *offset), (v.clone(), b));
                }
                Some((first, by)) if first != v => {
                    self.changed += 1;
                    if self.problems.len() < 20 {
                        self.problems.push(format!(
                            "partition {p} offset {offset}: broker {b} holds {v} committed, \
                             where broker {by} held {first}"
                        ));
                    }
                }
                Some(_) => {}
            }
        }
    }
}

#[test]
fn a_committed_offset_seen_with_another_value_is_a_violation() {
    let mut c = CommittedLog::default();
    c.record(0, 1, &[(0, "a".into()), (1, "b".into())]);
    c.record(0, 2, &[(0, "a".into())]);
    c.record(1, 2, &[(1, "other partition".into())]);
    assert_eq!(c.changed, 0);
    c.record(0, 3, &[(0, "a".into()), (1, "b2".into())]);
    assert_eq!(c.changed, 1);
    assert!(
        c.problems[0].contains("broker 3 holds b2") && c.problems[0].contains("broker 1 held b")
    );
}

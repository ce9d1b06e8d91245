//! The leader's ISR maintenance: a follower that has reached the high watermark rejoins; one
//! that has not caught up for `replica.lag.time.max.ms` leaves. Every change is written to the
//! leaderAndISR path conditionally on the zk version the controller gave us, and announced to
//! the controller (ISR-change notification) so every broker's metadata follows; the changes
//! one fetch or one expiry check makes are written and announced together.
//!
//! A change is decided under the partition's lock and written with it released: produce,
//! fetch and the controller's commands for the partition never wait on ZooKeeper. Until the
//! write succeeds the old ISR stays in force, which is the safe side both ways (a joining
//! follower has reached the high watermark already; a leaving one holds it back a moment
//! longer).

use std::sync::Arc;
use std::time::Instant;

use crate::zk::{ZkError, ZkResult, pipeline};

use super::partition::{Partition, PartitionState, Role};
use super::purgatory::Watch;
use super::replica_manager::ReplicaManager;
use crate::zk::paths::{self, LeaderAndIsr};

/// Conditional ISR writes per ZooKeeper transaction, and partitions per ISR-change
/// notification: a follower back from a restart rejoins thousands of ISRs in one fetch, and
/// writing them one request at a time held that fetch's answer for tens of seconds.
const WRITE_BATCH: usize = 200;
const NOTIFY_BATCH: usize = 1000;

impl ReplicaManager {
    /// A follower fetched each partition from the given offset: that is its log end offset
    /// (leader only). A follower outside the ISR that has reached the high watermark is added
    /// back; the ISR writes of the whole fetch go to ZooKeeper together.
    pub fn record_follower_positions(
        &self,
        replica_id: i32,
        positions: impl Iterator<Item = (Arc<Partition>, i64)>,
    ) {
        let mut changes = Vec::new();
        for (partition, offset) in positions {
            let mut st = partition.lock();
            if st.role != Role::Leader || !st.replicas.contains(&replica_id) {
                continue;
            }
            st.follower_leos.insert(replica_id, offset);
            let leo = partition.log.log_end_offset();
            if !st.isr.contains(&replica_id) && offset >= partition.high_watermark() {
                let mut isr = st.isr.clone();
                isr.push(replica_id);
                let why = format!("replica {replica_id} caught up to {offset}");
                if let Some(c) = IsrChange::begin(&mut st, isr, why) {
                    changes.push((partition.clone(), c));
                }
            }
            if offset >= leo
                || !st.caught_up_at.contains_key(&replica_id) && st.isr.contains(&replica_id)
            {
                st.caught_up_at.insert(replica_id, Instant::now());
            }
            let moved = partition.maybe_increment_high_watermark(&st);
            drop(st);
            if moved {
                partition.watchers.wake(Watch::HighWatermark);
            }
        }
        self.write_isrs(changes);
    }

    /// Drops from the ISR of every partition led here the followers that have not caught up
    /// for `replica.lag.time.max.ms`.
    pub fn maybe_shrink_isr(&self) {
        let parts: Vec<Arc<Partition>> = self.partitions.read().values().cloned().collect();
        let mut changes = Vec::new();
        for p in parts {
            let mut st = p.lock();
            if st.role != Role::Leader || st.pending_isr.is_some() {
                continue;
            }
            let lagging: Vec<i32> = st
                .isr
                .iter()
                .copied()
                .filter(|r| *r != self.broker_id)
                .filter(|r| {
                    st.caught_up_at
                        .get(r)
                        .is_none_or(|t| t.elapsed() > self.replica_lag_time_max)
                })
                .collect();
            if lagging.is_empty() {
                continue;
            }
            let isr: Vec<i32> = st
                .isr
                .iter()
                .copied()
                .filter(|r| !lagging.contains(r))
                .collect();
            let why = format!(
                "replicas {lagging:?} lag more than {:?}",
                self.replica_lag_time_max
            );
            if let Some(c) = IsrChange::begin(&mut st, isr, why) {
                drop(st);
                changes.push((p, c));
            }
        }
        self.write_isrs(changes);
    }

    /// Writes new ISRs to their leaderAndISR paths, each conditionally on the zk version the
    /// controller gave us, with no lock held: `WRITE_BATCH` per transaction, and a
    /// transaction refused because one partition's version moved is redone partition by
    /// partition. Then one ISR-change notification names every partition changed. What is
    /// parked on a partition whose state changed looks at it again.
    fn write_isrs(&self, changes: Vec<(Arc<Partition>, IsrChange)>) {
        let groups: Vec<&[(Arc<Partition>, IsrChange)]> = changes.chunks(WRITE_BATCH).collect();
        let results = pipeline::map(&groups, |group| self.write_isr_group(group));
        let mut announced = Vec::new();
        for (group, written) in groups.iter().zip(results) {
            for ((p, c), w) in group.iter().zip(written) {
                let (state_changed, announce) = self.apply_isr_write(p, c, w);
                if state_changed {
                    p.watchers.wake_all();
                }
                if announce {
                    announced.push(paths::PartitionRef {
                        topic: p.topic.clone(),
                        partition: p.partition,
                    });
                }
            }
        }
        for some in announced.chunks(NOTIFY_BATCH) {
            if let Err(e) = paths::notify_isr_change(&self.zk, some.to_vec()) {
                log::warn!(
                    "[Broker {}] cannot announce the ISR change of {} partition(s) (metadata will lag): {e:?}",
                    self.broker_id,
                    some.len()
                );
            }
        }
    }

    /// One transaction of ISR writes: each partition's new zk version, or its own error.
    fn write_isr_group(&self, group: &[(Arc<Partition>, IsrChange)]) -> Vec<ZkResult<i32>> {
        let states: Vec<LeaderAndIsr> =
            group.iter().map(|(_, c)| c.state(self.broker_id)).collect();
        let writes: Vec<_> = group
            .iter()
            .zip(&states)
            .map(|((p, c), l)| (p.topic.as_str(), p.partition, l, c.zk_version))
            .collect();
        match paths::write_leader_and_isr_all(&self.zk, &writes) {
            Ok(Ok(versions)) => versions.into_iter().map(Ok).collect(),
            Ok(Err(_)) if group.len() > 1 => group
                .iter()
                .zip(&states)
                .map(|((p, c), l)| {
                    paths::write_leader_and_isr(
                        &self.zk,
                        &p.topic,
                        p.partition,
                        l,
                        Some(c.zk_version),
                    )
                })
                .collect(),
            Ok(Err((_, e))) | Err(e) => group.iter().map(|_| Err(e)).collect(),
        }
    }

    /// Applies the outcome of one partition's ISR write, unless the controller's command
    /// changed the partition meanwhile (its state wins). Losing the conditional write means
    /// the controller has moved on (spec question 6: it fences the old leader), so we stop
    /// acting as leader until it tells us our role. Returns (our state changed, the change is
    /// to be announced).
    fn apply_isr_write(
        &self,
        p: &Partition,
        c: &IsrChange,
        written: ZkResult<i32>,
    ) -> (bool, bool) {
        let tag = format!("[Broker {} {}-{}]", self.broker_id, p.topic, p.partition);
        let mut st = p.lock();
        st.pending_isr = None;
        if st.role != Role::Leader
            || st.leader_epoch != c.leader_epoch
            || st.zk_version != c.zk_version
        {
            log::info!(
                "{tag} the controller changed the partition while its ISR was written ({}); its state stands",
                c.why
            );
            return (false, false);
        }
        match written {
            Ok(v) => {
                let m = &self.metrics;
                if c.isr.len() < st.isr.len() {
                    m.isr_shrinks.inc();
                } else {
                    m.isr_expands.inc();
                }
                log::info!(
                    "{tag} ISR {:?} -> {:?} ({}); zk version {v}",
                    st.isr,
                    c.isr,
                    c.why
                );
                st.isr = c.isr.clone();
                st.zk_version = v;
                p.maybe_increment_high_watermark(&st);
                (true, true)
            }
            Err(ZkError::BadVersion) | Err(ZkError::NoNode) => {
                log::warn!(
                    "{tag} leaderAndISR changed since zk version {} (the controller has moved on): not changing the ISR, no longer acting as leader",
                    c.zk_version
                );
                st.role = Role::Follower(-1);
                (true, false)
            }
            Err(e) => {
                log::error!("{tag} cannot write the ISR ({}): {e:?}", c.why);
                (false, false)
            }
        }
    }
}

/// An ISR change decided under the partition's lock, with the state it was decided on.
struct IsrChange {
    isr: Vec<i32>,
    leader_epoch: i32,
    controller_epoch: i32,
    zk_version: i32,
    why: String,
}

impl IsrChange {
    /// The leaderAndISR node's new content: this leader, the new ISR, the epochs decided on.
    fn state(&self, leader: i32) -> LeaderAndIsr {
        LeaderAndIsr {
            leader,
            leader_epoch: self.leader_epoch,
            isr: self.isr.clone(),
            controller_epoch: self.controller_epoch,
        }
    }

    /// Starts a change, unless one is being written already (the next fetch or expiry check
    /// decides again on what it left).
    fn begin(st: &mut PartitionState, isr: Vec<i32>, why: String) -> Option<IsrChange> {
        if st.pending_isr.is_some() {
            return None;
        }
        st.pending_isr = Some(isr.clone());
        Some(IsrChange {
            isr,
            leader_epoch: st.leader_epoch,
            controller_epoch: st.controller_epoch,
            zk_version: st.zk_version,
            why,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn leading(isr: &[i32], follower_leos: &[(i32, i64)]) -> PartitionState {
        PartitionState {
            role: Role::Leader,
            leader_epoch: 1,
            zk_version: 1,
            controller_epoch: 1,
            isr: isr.to_vec(),
            replicas: vec![1, 2, 3],
            follower_leos: follower_leos.iter().copied().collect(),
            caught_up_at: HashMap::new(),
            pending_isr: None,
        }
    }

    /// The idempotent producer's pause test, as it went: follower 2, back from a restart,
    /// reached the high watermark (3611) and its joining the ISR was being written when
    /// follower 3 fetched up to the leader's end (3616). The high watermark must wait for 2:
    /// had it moved to 3616, 3611..3616 would be acknowledged while 2, about to be in the
    /// ISR and then elected, lacked them.
    #[test]
    fn a_follower_whose_joining_is_being_written_holds_the_high_watermark_back() {
        let mut st = leading(&[1, 3], &[(3, 3611), (2, 3611)]);
        assert_eq!(st.high_watermark_for(1, 3616), 3611);
        let change = IsrChange::begin(&mut st, vec![1, 3, 2], "replica 2 caught up".into());
        assert!(change.is_some());
        st.follower_leos.insert(3, 3616);
        assert_eq!(st.high_watermark_for(1, 3616), 3611, "moved on without 2");
        st.follower_leos.insert(2, 3616);
        assert_eq!(st.high_watermark_for(1, 3616), 3616);
        // No second change while one is written.
        assert!(IsrChange::begin(&mut st, vec![1, 2], "shrink".into()).is_none());
    }

    /// A follower that a write removes still counts until the write is done.
    #[test]
    fn a_follower_being_removed_counts_until_the_write_is_done() {
        let mut st = leading(&[1, 2, 3], &[(2, 100), (3, 50)]);
        IsrChange::begin(&mut st, vec![1, 2], "replica 3 lags".into()).unwrap();
        assert_eq!(st.high_watermark_for(1, 100), 50);
        st.pending_isr = None;
        st.isr = vec![1, 2];
        assert_eq!(st.high_watermark_for(1, 100), 100);
    }
}

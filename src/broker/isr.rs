//! The leader's ISR maintenance: a follower that has reached the high watermark rejoins; one
//! that has not caught up for `replica.lag.time.max.ms` leaves. Every change is written to the
//! leaderAndISR path conditionally on the zk version the controller gave us, and announced to
//! the controller (ISR-change notification) so every broker's metadata follows.
//!
//! A change is decided under the partition's lock and written with it released: produce,
//! fetch and the controller's commands for the partition never wait on ZooKeeper. Until the
//! write succeeds the old ISR stays in force, which is the safe side both ways (a joining
//! follower has reached the high watermark already; a leaving one holds it back a moment
//! longer).

use std::sync::Arc;
use std::time::Instant;

use crate::zk::ZkError;

use super::partition::{Partition, PartitionState, Role};
use super::replica_manager::ReplicaManager;
use crate::zk::paths::{self, LeaderAndIsr};

impl ReplicaManager {
    /// A follower fetched from `offset`: that is its log end offset (leader only). A follower
    /// outside the ISR that has reached the high watermark is added back.
    pub fn record_follower_position(&self, partition: &Partition, replica_id: i32, offset: i64) {
        let mut st = partition.lock();
        if st.role != Role::Leader || !st.replicas.contains(&replica_id) {
            return;
        }
        st.follower_leos.insert(replica_id, offset);
        let leo = partition.log.log_end_offset();
        let mut change = None;
        if !st.isr.contains(&replica_id) && offset >= partition.high_watermark() {
            let mut isr = st.isr.clone();
            isr.push(replica_id);
            change = IsrChange::begin(
                &mut st,
                isr,
                format!("replica {replica_id} caught up to {offset}"),
            );
        }
        if offset >= leo
            || !st.caught_up_at.contains_key(&replica_id) && st.isr.contains(&replica_id)
        {
            st.caught_up_at.insert(replica_id, Instant::now());
        }
        let mut changed = partition.maybe_increment_high_watermark(&st);
        drop(st);
        if let Some(c) = change {
            changed |= self.write_isr(partition, c);
        }
        if changed {
            self.notifier.notify();
        }
    }

    /// Drops from the ISR of every partition led here the followers that have not caught up
    /// for `replica.lag.time.max.ms`.
    pub fn maybe_shrink_isr(&self) {
        let parts: Vec<Arc<Partition>> = self.partitions.read().values().cloned().collect();
        let mut changed = false;
        for p in parts {
            let mut st = p.lock();
            if st.role != Role::Leader || st.isr_write_pending {
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
            let change = IsrChange::begin(&mut st, isr, why);
            drop(st);
            if let Some(c) = change {
                changed |= self.write_isr(&p, c);
            }
        }
        if changed {
            self.notifier.notify();
        }
    }

    /// Writes a new ISR to the leaderAndISR path, conditionally on the zk version the
    /// controller gave us, with no lock held; then applies it, unless the controller's
    /// command changed the partition meanwhile (its state wins). Losing the conditional write
    /// means the controller has moved on (spec question 6: it fences the old leader), so we
    /// stop acting as leader until it tells us our role. Returns true when our state changed.
    fn write_isr(&self, p: &Partition, c: IsrChange) -> bool {
        let tag = format!("[Broker {} {}-{}]", self.broker_id, p.topic, p.partition);
        let l = LeaderAndIsr {
            leader: self.broker_id,
            leader_epoch: c.leader_epoch,
            isr: c.isr.clone(),
            controller_epoch: c.controller_epoch,
        };
        let written =
            paths::write_leader_and_isr(&self.zk, &p.topic, p.partition, &l, Some(c.zk_version));
        let mut st = p.lock();
        st.isr_write_pending = false;
        if st.role != Role::Leader
            || st.leader_epoch != c.leader_epoch
            || st.zk_version != c.zk_version
        {
            log::info!(
                "{tag} the controller changed the partition while its ISR was written ({}); its state stands",
                c.why
            );
            return false;
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
                st.isr = c.isr;
                st.zk_version = v;
                p.maybe_increment_high_watermark(&st);
                drop(st);
                let changed = vec![paths::PartitionRef {
                    topic: p.topic.clone(),
                    partition: p.partition,
                }];
                if let Err(e) = paths::notify_isr_change(&self.zk, changed) {
                    log::warn!("{tag} cannot announce the ISR change (metadata will lag): {e:?}");
                }
                true
            }
            Err(ZkError::BadVersion) | Err(ZkError::NoNode) => {
                log::warn!(
                    "{tag} leaderAndISR changed since zk version {} (the controller has moved on): not changing the ISR, no longer acting as leader",
                    c.zk_version
                );
                st.role = Role::Follower(-1);
                true
            }
            Err(e) => {
                log::error!("{tag} cannot write the ISR ({}): {e:?}", c.why);
                false
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
    /// Starts a change, unless one is being written already (the next fetch or expiry check
    /// decides again on what it left).
    fn begin(st: &mut PartitionState, isr: Vec<i32>, why: String) -> Option<IsrChange> {
        if st.isr_write_pending {
            return None;
        }
        st.isr_write_pending = true;
        Some(IsrChange {
            isr,
            leader_epoch: st.leader_epoch,
            controller_epoch: st.controller_epoch,
            zk_version: st.zk_version,
            why,
        })
    }
}

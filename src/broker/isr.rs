//! The leader's ISR maintenance: a follower that has reached the high watermark rejoins; one
//! that has not caught up for `replica.lag.time.max.ms` leaves. Every change is written to the
//! leaderAndISR path conditionally on the zk version the controller gave us, and announced to
//! the controller (ISR-change notification) so every broker's metadata follows.

use std::sync::Arc;
use std::time::Instant;

use zookeeper::ZkError;

use super::partition::{Partition, PartitionState, Role};
use super::replica_manager::ReplicaManager;
use crate::zk::SessionListener;
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
        let mut changed = false;
        if !st.isr.contains(&replica_id) && offset >= partition.high_watermark() {
            let mut isr = st.isr.clone();
            isr.push(replica_id);
            changed |= self.update_isr(
                partition,
                &mut st,
                isr,
                &format!("replica {replica_id} caught up to {offset}"),
            );
        }
        if offset >= leo
            || !st.caught_up_at.contains_key(&replica_id) && st.isr.contains(&replica_id)
        {
            st.caught_up_at.insert(replica_id, Instant::now());
        }
        changed |= partition.maybe_increment_high_watermark(&st);
        drop(st);
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
            if st.role != Role::Leader {
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
            changed |= self.update_isr(
                &p,
                &mut st,
                isr,
                &format!(
                    "replicas {lagging:?} lag more than {:?}",
                    self.replica_lag_time_max
                ),
            );
            changed |= p.maybe_increment_high_watermark(&st);
        }
        if changed {
            self.notifier.notify();
        }
    }

    /// Writes a new ISR to the leaderAndISR path, conditionally on the zk version the
    /// controller gave us. Losing that race means the controller has moved on (spec question
    /// 6: it fences the old leader), so we stop acting as leader until it tells us our role.
    /// Returns true when our state changed.
    pub(super) fn update_isr(
        &self,
        p: &Partition,
        st: &mut PartitionState,
        isr: Vec<i32>,
        why: &str,
    ) -> bool {
        let tag = format!("[Broker {} {}-{}]", self.broker_id, p.topic, p.partition);
        let l = LeaderAndIsr {
            leader: self.broker_id,
            leader_epoch: st.leader_epoch,
            isr: isr.clone(),
            controller_epoch: st.controller_epoch,
        };
        match paths::write_leader_and_isr(&self.zk, &p.topic, p.partition, &l, Some(st.zk_version))
        {
            Ok(v) => {
                log::info!("{tag} ISR {:?} -> {isr:?} ({why}); zk version {v}", st.isr);
                st.isr = isr;
                st.zk_version = v;
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
                    st.zk_version
                );
                st.role = Role::Follower(-1);
                true
            }
            Err(e) => {
                log::error!("{tag} cannot write the ISR ({why}): {e:?}");
                false
            }
        }
    }
}

/// A leader that lost its ZooKeeper session cannot know it still leads: the controller may
/// have moved leadership while it could not hear. It stops acting as leader — producers get
/// NOT_LEADER_FOR_PARTITION and parked acks=all requests are released unacknowledged — until
/// the controller's next LeaderAndIsr, which a broker that registers again always gets.
/// Otherwise a follower that had not yet heard of the new leader could keep acknowledging
/// writes for it that the new leader never sees.
impl SessionListener for ReplicaManager {
    fn handle_session_lost(&self) {
        let parts: Vec<Arc<Partition>> = self.partitions.read().values().cloned().collect();
        let mut fenced = 0;
        for p in parts {
            let mut st = p.lock();
            if st.role == Role::Leader {
                st.role = Role::Follower(-1);
                fenced += 1;
            }
        }
        if fenced > 0 {
            log::warn!(
                "[Broker {}] ZooKeeper session lost: no longer acting as leader of {fenced} partitions until the controller says so",
                self.broker_id
            );
            self.notifier.notify();
        }
    }

    /// Nothing to restore: leadership comes back with the controller's LeaderAndIsr.
    fn handle_new_session(&self) {}
}

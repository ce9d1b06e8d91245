//! Spec section D step 7, `on_partitions_reassigned`, and preferred replica election.
//!
//! Reassignment of a partition from OAR to RAR, as Kafka 0.8 did it:
//! 1. AR := OAR ∪ RAR in ZooKeeper, and LeaderAndIsr (new leader epoch) to every replica of it,
//!    so the new replicas start following the leader and copying its log;
//! 2. wait until every replica of RAR is in the ISR (a data watch on the partition's
//!    leaderAndISR node re-runs this when the leader changes the ISR);
//! 3. if the leader is not in RAR, elect one from RAR ∩ ISR; the ISR drops OAR − RAR;
//! 4. StopReplica with delete to OAR − RAR;
//! 5. AR := RAR in ZooKeeper; the partition leaves `/admin/reassign_partitions` (the node is
//!    deleted when none is left).

use crate::zk::{WatchedEventType, ZkResult};

use super::channel_manager::CommandBatch;
use super::election_rules::{preferred_leader, reassigned_leader};
use super::leader_and_isr::update_in_context;
use super::{ControllerState, Event};
use crate::protocol::TopicPartition;
use crate::zk::paths::{self, Moving, PartitionList, ReassignmentRequest};

impl ControllerState {
    pub fn on_partitions_reassigned(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        let tx = self.events.clone();
        self.zk.exists_w(paths::REASSIGN_PARTITIONS, move |_| {
            let _ = tx.send(Event::ReassignPartitions);
        })?;
        let Some(req) =
            paths::read_json::<ReassignmentRequest>(&self.zk, paths::REASSIGN_PARTITIONS)?
        else {
            return Ok(());
        };
        let mut remaining = Vec::new();
        for r in &req.partitions {
            let tp = TopicPartition::new(r.topic.clone(), r.partition);
            if !self.ctx.assignments.contains_key(&tp) || r.replicas.is_empty() {
                log::warn!(
                    "[Controller {}] dropping reassignment of unknown partition {}-{}",
                    self.broker_id,
                    tp.topic,
                    tp.partition
                );
                continue;
            }
            if !self.reassign_partition(&tp, &r.replicas, batch)? {
                remaining.push(r.clone());
            }
        }
        if remaining.len() != req.partitions.len() {
            if remaining.is_empty() {
                self.zk.delete_if_exists(paths::REASSIGN_PARTITIONS)?;
            } else {
                let left = ReassignmentRequest {
                    version: 1,
                    partitions: remaining,
                };
                self.zk
                    .set_data(paths::REASSIGN_PARTITIONS, paths::to_json(&left), None)?;
            }
        }
        Ok(())
    }

    /// Moves one partition's replicas to `rar`; true when finished.
    fn reassign_partition(
        &mut self,
        tp: &TopicPartition,
        rar: &[i32],
        batch: &mut CommandBatch,
    ) -> ZkResult<bool> {
        let oar = self.ctx.assignments[tp].clone();
        // Nothing to do unless a move is under way: a move that only adds replicas has
        // AR = OAR ∪ RAR = RAR from step 1 on, and is done only once they are in the ISR.
        if oar == rar && !self.ctx.reassigning.contains_key(tp) {
            return Ok(true);
        }
        // Watch before reading: an ISR change between the read and a later watch would be
        // missed, and the reassignment would wait forever.
        let tx = self.events.clone();
        self.zk.exists_w(
            &paths::leader_and_isr_path(&tp.topic, tp.partition),
            move |ev| {
                if ev.event_type == WatchedEventType::NodeDataChanged {
                    let _ = tx.send(Event::ReassignPartitions);
                }
            },
        )?;
        super::leader_and_isr::refresh(&self.zk, &mut self.ctx, std::slice::from_ref(tp))?;
        let isr = self
            .ctx
            .leaders
            .get(tp)
            .map(|(l, _)| l.isr.clone())
            .unwrap_or_default();
        let all_in_isr = rar.iter().all(|r| isr.contains(r));
        if !all_in_isr {
            // step 1: AR := OAR ∪ RAR, and every replica hears of it. What the reassignment adds
            // and removes is counted from the replicas before any reassignment began, so a
            // partition moved again mid-way still knows its original replicas (KIP-455).
            let mut union_ordered: Vec<i32> = oar.clone();
            union_ordered.extend(rar.iter().filter(|r| !oar.contains(r)));
            let moving = moving_from(&original_replicas(&oar, self.ctx.reassigning.get(tp)), rar);
            if self.ctx.assignments[tp] != union_ordered
                || self.ctx.reassigning.get(tp) != Some(&moving)
            {
                self.ctx
                    .assignments
                    .insert(tp.clone(), union_ordered.clone());
                self.ctx.reassigning.insert(tp.clone(), moving);
                self.write_assignment(&tp.topic)?;
                update_in_context(&self.zk, &mut self.ctx, tp, |cur| {
                    Some((cur.leader, cur.isr.clone()))
                })?;
                batch.leader_and_isr(&self.ctx, &union_ordered, tp);
                log::info!(
                    "[Controller {}] reassigning {}-{}: {oar:?} -> {rar:?}, waiting for {rar:?} to join the ISR",
                    self.broker_id,
                    tp.topic,
                    tp.partition
                );
            }
            // step 2: wait for the ISR (the watch set above fires on the leader's ISR write).
            return Ok(false);
        }
        // step 3: a leader from RAR; the ISR keeps only RAR.
        let eligible = self.ctx.eligible_brokers();
        let rar_v = rar.to_vec();
        let written = update_in_context(&self.zk, &mut self.ctx, tp, |cur| {
            let isr: Vec<i32> = cur
                .isr
                .iter()
                .copied()
                .filter(|r| rar_v.contains(r))
                .collect();
            let leader = if rar_v.contains(&cur.leader) && eligible.contains(&cur.leader) {
                cur.leader
            } else {
                reassigned_leader(&rar_v, &cur.isr, |r| eligible.contains(&r))?
            };
            Some((leader, isr))
        })?;
        if !written {
            return Ok(false);
        }
        // step 4: the replicas leaving stop and delete their copy.
        for old in oar.iter().filter(|r| !rar.contains(r)) {
            if self.ctx.is_live(*old) {
                batch.stop_replica(*old, true, tp);
            }
        }
        // step 5: AR := RAR.
        self.ctx.assignments.insert(tp.clone(), rar.to_vec());
        self.ctx.reassigning.remove(tp);
        self.write_assignment(&tp.topic)?;
        batch.leader_and_isr(&self.ctx, rar, tp);
        log::info!(
            "[Controller {}] reassignment of {}-{} to {rar:?} complete",
            self.broker_id,
            tp.topic,
            tp.partition
        );
        Ok(true)
    }

    /// Writes a topic's node from the context: its assignment and its reassignments in
    /// progress.
    pub(super) fn write_assignment(&self, topic: &str) -> ZkResult<()> {
        let of_topic = |tp: &TopicPartition| tp.topic == topic;
        let replicas = paths::TopicReplicas {
            assignment: (self.ctx.assignments.iter())
                .filter(|(tp, _)| of_topic(tp))
                .map(|(tp, ar)| (tp.partition, ar.clone()))
                .collect(),
            moving: (self.ctx.reassigning.iter())
                .filter(|(tp, _)| of_topic(tp))
                .map(|(tp, m)| (tp.partition, m.clone()))
                .collect(),
        };
        paths::write_topic_replicas(&self.zk, topic, &replicas)
    }

    /// `/admin/preferred_replica_election`: move leadership back to each partition's first
    /// assigned replica when it is live and in the ISR; the node is deleted when done.
    pub fn on_preferred_replica_election(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        let tx = self.events.clone();
        self.zk
            .exists_w(paths::PREFERRED_REPLICA_ELECTION, move |_| {
                let _ = tx.send(Event::PreferredReplicaElection);
            })?;
        let Some(req) =
            paths::read_json::<PartitionList>(&self.zk, paths::PREFERRED_REPLICA_ELECTION)?
        else {
            return Ok(());
        };
        let eligible = self.ctx.eligible_brokers();
        for p in &req.partitions {
            let tp = TopicPartition::new(p.topic.clone(), p.partition);
            let Some(ar) = self.ctx.assignments.get(&tp).cloned() else {
                continue;
            };
            let written = update_in_context(&self.zk, &mut self.ctx, &tp, |cur| {
                let preferred = preferred_leader(&ar, &cur.isr, |r| eligible.contains(&r))?;
                (preferred != cur.leader).then(|| (preferred, cur.isr.clone()))
            })?;
            if written {
                batch.leader_and_isr(&self.ctx, &ar, &tp);
            }
        }
        self.zk.delete_if_exists(paths::PREFERRED_REPLICA_ELECTION)
    }
}

/// The replicas a partition had before any reassignment began: its AR without what a
/// reassignment in progress added.
pub fn original_replicas(ar: &[i32], moving: Option<&Moving>) -> Vec<i32> {
    let added = moving.map_or(&[][..], |m| &m.adding[..]);
    ar.iter().copied().filter(|r| !added.contains(r)).collect()
}

/// What moving from `original` to `target` adds and removes.
pub fn moving_from(original: &[i32], target: &[i32]) -> Moving {
    Moving {
        adding: target
            .iter()
            .copied()
            .filter(|r| !original.contains(r))
            .collect(),
        removing: original
            .iter()
            .copied()
            .filter(|r| !target.contains(r))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_moved_again_mid_way_keeps_its_original_replicas() {
        let first = moving_from(&[1, 2], &[2, 3]);
        assert_eq!(
            (first.adding.as_slice(), first.removing.as_slice()),
            (&[3][..], &[1][..])
        );
        // AR is now [1, 2, 3]; retargeted to [2, 4]: 3 is no longer added, 4 is.
        let original = original_replicas(&[1, 2, 3], Some(&first));
        assert_eq!(original, [1, 2]);
        let again = moving_from(&original, &[2, 4]);
        assert_eq!(
            (again.adding.as_slice(), again.removing.as_slice()),
            (&[4][..], &[1][..])
        );
    }
}

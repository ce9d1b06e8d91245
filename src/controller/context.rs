//! `ControllerContext`: what the controller knows, read from ZooKeeper on failover and kept up
//! to date by its own writes. Only the controller's event thread touches it.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::controller::{PartitionState, TopicPartitionState};
use crate::protocol::{BrokerEndPoints, BrokerInfo};
use crate::zk::paths::LeaderAndIsr;

use crate::protocol::TopicPartition;

/// Brokers that joined and left between two registrations snapshots (id → session). A broker
/// whose session changed restarted in between: it both left and joined.
pub fn broker_changes(
    before: &BTreeMap<i32, i64>,
    now: &BTreeMap<i32, i64>,
) -> (Vec<i32>, Vec<i32>) {
    let joined = now
        .iter()
        .filter(|(id, s)| before.get(id) != Some(s))
        .map(|(id, _)| *id)
        .collect();
    let left = before
        .iter()
        .filter(|(id, s)| now.get(id) != Some(s))
        .map(|(id, _)| *id)
        .collect();
    (joined, left)
}

#[derive(Default)]
pub struct ControllerContext {
    /// This controller's epoch, carried by every command it sends.
    pub epoch: i32,
    /// The ZooKeeper session that won the election: leaderAndISR nodes are written only while
    /// it is still the client's session (`leader_and_isr::in_session`).
    pub session: i64,
    /// Each live broker as reached on the inter-broker listener (for the controller's own
    /// connections and LeaderAndIsr's leaders).
    pub live_brokers: BTreeMap<i32, BrokerInfo>,
    /// Each live broker's endpoints on every listener (for UpdateMetadata).
    pub endpoints: BTreeMap<i32, BrokerEndPoints>,
    /// The ZooKeeper session of each live broker's registration, to notice a restart that
    /// happened between two reads of `/brokers/ids`.
    pub broker_sessions: BTreeMap<i32, i64>,
    /// Brokers in controlled shutdown: never chosen as leader again.
    pub shutting_down: BTreeSet<i32>,
    /// Assigned replicas (AR) of every partition.
    pub assignments: BTreeMap<TopicPartition, Vec<i32>>,
    /// The reassignments in progress: what each adds to and removes from its original
    /// replicas (the topic node's `adding_replicas` / `removing_replicas`).
    pub reassigning: BTreeMap<TopicPartition, crate::zk::paths::Moving>,
    /// The leaderAndISR of every partition that has one, with its zk version.
    pub leaders: BTreeMap<TopicPartition, (LeaderAndIsr, i32)>,
}

impl ControllerContext {
    /// Live and not shutting down: eligible to lead.
    pub fn is_eligible(&self, id: i32) -> bool {
        self.live_brokers.contains_key(&id) && !self.shutting_down.contains(&id)
    }

    /// Every broker that may be chosen as leader now.
    pub fn eligible_brokers(&self) -> BTreeSet<i32> {
        self.live_brokers
            .keys()
            .copied()
            .filter(|id| !self.shutting_down.contains(id))
            .collect()
    }

    pub fn is_live(&self, id: i32) -> bool {
        self.live_brokers.contains_key(&id)
    }

    pub fn topics(&self) -> BTreeSet<String> {
        self.assignments
            .keys()
            .map(|TopicPartition { topic: t, .. }| t.clone())
            .collect()
    }

    pub fn partitions_of(&self, topic: &str) -> Vec<TopicPartition> {
        self.assignments
            .keys()
            .filter(|TopicPartition { topic: t, .. }| t == topic)
            .cloned()
            .collect()
    }

    /// The assigned replicas of `tps` (a copy, for work that runs beside the context).
    pub fn assignments_of(
        &self,
        tps: &[TopicPartition],
    ) -> std::collections::HashMap<TopicPartition, Vec<i32>> {
        tps.iter()
            .map(|tp| {
                let ar = self.assignments.get(tp).cloned().unwrap_or_default();
                (tp.clone(), ar)
            })
            .collect()
    }

    /// Partitions with a replica on broker `id`.
    pub fn partitions_on(&self, id: i32) -> Vec<TopicPartition> {
        self.assignments
            .iter()
            .filter(|(_, ar)| ar.contains(&id))
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// The state a LeaderAndIsr or UpdateMetadata command carries for `tp`.
    pub fn partition_state(&self, tp: &TopicPartition) -> Option<TopicPartitionState> {
        let (l, version) = self.leaders.get(tp)?;
        Some(TopicPartitionState {
            topic: tp.topic.clone(),
            partition: tp.partition,
            state: PartitionState {
                controller_epoch: l.controller_epoch,
                leader: l.leader,
                leader_epoch: l.leader_epoch,
                isr: l.isr.clone(),
                zk_version: *version,
                replicas: self.assignments.get(tp).cloned().unwrap_or_default(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::broker_changes;
    use std::collections::BTreeMap;

    #[test]
    fn a_bounced_broker_both_leaves_and_joins() {
        let before: BTreeMap<i32, i64> = [(1, 10), (2, 20), (3, 30)].into();
        let now: BTreeMap<i32, i64> = [(1, 10), (3, 31), (4, 40)].into();
        let (joined, left) = broker_changes(&before, &now);
        assert_eq!(joined, vec![3, 4]);
        assert_eq!(left, vec![2, 3]);
        assert_eq!(broker_changes(&now, &now), (vec![], vec![]));
    }
}

//! Spec section A, `on_broker_change`: brokers came or went.

use std::collections::BTreeMap;

use crate::zk::ZkResult;

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::context::broker_changes;
use super::election_rules::{Election, offline_partition_leader};
use super::leader_and_isr::{refresh, update_many_in_context};
use super::topic_change::init_leaders;
use crate::protocol::TopicPartition;
use crate::protocol::{BrokerEndPoints, BrokerInfo};
use crate::zk::paths;

impl ControllerState {
    /// Spec A, steps 1–4, plus what a returning broker needs: LeaderAndIsr for every partition
    /// it hosts, and a leader for offline partitions it can now lead.
    pub fn on_broker_change(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        // step 1: the current live brokers from BrokerPath (re-installing the watch).
        let live = self.read_live_brokers()?;
        let now: BTreeMap<i32, i64> = live.iter().map(|(b, _, s)| (b.id, *s)).collect();
        let (joined, left) = broker_changes(&self.ctx.broker_sessions, &now);
        for id in &left {
            self.channels.remove_broker(*id);
            self.ctx.shutting_down.remove(id);
        }
        self.ctx.broker_sessions = now;
        self.ctx.endpoints = live.iter().map(|(b, e, _)| (b.id, e.clone())).collect();
        self.ctx.live_brokers = live.into_iter().map(|(b, _, _)| (b.id, b)).collect();
        for id in &joined {
            let b = self.ctx.live_brokers[id].clone();
            self.channels.add_broker(&b);
        }
        if !joined.is_empty() || !left.is_empty() {
            log::info!(
                "[Controller {} epoch {}] brokers joined {joined:?}, left {left:?}",
                self.broker_id,
                self.ctx.epoch
            );
        }
        // A returning broker first learns the state of every partition it hosts.
        for id in &joined {
            let hosted = self.ctx.partitions_on(*id);
            refresh(&self.zk, &mut self.ctx, &hosted)?;
            for tp in &hosted {
                batch.leader_and_isr(&self.ctx, &[*id], tp);
            }
        }
        // step 2: set_p, the partitions whose leader is not live (or that have none).
        let set_p: Vec<TopicPartition> = self
            .ctx
            .leaders
            .iter()
            .filter(|(_, (l, _))| !self.ctx.is_live(l.leader))
            .map(|(tp, _)| tp.clone())
            .collect();
        let never_led: Vec<TopicPartition> = self
            .ctx
            .leaders
            .iter()
            .filter(|(_, (l, _))| l.leader == -1 && l.isr.is_empty())
            .map(|(tp, _)| tp.clone())
            .collect();
        // step 3: elect each (3.1–3.3 in update_leader_and_isr), their ZooKeeper requests
        // pipelined.
        let unclean = self.unclean_leader_election;
        let eligible = self.ctx.eligible_brokers();
        let to_elect: Vec<TopicPartition> = set_p
            .into_iter()
            .filter(|tp| !never_led.contains(tp))
            .collect();
        let assignments = self.ctx.assignments_of(&to_elect);
        update_many_in_context(&self.zk, &mut self.ctx, &to_elect, |tp, cur| {
            if eligible.contains(&cur.leader) {
                return None; // re-read at 3.1: the leader is live after all
            }
            let ar = &assignments[tp];
            match offline_partition_leader(ar, &cur.isr, |r| eligible.contains(&r), unclean) {
                Election::Leader { leader, isr } => Some((leader, isr)),
                Election::NoLeader { isr } if cur.leader != -1 => Some((-1, isr)),
                Election::NoLeader { .. } => None,
            }
        })?;
        // step 4: LeaderAndIsr to the affected brokers.
        for tp in &to_elect {
            batch.leader_and_isr(&self.ctx, &assignments[tp], tp);
        }
        // Partitions created while none of their replicas was live get a first leader now.
        init_leaders(self, &never_led, batch)?;
        // Kafka's addition to the spec: a dead follower leaves the ISR of partitions whose
        // leader lives, so acks=all producers are not held up by a replica that is gone.
        self.remove_dead_replicas_from_isr(&left, batch)?;
        batch.update_metadata();
        Ok(())
    }

    fn remove_dead_replicas_from_isr(
        &mut self,
        left: &[i32],
        batch: &mut CommandBatch,
    ) -> ZkResult<()> {
        if left.is_empty() {
            return Ok(());
        }
        let affected: Vec<TopicPartition> = self
            .ctx
            .leaders
            .iter()
            .filter(|(_, (l, _))| {
                self.ctx.is_live(l.leader) && l.isr.iter().any(|r| left.contains(r))
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        let live = self.ctx.live_brokers.clone();
        let results = update_many_in_context(&self.zk, &mut self.ctx, &affected, |_, cur| {
            let isr: Vec<i32> = cur
                .isr
                .iter()
                .copied()
                .filter(|r| live.contains_key(r))
                .collect();
            (isr.len() < cur.isr.len() && live.contains_key(&cur.leader))
                .then_some((cur.leader, isr))
        })?;
        for (tp, r) in affected.iter().zip(results) {
            if r.is_some_and(|(_, written)| written) {
                let ar = self.ctx.assignments.get(tp).cloned().unwrap_or_default();
                batch.leader_and_isr(&self.ctx, &ar, tp);
            }
        }
        Ok(())
    }

    /// Reads `/brokers/ids` (each broker as reached on the inter-broker listener, with all its
    /// endpoints and its registration's session) and re-installs the child watch that feeds
    /// BrokerChange events. A broker without that listener cannot be reached by its peers: it
    /// is left out, with a warning (every broker must name the same inter-broker listener).
    pub fn read_live_brokers(&self) -> ZkResult<Vec<(BrokerInfo, BrokerEndPoints, i64)>> {
        let tx = self.events.clone();
        let _ = self.zk.ensure_path(paths::BROKER_IDS);
        self.zk.get_children_w(paths::BROKER_IDS, move |_| {
            let _ = tx.send(super::Event::BrokerChange);
        })?;
        let listener = &self.inter_broker_listener;
        Ok(paths::live_broker_registrations(&self.zk)?
            .into_iter()
            .filter_map(|(e, session)| match e.on(listener) {
                Some(b) => Some((b, e, session)),
                None => {
                    log::warn!(
                        "[Controller {} epoch {}] broker {} registered no {listener} listener (inter.broker.listener.name); it is left out",
                        self.broker_id,
                        self.ctx.epoch,
                        e.id
                    );
                    None
                }
            })
            .collect())
    }
}

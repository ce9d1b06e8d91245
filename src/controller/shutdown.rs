//! Controlled shutdown (api key 7): a broker about to stop asks the controller to move the
//! leadership of its partitions to other ISR members and to take it out of their ISRs, so
//! clients see no offline window.

use std::collections::HashSet;

use crate::zk::ZkResult;

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::election_rules::{Election, controlled_shutdown_leader};
use super::leader_and_isr::update_many_in_context;
use crate::protocol::TopicPartition;

impl ControllerState {
    /// Returns the partitions `leaving` still leads (no other live ISR member to take over).
    pub fn on_controlled_shutdown(
        &mut self,
        leaving: i32,
        batch: &mut CommandBatch,
    ) -> ZkResult<Option<Vec<TopicPartition>>> {
        if !self.ctx.is_live(leaving) {
            return Ok(None);
        }
        self.ctx.shutting_down.insert(leaving);
        let eligible = self.ctx.eligible_brokers();
        let hosted = self.ctx.partitions_on(leaving);
        let assignments = self.ctx.assignments_of(&hosted);
        let decide = |tp: &TopicPartition, cur: &crate::zk::paths::LeaderAndIsr| {
            if cur.leader == leaving {
                let ar = &assignments[tp];
                match controlled_shutdown_leader(ar, &cur.isr, |r| eligible.contains(&r), leaving) {
                    Some(Election::Leader { leader, isr }) => Some((leader, isr)),
                    _ => None, // no other live ISR member: it keeps leading
                }
            } else if cur.isr.contains(&leaving) && cur.isr.len() > 1 {
                Some((
                    cur.leader,
                    cur.isr.iter().copied().filter(|r| *r != leaving).collect(),
                ))
            } else {
                None
            }
        };
        // The partitions it leads first, their commands sent at once: they answer elsewhere
        // without waiting for the ISR removals of the (usually twice as many) partitions it
        // only follows. Who leads is taken from the controller's copy; `decide` reads the
        // node's state either way, so a stale copy only changes which round does the work.
        let (led, followed): (Vec<TopicPartition>, Vec<TopicPartition>) =
            hosted.iter().cloned().partition(|tp| {
                self.ctx
                    .leaders
                    .get(tp)
                    .is_some_and(|(l, _)| l.leader == leaving)
            });
        // What it only follows stops before it leaves those ISRs (sent with the first round):
        // a fetch arriving after the removal would take it back in — thousands of ISR writes,
        // and acks=all waiting on a broker about to go. Only where the controller's copy names
        // another leader: a partition it may still lead keeps being served until moved.
        let stopped_early: HashSet<TopicPartition> = followed
            .iter()
            .filter(|tp| self.ctx.leaders.contains_key(*tp))
            .cloned()
            .collect();
        let mut remaining = Vec::new();
        for (round, tps) in [led, followed].into_iter().enumerate() {
            // Every partition's leaderAndISR of the round updated at once (batched).
            let results = update_many_in_context(&self.zk, &mut self.ctx, &tps, decide)?;
            for (tp, r) in tps.iter().zip(results) {
                let leads = r.as_ref().is_some_and(|(l, _)| l.leader == leaving);
                if leads {
                    remaining.push(tp.clone());
                    continue;
                }
                // The leaving broker is told to stop, not to follow the new state.
                if r.is_some_and(|(_, written)| written) {
                    let others: Vec<i32> = assignments[tp]
                        .iter()
                        .copied()
                        .filter(|b| *b != leaving)
                        .collect();
                    batch.leader_and_isr(&self.ctx, &others, tp);
                }
                if !stopped_early.contains(tp) {
                    batch.stop_replica(leaving, false, tp);
                }
            }
            if round == 0 {
                for tp in &stopped_early {
                    batch.stop_replica(leaving, false, tp);
                }
                std::mem::take(batch).send(&self.ctx, &self.channels, self.broker_id);
            }
        }
        batch.update_metadata();
        log::info!(
            "[Controller {} epoch {}] controlled shutdown of broker {leaving}: {} partition(s) still led by it",
            self.broker_id,
            self.ctx.epoch,
            remaining.len()
        );
        Ok(Some(remaining))
    }
}

//! Controlled shutdown (api key 7): a broker about to stop asks the controller to move the
//! leadership of its partitions to other ISR members and to take it out of their ISRs, so
//! clients see no offline window.

use crate::zk::ZkResult;

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::context::TopicPartition;
use super::election_rules::{Election, controlled_shutdown_leader};
use super::leader_and_isr::update_many_in_context;

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
        let mut remaining = Vec::new();
        for (round, tps) in [led, followed].into_iter().enumerate() {
            // Every partition's leaderAndISR of the round updated at once (pipelined).
            let results = update_many_in_context(&self.zk, &mut self.ctx, &tps, decide)?;
            for (tp, r) in tps.iter().zip(results) {
                let leads = r.as_ref().is_some_and(|(l, _)| l.leader == leaving);
                if leads {
                    remaining.push(tp.clone());
                }
                if r.is_some_and(|(_, written)| written) {
                    batch.leader_and_isr(&self.ctx, &assignments[tp], tp);
                }
                // A follower that keeps fetching would be taken back into the ISR by its leader.
                if !leads {
                    batch.stop_replica(leaving, false, tp);
                }
            }
            if round == 0 {
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

//! Controlled shutdown (api key 7): a broker about to stop asks the controller to move the
//! leadership of its partitions to other ISR members and to take it out of their ISRs, so
//! clients see no offline window.

use zookeeper::ZkResult;

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
        // Every partition's leaderAndISR updated at once (pipelined).
        let results = update_many_in_context(&self.zk, &mut self.ctx, &hosted, |tp, cur| {
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
        })?;
        let mut remaining = Vec::new();
        for (tp, r) in hosted.iter().zip(results) {
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

//! Controlled shutdown (api key 7): a broker about to stop asks the controller to move the
//! leadership of its partitions to other ISR members and to take it out of their ISRs, so
//! clients see no offline window.

use zookeeper::ZkResult;

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::context::TopicPartition;
use super::election_rules::{Election, controlled_shutdown_leader};
use super::leader_and_isr::update_in_context;

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
        let mut remaining = Vec::new();
        for tp in self.ctx.partitions_on(leaving) {
            let ar = self.ctx.assignments[&tp].clone();
            let mut still_leads = false;
            let written = update_in_context(&self.zk, &mut self.ctx, &tp, |cur| {
                still_leads = false;
                if cur.leader == leaving {
                    match controlled_shutdown_leader(
                        &ar,
                        &cur.isr,
                        |r| eligible.contains(&r),
                        leaving,
                    ) {
                        Some(Election::Leader { leader, isr }) => Some((leader, isr)),
                        _ => {
                            still_leads = true;
                            None
                        }
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
            if still_leads {
                remaining.push(tp.clone());
            }
            if written {
                batch.leader_and_isr(&self.ctx, &ar, &tp);
            }
            // A follower that keeps fetching would be taken back into the ISR by its leader.
            let leads = self
                .ctx
                .leaders
                .get(&tp)
                .is_some_and(|(l, _)| l.leader == leaving);
            if !leads {
                batch.stop_replica(leaving, false, &tp);
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

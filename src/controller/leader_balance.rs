//! Kafka's automatic leader rebalance (`auto.leader.rebalance.enable`): every
//! `leader.imbalance.check.interval.seconds` the controller counts, for each broker, the
//! partitions whose preferred replica (the first assigned) it is but which another broker
//! leads; where that share passes `leader.imbalance.per.broker.percentage`, it runs the
//! preferred replica election for those of them it can lead (live, in the ISR, not moving).
//! So leadership returns to where the assignment put it after a broker restarts, without an
//! operator running `kafka-leader-election.sh`.

use std::collections::BTreeMap;

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::context::ControllerContext;
use super::elect_leaders::ElectionType;
use crate::protocol::TopicPartition;
use crate::zk::ZkResult;

impl ControllerState {
    /// One check, and the elections it calls for.
    pub fn on_leader_imbalance_check(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        let elect = to_give_back(&self.ctx, self.leader_balance.imbalance_percentage);
        if !elect.is_empty() {
            log::info!(
                "[Controller {}] leader imbalance: electing the preferred replicas of {} partitions",
                self.broker_id,
                elect.len()
            );
            self.on_elect_leaders(ElectionType::Preferred, Some(elect), batch)?;
        }
        Ok(())
    }
}

/// The partitions to give back to their preferred replica: of each eligible broker whose
/// share of preferred partitions led by others passes `percentage`, those it can lead now (it
/// is in their ISR) and that are not moving.
pub fn to_give_back(ctx: &ControllerContext, percentage: u32) -> Vec<TopicPartition> {
    let mut preferred_by: BTreeMap<i32, Vec<&TopicPartition>> = BTreeMap::new();
    for (tp, ar) in &ctx.assignments {
        if let Some(&p) = ar.first() {
            preferred_by.entry(p).or_default().push(tp);
        }
    }
    let mut out = Vec::new();
    for (broker, tps) in preferred_by {
        if !ctx.is_eligible(broker) {
            continue;
        }
        let state = |tp: &TopicPartition| ctx.leaders.get(tp).map(|(l, _)| l);
        let led_elsewhere: Vec<&TopicPartition> = (tps.iter().copied())
            .filter(|tp| state(tp).is_none_or(|l| l.leader != broker))
            .collect();
        if led_elsewhere.len() * 100 <= percentage as usize * tps.len() {
            continue;
        }
        out.extend(
            led_elsewhere
                .into_iter()
                .filter(|tp| state(tp).is_some_and(|l| l.isr.contains(&broker)))
                .filter(|tp| !ctx.reassigning.contains_key(*tp))
                .cloned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::BrokerInfo;
    use crate::zk::paths::{LeaderAndIsr, Moving};

    fn cluster(parts: &[(&str, &[i32], i32, &[i32])]) -> ControllerContext {
        let mut ctx = ControllerContext::default();
        for id in [1, 2, 3] {
            let b = BrokerInfo {
                id,
                host: "h".into(),
                port: 1,
            };
            ctx.live_brokers.insert(id, b);
        }
        for (name, ar, leader, isr) in parts {
            let tp = TopicPartition::new(name.to_string(), 0);
            ctx.assignments.insert(tp.clone(), ar.to_vec());
            let l = LeaderAndIsr {
                leader: *leader,
                leader_epoch: 1,
                isr: isr.to_vec(),
                controller_epoch: 1,
            };
            ctx.leaders.insert(tp, (l, 0));
        }
        ctx
    }

    fn names(tps: Vec<TopicPartition>) -> Vec<String> {
        tps.into_iter().map(|tp| tp.topic).collect()
    }

    #[test]
    fn over_the_threshold_the_partitions_its_preferred_replica_can_lead_go_back() {
        // Broker 1 is preferred for a, b, c, d; others lead a, b, c (75 %).
        let ctx = cluster(&[
            ("a", &[1, 2], 2, &[2, 1]),
            ("b", &[1, 2], 2, &[2, 1]),
            ("c", &[1, 2], 2, &[2]),
            ("d", &[1, 2], 1, &[1, 2]),
            ("e", &[2, 1], 2, &[2, 1]),
        ]);
        // c: broker 1 is not in its ISR.
        assert_eq!(names(to_give_back(&ctx, 10)), ["a", "b"]);
        assert_eq!(names(to_give_back(&ctx, 74)), ["a", "b"]);
        assert!(to_give_back(&ctx, 75).is_empty(), "75 % is not over 75 %");
    }

    #[test]
    fn a_broker_shutting_down_or_a_moving_partition_is_left_alone() {
        let mut ctx = cluster(&[("a", &[1, 2], 2, &[2, 1]), ("b", &[3, 2], 2, &[2, 3])]);
        ctx.shutting_down.insert(1);
        let moving = Moving {
            adding: vec![3],
            removing: vec![],
        };
        ctx.reassigning
            .insert(TopicPartition::new("b".to_string(), 0), moving);
        assert!(to_give_back(&ctx, 10).is_empty());
    }
}

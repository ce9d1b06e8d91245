//! ElectLeaders on the controller (KIP-183, KIP-460): the API form of the preferred replica
//! election (`/admin/preferred_replica_election`), answered per partition once the new
//! leaderAndISR is written and the LeaderAndIsr commands are on their way, and the unclean
//! election of a partition whose leader is gone, which the operator asks for knowingly
//! whatever `unclean.leader.election.enable` says.

use crossbeam_channel::Sender;

use super::channel_manager::CommandBatch;
use super::election_rules::{Election, offline_partition_leader, preferred_leader};
use super::leader_and_isr::update_many_in_context;
use super::{ControllerState, PartitionOutcomes};
use crate::protocol::{ErrorCode, TopicPartition};
use crate::zk::ZkResult;

/// Which leader an ElectLeaders request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// The first assigned replica, if it is live and in the ISR.
    Preferred,
    /// For a partition whose leader is not live: a live ISR member, else any live replica.
    Unclean,
}

/// An ElectLeaders request on its way to the event thread; `None` partitions: every one.
pub struct ElectLeaders {
    pub election: ElectionType,
    pub partitions: Option<Vec<TopicPartition>>,
    /// `Err(NotController)` when this broker is no longer the controller.
    pub reply: Sender<Result<PartitionOutcomes, ErrorCode>>,
}

impl ControllerState {
    /// Elects a leader of each partition asked for where the election type calls for one.
    pub fn on_elect_leaders(
        &mut self,
        election: ElectionType,
        partitions: Option<Vec<TopicPartition>>,
        batch: &mut CommandBatch,
    ) -> ZkResult<PartitionOutcomes> {
        let asked = partitions.unwrap_or_else(|| self.ctx.assignments.keys().cloned().collect());
        let (known, unknown): (Vec<_>, Vec<_>) = asked
            .into_iter()
            .partition(|tp| self.ctx.assignments.contains_key(tp));
        let assignments = self.ctx.assignments_of(&known);
        let eligible = self.ctx.eligible_brokers();
        let states = update_many_in_context(&self.zk, &mut self.ctx, &known, |tp, cur| {
            let ar = &assignments[tp];
            let live = |r| eligible.contains(&r);
            match election {
                ElectionType::Preferred => preferred_leader(ar, &cur.isr, live)
                    .filter(|p| *p != cur.leader)
                    .map(|p| (p, cur.isr.clone())),
                ElectionType::Unclean if live(cur.leader) => None,
                ElectionType::Unclean => match offline_partition_leader(ar, &cur.isr, live, true) {
                    Election::Leader { leader, isr } => Some((leader, isr)),
                    Election::NoLeader { .. } => None,
                },
            }
        })?;
        let mut results: PartitionOutcomes = unknown
            .into_iter()
            .map(|tp| {
                let why = format!("{}-{} does not exist", tp.topic, tp.partition);
                (tp, Err((ErrorCode::UnknownTopicOrPartition, why)))
            })
            .collect();
        for (tp, state) in known.into_iter().zip(states) {
            let ar = &assignments[&tp];
            let outcome = match state {
                Some((_, true)) => {
                    batch.leader_and_isr(&self.ctx, ar, &tp);
                    Ok(())
                }
                Some((cur, false)) => Err(why_not(election, ar, &cur.isr, cur.leader, |r| {
                    eligible.contains(&r)
                })),
                None => Err((
                    ErrorCode::EligibleLeadersNotAvailable,
                    "the partition has had no leader yet".to_owned(),
                )),
            };
            results.push((tp, outcome));
        }
        log::info!(
            "[Controller {}] {election:?} election for {} partitions: {} elected",
            self.broker_id,
            results.len(),
            results.iter().filter(|(_, r)| r.is_ok()).count()
        );
        Ok(results)
    }
}

/// Why a partition got no new leader: it has the one asked for, or none qualifies.
fn why_not(
    election: ElectionType,
    ar: &[i32],
    isr: &[i32],
    leader: i32,
    live: impl Fn(i32) -> bool,
) -> (ErrorCode, String) {
    match election {
        ElectionType::Preferred if ar.first() == Some(&leader) => (
            ErrorCode::ElectionNotNeeded,
            format!("the preferred replica {leader} already leads"),
        ),
        ElectionType::Preferred => (
            ErrorCode::PreferredLeaderNotAvailable,
            format!(
                "the preferred replica {} is not live or not in the ISR {isr:?}",
                ar.first().copied().unwrap_or(-1)
            ),
        ),
        ElectionType::Unclean if live(leader) => (
            ErrorCode::ElectionNotNeeded,
            format!("broker {leader} leads and is live"),
        ),
        ElectionType::Unclean => (
            ErrorCode::EligibleLeadersNotAvailable,
            format!("no replica of {ar:?} is live"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_says_why() {
        let live = |r| r != 3;
        let code = |e, leader, isr: &[i32]| why_not(e, &[1, 2, 3], isr, leader, live).0;
        use ElectionType::*;
        assert_eq!(code(Preferred, 1, &[1, 2]), ErrorCode::ElectionNotNeeded);
        assert_eq!(
            code(Preferred, 2, &[2]),
            ErrorCode::PreferredLeaderNotAvailable
        );
        assert_eq!(code(Unclean, 2, &[2]), ErrorCode::ElectionNotNeeded);
        assert_eq!(
            code(Unclean, 3, &[3]),
            ErrorCode::EligibleLeadersNotAvailable
        );
    }
}

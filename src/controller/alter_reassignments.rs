//! AlterPartitionReassignments and ListPartitionReassignments on the controller (KIP-455), on
//! top of spec D step 7 (`reassignment`). A target joins `/admin/reassign_partitions` — the
//! node the ZooKeeper-era tools write, so both routes share one set of steps and a new
//! controller resumes either — and step 1 runs before the answer. A partition already moving
//! may be given a new target. A cancel puts the original replicas back at once: the ISR keeps
//! only them, a leader among them takes over if needed, and the replicas the move added are
//! stopped and deleted.

use crossbeam_channel::Sender;

use super::channel_manager::CommandBatch;
use super::election_rules::reassigned_leader;
use super::leader_and_isr::update_in_context;
use super::reassignment::original_replicas;
use super::{ControllerState, PartitionOutcomes};
use crate::protocol::{ErrorCode, TopicPartition};
use crate::zk::paths::{self, Moving, PartitionReassignment, ReassignmentRequest};
use crate::zk::{ZkError, ZkResult};

/// AlterPartitionReassignments on its way to the event thread.
pub struct AlterReassignments {
    /// Each partition's target replicas, or `None` to cancel its move.
    pub targets: Vec<(TopicPartition, Option<Vec<i32>>)>,
    /// KIP-860: false refuses a target with another replica count.
    pub allow_replication_factor_change: bool,
    pub reply: Sender<Result<PartitionOutcomes, ErrorCode>>,
}

/// A partition moving: its replicas now, and what the move adds and removes.
pub type Ongoing = Vec<(TopicPartition, Vec<i32>, Moving)>;

/// ListPartitionReassignments on its way to the event thread; `None`: every move.
pub struct ListReassignments {
    pub partitions: Option<Vec<TopicPartition>>,
    pub reply: Sender<Result<Ongoing, ErrorCode>>,
}

impl ControllerState {
    /// Starts, retargets or cancels each partition's move.
    pub fn on_alter_reassignments(
        &mut self,
        targets: Vec<(TopicPartition, Option<Vec<i32>>)>,
        allow_replication_factor_change: bool,
        batch: &mut CommandBatch,
    ) -> ZkResult<PartitionOutcomes> {
        let mut results = Vec::new();
        let (mut started, mut cancelled) = (Vec::new(), Vec::new());
        for (tp, target) in targets {
            let outcome = match target {
                Some(rar) => {
                    let checked = self.check_target(&tp, &rar, allow_replication_factor_change);
                    if checked.is_ok() {
                        started.push(PartitionReassignment {
                            topic: tp.topic.clone(),
                            partition: tp.partition,
                            replicas: rar,
                        });
                    }
                    checked
                }
                None => {
                    let done = self.cancel_reassignment(&tp, batch)?;
                    // A cancel that could not put the originals back leaves the move going.
                    let stopped = match &done {
                        Ok(()) => true,
                        Err((code, _)) => *code == ErrorCode::NoReassignmentInProgress,
                    };
                    if stopped {
                        cancelled.push(tp.clone());
                    }
                    done
                }
            };
            results.push((tp, outcome));
        }
        self.rewrite_pending(&started, &cancelled)?;
        if !started.is_empty() {
            self.on_partitions_reassigned(batch)?;
        }
        Ok(results)
    }

    /// The moves in progress, of the partitions asked for.
    pub fn on_list_reassignments(&self, partitions: Option<Vec<TopicPartition>>) -> Ongoing {
        let ctx = &self.ctx;
        let listed = |tp: &TopicPartition| partitions.as_ref().is_none_or(|ps| ps.contains(tp));
        ctx.reassigning
            .iter()
            .filter(|(tp, _)| listed(tp))
            .filter_map(|(tp, m)| Some((tp.clone(), ctx.assignments.get(tp)?.clone(), m.clone())))
            .collect()
    }

    /// Kafka's checks of a target: a partition that exists, some replicas, each once, each a
    /// live broker, and the same count unless the request allows another.
    fn check_target(
        &self,
        tp: &TopicPartition,
        rar: &[i32],
        allow_replication_factor_change: bool,
    ) -> Result<(), (ErrorCode, String)> {
        let bad = |m: String| Err((ErrorCode::InvalidReplicaAssignment, m));
        let Some(ar) = self.ctx.assignments.get(tp) else {
            let why = format!("{}-{} does not exist", tp.topic, tp.partition);
            return Err((ErrorCode::UnknownTopicOrPartition, why));
        };
        if rar.is_empty() {
            return bad("the target replica list is empty".into());
        }
        if let Some(r) = rar
            .iter()
            .find(|r| rar.iter().filter(|x| x == r).count() > 1)
        {
            return bad(format!("broker {r} is named twice in {rar:?}"));
        }
        if let Some(r) = rar.iter().find(|r| !self.ctx.is_live(**r)) {
            return bad(format!("broker {r} is not live"));
        }
        let original = original_replicas(ar, self.ctx.reassigning.get(tp));
        if !allow_replication_factor_change && original.len() != rar.len() {
            let why = format!(
                "{rar:?} has {} replicas where {original:?} has {}, and the request does not \
                 allow a change of replication factor",
                rar.len(),
                original.len()
            );
            return Err((ErrorCode::InvalidReplicationFactor, why));
        }
        Ok(())
    }

    /// Puts a moving partition's original replicas back.
    fn cancel_reassignment(
        &mut self,
        tp: &TopicPartition,
        batch: &mut CommandBatch,
    ) -> ZkResult<Result<(), (ErrorCode, String)>> {
        let name = format!("{}-{}", tp.topic, tp.partition);
        let Some(ar) = self.ctx.assignments.get(tp).cloned() else {
            let why = format!("{name} does not exist");
            return Ok(Err((ErrorCode::UnknownTopicOrPartition, why)));
        };
        let Some(moving) = self.ctx.reassigning.get(tp).cloned() else {
            let why = format!("{name} is not being reassigned");
            return Ok(Err((ErrorCode::NoReassignmentInProgress, why)));
        };
        let oar = original_replicas(&ar, Some(&moving));
        let eligible = self.ctx.eligible_brokers();
        let written = update_in_context(&self.zk, &mut self.ctx, tp, |cur| {
            let leader = if oar.contains(&cur.leader) && eligible.contains(&cur.leader) {
                cur.leader
            } else {
                reassigned_leader(&oar, &cur.isr, |r| eligible.contains(&r))?
            };
            let isr = cur
                .isr
                .iter()
                .copied()
                .filter(|r| oar.contains(r))
                .collect();
            Some((leader, isr))
        })?;
        if !written {
            let why = format!("no replica of {oar:?} is live and in sync to lead {name}");
            return Ok(Err((ErrorCode::InvalidReplicaAssignment, why)));
        }
        for added in moving.adding.iter().filter(|r| self.ctx.is_live(**r)) {
            batch.stop_replica(*added, true, tp);
        }
        self.ctx.assignments.insert(tp.clone(), oar.clone());
        self.ctx.reassigning.remove(tp);
        self.write_assignment(&tp.topic)?;
        batch.leader_and_isr(&self.ctx, &oar, tp);
        log::info!(
            "[Controller {}] reassignment of {name} cancelled: back to {oar:?}",
            self.broker_id
        );
        Ok(Ok(()))
    }

    /// `/admin/reassign_partitions` with the started targets in (replacing a partition's
    /// earlier one) and the cancelled partitions out; deleted when nothing is left.
    fn rewrite_pending(
        &self,
        started: &[PartitionReassignment],
        cancelled: &[TopicPartition],
    ) -> ZkResult<()> {
        if started.is_empty() && cancelled.is_empty() {
            return Ok(());
        }
        let path = paths::REASSIGN_PARTITIONS;
        loop {
            let (mut pending, version) = match self.zk.get_data(path) {
                Ok((data, stat)) => (
                    paths::from_json::<ReassignmentRequest>(path, &data)?.partitions,
                    Some(stat.version),
                ),
                Err(ZkError::NoNode) => (Vec::new(), None),
                Err(e) => return Err(e),
            };
            let replaced = |p: &PartitionReassignment| {
                let tp = TopicPartition::new(p.topic.clone(), p.partition);
                cancelled.contains(&tp)
                    || started
                        .iter()
                        .any(|s| s.topic == p.topic && s.partition == p.partition)
            };
            pending.retain(|p| !replaced(p));
            pending.extend(started.iter().cloned());
            let body = paths::to_json(&ReassignmentRequest {
                version: 1,
                partitions: pending.clone(),
            });
            let done = match (version, pending.is_empty()) {
                (None, true) => return Ok(()),
                (None, false) => self.zk.create_persistent(path, body),
                (Some(v), true) => self.zk.delete(path, Some(v)),
                (Some(v), false) => self.zk.set_data(path, body, Some(v)).map(drop),
            };
            match done {
                Ok(()) => return Ok(()),
                // Someone else wrote it meanwhile (the ZooKeeper-era tool): read it again.
                Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

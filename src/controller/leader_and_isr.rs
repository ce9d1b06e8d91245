//! The conditional write of a partition's leaderAndISR node (spec A steps 3.1–3.3), shared by
//! every state change the controller makes.

use zookeeper::{ZkError, ZkResult};

use super::context::{ControllerContext, TopicPartition};
use crate::zk::ZkClient;
use crate::zk::paths::{self, LeaderAndIsr};

/// What `update_leader_and_isr` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Written with a new leader epoch; the node's new zk version.
    Written(LeaderAndIsr, i32),
    /// `decide` chose to keep the current state.
    Unchanged(LeaderAndIsr, i32),
    /// The partition has no leaderAndISR node.
    Missing,
}

/// step 3.1: read the current leader and ISR with the node's version; step 3.2: `decide` the
/// new leader and ISR (`None` keeps them); step 3.3: write them with the leader epoch + 1,
/// conditionally on the version read — if someone wrote in between, go back to 3.1.
pub fn update_leader_and_isr(
    zk: &ZkClient,
    controller_epoch: i32,
    tp: &TopicPartition,
    mut decide: impl FnMut(&LeaderAndIsr) -> Option<(i32, Vec<i32>)>,
) -> ZkResult<Update> {
    loop {
        // step 3.1
        let Some((current, version)) = paths::leader_and_isr(zk, &tp.0, tp.1)? else {
            return Ok(Update::Missing);
        };
        // step 3.2
        let Some((leader, isr)) = decide(&current) else {
            return Ok(Update::Unchanged(current, version));
        };
        let new = LeaderAndIsr {
            leader,
            leader_epoch: current.leader_epoch + 1,
            isr,
            controller_epoch,
        };
        // step 3.3
        match paths::write_leader_and_isr(zk, &tp.0, tp.1, &new, Some(version)) {
            Ok(v) => return Ok(Update::Written(new, v)),
            Err(ZkError::BadVersion) => {
                log::info!(
                    "leaderAndISR of {}-{} changed since version {version}; reading it again",
                    tp.0,
                    tp.1
                );
            }
            Err(e) => return Err(e),
        }
    }
}

/// `update_leader_and_isr`, recording the result in the context. True when written.
pub fn update_in_context(
    zk: &ZkClient,
    ctx: &mut ControllerContext,
    tp: &TopicPartition,
    decide: impl FnMut(&LeaderAndIsr) -> Option<(i32, Vec<i32>)>,
) -> ZkResult<bool> {
    match update_leader_and_isr(zk, ctx.epoch, tp, decide)? {
        Update::Written(l, v) => {
            log::info!(
                "[Controller epoch {}] {}-{}: leader {} isr {:?} leader epoch {}",
                ctx.epoch,
                tp.0,
                tp.1,
                l.leader,
                l.isr,
                l.leader_epoch
            );
            ctx.leaders.insert(tp.clone(), (l, v));
            Ok(true)
        }
        Update::Unchanged(l, v) => {
            ctx.leaders.insert(tp.clone(), (l, v));
            Ok(false)
        }
        Update::Missing => Ok(false),
    }
}

/// Re-reads a partition's leaderAndISR into the context (the leader may have changed the ISR).
pub fn refresh(zk: &ZkClient, ctx: &mut ControllerContext, tp: &TopicPartition) -> ZkResult<()> {
    if let Some(l) = paths::leader_and_isr(zk, &tp.0, tp.1)? {
        ctx.leaders.insert(tp.clone(), l);
    }
    Ok(())
}

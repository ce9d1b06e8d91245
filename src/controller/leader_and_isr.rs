//! The conditional write of a partition's leaderAndISR node (spec A steps 3.1–3.3), shared by
//! every state change the controller makes.

use crate::zk::{ZkError, ZkResult};

use super::context::{ControllerContext, TopicPartition};
use crate::zk::paths::{self, LeaderAndIsr};
use crate::zk::{ZkClient, pipeline};

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

/// step 3.1: the current leader and ISR with the node's version; step 3.2: `decide` the new
/// leader and ISR (`None` keeps them); step 3.3: write them with the leader epoch + 1,
/// conditionally on that version — if someone wrote in between, go back to 3.1.
///
/// `known` is the state the controller last read or wrote, tried first instead of reading
/// (Kafka's controller does the same): the write is conditional on its version, so a stale
/// copy only costs a BadVersion and the read it saved. A decision to change nothing is
/// checked against a fresh read, since no write would catch a stale copy there.
pub fn update_leader_and_isr(
    zk: &ZkClient,
    (controller_epoch, session): (i32, i64),
    tp: &TopicPartition,
    mut known: Option<(LeaderAndIsr, i32)>,
    mut decide: impl FnMut(&LeaderAndIsr) -> Option<(i32, Vec<i32>)>,
) -> ZkResult<Update> {
    loop {
        // step 3.1
        let cached = known.is_some();
        let current = match known.take() {
            Some(k) => Some(k),
            None => paths::leader_and_isr(zk, &tp.0, tp.1)?,
        };
        let Some((current, version)) = current else {
            return Ok(Update::Missing);
        };
        // step 3.2
        let Some((leader, isr)) = decide(&current) else {
            if cached {
                continue; // "nothing to change" is only taken from a state just read
            }
            return Ok(Update::Unchanged(current, version));
        };
        let new = LeaderAndIsr {
            leader,
            leader_epoch: current.leader_epoch + 1,
            isr,
            controller_epoch,
        };
        // step 3.3
        in_session(zk, session)?;
        match paths::write_leader_and_isr(zk, &tp.0, tp.1, &new, Some(version)) {
            Ok(v) => return Ok(Update::Written(new, v)),
            Err(ZkError::BadVersion) => {
                log::info!(
                    "leaderAndISR of {}-{} changed since version {version}; reading it again",
                    tp.0,
                    tp.1
                );
            }
            // A node we knew of is gone (its topic was deleted): as if never there.
            Err(ZkError::NoNode) => return Ok(Update::Missing),
            Err(e) => return Err(e),
        }
    }
}

/// A controller writes only in the ZooKeeper session that elected it. Once that session is
/// lost the controller is deposed, though its event thread may be in the middle of an event
/// when it hears so; a write made then would go out in the client's next session, which does
/// not hold `/controller` (the --hosts chaos run: a controller resumed from a pause wrote an ISR
/// no broker was told of, and the partition showed under-replicated for good). Kafka closes the
/// last gap with a multi-op that checks `/controller_epoch`'s version; between this check and
/// the write the session can only change within the one request.
pub fn in_session(zk: &ZkClient, session: i64) -> ZkResult<()> {
    if zk.session_id() == session {
        Ok(())
    } else {
        Err(ZkError::SessionExpired)
    }
}

/// `update_leader_and_isr`, recording the result in the context. True when written.
pub fn update_in_context(
    zk: &ZkClient,
    ctx: &mut ControllerContext,
    tp: &TopicPartition,
    decide: impl FnMut(&LeaderAndIsr) -> Option<(i32, Vec<i32>)>,
) -> ZkResult<bool> {
    let known = ctx.leaders.get(tp).cloned();
    let u = update_leader_and_isr(zk, (ctx.epoch, ctx.session), tp, known, decide)?;
    Ok(record(ctx, tp, u))
}

/// `update_leader_and_isr` for many partitions, their ZooKeeper requests pipelined
/// (`zk::pipeline`), each result recorded in the context in the partitions' order. `decide`
/// sees each partition with its current state. Returns, per partition, the state it has now
/// and whether it was written (`None`: no leaderAndISR node).
pub fn update_many_in_context(
    zk: &ZkClient,
    ctx: &mut ControllerContext,
    tps: &[TopicPartition],
    decide: impl Fn(&TopicPartition, &LeaderAndIsr) -> Option<(i32, Vec<i32>)> + Sync,
) -> ZkResult<Vec<Option<(LeaderAndIsr, bool)>>> {
    let term = (ctx.epoch, ctx.session);
    let known: Vec<_> = tps.iter().map(|tp| ctx.leaders.get(tp).cloned()).collect();
    let work: Vec<_> = tps.iter().zip(known).collect();
    let results = pipeline::map(&work, |(tp, known)| {
        update_leader_and_isr(zk, term, tp, known.clone(), |cur| decide(tp, cur))
    });
    let mut out = Vec::with_capacity(tps.len());
    for (tp, r) in tps.iter().zip(results) {
        let u = r?;
        let state = match &u {
            Update::Written(l, _) | Update::Unchanged(l, _) => Some(l.clone()),
            Update::Missing => None,
        };
        let written = record(ctx, tp, u);
        out.push(state.map(|l| (l, written)));
    }
    Ok(out)
}

/// Keeps an update's outcome in the context; true when it was a write.
fn record(ctx: &mut ControllerContext, tp: &TopicPartition, u: Update) -> bool {
    match u {
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
            true
        }
        Update::Unchanged(l, v) => {
            ctx.leaders.insert(tp.clone(), (l, v));
            false
        }
        Update::Missing => false,
    }
}

/// The leaderAndISR nodes of many partitions, read pipelined, in their order.
pub fn read_many(
    zk: &ZkClient,
    tps: &[TopicPartition],
) -> ZkResult<Vec<Option<(LeaderAndIsr, i32)>>> {
    pipeline::map(tps, |tp| paths::leader_and_isr(zk, &tp.0, tp.1))
        .into_iter()
        .collect()
}

/// Re-reads partitions' leaderAndISR into the context (their leaders may have changed the
/// ISR), pipelined.
pub fn refresh(zk: &ZkClient, ctx: &mut ControllerContext, tps: &[TopicPartition]) -> ZkResult<()> {
    for (tp, l) in tps.iter().zip(read_many(zk, tps)?) {
        if let Some(l) = l {
            ctx.leaders.insert(tp.clone(), l);
        }
    }
    Ok(())
}

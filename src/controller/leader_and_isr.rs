//! The conditional write of a partition's leaderAndISR node (spec A steps 3.1–3.3), shared by
//! every state change the controller makes.

use crate::zk::{ZkError, ZkResult};

use super::context::ControllerContext;
use crate::protocol::TopicPartition;
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
            None => paths::leader_and_isr(zk, &tp.topic, tp.partition)?,
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
        let new = successor(&current, leader, isr, controller_epoch);
        // step 3.3
        in_session(zk, session)?;
        match paths::write_leader_and_isr(zk, &tp.topic, tp.partition, &new, Some(version)) {
            Ok(v) => return Ok(Update::Written(new, v)),
            Err(ZkError::BadVersion) => {
                log::info!(
                    "leaderAndISR of {}-{} changed since version {version}; reading it again",
                    tp.topic,
                    tp.partition
                );
            }
            // A node we knew of is gone (its topic was deleted): as if never there.
            Err(ZkError::NoNode) => return Ok(Update::Missing),
            Err(e) => return Err(e),
        }
    }
}

/// The state a decision writes: the new leader and ISR, in the next leader epoch.
fn successor(
    current: &LeaderAndIsr,
    leader: i32,
    isr: Vec<i32>,
    controller_epoch: i32,
) -> LeaderAndIsr {
    LeaderAndIsr {
        leader,
        leader_epoch: current.leader_epoch + 1,
        isr,
        controller_epoch,
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

/// `update_leader_and_isr` for many partitions, each result recorded in the context in the
/// partitions' order. `decide` sees each partition with its current state. Returns, per
/// partition, the state it has now and whether it was written (`None`: no leaderAndISR node).
pub fn update_many_in_context(
    zk: &ZkClient,
    ctx: &mut ControllerContext,
    tps: &[TopicPartition],
    decide: impl Fn(&TopicPartition, &LeaderAndIsr) -> Option<(i32, Vec<i32>)> + Sync,
) -> ZkResult<Vec<Option<(LeaderAndIsr, bool)>>> {
    let known: Vec<_> = tps.iter().map(|tp| ctx.leaders.get(tp).cloned()).collect();
    let updates = update_many(zk, (ctx.epoch, ctx.session), tps, known, decide)?;
    let mut out = Vec::with_capacity(tps.len());
    for (tp, u) in tps.iter().zip(updates) {
        let state = match &u {
            Update::Written(l, _) | Update::Unchanged(l, _) => Some(l.clone()),
            Update::Missing => None,
        };
        let written = record(ctx, tp, u);
        out.push(state.map(|l| (l, written)));
    }
    Ok(out)
}

/// Nodes per multiRead, and conditional writes per multi transaction (`zk::multi`). A
/// leaderAndISR node with its path is about 150 bytes, so either request stays far below
/// ZooKeeper's 1 MB `jute.maxbuffer`; a transaction that loses a race is redone one write at
/// a time, so writes go in smaller groups than reads.
const READ_BATCH: usize = 500;
const WRITE_BATCH: usize = 200;

/// A decided write: the partition's position, the state it replaces (with its version) and
/// the new one.
struct Decided {
    at: usize,
    current: (LeaderAndIsr, i32),
    new: LeaderAndIsr,
}

impl Decided {
    /// Step 3.2 for the partition at `at`: the write to make, or the state given back when
    /// `decide` keeps it.
    fn step_3_2(
        at: usize,
        tp: &TopicPartition,
        (cur, version): (LeaderAndIsr, i32),
        controller_epoch: i32,
        decide: &impl Fn(&TopicPartition, &LeaderAndIsr) -> Option<(i32, Vec<i32>)>,
    ) -> Result<Decided, (LeaderAndIsr, i32)> {
        match decide(tp, &cur) {
            Some((leader, isr)) => Ok(Decided {
                at,
                new: successor(&cur, leader, isr, controller_epoch),
                current: (cur, version),
            }),
            None => Err((cur, version)),
        }
    }
}

/// Spec A steps 3.1–3.3 for many partitions at once, with the ZooKeeper work batched: the
/// states the controller does not hold are read a few hundred per request, and the writes
/// made a few hundred per transaction, several requests in flight (`zk::pipeline`). What one
/// partition sees is what `update_leader_and_isr` would: a held copy is decided on without a
/// read, a "change nothing" from one is checked against a fresh read, and a transaction
/// refused because one of its writes lost a race is redone partition by partition, which reads
/// again where a version moved.
pub fn update_many(
    zk: &ZkClient,
    term: (i32, i64),
    tps: &[TopicPartition],
    known: Vec<Option<(LeaderAndIsr, i32)>>,
    decide: impl Fn(&TopicPartition, &LeaderAndIsr) -> Option<(i32, Vec<i32>)> + Sync,
) -> ZkResult<Vec<Update>> {
    let mut out: Vec<Option<Update>> = tps.iter().map(|_| None).collect();
    let mut decided = Vec::new();
    let mut to_read = Vec::new();
    // step 3.2 on the held copies.
    for (at, held) in known.into_iter().enumerate() {
        let Some((cur, version)) = held else {
            to_read.push(at);
            continue;
        };
        match Decided::step_3_2(at, &tps[at], (cur, version), term.0, &decide) {
            Ok(d) => decided.push(d),
            Err(_) => to_read.push(at),
        }
    }
    // step 3.1 for the others, then 3.2.
    let reading: Vec<TopicPartition> = to_read.iter().map(|&at| tps[at].clone()).collect();
    for (at, state) in to_read.into_iter().zip(read_many(zk, &reading)?) {
        let Some((cur, version)) = state else {
            out[at] = Some(Update::Missing);
            continue;
        };
        match Decided::step_3_2(at, &tps[at], (cur, version), term.0, &decide) {
            Ok(d) => decided.push(d),
            Err((cur, version)) => out[at] = Some(Update::Unchanged(cur, version)),
        }
    }
    // step 3.3, conditionally on the versions decided on.
    if !decided.is_empty() {
        in_session(zk, term.1)?;
    }
    let groups: Vec<&[Decided]> = decided.chunks(WRITE_BATCH).collect();
    let results = pipeline::map(&groups, |group| write_group(zk, term, tps, group, &decide));
    for (group, written) in groups.iter().zip(results) {
        for (d, u) in group.iter().zip(written?) {
            out[d.at] = Some(u);
        }
    }
    Ok(out
        .into_iter()
        .map(|u| u.expect("every partition decided"))
        .collect())
}

/// One transaction of decided writes; when it is refused, each partition of it goes through
/// `update_leader_and_isr` on its own.
fn write_group(
    zk: &ZkClient,
    term: (i32, i64),
    tps: &[TopicPartition],
    group: &[Decided],
    decide: &(impl Fn(&TopicPartition, &LeaderAndIsr) -> Option<(i32, Vec<i32>)> + Sync),
) -> ZkResult<Vec<Update>> {
    let writes: Vec<_> = group
        .iter()
        .map(|d| {
            let TopicPartition {
                topic: t,
                partition: p,
            } = &tps[d.at];
            (t.as_str(), *p, &d.new, d.current.1)
        })
        .collect();
    match paths::write_leader_and_isr_all(zk, &writes)? {
        Ok(versions) => Ok(group
            .iter()
            .zip(versions)
            .map(|(d, v)| Update::Written(d.new.clone(), v))
            .collect()),
        Err((failed, e)) => {
            let TopicPartition {
                topic: t,
                partition: p,
            } = &tps[group[failed].at];
            log::info!(
                "leaderAndISR transaction of {} writes refused at {t}-{p} ({e:?}); writing them one by one",
                group.len()
            );
            group
                .iter()
                .map(|d| {
                    let tp = &tps[d.at];
                    let known = Some(d.current.clone());
                    update_leader_and_isr(zk, term, tp, known, |cur| decide(tp, cur))
                })
                .collect()
        }
    }
}

/// Keeps an update's outcome in the context; true when it was a write.
fn record(ctx: &mut ControllerContext, tp: &TopicPartition, u: Update) -> bool {
    match u {
        Update::Written(l, v) => {
            log::info!(
                "[Controller epoch {}] {}-{}: leader {} isr {:?} leader epoch {}",
                ctx.epoch,
                tp.topic,
                tp.partition,
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

/// The leaderAndISR nodes of many partitions, in their order: `READ_BATCH` per multiRead,
/// the requests pipelined.
pub fn read_many(
    zk: &ZkClient,
    tps: &[TopicPartition],
) -> ZkResult<Vec<Option<(LeaderAndIsr, i32)>>> {
    let groups: Vec<&[TopicPartition]> = tps.chunks(READ_BATCH).collect();
    let mut out = Vec::with_capacity(tps.len());
    for answers in pipeline::map(&groups, |group| read_group(zk, group)) {
        out.extend(answers?);
    }
    Ok(out)
}

fn read_group(zk: &ZkClient, tps: &[TopicPartition]) -> ZkResult<Vec<Option<(LeaderAndIsr, i32)>>> {
    let nodes: Vec<String> = tps
        .iter()
        .map(
            |TopicPartition {
                 topic: t,
                 partition: p,
             }| paths::leader_and_isr_path(t, *p),
        )
        .collect();
    zk.get_data_each(&nodes)?
        .into_iter()
        .zip(&nodes)
        .map(|(answer, path)| match answer {
            Ok((data, stat)) => Ok(Some((paths::from_json(path, &data)?, stat.version))),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(e),
        })
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

//! A new follower's first step (KIP-101, KIP-279): before fetching, ask the leader where our
//! latest leader epoch ends in its log (OffsetForLeaderEpoch) and cut our log there. What
//! our log holds past that point was written in an epoch the leader's log does not continue:
//! it diverges, whether or not it lies below our high watermark.
//!
//! When the leader's answer names an older epoch than the one asked (it never had ours), we
//! ask again about our own largest epoch at or below it, until both sides name an epoch they
//! share: the cut is then the smaller of the two ends of that epoch. When either side has no
//! epoch to offer (format 0 and 1 messages carry none), the comparison of `verify_held` is
//! all there is, as before leader epochs. It stays in force after the cut as well: what we
//! hold above the high watermark is still compared entry by entry with the leader's.
//!
//! And a fetch answered OFFSET_OUT_OF_RANGE, Kafka 0.8's way: cut to the leader's end, or
//! start again at its log start (`handle_offset_out_of_range`).

use super::compare::cut_to;
use super::{Fetcher, Followed, Partition, TopicPartition};
use crate::network::BlockingChannel;
use crate::protocol::ErrorCode;
use crate::protocol::header::OFFSET_FOR_LEADER_EPOCH;
use crate::protocol::offset_for_leader_epoch::{
    self as ofle, EpochEndOffset, EpochQuery, OffsetForLeaderEpochRequest,
};
use crate::protocol::offsets::{EARLIEST_TIME, LATEST_TIME};

impl Fetcher {
    /// Whether some partition still waits for its epoch answer (it is not fetched until then).
    pub(super) fn epochs_pending(&self) -> bool {
        self.partitions
            .lock()
            .values()
            .any(|e| e.lock().ask_epoch.is_some())
    }

    /// One OffsetForLeaderEpoch round for every partition waiting for it; `Err` when the
    /// call itself failed (the connection is then of no further use).
    pub(super) fn truncate_by_epochs(
        &self,
        tag: &str,
        chan: &mut BlockingChannel,
        me: i32,
    ) -> Result<(), String> {
        let waiting: Vec<_> = self
            .entries()
            .into_iter()
            .filter_map(|(tp, e)| {
                let f = e.lock();
                f.ask_epoch.map(|a| (tp, a, f.partition.clone()))
            })
            .collect();
        // The partition's state lock is taken outside ours: a LeaderAndIsr holds it while it
        // removes partitions from fetchers.
        let asked: Vec<(TopicPartition, i32, i32)> = waiting
            .into_iter()
            .map(|(tp, e, p)| (tp, e, p.lock().leader_epoch))
            .collect();
        if asked.is_empty() {
            return Ok(());
        }
        let mut topics: Vec<(String, Vec<EpochQuery>)> = Vec::new();
        for (
            TopicPartition {
                topic: t,
                partition: p,
            },
            epoch,
            current,
        ) in &asked
        {
            let q = EpochQuery {
                partition: *p,
                current_leader_epoch: *current,
                leader_epoch: *epoch,
            };
            match topics.iter_mut().find(|x| &x.0 == t) {
                Some(x) => x.1.push(q),
                None => topics.push((t.clone(), vec![q])),
            }
        }
        let req = OffsetForLeaderEpochRequest {
            replica_id: me,
            topics,
        };
        let answer: ofle::OffsetForLeaderEpochResponse = chan
            .send(OFFSET_FOR_LEADER_EPOCH, ofle::CLIENT_VERSION, &req)
            .map_err(|e| e.to_string())?;
        let topics = answer.topics;
        for (topic, answers) in topics {
            for a in answers {
                let tp = TopicPartition::new(topic.clone(), a.partition);
                let asked_epoch = asked.iter().find(|x| x.0 == tp).map(|x| x.1);
                let Some(entry) = self.entry(&tp) else {
                    continue;
                };
                let mut f = entry.lock();
                if f.removed || asked_epoch.is_none() || f.ask_epoch != asked_epoch {
                    continue; // followed anew meanwhile
                }
                if let Err(e) = apply_epoch_answer(tag, &mut f, &a) {
                    log::error!(
                        "{tag} {}-{}: cannot truncate by epoch: {e}",
                        tp.topic,
                        tp.partition
                    );
                    f.ask_epoch = None;
                }
            }
        }
        Ok(())
    }

    /// After repeated failed calls (a leader that does not serve OffsetForLeaderEpoch closes
    /// the connection), the waiting partitions go on without epochs: the comparison decides,
    /// and replication never stops for want of an answer.
    pub(super) fn abandon_epochs(&self, tag: &str, why: &str) {
        log::warn!("{tag} OffsetForLeaderEpoch failed ({why}); checking our logs by comparison");
        for (_, e) in self.entries() {
            e.lock().ask_epoch = None;
        }
    }
}

/// Acts on the leader's answer about `f.ask_epoch`: cut, ask again about an older epoch, or
/// fall back to the comparison. An error code leaves the question pending for the next round.
fn apply_epoch_answer(tag: &str, f: &mut Followed, a: &EpochEndOffset) -> std::io::Result<()> {
    let (t, p) = (&f.partition.topic, f.partition.partition);
    let asked = f.ask_epoch.unwrap_or(-1);
    match ErrorCode::from_code(a.error_code) {
        ErrorCode::None => {}
        e => {
            log::debug!(
                "{tag} {t}-{p}: OffsetForLeaderEpoch({asked}) answered {e:?}; asking again"
            );
            return Ok(());
        }
    }
    if a.leader_epoch < 0 || a.end_offset < 0 {
        log::info!(
            "{tag} {t}-{p}: the leader has no epoch at or below {asked}; our log is checked by comparison"
        );
        f.ask_epoch = None;
        return Ok(());
    }
    let log = f.partition.log.clone();
    let (ours, our_end) = log.end_offset_for_epoch(a.leader_epoch);
    if ours != a.leader_epoch {
        // The leader never had epoch `asked` (KIP-279): ask about our largest epoch at or
        // below the one it named. Each round asks an older epoch, so this ends.
        f.ask_epoch = (ours >= 0 && ours < asked).then_some(ours);
        if f.ask_epoch.is_none() {
            log::info!(
                "{tag} {t}-{p}: no epoch shared with the leader; our log is checked by comparison"
            );
        }
        return Ok(());
    }
    let cut = a.end_offset.min(our_end);
    let leo = log.log_end_offset();
    log.truncate_to(cut)?;
    let end = log.log_end_offset();
    if end < leo {
        log::warn!(
            "{tag} {t}-{p}: epoch {} ends at {} in the leader's log: our log cut from {leo} to {end}",
            a.leader_epoch,
            a.end_offset
        );
    }
    f.fetch_offset = f.fetch_offset.min(end);
    f.verify_until = f.verify_until.min(end);
    f.partition
        .set_high_watermark(f.partition.high_watermark().min(end));
    if end < leo {
        f.partition.watchers.wake_all();
    }
    f.ask_epoch = None;
    Ok(())
}

/// The leader's log end and, when our fetch offset `asked` is not past it, its log start.
pub(super) fn leader_ends(
    chan: &mut BlockingChannel,
    me: i32,
    partition: &Partition,
    asked: i64,
) -> Result<(i64, Option<i64>), String> {
    let end = chan.list_offset_as(me, &partition.topic, partition.partition, LATEST_TIME)?;
    if end < asked {
        return Ok((end, None));
    }
    Ok((
        end,
        Some(chan.list_offset_as(me, &partition.topic, partition.partition, EARLIEST_TIME)?),
    ))
}

/// Kafka 0.8's rule: when the leader's log ends before our fetch offset, truncate to the
/// leader's end; when it starts after it (retention), drop our log and start at the leader's
/// start.
pub(super) fn handle_offset_out_of_range(
    tag: &str,
    f: &mut Followed,
    (leader_end, leader_start): (i64, Option<i64>),
) -> Result<(), String> {
    let partition = f.partition.clone();
    let log = &partition.log;
    let (t, p) = (&partition.topic, partition.partition);
    if leader_end < f.fetch_offset {
        let ours = f.fetch_offset;
        cut_to(f, leader_end).map_err(|e| e.to_string())?;
        log::warn!(
            "{tag} {t}-{p}: our offset {ours} is past the leader's end {leader_end}; truncated to {}",
            f.fetch_offset
        );
    } else {
        let leader_start = leader_start.ok_or("the leader's log start is not known")?;
        log.truncate_fully_and_start_at(leader_start)
            .map_err(|e| e.to_string())?;
        log::warn!(
            "{tag} {t}-{p}: our offset {} is before the leader's start {leader_start}; log reset to start there",
            f.fetch_offset
        );
        f.fetch_offset = leader_start;
        f.verify_until = leader_start;
        f.partition.set_high_watermark(leader_start);
        f.partition.watchers.wake_all();
    }
    Ok(())
}

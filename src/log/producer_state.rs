//! Idempotent producers' state in one partition (KIP-98): per producer id, its epoch and the
//! sequence and offset ranges of its last `MAX_BATCHES` batches. The leader checks each
//! produced batch against it before the batch gets offsets — a retry of a batch already
//! appended is answered with its original offsets instead of being stored twice, a gap or an
//! old epoch is refused — and every replica updates it as batches are appended, so a new
//! leader already holds it.
//!
//! The state is derived from the log: it is rebuilt from the batch headers after a restart or
//! a truncation, starting from the newest snapshot (`<offset>.snapshot`, written when a segment
//! rolls and at shutdown) so that a restart reads only the log after it.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use crate::protocol::record_batch::{BatchMeta, last_seq};

/// Batches remembered per producer: the most a producer keeps in flight per partition.
pub const MAX_BATCHES: usize = 5;
/// Snapshots kept per partition.
const SNAPSHOTS_KEPT: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Producer {
    pub(super) epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// Largest batch timestamp seen (ms), for expiration.
    pub(super) last_timestamp: i64,
    /// First offset of its open transaction's records here (`transactions`).
    #[serde(default)]
    pub(super) txn_first_offset: Option<i64>,
    /// The coordinator epoch of the last marker written for it (-1: none).
    #[serde(default = "no_coordinator_epoch")]
    pub(super) coordinator_epoch: i32,
}

fn no_coordinator_epoch() -> i32 {
    -1
}

impl Producer {
    pub(super) fn new(epoch: i16, timestamp: i64) -> Producer {
        Producer {
            epoch,
            batches: VecDeque::new(),
            last_timestamp: timestamp,
            txn_first_offset: None,
            coordinator_epoch: -1,
        }
    }

    /// The last sequence appended (-1: none in this epoch).
    pub(super) fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(-1, |b| b.last_seq)
    }

    /// A new epoch starts its sequences again.
    pub(super) fn bump_epoch(&mut self, epoch: i16) {
        self.epoch = epoch;
        self.batches.clear();
    }
}

/// What to do with a batch from an idempotent producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Append,
    /// Already in the log at these offsets: answer with them, append nothing.
    Duplicate {
        first_offset: i64,
        last_offset: i64,
    },
}

/// Why a batch is refused; each is a protocol error of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerError {
    /// The sequence does not follow the last one appended.
    OutOfOrderSequence { expected: i32, got: i32 },
    /// The producer was re-initialised with a newer epoch since.
    InvalidEpoch { current: i16, got: i16 },
    /// No state for this producer and a sequence other than 0 (its state expired, or its
    /// batches were removed by retention).
    UnknownProducer,
    /// The batch the sequence waits for was refused a moment ago before reaching the log,
    /// with the protocol error `code` (it reached this broker before it led the partition, or
    /// while its ISR was too small): this one, sent behind it, gets the same answer. Both are
    /// retried in order; an out-of-order answer would make librdkafka renumber every message
    /// it holds under a new producer epoch, and send again any it could not tell were stored.
    BehindRefused { code: i16 },
    /// A gap soon after this replica began to lead: the batch the sequence waits for is most
    /// likely still on its way — in flight to the old leader, waiting out a timeout there —
    /// and the client will send it again. Answered as retriable (the broker says NOT_LEADER),
    /// so the client sends the missing batch first: an out-of-order answer would make
    /// librdkafka renumber every message it holds under a new epoch, duplicating any it could
    /// not tell were stored, on every partition.
    AwaitingEarlierBatch,
}

/// How long a refusal stands for the batches sent behind it: about a client's request
/// timeout, after which a gap is a gap.
const REFUSAL_MEMORY: Duration = Duration::from_secs(30);

/// A batch refused before it reached the log.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    epoch: i16,
    first_seq: i32,
    code: i16,
    at: Instant,
}

/// The sequence after `seq` (sequences wrap from `i32::MAX` to 0).
pub fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX { 0 } else { seq + 1 }
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerStates {
    pub(super) producers: HashMap<i64, Producer>,
    /// Open transactions, by their first offset here: (first offset, producer id).
    #[serde(skip)]
    pub(super) ongoing: BTreeSet<(i64, i64)>,
    /// Ended transactions whose marker is not yet below the high watermark: (marker offset,
    /// first offset). They hold the last stable offset back until it is (Kafka's
    /// `unreplicatedTxns`): a marker a leader change cuts is written again by the new leader.
    #[serde(skip)]
    pub(super) unreplicated: BTreeSet<(i64, i64)>,
    /// The last batch refused before the log, per producer (not in snapshots: it matters
    /// for seconds).
    #[serde(skip)]
    refused: HashMap<i64, Refusal>,
    /// Since when this replica leads (its latest leader epoch began here).
    #[serde(skip)]
    leading_since: Option<Instant>,
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    /// The log end offset the state covers.
    offset: i64,
    state: ProducerStates,
}

impl ProducerStates {
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Checks a batch (`count` records from sequence `first_seq`) against the state.
    pub fn check(
        &self,
        pid: i64,
        epoch: i16,
        first_seq: i32,
        count: i32,
    ) -> Result<Check, ProducerError> {
        let verdict = self.check_sequence(pid, epoch, first_seq, count);
        match verdict {
            Err(ProducerError::OutOfOrderSequence { expected, .. }) => self
                .behind_refusal(pid, epoch, expected)
                .or_else(|| self.just_leading())
                .map_or(verdict, Err),
            Err(ProducerError::UnknownProducer) => self
                .behind_refusal(pid, epoch, 0)
                .or_else(|| self.just_leading())
                .map_or(verdict, Err),
            v => v,
        }
    }

    /// (producer id, last offset) of each producer's last batch: what the cleaner keeps even
    /// when it keeps none of its records, so that the producer's next sequence still checks.
    pub fn last_batches(&self) -> std::collections::HashSet<(i64, i64)> {
        self.producers
            .iter()
            .filter_map(|(pid, p)| p.batches.back().map(|b| (*pid, b.last_offset)))
            .collect()
    }

    /// This replica began to lead now.
    pub fn lead_from_now(&mut self) {
        self.leading_since = Some(Instant::now());
    }

    /// `AwaitingEarlierBatch` while this replica has led for less than a client's request
    /// timeout.
    fn just_leading(&self) -> Option<ProducerError> {
        self.leading_since
            .filter(|t| t.elapsed() < REFUSAL_MEMORY)
            .map(|_| ProducerError::AwaitingEarlierBatch)
    }

    /// `BehindRefused` when the batch starting at `expected` was refused a moment ago.
    fn behind_refusal(&self, pid: i64, epoch: i16, expected: i32) -> Option<ProducerError> {
        self.refused
            .get(&pid)
            .filter(|r| r.epoch == epoch && r.first_seq == expected)
            .filter(|r| r.at.elapsed() < REFUSAL_MEMORY)
            .map(|r| ProducerError::BehindRefused { code: r.code })
    }

    /// Notes a batch refused before it reached the log, with the protocol error it got — when
    /// it is the batch the producer's sequence waits for. A refused batch behind it says
    /// nothing more, and noting it would forget the one that matters: the client retries the
    /// two in order, and the second must keep getting the first's answer until the first is in.
    pub fn note_refused(&mut self, pid: i64, epoch: i16, first_seq: i32, code: i16) {
        let head = match self.producers.get(&pid) {
            Some(p) if p.epoch == epoch => p.batches.back().map_or(0, |b| next_seq(b.last_seq)),
            Some(p) if p.epoch > epoch => return,
            _ => 0,
        };
        if first_seq != head {
            return;
        }
        let at = Instant::now();
        self.refused.insert(
            pid,
            Refusal {
                epoch,
                first_seq,
                code,
                at,
            },
        );
    }

    fn check_sequence(
        &self,
        pid: i64,
        epoch: i16,
        first_seq: i32,
        count: i32,
    ) -> Result<Check, ProducerError> {
        let Some(p) = self.producers.get(&pid) else {
            return if first_seq == 0 {
                Ok(Check::Append)
            } else {
                Err(ProducerError::UnknownProducer)
            };
        };
        if epoch < p.epoch {
            return Err(ProducerError::InvalidEpoch {
                current: p.epoch,
                got: epoch,
            });
        }
        if epoch > p.epoch {
            // A new epoch starts its sequences again.
            return if first_seq == 0 {
                Ok(Check::Append)
            } else {
                Err(ProducerError::OutOfOrderSequence {
                    expected: 0,
                    got: first_seq,
                })
            };
        }
        let last = last_seq(first_seq, count);
        if let Some(b) = p
            .batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last)
        {
            return Ok(Check::Duplicate {
                first_offset: b.first_offset,
                last_offset: b.last_offset,
            });
        }
        let expected = p.batches.back().map_or(0, |b| next_seq(b.last_seq));
        if first_seq == expected {
            Ok(Check::Append)
        } else {
            Err(ProducerError::OutOfOrderSequence {
                expected,
                got: first_seq,
            })
        }
    }

    /// Records a batch appended to the log (by the leader after `check`, or by a follower, or
    /// while rebuilding).
    pub fn record(&mut self, pid: i64, epoch: i16, batch: BatchMeta, timestamp: i64) {
        if self
            .refused
            .get(&pid)
            .is_some_and(|r| r.epoch == epoch && r.first_seq == batch.first_seq)
        {
            self.refused.remove(&pid);
        }
        let p = self
            .producers
            .entry(pid)
            .or_insert_with(|| Producer::new(epoch, timestamp));
        if epoch != p.epoch {
            p.bump_epoch(epoch);
        }
        if p.batches.len() == MAX_BATCHES {
            p.batches.pop_front();
        }
        p.batches.push_back(batch);
        p.last_timestamp = p.last_timestamp.max(timestamp);
    }

    /// Forgets producers idle (by their batches' timestamps) since before `cutoff` ms;
    /// returns how many.
    pub fn expire(&mut self, cutoff: i64) -> usize {
        let before = self.producers.len();
        // A producer with an open transaction stays: its marker is still to come.
        self.producers
            .retain(|_, p| p.last_timestamp >= cutoff || p.txn_first_offset.is_some());
        before - self.producers.len()
    }

    /// Writes a snapshot of the state at log end offset `offset` (via a temporary file and a
    /// rename, so a crash leaves the old one or the new one) and keeps the newest few.
    pub fn write_snapshot(&self, dir: &Path, offset: i64) -> std::io::Result<()> {
        let path = snapshot_path(dir, offset);
        let tmp = path.with_extension("snapshot.tmp");
        let body = serde_json::to_vec(&Snapshot {
            offset,
            state: self.clone(),
        })
        .map_err(std::io::Error::other)?;
        std::fs::write(&tmp, body)?;
        std::fs::rename(&tmp, &path)?;
        let mut all = snapshots(dir)?;
        while all.len() > SNAPSHOTS_KEPT {
            std::fs::remove_file(all.remove(0).1)?;
        }
        Ok(())
    }
}

pub fn snapshot_exists(dir: &Path, offset: i64) -> bool {
    snapshot_path(dir, offset).exists()
}

fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}.snapshot"))
}

/// The partition's snapshots, oldest first.
fn snapshots(dir: &Path) -> std::io::Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        let offset = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".snapshot"))
            .and_then(|n| n.parse::<i64>().ok());
        if let Some(o) = offset {
            out.push((o, path));
        }
    }
    out.sort();
    Ok(out)
}

/// The newest readable snapshot at or below `max_offset`: (offset, state). Snapshots above it
/// (of log that a truncation removed) are deleted.
pub fn load_snapshot(
    dir: &Path,
    max_offset: i64,
) -> std::io::Result<Option<(i64, ProducerStates)>> {
    let mut found = None;
    for (offset, path) in snapshots(dir)?.into_iter().rev() {
        if offset > max_offset {
            std::fs::remove_file(&path)?;
            continue;
        }
        match std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok())
        {
            Some(mut s) if s.offset == offset => {
                s.state.index_open_transactions();
                found = Some((offset, s.state));
                break;
            }
            _ => log::warn!("{}: unreadable producer snapshot, ignored", path.display()),
        }
    }
    Ok(found)
}

/// Deletes every snapshot (the log was emptied).
pub fn delete_snapshots(dir: &Path) -> std::io::Result<()> {
    for (_, path) in snapshots(dir)? {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(first_seq: i32, last_seq: i32, first_offset: i64) -> BatchMeta {
        BatchMeta {
            first_seq,
            last_seq,
            first_offset,
            last_offset: first_offset + i64::from(last_seq - first_seq),
        }
    }

    #[test]
    fn sequences_are_checked_per_producer_and_epoch() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check(7, 0, 0, 3), Ok(Check::Append));
        // An unknown producer may only start a sequence.
        assert_eq!(s.check(8, 0, 5, 1), Err(ProducerError::UnknownProducer));
        s.record(7, 0, meta(0, 2, 100), 1);
        assert_eq!(
            s.check(7, 0, 0, 3),
            Ok(Check::Duplicate {
                first_offset: 100,
                last_offset: 102
            })
        );
        assert_eq!(s.check(7, 0, 3, 2), Ok(Check::Append));
        assert_eq!(
            s.check(7, 0, 4, 1),
            Err(ProducerError::OutOfOrderSequence {
                expected: 3,
                got: 4
            })
        );
        s.record(7, 1, meta(0, 0, 200), 2);
        assert_eq!(
            s.check(7, 0, 3, 1),
            Err(ProducerError::InvalidEpoch { current: 1, got: 0 })
        );
        // Only the last MAX_BATCHES are remembered.
        for i in 1..=MAX_BATCHES as i32 {
            s.record(7, 1, meta(i, i, 200 + i64::from(i)), 3);
        }
        assert!(matches!(s.check(7, 1, 1, 1), Ok(Check::Duplicate { .. })));
        assert!(s.check(7, 1, 0, 1).is_err());
    }

    /// A batch refused before the log (NOT_LEADER_FOR_PARTITION, code 6) holds up the ones
    /// sent behind it with the same answer, until it is appended; then a gap is a gap again.
    #[test]
    fn batches_behind_a_refused_one_get_its_answer() {
        let mut s = ProducerStates::default();
        s.record(7, 0, meta(0, 2, 100), 1);
        s.note_refused(7, 0, 3, 6);
        assert_eq!(
            s.check(7, 0, 4, 1),
            Err(ProducerError::BehindRefused { code: 6 })
        );
        assert_eq!(s.check(7, 0, 3, 1), Ok(Check::Append));
        // Another epoch's refusal says nothing about this one.
        assert!(matches!(
            s.check(7, 1, 1, 1),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
        s.record(7, 0, meta(3, 3, 103), 2);
        assert!(matches!(
            s.check(7, 0, 5, 1),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
        // A new producer whose first batch was refused.
        s.note_refused(9, 0, 0, 19);
        assert_eq!(
            s.check(9, 0, 1, 1),
            Err(ProducerError::BehindRefused { code: 19 })
        );
        assert_eq!(s.check(9, 0, 0, 1), Ok(Check::Append));
    }

    /// Caught `chaos` seed 1 (loopback): a batch refused behind the one its sequence waited for
    /// replaced that one's note, and its retry got OUT_OF_ORDER_SEQUENCE_NUMBER.
    #[test]
    fn a_refusal_behind_the_awaited_batch_does_not_replace_its_note() {
        let mut s = ProducerStates::default();
        s.record(7, 0, meta(0, 2, 100), 1);
        s.note_refused(7, 0, 3, 19);
        s.note_refused(7, 0, 6, 19);
        assert_eq!(
            s.check(7, 0, 6, 1),
            Err(ProducerError::BehindRefused { code: 19 })
        );
    }

    /// Caught `chaos` seed 1 (loopback): a new leader answered a gap with
    /// OUT_OF_ORDER_SEQUENCE_NUMBER while the batch before it was still in flight to the paused
    /// old leader; librdkafka bumped its epoch and stored again, under the new epoch, a message
    /// of another partition it could not tell was stored.
    #[test]
    fn a_gap_soon_after_taking_the_lead_waits_for_the_batch_before_it() {
        let mut s = ProducerStates::default();
        s.record(7, 0, meta(0, 2, 100), 1);
        assert!(matches!(
            s.check(7, 0, 5, 1),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
        s.lead_from_now();
        assert_eq!(
            s.check(7, 0, 5, 1),
            Err(ProducerError::AwaitingEarlierBatch)
        );
        assert_eq!(
            s.check(8, 0, 5, 1),
            Err(ProducerError::AwaitingEarlierBatch)
        );
        assert_eq!(s.check(7, 0, 3, 1), Ok(Check::Append));
        // Long after, a gap is a gap, and a stranger mid-sequence unknown.
        s.leading_since = Some(Instant::now() - REFUSAL_MEMORY);
        assert!(matches!(
            s.check(7, 0, 5, 1),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
        assert_eq!(s.check(8, 0, 5, 1), Err(ProducerError::UnknownProducer));
    }

    #[test]
    fn sequences_wrap() {
        assert_eq!(next_seq(i32::MAX), 0);
        assert_eq!(last_seq(i32::MAX - 1, 3), 0);
        assert_eq!(last_seq(5, 1), 5);
    }

    #[test]
    fn snapshots_round_trip_and_later_ones_are_dropped_by_truncation() {
        let d = tempfile::tempdir().unwrap();
        let mut s = ProducerStates::default();
        s.record(1, 0, meta(0, 0, 0), 5);
        s.write_snapshot(d.path(), 10).unwrap();
        s.record(1, 0, meta(1, 1, 10), 6);
        s.write_snapshot(d.path(), 20).unwrap();
        s.write_snapshot(d.path(), 30).unwrap();
        assert_eq!(snapshots(d.path()).unwrap().len(), SNAPSHOTS_KEPT);
        let (o, loaded) = load_snapshot(d.path(), 25).unwrap().unwrap();
        assert_eq!(o, 20);
        assert_eq!(loaded, s);
        assert_eq!(
            snapshots(d.path()).unwrap().len(),
            1,
            "the one past 25 is gone"
        );
        assert_eq!(s.expire(6), 0);
        assert_eq!(s.expire(7), 1);
    }
}

//! Transactions in one partition (KIP-98), the log's side: which producers have a transaction
//! open here and from which offset, the markers that end them, the aborted-transaction index
//! they leave (`txn_index`), and the last stable offset (LSO) — the offset below which every
//! transaction has ended and its marker is replicated, so that a `read_committed` consumer
//! reads no further.
//!
//! A transaction opens here with its producer's first transactional batch and ends with the
//! marker the transaction coordinator has the leader write (`WriteTxnMarkers`); followers
//! replicate both like any batch and keep the same state from the batch headers. The LSO is
//! the smallest first offset of a transaction still open — or ended with its marker not yet
//! below the high watermark — and never above the high watermark.

use std::io;
use std::sync::atomic::{AtomicI64, Ordering};

use super::partition_log::{AppendState, Log};
use super::producer_state::{Producer, ProducerStates};
use super::txn_index::AbortedTxn;
use crate::protocol::describe_producers::ActiveProducer;
use crate::protocol::record_batch::{self, TxnMarker};

/// Why a marker is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerError {
    /// The producer has a newer epoch than the marker's (INVALID_PRODUCER_EPOCH).
    ProducerFenced { current: i16, got: i16 },
    /// A newer coordinator already wrote a marker for this producer
    /// (TRANSACTION_COORDINATOR_FENCED).
    CoordinatorFenced { current: i32, got: i32 },
}

/// A transaction a marker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedTxn {
    pub producer_id: i64,
    /// Its first record here; `None` when it wrote nothing to this partition.
    pub first_offset: Option<i64>,
    pub marker_offset: i64,
    pub commit: bool,
}

/// The offsets readers need without the append lock: `i64::MAX` when there is none.
#[derive(Debug)]
pub struct TxnBounds {
    /// Smallest first offset of a transaction open or ended above the high watermark.
    first_unstable: AtomicI64,
    /// Smallest marker offset not yet below the high watermark.
    first_unreplicated_marker: AtomicI64,
}

impl Default for TxnBounds {
    fn default() -> Self {
        TxnBounds {
            first_unstable: AtomicI64::new(i64::MAX),
            first_unreplicated_marker: AtomicI64::new(i64::MAX),
        }
    }
}

impl ProducerStates {
    /// Checks a marker for producer `pid` against its state.
    pub fn check_marker(
        &self,
        pid: i64,
        epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), MarkerError> {
        let Some(p) = self.producers.get(&pid) else {
            return Ok(());
        };
        if epoch < p.epoch {
            return Err(MarkerError::ProducerFenced {
                current: p.epoch,
                got: epoch,
            });
        }
        if coordinator_epoch < p.coordinator_epoch {
            return Err(MarkerError::CoordinatorFenced {
                current: p.coordinator_epoch,
                got: coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Notes a transactional batch of `pid` appended at `first_offset` (after `record`): the
    /// first one opens its transaction here.
    pub fn record_txn_data(&mut self, pid: i64, first_offset: i64) {
        if let Some(p) = self.producers.get_mut(&pid)
            && p.txn_first_offset.is_none()
        {
            p.txn_first_offset = Some(first_offset);
            self.ongoing.insert((first_offset, pid));
        }
    }

    /// Ends `pid`'s transaction with the marker appended at `offset`; a marker of a newer
    /// epoch makes it the producer's epoch (its sequences start again).
    pub fn end_txn(&mut self, pid: i64, epoch: i16, marker: TxnMarker, offset: i64) -> EndedTxn {
        let p = self
            .producers
            .entry(pid)
            .or_insert_with(|| Producer::new(epoch, -1));
        if epoch > p.epoch {
            p.bump_epoch(epoch);
        }
        p.coordinator_epoch = p.coordinator_epoch.max(marker.coordinator_epoch);
        let first_offset = p.txn_first_offset.take();
        if let Some(first) = first_offset {
            self.ongoing.remove(&(first, pid));
            self.unreplicated.insert((offset, first));
        }
        EndedTxn {
            producer_id: pid,
            first_offset,
            marker_offset: offset,
            commit: marker.commit,
        }
    }

    /// The last stable offset once `ended` has ended, for its index entry: the first offset
    /// of the oldest transaction still open, else the offset after the marker.
    pub fn stable_after(&self, ended: &EndedTxn) -> i64 {
        self.ongoing
            .first()
            .map_or(ended.marker_offset + 1, |(first, _)| *first)
    }

    /// Forgets the ended transactions whose markers are below the high watermark `hw`.
    pub fn replicated_to(&mut self, hw: i64) {
        while self
            .unreplicated
            .first()
            .is_some_and(|(marker, _)| *marker < hw)
        {
            self.unreplicated.pop_first();
        }
    }

    /// (first unstable offset, first unreplicated marker), `i64::MAX` for none.
    fn txn_bounds(&self) -> (i64, i64) {
        let open = self.ongoing.first().map_or(i64::MAX, |(f, _)| *f);
        let ended = self
            .unreplicated
            .iter()
            .map(|(_, f)| *f)
            .min()
            .unwrap_or(i64::MAX);
        let marker = self.unreplicated.first().map_or(i64::MAX, |(m, _)| *m);
        (open.min(ended), marker)
    }

    /// Open transactions here.
    pub fn open_transactions(&self) -> usize {
        self.ongoing.len()
    }

    /// Every producer known here, by id, as DescribeProducers answers.
    pub fn describe(&self) -> Vec<ActiveProducer> {
        let mut out: Vec<ActiveProducer> = self
            .producers
            .iter()
            .map(|(pid, p)| ActiveProducer {
                producer_id: *pid,
                producer_epoch: i32::from(p.epoch),
                last_sequence: p.last_sequence(),
                last_timestamp: p.last_timestamp,
                coordinator_epoch: p.coordinator_epoch,
                current_txn_start_offset: p.txn_first_offset.unwrap_or(-1),
            })
            .collect();
        out.sort_by_key(|a| a.producer_id);
        out
    }

    /// Fills the index of open transactions from the producers (after loading a snapshot).
    pub fn index_open_transactions(&mut self) {
        self.ongoing = self
            .producers
            .iter()
            .filter_map(|(pid, p)| p.txn_first_offset.map(|f| (f, *pid)))
            .collect();
    }
}

impl Log {
    /// The last stable offset: no further may a `read_committed` consumer read.
    pub fn last_stable_offset(&self) -> i64 {
        self.txn_bounds
            .first_unstable
            .load(Ordering::Acquire)
            .min(self.high_watermark())
    }

    /// Publishes what readers need of the transactions' state (under the append lock).
    pub(super) fn publish_txns(&self, producers: &mut ProducerStates) {
        producers.replicated_to(self.high_watermark());
        let (unstable, marker) = producers.txn_bounds();
        self.txn_bounds
            .first_unstable
            .store(unstable, Ordering::Release);
        self.txn_bounds
            .first_unreplicated_marker
            .store(marker, Ordering::Release);
    }

    /// The high watermark moved to `hw`: markers below it no longer hold the LSO back. Takes
    /// the append lock only when such a marker exists.
    pub(super) fn txns_replicated_to(&self, hw: i64) {
        if self
            .txn_bounds
            .first_unreplicated_marker
            .load(Ordering::Acquire)
            >= hw
        {
            return;
        }
        let mut state = self.append_lock.lock();
        self.publish_txns(&mut state.producers);
    }

    /// Appends the marker ending producer `pid`'s transaction (the leader, for the
    /// transaction coordinator): checked against its state, then written as a control batch
    /// of the leader's epoch. Returns the marker's offset, or why it was refused.
    pub fn append_marker(
        &self,
        pid: i64,
        epoch: i16,
        marker: TxnMarker,
        leader_epoch: i32,
        now_ms: i64,
    ) -> io::Result<Result<i64, MarkerError>> {
        let mut state = self.append_lock.lock();
        if let Err(e) = state
            .producers
            .check_marker(pid, epoch, marker.coordinator_epoch)
        {
            return Ok(Err(e));
        }
        let mut batch = record_batch::encode_marker(pid, epoch, marker, now_ms);
        let offset = self.log_end_offset();
        record_batch::assign(&mut batch, offset, leader_epoch, None);
        self.append_locked(&mut state, &batch, offset, offset)?;
        let ended = state.producers.end_txn(pid, epoch, marker, offset);
        self.index_ended(&state, &ended)?;
        self.publish_txns(&mut state.producers);
        Ok(Ok(offset))
    }

    /// Writes an aborted transaction's entry into the active segment, where its marker is.
    fn index_ended(&self, state: &AppendState, ended: &EndedTxn) -> io::Result<()> {
        let Some(entry) = aborted_entry(&state.producers, ended) else {
            return Ok(());
        };
        let active = self.segments.read().last().cloned().expect("never empty");
        active.txn_index.append(entry)
    }

    /// Updates the transactions' state from a batch a follower appended (its header, and the
    /// marker's record for a control batch) at `offset` onwards.
    pub(super) fn follow_txn_batch(&self, state: &mut AppendState, entry: &[u8]) -> io::Result<()> {
        if let Some(ended) = txn_from_header(&mut state.producers, entry) {
            self.index_ended(state, &ended)?;
        }
        Ok(())
    }

    /// The aborted transactions a `read_committed` fetch from `from` must be told of when its
    /// records end before `to`. An entry is in the segment of its marker, which may be well
    /// past `to`: the search goes on through later segments until an entry says it is done.
    pub fn aborted_transactions(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        let mut out = Vec::new();
        // A consumer at the LSO (a long poll's every look) reads nothing: nothing to list.
        if from >= to {
            return out;
        }
        for seg in self.segments_from(from) {
            if seg.txn_index.collect(from, to, &mut out) {
                break;
            }
        }
        out
    }

    /// Open transactions in this partition.
    pub fn open_transactions(&self) -> usize {
        self.append_lock.lock().producers.open_transactions()
    }

    /// The producers this partition knows of (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        self.append_lock.lock().producers.describe()
    }
}

/// The index entry of `ended` when it aborted and wrote records here.
pub(super) fn aborted_entry(producers: &ProducerStates, ended: &EndedTxn) -> Option<AbortedTxn> {
    let first = ended.first_offset.filter(|_| !ended.commit)?;
    Some(AbortedTxn {
        producer_id: ended.producer_id,
        first_offset: first,
        last_offset: ended.marker_offset,
        last_stable_offset: producers.stable_after(ended),
    })
}

/// Updates `producers` for the transaction side of the batch whose first bytes are `entry`
/// (`HEADER_PEEK` at least, or the whole batch): a transactional data batch opens its
/// producer's transaction, a marker ends it. Returns the transaction a marker ended.
pub(super) fn txn_from_header(producers: &mut ProducerStates, entry: &[u8]) -> Option<EndedTxn> {
    let m = record_batch::producer_meta(entry)?;
    if !m.transactional {
        return None;
    }
    if !m.control {
        producers.record_txn_data(m.producer_id, m.base_offset);
        return None;
    }
    let marker = record_batch::parse_marker(entry)?;
    Some(producers.end_txn(m.producer_id, m.epoch, marker, m.base_offset))
}

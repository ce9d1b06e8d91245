//! The `Log`'s side of idempotent producers: keeping `ProducerStates` in step with the
//! batches appended, and rebuilding it from snapshots and batch headers after a restart or a
//! truncation (see `producer_state`).

use std::io;

use super::partition_log::Log;
use super::producer_state::{self, ProducerStates};
use super::transactions;
use crate::protocol::record_batch;

impl Log {
    /// Rebuilds the producers' state for the log as it is now: the newest snapshot at or
    /// below `snapshot_at_most` (and the log end offset), then every batch header after it —
    /// writing again the aborted-transaction index entries of the segments read, so an index
    /// that lost entries with an unflushed tail, or kept ones a truncation cut, matches the
    /// log. Called with the append lock held (or before the log is shared).
    pub(super) fn rebuild_producers(&self, snapshot_at_most: i64) -> io::Result<ProducerStates> {
        let leo = self.log_end_offset();
        let (from, mut producers) =
            producer_state::load_snapshot(&self.dir, leo.min(snapshot_at_most))?
                .unwrap_or((self.log_start_offset(), ProducerStates::default()));
        let from = from.max(self.log_start_offset());
        for seg in self.segments_from(from) {
            let seg_from = from.max(seg.base_offset);
            let mut aborted = Vec::new();
            seg.for_each_header_from(seg_from, |h| {
                record_header(&mut producers, h);
                if let Some(ended) = transactions::txn_from_header(&mut producers, h) {
                    aborted.extend(transactions::aborted_entry(&producers, &ended));
                }
            })?;
            seg.txn_index.replace_from(seg_from, &aborted)?;
        }
        Ok(producers)
    }

    /// Rebuilds the state at open (no other thread has the log yet), from a snapshot no later
    /// than the recovery point: what follows it may have been recovered.
    pub(super) fn load_producers(&self) -> io::Result<()> {
        let mut producers = self.rebuild_producers(self.recovery_point())?;
        self.publish_txns(&mut producers);
        if !producers.is_empty() {
            log::info!(
                "[{}-{}] {} idempotent producer(s) restored",
                self.topic,
                self.partition,
                producers.len()
            );
        }
        self.append_lock.lock().producers = producers;
        Ok(())
    }

    /// The idempotent producer's batch that starts at `offset` here, as (producer id, producer
    /// epoch, first sequence); `None` when the log holds no such batch there (cut, or never
    /// written, or not an idempotent producer's).
    pub fn producer_batch_at(&self, offset: i64) -> io::Result<Option<(i64, i16, i32)>> {
        if offset >= self.log_end_offset() || offset < self.log_start_offset() {
            return Ok(None);
        }
        for seg in self.segments_from(offset) {
            if let Some(h) = seg.header_at(offset)? {
                return Ok(record_batch::producer_meta(&h)
                    .filter(|m| m.base_offset == offset)
                    .map(|m| (m.producer_id, m.epoch, m.base_sequence)));
            }
        }
        Ok(None)
    }

    /// Notes that the idempotent batch `batch` (its header) was refused with `code` before
    /// it reached the log (see `ProducerError::BehindRefused`).
    pub fn note_refused(&self, batch: &[u8], code: i16) {
        if let Some(m) = record_batch::producer_meta(batch) {
            self.append_lock.lock().producers.note_refused(
                m.producer_id,
                m.epoch,
                m.base_sequence,
                code,
            );
        }
    }

    /// Forgets producers whose last batch is older than `cutoff` ms
    /// (`producer.id.expiration.ms`); their next batch must start a new sequence.
    pub fn expire_producers(&self, cutoff: i64) -> usize {
        self.append_lock.lock().producers.expire(cutoff)
    }

    /// Snapshots the producers' state at the log end offset (at shutdown), so that the next
    /// start reads no batch header. Written when no producer is known too: it records that
    /// nothing before the log end needs reading. Not written for an empty log, nor when the
    /// snapshot at the log end is there already (nothing appended since the last start): a
    /// broker with 10,000 mostly idle partitions spent 5 s of its shutdown creating files that
    /// said nothing new.
    pub fn snapshot_producers(&self) -> io::Result<()> {
        let state = self.append_lock.lock();
        let end = self.log_end_offset();
        if end == self.log_start_offset() || super::producer_state::snapshot_exists(&self.dir, end)
        {
            return Ok(());
        }
        state.producers.write_snapshot(&self.dir, end)
    }
}

/// Records one batch from its header, when it is an idempotent producer's data. A marker
/// carries no sequence (-1): it is the transaction's business (`transactions::
/// txn_from_header`, which takes a newer epoch from it as the leader's `append_marker`
/// does), and recorded here it would make -1 the producer's last sequence.
pub(super) fn record_header(producers: &mut ProducerStates, header: &[u8]) {
    if let Some(m) = record_batch::producer_meta(header).filter(|m| !m.control) {
        producers.record(
            m.producer_id,
            m.epoch,
            m.batch_at(m.base_offset),
            m.max_timestamp,
        );
    }
}

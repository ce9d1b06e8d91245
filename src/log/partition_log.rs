//! `Log`: the segments of one partition, in `<data dir>/<topic>-<partition>/`.
//!
//! Locking: `append_lock` guards every change to the log (append, roll, truncate, retention);
//! readers take the `segments` read lock only long enough to clone the `Arc`s they need, then
//! read with positional I/O, so a slow reader never holds up the appender. Under these locks a
//! log writes (the append itself, a rename, an index entry) but never waits on an fsync or
//! an unlink: those are `deferred` to the maintenance thread.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Mutex, RwLock};

use super::leader_epochs::LeaderEpochCache;
use super::log_config::SharedLogConfig;
use super::producer_state::{Check, ProducerError, ProducerStates};
use super::segment::{Recovered, Segment};
use crate::protocol::{message, record_batch};

#[derive(Debug)]
pub enum LogError {
    Io(io::Error),
    /// The requested offset is not in `[start, end]`.
    OffsetOutOfRange {
        requested: i64,
        start: i64,
        end: i64,
    },
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogError::Io(e) => write!(f, "i/o error: {e}"),
            LogError::OffsetOutOfRange {
                requested,
                start,
                end,
            } => {
                write!(f, "offset {requested} outside [{start}, {end}]")
            }
        }
    }
}

impl std::error::Error for LogError {}

impl From<io::Error> for LogError {
    fn from(e: io::Error) -> Self {
        LogError::Io(e)
    }
}

/// What `append_batch` did with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Appended at this first offset.
    Appended(i64),
    /// A retry of a batch already in the log at these offsets: nothing appended.
    Duplicate(i64, i64),
    Refused(ProducerError),
}

pub struct Log {
    pub topic: String,
    pub partition: i32,
    pub dir: PathBuf,
    /// The broker's settings, shared by its logs (`log_config`).
    pub(super) config: Arc<SharedLogConfig>,
    /// Where the log starts for readers when DeleteRecords moved it past the first
    /// segment's base (-1: the first segment's base).
    pub(super) log_start: AtomicI64,
    /// The topic's settings over `config` and the broker's retention.
    pub overrides: super::overrides::LogOverrides,
    /// Sorted by base offset; never empty. The last one is the active segment.
    pub(super) segments: RwLock<Vec<Arc<Segment>>>,
    /// Offset the next message gets (LEO). Published after the bytes are in the segment.
    log_end_offset: AtomicI64,
    pub(super) append_lock: Mutex<AppendState>,
    /// Rolled segments owed an fsync, segments owed an unlink, the recovery point.
    pub(super) deferred: super::deferred::Deferred,
    /// The partition's high watermark, published by its replica: the cleaner cleans below it
    /// only (a record above it may still be cut by a leader change).
    high_watermark: AtomicI64,
    /// Where the cleaner left off, and what it found.
    pub(super) cleaning: super::cleaner::CleaningState,
    /// The transactions' bounds on what `read_committed` consumers read.
    pub(super) txn_bounds: super::transactions::TxnBounds,
}

/// Appender-side state: the flush policy's bookkeeping, the idempotent producers' and the
/// leader epochs'.
pub(super) struct AppendState {
    unflushed_messages: u64,
    last_flush: Instant,
    pub(super) producers: ProducerStates,
    pub(super) epochs: LeaderEpochCache,
}

/// Where a partition's directory lives, by Kafka's naming.
pub fn partition_dir(data_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    data_dir.join(format!("{topic}-{partition}"))
}

/// Splits a partition directory name `topic-partition` (topics may contain '-').
pub fn parse_partition_dir(name: &str) -> Option<(String, i32)> {
    let (t, p) = name.rsplit_once('-')?;
    let p: i32 = p.parse().ok()?;
    (!t.is_empty() && p >= 0).then(|| (t.to_owned(), p))
}

impl Log {
    /// Opens (creating if needed) the log in `dir` and recovers it from `recovery_point` (from
    /// its first segment when unknown): every entry's CRC is checked from the segment holding
    /// it on, and a torn or corrupt tail is cut, with a warning naming what was cut.
    pub fn open(
        dir: PathBuf,
        topic: &str,
        partition: i32,
        config: impl Into<Arc<SharedLogConfig>>,
        recovery_point: Option<i64>,
    ) -> io::Result<(Log, Recovered)> {
        let config: Arc<SharedLogConfig> = config.into();
        std::fs::create_dir_all(&dir)?;
        super::deferred::remove_leftovers(&dir)?;
        super::segment::finish_interrupted_swaps(&dir, config.index_interval_bytes())?;
        let mut bases: Vec<i64> = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".log") {
                if let Ok(b) = stem.parse() {
                    bases.push(b);
                }
            } else if let Some((stem, ext)) = name.split_once('.')
                && super::segment::FILE_EXTENSIONS[1..].contains(&ext)
                && !dir.join(format!("{stem}.log")).exists()
            {
                log::warn!("[{topic}-{partition}] removing index {name} without a log file");
                std::fs::remove_file(dir.join(&name))?;
            }
        }
        bases.sort_unstable();
        if bases.is_empty() {
            bases.push(0);
        }
        let mut segments = Vec::with_capacity(bases.len());
        for b in &bases {
            segments.push(Arc::new(Segment::open(
                &dir,
                *b,
                config.index_interval_bytes(),
            )?));
        }
        let tag = format!("[{topic}-{partition}]");
        let (segments, recovered) =
            super::deferred::recover_segments(&tag, segments, recovery_point)?;
        let first = segments[0].base_offset;
        let leo = segments.last().expect("at least one segment").next_offset();
        let log = Log {
            topic: topic.to_owned(),
            partition,
            dir,
            config,
            overrides: Default::default(),
            log_start: AtomicI64::new(-1),
            segments: RwLock::new(segments),
            log_end_offset: AtomicI64::new(leo),
            append_lock: Mutex::new(AppendState {
                unflushed_messages: 0,
                last_flush: Instant::now(),
                producers: ProducerStates::default(),
                epochs: LeaderEpochCache::default(),
            }),
            deferred: super::deferred::Deferred::new(recovery_point.unwrap_or(first).min(leo)),
            high_watermark: AtomicI64::new(0),
            cleaning: Default::default(),
            txn_bounds: Default::default(),
        };
        log.load_producers()?;
        log.load_leader_epochs()?;
        Ok((log, recovered))
    }

    /// The segments that may hold offsets from `offset` on.
    pub(super) fn segments_from(&self, offset: i64) -> Vec<Arc<Segment>> {
        let segs = self.segments.read();
        let i = segs
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1);
        segs[i..].to_vec()
    }

    /// The high watermark its partition published (0 until then).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Publishes the partition's high watermark; true when it changed.
    pub fn store_high_watermark(&self, hw: i64) -> bool {
        let moved = self.high_watermark.swap(hw, Ordering::AcqRel) != hw;
        if moved {
            self.txns_replicated_to(hw);
        }
        moved
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }

    pub fn log_start_offset(&self) -> i64 {
        let base = self.segments.read()[0].base_offset;
        base.max(self.log_start.load(Ordering::Acquire))
    }

    /// DeleteRecords (and a follower following its leader's): readers start at `offset`
    /// (capped at the log end), and the segments wholly before it are deleted. Never moves
    /// the start back. Returns the start after.
    pub fn delete_records_before(&self, offset: i64) -> io::Result<i64> {
        let mut state = self.append_lock.lock();
        let offset = offset.min(self.log_end_offset());
        if offset <= self.log_start_offset() {
            return Ok(self.log_start_offset());
        }
        self.log_start.store(offset, Ordering::Release);
        let mut segs = self.segments.write();
        while segs.len() > 1 && segs[1].base_offset <= offset {
            self.retire(segs.remove(0))?;
        }
        drop(segs);
        if state.epochs.truncate_from_start(offset) {
            state.epochs.write_truncated(&self.dir)?;
        }
        log::info!(
            "[{}-{}] records before {offset} deleted; log now starts there",
            self.topic,
            self.partition
        );
        Ok(offset)
    }

    pub fn size_bytes(&self) -> u64 {
        self.segments.read().iter().map(|s| s.size()).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.read().len()
    }

    /// Assigns dense offsets to a validated set (in place) and appends it. Returns the first
    /// offset given. `count` is the number of messages in `set`.
    pub fn append(&self, set: &mut [u8], count: u32) -> io::Result<i64> {
        let mut flush = self.append_lock.lock();
        let first = self.log_end_offset();
        let next = message::assign_offsets(set, first);
        debug_assert_eq!(next - first, i64::from(count));
        self.append_locked(&mut flush, set, first, next - 1)?;
        Ok(first)
    }

    /// Appends one validated format v2 batch of `count` records: its base offset (and the
    /// leader's epoch, and the append time when given) are written into it in place. A batch
    /// of an idempotent producer is first checked against the producer's state (which the
    /// append then updates): a retry of a batch already here is not appended again.
    pub fn append_batch(
        &self,
        batch: &mut [u8],
        count: u32,
        leader_epoch: i32,
        append_time: Option<i64>,
    ) -> io::Result<BatchOutcome> {
        let mut state = self.append_lock.lock();
        let meta = record_batch::producer_meta(batch);
        if let Some(m) = &meta {
            match state
                .producers
                .check(m.producer_id, m.epoch, m.base_sequence, m.count)
            {
                Ok(Check::Append) => {}
                Ok(Check::Duplicate {
                    first_offset,
                    last_offset,
                }) => return Ok(BatchOutcome::Duplicate(first_offset, last_offset)),
                Err(e) => return Ok(BatchOutcome::Refused(e)),
            }
        }
        let first = self.log_end_offset();
        let last = first + i64::from(count) - 1;
        record_batch::assign(batch, first, leader_epoch, append_time);
        self.append_locked(&mut state, batch, first, last)?;
        if let Some(m) = meta {
            state.producers.record(
                m.producer_id,
                m.epoch,
                m.batch_at(first),
                append_time.unwrap_or(m.max_timestamp),
            );
            if m.transactional {
                state.producers.record_txn_data(m.producer_id, first);
                self.publish_txns(&mut state.producers);
            }
        }
        Ok(BatchOutcome::Appended(first))
    }

    /// Appends `count` messages built by `build` from the first offset they get (a compressed
    /// set rebuilt around our offsets), under the append lock.
    pub fn append_rebuilt(
        &self,
        count: u32,
        build: impl FnOnce(i64) -> io::Result<Vec<u8>>,
    ) -> io::Result<i64> {
        let mut flush = self.append_lock.lock();
        let first = self.log_end_offset();
        let set = build(first)?;
        self.append_locked(&mut flush, &set, first, first + i64::from(count) - 1)?;
        Ok(first)
    }

    /// Appends entries whose offsets were assigned by a leader (a follower's append).
    /// `first_entry` is the offset field of the first entry — a compressed wrapper carries its
    /// last inner offset — and must not be below our log end offset, which would overlap.
    pub fn append_with_offsets(&self, set: &[u8], first_entry: i64, last: i64) -> io::Result<()> {
        let mut flush = self.append_lock.lock();
        let leo = self.log_end_offset();
        if first_entry < leo {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("append of entry {first_entry} but log end offset is {leo}"),
            ));
        }
        self.append_locked(&mut flush, set, leo, last)?;
        // The leader checked these batches; a follower only keeps the state it would need
        // if it became leader: its producers' sequences and the leader epochs, read from
        // the batch headers in one pass.
        let mut epochs_changed = false;
        for e in crate::protocol::records::entries(set).map_while(Result::ok) {
            super::idempotence::record_header(&mut flush.producers, e.bytes);
            self.follow_txn_batch(&mut flush, e.bytes)?;
            epochs_changed |= flush.epochs.assign_from_header(e.bytes);
        }
        self.publish_txns(&mut flush.producers);
        if epochs_changed {
            flush.epochs.write(&self.dir)?;
        }
        Ok(())
    }

    pub(super) fn append_locked(
        &self,
        flush: &mut AppendState,
        set: &[u8],
        first: i64,
        last: i64,
    ) -> io::Result<()> {
        if set.is_empty() {
            return Ok(());
        }
        // A leader's new epoch is on disk before any message of it (`begin_leader_epoch`).
        flush.epochs.save_if_unsaved(&self.dir)?;
        let active = self.maybe_roll(set.len() as u64, first, &flush.producers)?;
        active.append(set, first, last)?;
        self.log_end_offset.store(last + 1, Ordering::Release);
        flush.unflushed_messages += (last - first + 1) as u64;
        if flush.unflushed_messages >= self.config.flush_interval_messages() {
            // The operator asked for an fsync every so many messages, under the lock: the
            // rolled segments owed one come first, so the recovery point may pass them.
            self.flush_rolled()?;
            active.flush()?;
            self.deferred.flushed_to(last + 1);
            flush.unflushed_messages = 0;
            flush.last_flush = Instant::now();
        }
        Ok(())
    }

    /// Rolls to a new segment when `len` more bytes would pass `log.segment.bytes`.
    fn maybe_roll(
        &self,
        len: u64,
        next_offset: i64,
        producers: &ProducerStates,
    ) -> io::Result<Arc<Segment>> {
        let active = self.segments.read().last().cloned().expect("never empty");
        let full = active.size() + len > self.overrides.segment_bytes(self.config.segment_bytes());
        // An active segment is never cleaned: `segment.ms` bounds how long a record waits.
        let old = active.opened_at().elapsed() >= self.overrides.segment_ms(self.config.roll());
        if active.size() == 0 || !(full || old) {
            return Ok(active);
        }
        // The old segment is complete: its time index is sealed and its fsync is owed (done
        // by the maintenance thread with no lock held, `deferred`); the producers' state as
        // of here is snapshotted, so a restart rebuilds it from here on.
        active.seal()?;
        self.deferred.owe_flush(active);
        producers.write_snapshot(&self.dir, next_offset)?;
        let seg = Arc::new(Segment::open(
            &self.dir,
            next_offset,
            self.config.index_interval_bytes(),
        )?);
        log::debug!(
            "[{}-{}] rolled new segment at offset {next_offset}",
            self.topic,
            self.partition
        );
        self.segments.write().push(seg.clone());
        Ok(seg)
    }

    /// Cuts the log so that `offset` is its new end (a follower truncating to its high
    /// watermark), or the end of the entry before it when `offset` falls inside a batch:
    /// `log_end_offset` tells which. Segments wholly above it are deleted.
    pub fn truncate_to(&self, offset: i64) -> io::Result<()> {
        let mut state = self.append_lock.lock();
        if offset >= self.log_end_offset() {
            // No message goes, but epochs said to begin at or past the cut do (a leader's
            // epoch that never appended anything).
            if state.epochs.truncate_from_end(offset) {
                state.epochs.write_truncated(&self.dir)?;
            }
            return Ok(());
        }
        let mut segs = self.segments.write();
        while segs.len() > 1 && segs.last().is_some_and(|s| s.base_offset >= offset) {
            self.retire(segs.pop().expect("len > 1"))?;
        }
        let active = segs.last().expect("never empty");
        active.truncate_to(offset.max(active.base_offset))?;
        // At `offset`, or before it when it fell inside an entry (a batch is kept whole or not
        // at all).
        let offset = active.next_offset();
        self.log_end_offset.store(offset, Ordering::Release);
        // What is appended from here is not on disk yet.
        self.deferred.truncated_to(offset);
        // A log cut below where DeleteRecords had moved its start now starts at its end.
        self.log_start.fetch_min(offset, Ordering::AcqRel);
        // What comes after the cut is dirty again.
        self.cleaning
            .first_dirty
            .fetch_min(offset, Ordering::AcqRel);
        drop(segs);
        // Batches past `offset` are gone, and with them their producers' sequences and epochs.
        state.producers = self.rebuild_producers(offset)?;
        self.publish_txns(&mut state.producers);
        if state.epochs.truncate_from_end(offset) {
            state.epochs.write_truncated(&self.dir)?;
        }
        log::info!(
            "[{}-{}] truncated log to offset {offset}",
            self.topic,
            self.partition
        );
        Ok(())
    }

    /// Drops every segment and starts an empty log at `offset` (a follower whose log ends
    /// before the leader's log starts).
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> io::Result<()> {
        let mut state = self.append_lock.lock();
        state.producers = ProducerStates::default();
        self.publish_txns(&mut state.producers);
        super::producer_state::delete_snapshots(&self.dir)?;
        state.epochs.clear();
        state.epochs.write(&self.dir)?;
        let mut segs = self.segments.write();
        for s in std::mem::take(&mut *segs) {
            self.retire(s)?;
        }
        segs.push(Arc::new(Segment::open(
            &self.dir,
            offset,
            self.config.index_interval_bytes(),
        )?));
        self.log_end_offset.store(offset, Ordering::Release);
        self.deferred.truncated_to(offset);
        self.log_start.store(-1, Ordering::Release);
        self.cleaning.first_dirty.store(offset, Ordering::Release);
        log::info!(
            "[{}-{}] log reset to start at offset {offset}",
            self.topic,
            self.partition
        );
        Ok(())
    }

    /// Fsyncs everything appended: the rolled segments owed it (no lock held), then the
    /// active one.
    pub fn flush(&self) -> io::Result<()> {
        self.flush_rolled()?;
        let mut state = self.append_lock.lock();
        if state.unflushed_messages > 0 {
            self.segments.read().last().expect("never empty").flush()?;
            state.unflushed_messages = 0;
        }
        self.deferred.flushed_to(self.log_end_offset());
        state.last_flush = Instant::now();
        Ok(())
    }

    /// Time since the last flush, when there is something unflushed.
    pub fn unflushed_for(&self) -> Option<Duration> {
        let s = self.append_lock.lock();
        (s.unflushed_messages > 0).then(|| s.last_flush.elapsed())
    }

    /// Deletes whole old segments: those last written longer ago than `retention`, then the
    /// oldest while the log is over `retention_bytes`. The active segment is never deleted.
    pub fn delete_old_segments(
        &self,
        retention: Option<Duration>,
        retention_bytes: Option<u64>,
    ) -> io::Result<usize> {
        let mut state = self.append_lock.lock();
        let mut segs = self.segments.write();
        let mut total: u64 = segs.iter().map(|s| s.size()).sum();
        let now = SystemTime::now();
        let mut deleted = 0;
        while segs.len() > 1 {
            let oldest = &segs[0];
            let too_old = retention.is_some_and(|r| {
                now.duration_since(oldest.last_modified())
                    .unwrap_or_default()
                    > r
            });
            let too_big = retention_bytes.is_some_and(|b| total - oldest.size() >= b);
            if !(too_old || too_big) {
                break;
            }
            total -= oldest.size();
            self.retire(segs.remove(0))?;
            deleted += 1;
        }
        if deleted > 0 {
            if state.epochs.truncate_from_start(segs[0].base_offset) {
                state.epochs.write_truncated(&self.dir)?;
            }
            log::info!(
                "[{}-{}] retention deleted {deleted} segment(s); log now starts at {}",
                self.topic,
                self.partition,
                segs[0].base_offset
            );
        }
        Ok(deleted)
    }
}

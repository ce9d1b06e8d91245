//! One clean of one log, in the steps of Kafka's `Cleaner.clean`:
//! 1. **the cleanable range**: from the first dirty offset (where the last clean stopped) to the
//!    first uncleanable one — the active segment, the high watermark, and records younger than
//!    `min.compaction.lag.ms`, whichever comes first; only whole segments below it are read;
//! 2. **the offset map** of the dirty segments: each key's latest offset, until the map is full;
//! 3. **recopying**: the segments from the log's start to where the map ends, in groups no
//!    larger than a segment, each written as one new segment of what `filter` keeps (every
//!    record at its original offset), with its indexes, fsynced;
//! 4. **the swap**: under the log's locks, only renames — the new segment goes from `.cleaned`
//!    to `.swap`, the old ones leave the list and are renamed `.deleted` (unlinked later, so a
//!    reader holding one keeps reading it), the new one takes its place and its live name.
//!
//! Produce and fetch never wait on the cleaner: it reads with positional reads, writes files
//! nobody else sees, and takes the locks only for the swap's renames. A log that changed under
//! it (retention, truncation, DeleteRecords) is not swapped: its clean is dropped and done again.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::filter::{self, Filtered, Rules, Tally};
use super::offset_map::OffsetMap;
use super::throttle::Throttle;
use super::txns::CleanedTxns;
use crate::log::overrides::Compaction;
use crate::log::partition_log::Log;
use crate::log::segment::{CLEANED_SUFFIX, SWAP_SUFFIX, Segment};
use crate::protocol::record_batch;
use crate::protocol::records::{self, Entry};

/// The steps of a swap, for a test to stop a clean between them as a crash would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The new segment is written and on disk as `.cleaned`.
    Written,
    /// It is renamed `.swap`: the replacement is decided.
    Decided,
    /// The old segments are renamed `.deleted`; the new one is not yet live.
    Retired,
}

/// What may stop a clean between steps (a test's crash); `None` in the broker.
pub type StepHook<'a> = Option<&'a dyn Fn(Step) -> bool>;

/// What a log offers the cleaner now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cleanable {
    pub first_dirty: i64,
    pub first_uncleanable: i64,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    /// The oldest dirty record is older than `max.compaction.lag.ms`.
    pub overdue: bool,
    /// A tombstone's delete horizon has passed.
    pub horizon_passed: bool,
}

impl Cleanable {
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }

    /// Whether the log should be cleaned now.
    pub fn is_due(&self, c: &Compaction) -> bool {
        (self.dirty_bytes > 0 && (self.dirty_ratio() >= c.min_cleanable_ratio || self.overdue))
            || self.horizon_passed
    }
}

/// What one clean did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Cleaned {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub segments_before: usize,
    pub segments_after: usize,
    pub tally: Tally,
    pub map_utilization: f64,
    /// Where the next clean starts.
    pub first_dirty: i64,
    /// False when the log changed under it and nothing was swapped.
    pub swapped: bool,
    pub elapsed: Duration,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The segment's newest record time: its largest timestamp, or when it was last written if
/// its records have none (format 0).
fn newest_ms(s: &Segment) -> i64 {
    match s.max_timestamp().0 {
        -1 => s
            .last_modified()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
        t => t,
    }
}

impl Log {
    /// The segments the cleaner may touch: all but the active one.
    fn inactive_segments(&self) -> Vec<Arc<Segment>> {
        let segs = self.segments.read();
        segs[..segs.len() - 1].to_vec()
    }

    /// Step 1: what is clean, what is dirty and whether it is due.
    pub fn cleanable(&self, c: &Compaction, now_ms: i64) -> Cleanable {
        let segs = self.inactive_segments();
        let active_base = self.segments.read().last().map_or(0, |s| s.base_offset);
        // A checkpoint past the active segment (a log cut shorter since) counts from the start,
        // as Kafka resets it.
        let checkpointed = self.cleaning.first_dirty.load(Ordering::Acquire);
        let first_dirty = if checkpointed > active_base {
            self.log_start_offset()
        } else {
            checkpointed.max(self.log_start_offset())
        };
        let lag_bound = segs
            .iter()
            .find(|s| newest_ms(s) > now_ms.saturating_sub(c.min_compaction_lag_ms))
            .map_or(i64::MAX, |s| s.base_offset);
        // Nor an open transaction's records, whose fate is not known: below the LSO only.
        let first_uncleanable = active_base.min(self.last_stable_offset()).min(lag_bound);
        let mut out = Cleanable {
            first_dirty,
            first_uncleanable,
            clean_bytes: 0,
            dirty_bytes: 0,
            overdue: false,
            horizon_passed: self.cleaning.earliest_horizon.load(Ordering::Acquire) <= now_ms,
        };
        for s in &segs {
            if s.next_offset() <= first_dirty {
                out.clean_bytes += s.size();
            } else if s.next_offset() <= first_uncleanable {
                if out.dirty_bytes == 0 {
                    out.overdue = newest_ms(s) < now_ms.saturating_sub(c.max_compaction_lag_ms);
                }
                out.dirty_bytes += s.size();
            } else {
                break;
            }
        }
        out
    }

    /// Steps 2 to 4, with an offset map of `map_memory` bytes; `io_buffer` is the read size.
    pub fn clean(
        &self,
        c: &Compaction,
        map_memory: usize,
        io: &Throttle,
        io_buffer: usize,
        hook: StepHook<'_>,
    ) -> io::Result<Cleaned> {
        let started = Instant::now();
        let now = now_ms();
        let range = self.cleanable(c, now);
        // Made for this clean and freed after it: memory only while cleaning.
        let mut map = OffsetMap::with_memory(map_memory);
        let map = &mut map;
        let segs = self.inactive_segments();
        let mut out = Cleaned {
            segments_before: self.segment_count(),
            ..Default::default()
        };
        let end = self.build_offset_map(&segs, &range, map, io, io_buffer, &mut out)?;
        out.map_utilization = map.utilization();
        let last_batches = self.append_lock.lock().producers.last_batches();
        let mut txns = CleanedTxns::new(self.aborted_transactions(self.log_start_offset(), end));
        let to_clean: Vec<_> = segs
            .iter()
            .filter(|s| s.base_offset < end)
            .cloned()
            .collect();
        out.swapped = true;
        for group in groups(
            &to_clean,
            self.overrides.segment_bytes(self.config.segment_bytes()),
        ) {
            let rules = Rules {
                map,
                now_ms: now,
                delete_retention_ms: c.delete_retention_ms,
                legacy_tombstones_expired: false,
                last_batches: &last_batches,
            };
            if !self.clean_group(group, rules, &mut txns, (io, io_buffer), hook, &mut out)? {
                out.swapped = false;
                break;
            }
        }
        if out.swapped {
            self.cleaning.first_dirty.fetch_max(end, Ordering::AcqRel);
            let horizon = out.tally.earliest_horizon.unwrap_or(i64::MAX);
            self.cleaning
                .earliest_horizon
                .store(horizon, Ordering::Release);
        }
        out.first_dirty = end;
        out.segments_after = self.segment_count();
        out.elapsed = started.elapsed();
        Ok(out)
    }

    /// Step 2: the latest offset of each key in the dirty segments, from the first dirty
    /// offset until the map is full. Returns the offset the map covers up to.
    fn build_offset_map(
        &self,
        segs: &[Arc<Segment>],
        range: &Cleanable,
        map: &mut OffsetMap,
        io: &Throttle,
        io_buffer: usize,
        out: &mut Cleaned,
    ) -> io::Result<i64> {
        let mut end = range.first_dirty;
        // An aborted transaction's values do not count as any key's latest.
        let aborted = self.aborted_transactions(range.first_dirty, range.first_uncleanable);
        let mut txns = CleanedTxns::new(aborted);
        for s in segs {
            if s.next_offset() <= range.first_dirty {
                continue;
            }
            if s.next_offset() > range.first_uncleanable {
                break;
            }
            let mut full = false;
            for_each_entry(s, range.first_dirty, io_buffer, io, out, |e| {
                let Some(n) = key_slots(&e, &mut txns) else {
                    end = e.last_offset + 1;
                    return Ok(true); // a transaction marker or aborted data: no key
                };
                if map.len() + n > map.capacity() {
                    if map.is_empty() {
                        return Err(io::Error::other(format!(
                            "one entry at offset {} holds more records ({n}) than the dedupe buffer fits",
                            e.first_offset
                        )));
                    }
                    full = true;
                    return Ok(false);
                }
                records::for_each_message(e.bytes, |offset, _, key, _, _| {
                    if let Some(k) = key {
                        map.put(k, offset);
                    }
                })
                .map_err(|err| corrupt(&e, err))?;
                end = e.last_offset + 1;
                Ok(true)
            })?;
            if full {
                return Ok(end);
            }
            end = end.max(s.next_offset());
        }
        Ok(end)
    }

    /// Steps 3 and 4 for one group of segments; false when the log changed under it. `txns`
    /// follows the transactions from the log's start (`txns`); `io` is the throttle and the
    /// read size.
    fn clean_group(
        &self,
        group: &[Arc<Segment>],
        mut rules: Rules<'_>,
        txns: &mut CleanedTxns,
        (io, io_buffer): (&Throttle, usize),
        hook: StepHook<'_>,
        out: &mut Cleaned,
    ) -> io::Result<bool> {
        let base = group[0].base_offset;
        let interval = self.config.index_interval_bytes();
        let writer = Segment::create_staged(&self.dir, base, interval, CLEANED_SUFFIX)?;
        let mut run = RunWriter::new(&writer, interval as usize);
        for s in group {
            let written_ms = newest_written_ms(s);
            rules.legacy_tombstones_expired =
                written_ms.saturating_add(rules.delete_retention_ms) < rules.now_ms;
            for_each_entry(s, s.base_offset, io_buffer, io, out, |e| {
                let kept =
                    filter::filter_entry(&e, &rules, txns, &mut run.tally).map_err(|err| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("entry at offset {}: {err:?}", e.first_offset),
                        )
                    })?;
                match kept {
                    Filtered::Keep => run.push(e.bytes, e.first_offset, e.last_offset)?,
                    Filtered::Drop => {}
                    Filtered::Rewrite(bytes) => run.push(&bytes, e.first_offset, e.last_offset)?,
                }
                Ok(true)
            })?;
        }
        run.finish()?;
        out.tally.records_read += run.tally.records_read;
        out.tally.records_kept += run.tally.records_kept;
        if let Some(h) = run.tally.earliest_horizon {
            out.tally.earliest_horizon = Some(out.tally.earliest_horizon.map_or(h, |e| e.min(h)));
        }
        out.bytes_written += writer.size();
        io.spend(writer.size())?;
        // The aborted transactions whose ABORT markers it kept.
        for e in txns.take_index() {
            writer.txn_index.append(e)?;
        }
        writer.seal()?;
        writer.flush()?;
        let newest_write = group.iter().map(|s| s.last_modified()).max();
        writer.set_last_modified(newest_write.unwrap_or_else(SystemTime::now))?;
        if !continues(hook, Step::Written) {
            return Err(io::Error::other("clean stopped after writing (test)"));
        }
        let writer = writer.renamed(CLEANED_SUFFIX, SWAP_SUFFIX)?;
        if !continues(hook, Step::Decided) {
            return Err(io::Error::other("clean stopped once decided (test)"));
        }
        self.swap_in(group, writer, hook)
    }

    /// Step 4: renames only, under the log's locks.
    fn swap_in(
        &self,
        group: &[Arc<Segment>],
        new: Segment,
        hook: StepHook<'_>,
    ) -> io::Result<bool> {
        let _appends = self.append_lock.lock();
        let mut segs = self.segments.write();
        let at = segs.iter().position(|s| Arc::ptr_eq(s, &group[0]));
        let unchanged = at.is_some_and(|i| {
            i + group.len() < segs.len()
                && segs[i..i + group.len()]
                    .iter()
                    .zip(group)
                    .all(|(a, b)| Arc::ptr_eq(a, b))
        });
        let Some(i) = at.filter(|_| unchanged) else {
            drop(segs);
            new.delete_files()?;
            log::info!(
                "[{}-{}] log changed during its clean; the clean is dropped",
                self.topic,
                self.partition
            );
            return Ok(false);
        };
        for old in segs.drain(i..i + group.len()).collect::<Vec<_>>() {
            self.retire(old)?;
        }
        if !continues(hook, Step::Retired) {
            return Err(io::Error::other("clean stopped once retired (test)"));
        }
        segs.insert(i, Arc::new(new.renamed(SWAP_SUFFIX, "")?));
        Ok(true)
    }
}

fn continues(hook: StepHook<'_>, step: Step) -> bool {
    hook.is_none_or(|h| h(step))
}

fn newest_written_ms(s: &Segment) -> i64 {
    s.last_modified()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// How many map slots an entry may need: its record count (a format 0/1 compressed wrapper's
/// messages counted by opening it); `None` for a transaction marker or a batch of an aborted
/// transaction (`txns` follows them), whose keys do not go into the map.
fn key_slots(e: &Entry<'_>, txns: &mut CleanedTxns) -> Option<usize> {
    if e.magic != record_batch::MAGIC {
        let mut n = 0;
        let _ = records::for_each_message(e.bytes, |_, _, _, _, _| n += 1);
        return Some(n);
    }
    match record_batch::parse_batch(e.bytes) {
        Ok(b) if b.is_control() => {
            if let Some(m) = record_batch::parse_marker(b.bytes()) {
                txns.marker_removable(b.producer_id(), m.commit, b.base_offset());
            }
            None
        }
        Ok(b) => {
            let transactional = record_batch::header_flags(b.bytes()).0;
            (!txns.is_aborted(b.producer_id(), transactional, b.last_offset()))
                .then_some(b.record_count().max(0) as usize)
        }
        Err(_) => Some(0),
    }
}

fn corrupt(e: &Entry<'_>, err: impl std::fmt::Debug) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("entry at offset {}: {err:?}", e.first_offset),
    )
}

/// Consecutive segments in groups each small enough to become one segment: their bytes
/// together within `max_bytes` (so within a segment's size) and their offsets within what a
/// segment's index can hold relative to its base.
fn groups(segs: &[Arc<Segment>], max_bytes: u64) -> Vec<&[Arc<Segment>]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < segs.len() {
        let mut end = start + 1;
        let mut bytes = segs[start].size();
        while end < segs.len()
            && bytes + segs[end].size() <= max_bytes
            && segs[end].next_offset() - segs[start].base_offset < i64::from(i32::MAX)
        {
            bytes += segs[end].size();
            end += 1;
        }
        out.push(&segs[start..end]);
        start = end;
    }
    out
}

/// Calls `f` for each entry of `seg` from the one holding `from`, reading `io_buffer` bytes
/// at a time (more for a larger entry), until `f` says stop.
fn for_each_entry(
    seg: &Segment,
    from: i64,
    io_buffer: usize,
    io: &Throttle,
    out: &mut Cleaned,
    mut f: impl FnMut(Entry<'_>) -> io::Result<bool>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(io_buffer);
    let mut want = io_buffer;
    let mut next = from;
    loop {
        buf.clear();
        let n = seg.read_into(next, None, want, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        out.bytes_read += n as u64;
        io.spend(n as u64)?;
        let mut any = false;
        for e in records::entries(&buf) {
            let e = e.map_err(|err| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "segment {}: corrupt entry after offset {next}: {err}",
                        seg.base_offset
                    ),
                )
            })?;
            any = true;
            next = e.last_offset + 1;
            if !f(e)? {
                return Ok(());
            }
        }
        // An entry larger than the buffer: read it whole.
        want = if any { io_buffer } else { want * 2 };
    }
}

/// Bytes of a new segment written between two starts of their writeback.
const WRITEBACK_EVERY: u64 = 8 << 20;

/// Writes kept entries to the new segment in runs of about an index interval, so that its
/// offset index is as dense as an appended segment's; every `WRITEBACK_EVERY` bytes their
/// writeback is started, so the fsync at the end has little left to send.
struct RunWriter<'a> {
    seg: &'a Segment,
    interval: usize,
    buf: Vec<u8>,
    first: i64,
    last: i64,
    tally: Tally,
    written_back: u64,
}

impl<'a> RunWriter<'a> {
    fn new(seg: &'a Segment, interval: usize) -> Self {
        RunWriter {
            seg,
            interval: interval.max(1),
            buf: Vec::with_capacity(interval.max(1) * 2),
            first: -1,
            last: -1,
            tally: Tally::default(),
            written_back: 0,
        }
    }

    fn push(&mut self, entry: &[u8], first: i64, last: i64) -> io::Result<()> {
        if self.buf.is_empty() {
            self.first = first;
        }
        self.buf.extend_from_slice(entry);
        self.last = last;
        if self.buf.len() >= self.interval {
            self.finish()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.seg.append(&self.buf, self.first, self.last)?;
            self.buf.clear();
        }
        if self.seg.size() - self.written_back >= WRITEBACK_EVERY {
            self.seg.start_writeback(self.written_back);
            self.written_back = self.seg.size();
        }
        Ok(())
    }
}

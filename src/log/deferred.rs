//! The disk work a log leaves to the log manager's maintenance thread, so that no append,
//! fetch or controller command waits on it behind a lock (Kafka's scheduler does the same):
//!
//! - **Rolled segments are fsynced later.** A roll seals the old segment and queues it;
//!   `Log::flush_rolled` syncs it with no lock held and moves the *recovery point* (the
//!   offset below which every byte is on disk) past it. The recovery point is checkpointed
//!   (`recovery-point-offset-checkpoint`, Kafka's file) and, after a crash, every segment from
//!   the one holding it is checked entry by entry — not just the last one, since a roll no
//!   longer makes the old segment durable before the new one takes writes.
//! - **Segments leaving the log are unlinked later.** Retention, DeleteRecords and a
//!   follower's truncation take a segment out of the list under the log's locks and rename its
//!   files `*.deleted` (a rename is one metadata update); the files are unlinked once
//!   `file.delete.delay.ms` has passed, so a reader that took the segment before it left
//!   keeps reading it, and no lock is held across the unlink of up to a gigabyte.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::partition_log::Log;
use super::segment::{Recovered, Segment};

/// What a file name ends with once its segment has left the log (Kafka's suffix).
pub const DELETED_SUFFIX: &str = ".deleted";

pub(super) struct Deferred {
    /// Offsets below this are on disk.
    recovery_point: AtomicI64,
    /// Rolled segments whose fsync is owed, oldest first.
    rolled: Mutex<Vec<Arc<Segment>>>,
    /// Segments out of the log, renamed, with when their files go.
    retired: Mutex<Vec<(Instant, Arc<Segment>)>>,
}

impl Deferred {
    pub(super) fn new(recovery_point: i64) -> Deferred {
        Deferred {
            recovery_point: AtomicI64::new(recovery_point),
            rolled: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// Everything below `offset` is on disk.
    pub(super) fn flushed_to(&self, offset: i64) {
        self.recovery_point.fetch_max(offset, Ordering::AcqRel);
    }

    /// The log was cut to end at `offset`: what is appended from there is not on disk.
    pub(super) fn truncated_to(&self, offset: i64) {
        self.rolled.lock().retain(|s| s.base_offset < offset);
        self.recovery_point.fetch_min(offset, Ordering::AcqRel);
    }

    pub(super) fn owe_flush(&self, rolled: Arc<Segment>) {
        self.rolled.lock().push(rolled);
    }
}

impl Log {
    /// The offset below which every byte of this log is on disk.
    pub fn recovery_point(&self) -> i64 {
        self.deferred.recovery_point.load(Ordering::Acquire)
    }

    /// Fsyncs the segments rolled since the last call, oldest first, with no lock of the log
    /// held, and moves the recovery point past each. A failure leaves it and those after it
    /// owed.
    pub fn flush_rolled(&self) -> io::Result<()> {
        let owed = std::mem::take(&mut *self.deferred.rolled.lock());
        for (i, seg) in owed.iter().enumerate() {
            if let Err(e) = seg.flush() {
                let mut rolled = self.deferred.rolled.lock();
                let later = std::mem::take(&mut *rolled);
                rolled.extend(owed[i..].iter().cloned());
                rolled.extend(later);
                return Err(e);
            }
            // Contiguous: a segment before it whose flush failed holds the point back.
            if self.recovery_point() >= seg.base_offset {
                self.deferred.flushed_to(seg.next_offset());
            }
        }
        Ok(())
    }

    /// Takes `seg`, already out of the segment list, out of sight: its files are renamed
    /// `*.deleted` now and unlinked by `delete_retired` once `file.delete.delay.ms` passed.
    pub(super) fn retire(&self, seg: Arc<Segment>) -> io::Result<()> {
        seg.rename_deleted()?;
        let due = Instant::now() + self.delete_delay();
        self.deferred.retired.lock().push((due, seg));
        Ok(())
    }

    fn delete_delay(&self) -> Duration {
        self.overrides
            .file_delete_delay(self.config.file_delete_delay())
    }

    /// Unlinks the files of retired segments whose delay has passed (every one when `all`);
    /// returns how many segments went. No lock of the log is held meanwhile.
    pub fn delete_retired(&self, all: bool) -> usize {
        let now = Instant::now();
        let due: Vec<Arc<Segment>> = {
            let mut retired = self.deferred.retired.lock();
            let (due, later) = retired
                .drain(..)
                .partition::<Vec<_>, _>(|(at, _)| all || *at <= now);
            *retired = later;
            due.into_iter().map(|(_, s)| s).collect()
        };
        for seg in &due {
            if let Err(e) = seg.delete_renamed_files() {
                log::error!(
                    "[{}-{}] cannot delete segment {}: {e}",
                    self.topic,
                    self.partition,
                    seg.base_offset
                );
            }
        }
        due.len()
    }

    /// Segments retired and not yet unlinked.
    pub fn retired_count(&self) -> usize {
        self.deferred.retired.lock().len()
    }
}

/// Removes what a crash left of retired segments (`*.deleted` files) in a log directory.
pub(super) fn remove_leftovers(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry
            .file_name()
            .to_string_lossy()
            .ends_with(DELETED_SUFFIX)
        {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Checks every segment from the one holding `recovery_point` on (all of them when it is
/// unknown), entry by entry: data past the recovery point may not have reached the disk
/// before a crash. A segment with a torn or corrupt tail is cut there, and the segments after
/// it, which would follow a hole, are deleted (Kafka's rule). Returns the segments kept, and
/// what was found over those checked.
pub(super) fn recover_segments(
    tag: &str,
    mut segments: Vec<Arc<Segment>>,
    recovery_point: Option<i64>,
) -> io::Result<(Vec<Arc<Segment>>, Recovered)> {
    let from = match recovery_point {
        Some(rp) => segments
            .partition_point(|s| s.base_offset <= rp)
            .saturating_sub(1),
        None => 0,
    };
    let mut i = from;
    let mut total = Recovered::default();
    while i < segments.len() {
        let recovered = segments[i].recover(true)?;
        total.messages += recovered.messages;
        total.truncated_bytes += recovered.truncated_bytes;
        if recovered.truncated_bytes > 0 {
            log::warn!(
                "{tag} recovery cut {} bytes after {} valid entries of segment {}",
                recovered.truncated_bytes,
                recovered.messages,
                segments[i].base_offset
            );
            for later in segments.drain(i + 1..) {
                log::warn!(
                    "{tag} recovery deletes segment {}, after the cut",
                    later.base_offset
                );
                later.delete_files()?;
            }
        }
        i += 1;
    }
    Ok((segments, total))
}

//! The leader-epoch cache of one partition (KIP-101): for each leader epoch that wrote to the
//! log, the offset its first message got. It answers OffsetForLeaderEpoch — "where does
//! epoch E end in your log?" — which is how a new follower finds where its log parts from
//! its leader's, and how a client detects that the log it read was cut.
//!
//! Kept as Kafka keeps it, in `leader-epoch-checkpoint` in the partition directory (a version
//! line, a count line, then `epoch start_offset` per line), rewritten (temporary file, sync,
//! rename) on every change. Changes are rare: one per leader change, plus truncations.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::partition_log::Log;
use crate::protocol::record_batch;

pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
const VERSION: u32 = 0;

/// OffsetForLeaderEpoch's "no such epoch here" (Kafka's UNDEFINED_EPOCH and
/// UNDEFINED_EPOCH_OFFSET).
pub const UNDEFINED: (i32, i64) = (-1, -1);

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LeaderEpochCache {
    /// (epoch, start offset), both strictly increasing.
    entries: Vec<(i32, i64)>,
    /// The newest entry is not in the checkpoint file yet (`assign_unsaved`).
    unsaved: bool,
}

impl LeaderEpochCache {
    pub fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.0)
    }

    /// Records that `epoch` begins at `start`. An epoch not newer than the latest is ignored
    /// (its start is known already); entries starting at or after `start` belong to a history
    /// this one replaces, and go.
    pub fn assign(&mut self, epoch: i32, start: i64) -> bool {
        if epoch < 0 || self.latest_epoch().is_some_and(|l| epoch <= l) {
            return false;
        }
        self.entries.retain(|e| e.1 < start);
        self.entries.push((epoch, start));
        true
    }

    /// `assign`, leaving the file to `save_if_unsaved`.
    pub fn assign_unsaved(&mut self, epoch: i32, start: i64) {
        self.unsaved |= self.assign(epoch, start);
    }

    /// Writes the file if an entry is not in it yet.
    pub fn save_if_unsaved(&mut self, dir: &Path) -> io::Result<()> {
        if self.unsaved {
            self.write(dir)?;
        }
        Ok(())
    }

    /// A copied batch's epoch (format v2 headers; format 0/1 carry none): `assign`.
    pub fn assign_from_header(&mut self, header: &[u8]) -> bool {
        record_batch::header_epoch(header).is_some_and(|(epoch, base)| self.assign(epoch, base))
    }

    /// Where `epoch` ends: (the largest epoch ≤ `epoch` we know, the start offset of the
    /// first epoch after it), or the log end offset when it is the latest. `UNDEFINED` when
    /// `epoch` is newer than any here (or the cache is empty). An epoch older than all of
    /// ours ends where our first begins, as Kafka answers.
    pub fn end_offset_for(&self, epoch: i32, log_end: i64) -> (i32, i64) {
        let Some(latest) = self.latest_epoch() else {
            return UNDEFINED;
        };
        if epoch < 0 {
            return UNDEFINED;
        }
        if epoch == latest {
            return (latest, log_end);
        }
        let higher = self.entries.partition_point(|e| e.0 <= epoch);
        let Some(&(_, end)) = self.entries.get(higher) else {
            return UNDEFINED;
        };
        match higher.checked_sub(1) {
            Some(floor) => (self.entries[floor].0, end),
            None => (epoch, end),
        }
    }

    /// The epoch that wrote `offset` (ListOffsets' leader_epoch), -1 when unknown.
    pub fn epoch_of(&self, offset: i64) -> i32 {
        let i = self.entries.partition_point(|e| e.1 <= offset);
        i.checked_sub(1).map_or(-1, |i| self.entries[i].0)
    }

    /// The log was cut so that `end` is its end: epochs starting at or after it are gone.
    pub fn truncate_from_end(&mut self, end: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.1 < end);
        self.entries.len() != before
    }

    /// The log now starts at `start`: the epoch covering it starts there, older ones go.
    pub fn truncate_from_start(&mut self, start: i64) -> bool {
        let covering = self.entries.partition_point(|e| e.1 <= start);
        if covering <= 1 && self.entries.first().is_none_or(|e| e.1 >= start) {
            return false;
        }
        let keep = covering.saturating_sub(1);
        self.entries.drain(..keep);
        if let Some(first) = self.entries.first_mut() {
            first.1 = first.1.max(start);
        }
        true
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Writes the file, synced: an epoch added is on disk before any message of it.
    pub fn write(&mut self, dir: &Path) -> io::Result<()> {
        self.write_file(dir, true)
    }

    /// Writes the file after a truncation (from the start or the end), not synced (Kafka's
    /// `truncateFrom*AsyncFlush`): a crash that loses it leaves the entries before the cut,
    /// which loading cuts again against the recovered log's ends (`load_leader_epochs`), so
    /// retention's every pass does not wait on an fsync under the log's lock.
    pub fn write_truncated(&mut self, dir: &Path) -> io::Result<()> {
        self.write_file(dir, false)
    }

    fn write_file(&mut self, dir: &Path, sync: bool) -> io::Result<()> {
        let tmp = dir.join(format!("{LEADER_EPOCH_CHECKPOINT}.tmp"));
        let mut text = format!("{VERSION}\n{}\n", self.entries.len());
        for (epoch, start) in &self.entries {
            text.push_str(&format!("{epoch} {start}\n"));
        }
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(LEADER_EPOCH_CHECKPOINT))?;
        self.unsaved = false;
        Ok(())
    }

    /// Reads the checkpoint: `Ok(None)` when there is none, an error naming what is wrong
    /// when it does not parse.
    pub fn read(dir: &Path) -> Result<Option<Self>, String> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        parse(&text)
            .map(Some)
            .map_err(|why| format!("{}: {why}", path.display()))
    }
}

fn parse(text: &str) -> Result<LeaderEpochCache, String> {
    let mut lines = text.lines();
    if lines.next().and_then(|l| l.trim().parse::<u32>().ok()) != Some(VERSION) {
        return Err("unknown version line".into());
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("bad count line")?;
    let mut cache = LeaderEpochCache::default();
    for line in lines.by_ref().take(count) {
        let mut it = line.split_whitespace();
        let (Some(e), Some(s), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("bad entry `{line}`"));
        };
        let (Ok(e), Ok(s)) = (e.parse::<i32>(), s.parse::<i64>()) else {
            return Err(format!("bad numbers in `{line}`"));
        };
        if cache.entries.last().is_some_and(|l| l.0 >= e || l.1 > s) {
            return Err(format!("entry `{line}` does not follow the one before"));
        }
        cache.entries.push((e, s));
    }
    if cache.entries.len() != count {
        return Err("fewer entries than the count line says".into());
    }
    Ok(cache)
}

impl Log {
    fn epochs_path(&self) -> PathBuf {
        self.dir.join(LEADER_EPOCH_CHECKPOINT)
    }

    /// At open: the checkpoint, less the epochs that start past what recovery kept; rebuilt
    /// from the batch headers when there is none (or it does not parse).
    pub(super) fn load_leader_epochs(&self) -> io::Result<()> {
        let mut cache = match LeaderEpochCache::read(&self.dir) {
            Ok(Some(c)) => c,
            Ok(None) => self.epochs_from_headers()?,
            Err(e) => {
                log::warn!(
                    "[{}-{}] leader-epoch checkpoint unreadable ({e}); rebuilt from the log",
                    self.topic,
                    self.partition
                );
                self.epochs_from_headers()?
            }
        };
        // Written when it changed, or when it was missing and the log has epochs; a new or
        // format 0 log without a file costs no file (creating 10,000 partitions at once is
        // bound by file creation).
        let missing = !self.epochs_path().exists();
        let changed = cache.truncate_from_end(self.log_end_offset())
            | cache.truncate_from_start(self.log_start_offset())
            | (missing && !cache.entries().is_empty());
        if changed {
            cache.write(&self.dir)?;
        }
        self.append_lock.lock().epochs = cache;
        Ok(())
    }

    fn epochs_from_headers(&self) -> io::Result<LeaderEpochCache> {
        let mut cache = LeaderEpochCache::default();
        let start = self.log_start_offset();
        for seg in self.segments_from(start) {
            seg.for_each_header_from(start.max(seg.base_offset), |h| {
                cache.assign_from_header(h);
            })?;
        }
        Ok(cache)
    }

    /// The leader's step on taking epoch `epoch`: it begins at our log end offset (Kafka's
    /// `maybeAssignEpochStartOffset`), so OffsetForLeaderEpoch answers right before the new
    /// leader has appended anything.
    ///
    /// The entry reaches the checkpoint file (written and synced) just before the epoch's
    /// first message is appended (`append_locked`), not here: an epoch that appended nothing
    /// needs no entry after a restart — loading drops entries that begin at the log end —
    /// and a broker taking over thousands of leaders would otherwise create and sync one file
    /// per partition before it answers the controller (a clean shutdown moving 3,333 leaders
    /// spent 2 s of its 2.8 s there).
    pub fn begin_leader_epoch(&self, epoch: i32) {
        let mut state = self.append_lock.lock();
        state.epochs.assign_unsaved(epoch, self.log_end_offset());
        state.producers.lead_from_now();
    }

    /// OffsetForLeaderEpoch's answer for `epoch`: see `LeaderEpochCache::end_offset_for`.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let state = self.append_lock.lock();
        state.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.append_lock.lock().epochs.latest_epoch()
    }

    pub fn epoch_of(&self, offset: i64) -> i32 {
        self.append_lock.lock().epochs.epoch_of(offset)
    }

    pub fn leader_epochs(&self) -> Vec<(i32, i64)> {
        self.append_lock.lock().epochs.entries().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut c = LeaderEpochCache::default();
        for (e, s) in entries {
            assert!(c.assign(*e, *s));
        }
        c
    }

    #[test]
    fn end_offsets_follow_kafkas_rules() {
        let c = cache(&[(1, 0), (3, 10), (6, 25)]);
        assert_eq!(c.end_offset_for(6, 40), (6, 40), "latest: the log end");
        assert_eq!(c.end_offset_for(3, 40), (3, 25));
        assert_eq!(
            c.end_offset_for(4, 40),
            (3, 25),
            "unknown epoch: the one below it"
        );
        assert_eq!(
            c.end_offset_for(0, 40),
            (0, 0),
            "older than all: where ours begin"
        );
        assert_eq!(c.end_offset_for(7, 40), UNDEFINED, "newer than all");
        assert_eq!(c.end_offset_for(-1, 40), UNDEFINED);
        assert_eq!(LeaderEpochCache::default().end_offset_for(1, 5), UNDEFINED);
        assert_eq!(c.epoch_of(9), 1);
        assert_eq!(c.epoch_of(10), 3);
        assert_eq!(c.epoch_of(99), 6);
    }

    #[test]
    fn assignments_only_move_forward_and_truncation_drops_what_was_cut() {
        let mut c = cache(&[(1, 0), (2, 5)]);
        assert!(!c.assign(2, 9), "the same epoch keeps its start");
        assert!(!c.assign(1, 9), "an older epoch is ignored");
        assert!(c.truncate_from_end(5));
        assert_eq!(c.entries(), &[(1, 0)]);
        assert!(c.assign(4, 3), "a new epoch after a cut");
        // A new epoch starting below an entry replaces the history after it.
        let mut d = cache(&[(1, 0), (2, 5)]);
        assert!(d.assign(3, 4));
        assert_eq!(d.entries(), &[(1, 0), (3, 4)]);
        let mut e = cache(&[(1, 0), (2, 5), (3, 9)]);
        assert!(e.truncate_from_start(7));
        assert_eq!(e.entries(), &[(2, 7), (3, 9)]);
        assert!(!e.truncate_from_start(2));
    }

    #[test]
    fn the_checkpoint_is_kafkas_format_and_garbage_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut c = cache(&[(0, 0), (4, 120)]);
        c.write(d.path()).unwrap();
        let text = std::fs::read_to_string(d.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n4 120\n");
        assert_eq!(LeaderEpochCache::read(d.path()).unwrap(), Some(c));
        for bad in [
            "1\n0\n",
            "0\n2\n0 0\n",
            "0\n2\n4 0\n3 9\n",
            "0\n1\nx 0\n",
            "",
        ] {
            std::fs::write(d.path().join(LEADER_EPOCH_CHECKPOINT), bad).unwrap();
            assert!(LeaderEpochCache::read(d.path()).is_err(), "{bad:?}");
        }
        assert_eq!(
            LeaderEpochCache::read(&d.path().join("none")).unwrap(),
            None
        );
    }

    /// A LeaderAndIsr making a broker leader of thousands of partitions writes no file per
    /// partition; the entry is on disk before the epoch's first message, and an epoch that
    /// appended nothing is not needed after a restart.
    #[test]
    fn a_new_leaders_epoch_reaches_the_file_with_its_first_message() {
        let d = tempfile::tempdir().unwrap();
        let config = crate::log::LogConfig {
            segment_bytes: 1 << 20,
            index_interval_bytes: 4096,
            flush_interval_messages: u64::MAX,
            file_delete_delay: std::time::Duration::ZERO,
            roll: std::time::Duration::from_secs(7 * 24 * 3600),
        };
        let open = || {
            Log::open(d.path().to_path_buf(), "t", 0, config.clone(), None)
                .unwrap()
                .0
        };
        let append_one = |log: &Log| {
            let mut set = Vec::new();
            crate::protocol::message::encode_entry(&mut set, 0, 0, 0, None, Some(b"v"));
            log.append(&mut set, 1).unwrap();
        };
        let log = open();
        log.begin_leader_epoch(3);
        assert_eq!(
            log.leader_epochs(),
            [(3, 0)],
            "answered from memory at once"
        );
        assert_eq!(log.end_offset_for_epoch(3), (3, 0));
        assert_eq!(
            LeaderEpochCache::read(d.path()).unwrap(),
            None,
            "no file yet"
        );
        append_one(&log);
        let on_disk = LeaderEpochCache::read(d.path()).unwrap().expect("written");
        assert_eq!(on_disk.entries(), [(3, 0)]);
        log.begin_leader_epoch(5);
        assert_eq!(log.end_offset_for_epoch(3), (3, 1));
        drop(log);
        let log = open();
        assert_eq!(log.leader_epochs(), [(3, 0)], "epoch 5 appended nothing");
        log.begin_leader_epoch(6);
        append_one(&log);
        drop(log);
        assert_eq!(open().leader_epochs(), [(3, 0), (6, 1)]);
    }
}

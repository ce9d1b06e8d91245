//! The `Log`'s offset lookups for ListOffsets: by segment time (v0), by message timestamp
//! (v1+, through each segment's time index) and the largest timestamp (v7+).

use std::io;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::partition_log::Log;

impl Log {
    /// ListOffsets v0 semantics: candidates are each segment's base offset with its last
    /// modification time, plus (LEO, now) when the active segment is not empty; answer up to
    /// `max` of them, newest first, starting at the newest whose time is <= `time` (-1 latest,
    /// -2 earliest).
    pub fn offsets_before(&self, time: i64, max: usize) -> Vec<i64> {
        let segs = self.segments.read().clone();
        let mut cands: Vec<(i64, i64)> = segs
            .iter()
            .map(|s| (s.base_offset, millis(s.last_modified())))
            .collect();
        // The first segment counts from where DeleteRecords left the log (Kafka's rule).
        cands[0].0 = cands[0].0.max(self.log_start.load(Ordering::Acquire));
        if segs.last().is_some_and(|s| s.size() > 0) {
            cands.push((self.log_end_offset(), millis(SystemTime::now())));
        }
        let start = match time {
            -1 => cands.len().checked_sub(1),
            -2 => (!cands.is_empty()).then_some(0),
            t => cands.iter().rposition(|c| c.1 <= t),
        };
        match start {
            None => Vec::new(),
            Some(i) => cands[..=i].iter().rev().take(max).map(|c| c.0).collect(),
        }
    }

    /// ListOffsets by time (v1+): the first message at or after `target` ms, as (offset,
    /// timestamp), searching the first segment whose largest timestamp reaches it. `None`
    /// when no message is that recent (or none has a timestamp).
    pub fn offset_for_timestamp(&self, target: i64) -> io::Result<Option<(i64, i64)>> {
        let segs = self.segments.read().clone();
        for s in &segs {
            if s.max_timestamp().0 >= target {
                return s.find_by_timestamp(target);
            }
        }
        Ok(None)
    }

    /// ListOffsets' MAX_TIMESTAMP (-3): the first message carrying the largest timestamp of
    /// the log, as (offset, timestamp).
    pub fn max_timestamp_offset(&self) -> io::Result<Option<(i64, i64)>> {
        let segs = self.segments.read().clone();
        let Some(best) = segs
            .iter()
            .filter(|s| s.max_timestamp().0 >= 0)
            .reduce(|a, b| {
                if b.max_timestamp().0 > a.max_timestamp().0 {
                    b
                } else {
                    a
                }
            })
        else {
            return Ok(None);
        };
        best.find_by_timestamp(best.max_timestamp().0)
    }
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

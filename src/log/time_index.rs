//! The time index of one segment (`.timeindex`, as Kafka names it): entries of (largest
//! timestamp so far, offset relative to the segment's base at which it was reached), 12 bytes
//! each on disk, at most one per `log.index.interval.bytes` and only when the largest
//! timestamp grew. An entry (T, o) promises that no message up to offset o has a timestamp
//! above T, so a search for the first message at or after time t may start at the last
//! entry whose T is below t.
//!
//! Like the offset index it is a cache of the log: missing or inconsistent, it is rebuilt.

use byteorder::{BigEndian, ByteOrder};

pub const ENTRY_SIZE: usize = 12;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TimeIndex {
    entries: Vec<(i64, u32)>,
}

impl TimeIndex {
    /// Parses a time index file; `None` unless it is whole entries with growing timestamps and
    /// non-decreasing offsets below `next_rel`.
    pub fn from_bytes(bytes: &[u8], next_rel: u32) -> Option<Self> {
        if !bytes.len().is_multiple_of(ENTRY_SIZE) {
            return None;
        }
        let mut entries: Vec<(i64, u32)> = Vec::with_capacity(bytes.len() / ENTRY_SIZE);
        for chunk in bytes.chunks_exact(ENTRY_SIZE) {
            let ts = BigEndian::read_i64(&chunk[0..8]);
            let rel = BigEndian::read_u32(&chunk[8..12]);
            if entries.last().is_some_and(|&(lt, lr)| ts <= lt || rel < lr) || rel >= next_rel {
                return None;
            }
            entries.push((ts, rel));
        }
        Some(TimeIndex { entries })
    }

    /// The entry to append for (largest timestamp, its relative offset), if it adds anything.
    pub fn maybe_push(&mut self, ts: i64, rel: u32) -> Option<[u8; ENTRY_SIZE]> {
        if ts < 0 || self.entries.last().is_some_and(|&(lt, _)| ts <= lt) {
            return None;
        }
        self.entries.push((ts, rel));
        let mut b = [0; ENTRY_SIZE];
        BigEndian::write_i64(&mut b[0..8], ts);
        BigEndian::write_u32(&mut b[8..12], rel);
        Some(b)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn last(&self) -> Option<(i64, u32)> {
        self.entries.last().copied()
    }

    /// Where a search for time `target` starts: the relative offset of the last entry with a
    /// timestamp below it (0 when none).
    pub fn lookup(&self, target: i64) -> u32 {
        match self.entries.partition_point(|&(t, _)| t < target) {
            0 => 0,
            i => self.entries[i - 1].1,
        }
    }

    /// Drops entries at or after relative offset `rel` (truncation).
    pub fn truncate_from(&mut self, rel: u32) {
        let keep = self.entries.partition_point(|&(_, r)| r < rel);
        self.entries.truncate(keep);
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0; self.entries.len() * ENTRY_SIZE];
        for (i, (t, r)) in self.entries.iter().enumerate() {
            BigEndian::write_i64(&mut out[i * ENTRY_SIZE..], *t);
            BigEndian::write_u32(&mut out[i * ENTRY_SIZE + 8..], *r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_only_grow_and_lookup_is_strictly_below() {
        let mut i = TimeIndex::default();
        assert!(i.maybe_push(100, 0).is_some());
        assert!(
            i.maybe_push(100, 5).is_none(),
            "same timestamp adds nothing"
        );
        assert!(
            i.maybe_push(90, 6).is_none(),
            "an older timestamp adds nothing"
        );
        assert!(i.maybe_push(200, 10).is_some());
        assert_eq!(i.lookup(100), 0);
        assert_eq!(i.lookup(101), 0);
        assert_eq!(i.lookup(201), 10);
        let b = i.to_bytes();
        assert_eq!(TimeIndex::from_bytes(&b, 11), Some(i.clone()));
        assert_eq!(
            TimeIndex::from_bytes(&b, 10),
            None,
            "offset past the segment"
        );
        assert_eq!(TimeIndex::from_bytes(&b[..13], 11), None);
        i.truncate_from(10);
        assert_eq!(i.last(), Some((100, 0)));
    }
}

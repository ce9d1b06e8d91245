//! The sparse offset index of one segment: entries of (offset relative to the segment's base,
//! byte position in the `.log` file), 8 bytes each on disk, one per `log.index.interval.bytes`.
//!
//! Kept in memory for lookups and appended to the `.index` file so a restart need not rescan
//! every segment. The file is only a cache: when it is missing or inconsistent with the log,
//! recovery rebuilds it from the log.

use byteorder::{BigEndian, ByteOrder};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OffsetIndex {
    entries: Vec<(u32, u32)>,
}

impl OffsetIndex {
    /// Parses an index file. `None` when it is not a whole number of increasing entries inside
    /// a log of `log_size` bytes, which means it must be rebuilt.
    pub fn from_bytes(bytes: &[u8], log_size: u64) -> Option<Self> {
        if !bytes.len().is_multiple_of(8) {
            return None;
        }
        let mut entries = Vec::with_capacity(bytes.len() / 8);
        for chunk in bytes.chunks_exact(8) {
            let rel = BigEndian::read_u32(&chunk[0..4]);
            let pos = BigEndian::read_u32(&chunk[4..8]);
            if let Some(&(lr, lp)) = entries.last()
                && (rel <= lr || pos <= lp)
            {
                return None;
            }
            if u64::from(pos) >= log_size {
                return None;
            }
            entries.push((rel, pos));
        }
        Some(OffsetIndex { entries })
    }

    pub fn push(&mut self, rel: u32, pos: u32) {
        self.entries.push((rel, pos));
    }

    /// Position of the last entry at or before `rel` (0 when none): where a scan for `rel` starts.
    pub fn lookup(&self, rel: u32) -> (u32, u32) {
        match self.entries.partition_point(|&(r, _)| r <= rel) {
            0 => (0, 0),
            i => self.entries[i - 1],
        }
    }

    /// Drops entries at or after relative offset `rel` (truncation).
    pub fn truncate_from(&mut self, rel: u32) {
        let keep = self.entries.partition_point(|&(r, _)| r < rel);
        self.entries.truncate(keep);
    }

    pub fn entries(&self) -> &[(u32, u32)] {
        &self.entries
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0; self.entries.len() * 8];
        for (i, (r, p)) in self.entries.iter().enumerate() {
            BigEndian::write_u32(&mut out[i * 8..], *r);
            BigEndian::write_u32(&mut out[i * 8 + 4..], *p);
        }
        out
    }

    pub fn entry_bytes(rel: u32, pos: u32) -> [u8; 8] {
        let mut b = [0; 8];
        BigEndian::write_u32(&mut b[0..4], rel);
        BigEndian::write_u32(&mut b[4..8], pos);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_floor_entry() {
        let mut i = OffsetIndex::default();
        i.push(10, 1000);
        i.push(20, 2000);
        assert_eq!(i.lookup(5), (0, 0));
        assert_eq!(i.lookup(10), (10, 1000));
        assert_eq!(i.lookup(25), (20, 2000));
        i.truncate_from(20);
        assert_eq!(i.lookup(25), (10, 1000));
    }

    #[test]
    fn bad_files_are_rejected() {
        let mut i = OffsetIndex::default();
        i.push(1, 10);
        i.push(2, 20);
        let b = i.to_bytes();
        assert_eq!(OffsetIndex::from_bytes(&b, 100), Some(i.clone()));
        assert_eq!(OffsetIndex::from_bytes(&b[..5], 100), None);
        assert_eq!(OffsetIndex::from_bytes(&b, 15), None);
        let mut swapped = b.clone();
        swapped.rotate_left(8);
        assert_eq!(OffsetIndex::from_bytes(&swapped, 100), None);
    }
}

//! A segment's aborted-transaction index (`.txnindex`, Kafka's `TransactionIndex` layout): one
//! entry per transaction whose ABORT marker is in the segment, so that a `read_committed`
//! fetch can tell the consumer which producers' records between two offsets to drop without
//! reading the log for markers. Entries are appended in marker order, 34 bytes each:
//!
//! ```text
//! version:int16=0 producerId:int64 firstOffset:int64 lastOffset:int64 lastStableOffset:int64
//! ```
//! `lastOffset` is the marker's offset; `lastStableOffset` the partition's last stable offset
//! once the marker was written. The file exists only once a segment has an entry. It is
//! derived from the log: the partition rebuilds the entries of every segment it recovers
//! (`Log::rebuild_producers`), so an entry lost with an unflushed tail comes back.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use byteorder::{BigEndian, ByteOrder};
use parking_lot::RwLock;

const ENTRY_SIZE: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction of one producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The ABORT marker's offset.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn to_bytes(self) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        BigEndian::write_i16(&mut b[0..], VERSION);
        BigEndian::write_i64(&mut b[2..], self.producer_id);
        BigEndian::write_i64(&mut b[10..], self.first_offset);
        BigEndian::write_i64(&mut b[18..], self.last_offset);
        BigEndian::write_i64(&mut b[26..], self.last_stable_offset);
        b
    }

    fn from_bytes(b: &[u8]) -> Option<AbortedTxn> {
        (BigEndian::read_i16(b) == VERSION).then(|| AbortedTxn {
            producer_id: BigEndian::read_i64(&b[2..]),
            first_offset: BigEndian::read_i64(&b[10..]),
            last_offset: BigEndian::read_i64(&b[18..]),
            last_stable_offset: BigEndian::read_i64(&b[26..]),
        })
    }
}

/// The entries of one segment, in memory (aborted transactions are few beside records) and in
/// the file. Written only by the partition's appender, under its append lock.
pub struct TxnIndex {
    path: RwLock<PathBuf>,
    entries: RwLock<Vec<AbortedTxn>>,
}

impl TxnIndex {
    /// Loads `path` when it exists; a torn last entry (a crash mid-write) or an unknown
    /// version ends what is read — the partition's recovery writes the rest again.
    pub fn open(path: PathBuf) -> io::Result<TxnIndex> {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let entries: Vec<AbortedTxn> = bytes
            .chunks_exact(ENTRY_SIZE)
            .map_while(AbortedTxn::from_bytes)
            .collect();
        if bytes.len() != entries.len() * ENTRY_SIZE {
            // Appends go after whole entries only.
            write_all(&path, &entries)?;
        }
        Ok(TxnIndex {
            path: RwLock::new(path),
            entries: RwLock::new(entries),
        })
    }

    pub fn path(&self) -> PathBuf {
        self.path.read().clone()
    }

    /// Its files are now at `path` (the segment's were renamed).
    pub fn moved_to(&self, path: PathBuf) {
        *self.path.write() = path;
    }

    pub fn entries(&self) -> Vec<AbortedTxn> {
        self.entries.read().clone()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.read().is_empty()
    }

    /// Adds the entry of a marker just appended to the segment.
    pub fn append(&self, e: AbortedTxn) -> io::Result<()> {
        let mut entries = self.entries.write();
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*self.path.read())?
            .write_all(&e.to_bytes())?;
        entries.push(e);
        Ok(())
    }

    /// Keeps the entries of markers below `offset` and then `rest` (the ones a recovery found
    /// from `offset` on), rewriting the file when that changes anything.
    pub fn replace_from(&self, offset: i64, rest: &[AbortedTxn]) -> io::Result<()> {
        let mut entries = self.entries.write();
        let kept = entries
            .iter()
            .take_while(|e| e.last_offset < offset)
            .count();
        if entries[kept..] == *rest {
            return Ok(());
        }
        entries.truncate(kept);
        entries.extend_from_slice(rest);
        write_all(&self.path.read(), &entries)
    }

    /// Drops the entries of markers at or past `offset` (the log was cut there).
    pub fn truncate_from(&self, offset: i64) -> io::Result<()> {
        self.replace_from(offset, &[])
    }

    /// Adds to `out` the transactions that aborted at or after `from` and began before `to`;
    /// true once an entry shows that no later one can have begun before `to` (the last
    /// stable offset at its marker had reached `to`: every transaction open then, or begun
    /// since, starts at or after it) — Kafka's rule for stopping the search.
    pub fn collect(&self, from: i64, to: i64, out: &mut Vec<AbortedTxn>) -> bool {
        for e in self.entries.read().iter() {
            if e.last_offset >= from && e.first_offset < to {
                out.push(*e);
            }
            if e.last_stable_offset >= to {
                return true;
            }
        }
        false
    }

    /// The file on disk (no-op when the segment never had an entry).
    pub fn flush(&self) -> io::Result<()> {
        match std::fs::File::open(&*self.path.read()) {
            Ok(f) => f.sync_data(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Writes `entries` as the whole file at `path` (removing it when there are none), through a
/// temporary file and a rename, so a crash leaves the old file or the new one.
fn write_all(path: &Path, entries: &[AbortedTxn]) -> io::Result<()> {
    if entries.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_bytes()).collect();
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Producer `pid`'s transaction from `first` to its marker at `last`, nothing open after.
#[cfg(test)]
pub(crate) fn aborted_for_test(pid: i64, first: i64, last: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id: pid,
        first_offset: first,
        last_offset: last,
        last_stable_offset: last + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::aborted_for_test as txn;

    #[test]
    fn entries_persist_truncate_and_survive_a_torn_tail() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("00000000000000000000.txnindex");
        let idx = TxnIndex::open(path.clone()).unwrap();
        assert!(!path.exists(), "no file before the first entry");
        for (pid, first, last) in [(1, 0, 5), (2, 3, 9), (1, 10, 12)] {
            idx.append(txn(pid, first, last)).unwrap();
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * 34);
        let mut found = Vec::new();
        assert!(!idx.collect(6, 14, &mut found), "no entry's LSO reached 14");
        assert_eq!(found, vec![txn(2, 3, 9), txn(1, 10, 12)]);
        found.clear();
        assert!(idx.collect(0, 6, &mut found), "the LSO after 5 was 6");
        assert_eq!(found, vec![txn(1, 0, 5)]);
        // A torn write leaves a partial entry: it is not read.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0, 0, 1]).unwrap();
        let again = TxnIndex::open(path.clone()).unwrap();
        assert_eq!(again.entries(), idx.entries());
        again.truncate_from(9).unwrap();
        assert_eq!(
            TxnIndex::open(path.clone()).unwrap().entries(),
            vec![txn(1, 0, 5)]
        );
        again.replace_from(6, &[txn(3, 6, 7)]).unwrap();
        assert_eq!(
            TxnIndex::open(path.clone()).unwrap().entries(),
            vec![txn(1, 0, 5), txn(3, 6, 7)]
        );
        again.truncate_from(0).unwrap();
        assert!(!path.exists());
    }
}

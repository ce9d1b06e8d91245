//! One segment: a `.log` file of message entries and its `.index`, both named by the base offset
//! zero-padded to 20 digits so `ls` sorts them.
//!
//! Threading: only the partition's appender (holding the `Log`'s append lock) calls the `&self`
//! methods that write; readers use positional reads (`pread`) below `size`, which the appender
//! publishes after the bytes are written, so a reader never waits for an append and never sees
//! a half-written message.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use byteorder::{BigEndian, ByteOrder};
use parking_lot::{Mutex, RwLock};

use super::index::OffsetIndex;
use crate::protocol::message::{self, LOG_OVERHEAD};

/// Bytes read per `pread` while scanning entry headers for an offset.
const SCAN_CHUNK: usize = 16 * 1024;

pub struct Segment {
    pub base_offset: i64,
    log_path: PathBuf,
    index_path: PathBuf,
    log: File,
    /// Bytes of complete entries; readers never look past it.
    size: AtomicU64,
    /// Offset the next appended message gets.
    next_offset: AtomicI64,
    index: RwLock<OffsetIndex>,
    /// Appender-only state: the index file and bytes since the last index entry.
    writer: Mutex<IndexWriter>,
    /// `log.index.interval.bytes`: log bytes between two index entries.
    index_interval: u32,
}

struct IndexWriter {
    file: File,
    bytes_since_entry: u64,
}

/// What recovery found in a segment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    pub messages: u64,
    /// Bytes cut from a torn or corrupt tail.
    pub truncated_bytes: u64,
}

pub fn file_stem(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

impl Segment {
    /// Creates an empty segment, or opens an existing one trusting its index when it is
    /// consistent (older segments were closed cleanly when their successor was rolled).
    pub fn open(dir: &Path, base_offset: i64, index_interval: u32) -> io::Result<Segment> {
        let stem = file_stem(base_offset);
        let log_path = dir.join(format!("{stem}.log"));
        let index_path = dir.join(format!("{stem}.index"));
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)?;
        let size = log.metadata()?.len();
        let index_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&index_path)?;
        let index_bytes = std::fs::read(&index_path)?;
        let seg = Segment {
            base_offset,
            log_path,
            index_path,
            log,
            size: AtomicU64::new(size),
            next_offset: AtomicI64::new(base_offset),
            index: RwLock::new(OffsetIndex::default()),
            writer: Mutex::new(IndexWriter {
                file: index_file,
                bytes_since_entry: 0,
            }),
            index_interval,
        };
        match OffsetIndex::from_bytes(&index_bytes, size) {
            Some(idx) => *seg.index.write() = idx,
            None => {
                log::warn!(
                    "{}: index is inconsistent with the log; rebuilding",
                    seg.index_path.display()
                );
                seg.recover(false)?;
            }
        }
        if size > 0 && seg.next_offset.load(Ordering::Acquire) == base_offset {
            seg.load_next_offset()?;
        }
        Ok(seg)
    }

    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    pub fn next_offset(&self) -> i64 {
        self.next_offset.load(Ordering::Acquire)
    }

    pub fn last_modified(&self) -> std::time::SystemTime {
        self.log
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::SystemTime::UNIX_EPOCH)
    }

    /// Finds the next offset by scanning from the last index entry to the end.
    fn load_next_offset(&self) -> io::Result<()> {
        let (rel, pos) = self.index.read().lookup(u32::MAX);
        let mut next = self.base_offset + i64::from(rel);
        self.scan_headers(u64::from(pos), self.size(), |offset, _| {
            next = offset + 1;
            true
        })?;
        self.next_offset.store(next, Ordering::Release);
        Ok(())
    }

    /// Appends entries whose offsets are already assigned (`first..=last`).
    pub fn append(&self, entries: &[u8], first: i64, last: i64) -> io::Result<()> {
        let pos = self.size();
        let mut w = self.writer.lock();
        if w.bytes_since_entry >= u64::from(self.index_interval) || pos == 0 {
            // The rel offset fits in 32 bits because segments roll long before 4G messages.
            let rel = (first - self.base_offset) as u32;
            let last_pos = self.index.read().entries().last().map(|e| e.1);
            if pos == 0 || last_pos.is_none_or(|p| p < pos as u32) {
                w.file
                    .write_all(&OffsetIndex::entry_bytes(rel, pos as u32))?;
                self.index.write().push(rel, pos as u32);
            }
            w.bytes_since_entry = 0;
        }
        self.log.write_all_at(entries, pos)?;
        w.bytes_since_entry += entries.len() as u64;
        self.size
            .store(pos + entries.len() as u64, Ordering::Release);
        self.next_offset.store(last + 1, Ordering::Release);
        Ok(())
    }

    /// Calls `f(offset, position)` for each entry header from `from` until `end` or until `f`
    /// returns false. Reads in chunks so a lookup costs a few syscalls, not one per message.
    fn scan_headers(
        &self,
        from: u64,
        end: u64,
        mut f: impl FnMut(i64, u64) -> bool,
    ) -> io::Result<()> {
        let mut buf = vec![0u8; SCAN_CHUNK];
        let mut pos = from;
        while pos + LOG_OVERHEAD as u64 <= end {
            let want = ((end - pos) as usize).min(SCAN_CHUNK);
            self.log.read_exact_at(&mut buf[..want], pos)?;
            let mut i = 0;
            while i + LOG_OVERHEAD <= want {
                let offset = BigEndian::read_i64(&buf[i..]);
                let size = BigEndian::read_i32(&buf[i + 8..]).max(0) as u64;
                if !f(offset, pos + i as u64) {
                    return Ok(());
                }
                i += LOG_OVERHEAD + size as usize;
            }
            if i == 0 {
                break;
            }
            pos += i as u64;
        }
        Ok(())
    }

    /// Byte position of the first entry with offset >= `offset`, or `size` if none.
    pub fn position_of(&self, offset: i64) -> io::Result<u64> {
        let end = self.size();
        if offset >= self.next_offset() {
            return Ok(end);
        }
        let rel = (offset - self.base_offset).max(0) as u32;
        let (_, start) = self.index.read().lookup(rel);
        let mut found = end;
        self.scan_headers(u64::from(start), end, |o, p| {
            if o >= offset {
                found = p;
                false
            } else {
                true
            }
        })?;
        Ok(found)
    }

    /// Appends to `out` up to `max_bytes` from the entry holding `offset`, stopping before
    /// `max_offset` when given. Returns the bytes appended.
    pub fn read_into(
        &self,
        offset: i64,
        max_offset: Option<i64>,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> io::Result<usize> {
        let start = self.position_of(offset)?;
        let end = match max_offset {
            Some(m) => self.position_of(m)?,
            None => self.size(),
        };
        let len = (end.saturating_sub(start) as usize).min(max_bytes);
        if len == 0 {
            return Ok(0);
        }
        let at = out.len();
        out.resize(at + len, 0);
        self.log.read_exact_at(&mut out[at..], start)?;
        Ok(len)
    }

    /// Cuts the segment so that `offset` is the next offset to be appended.
    pub fn truncate_to(&self, offset: i64) -> io::Result<()> {
        let pos = self.position_of(offset)?;
        let mut w = self.writer.lock();
        self.log.set_len(pos)?;
        self.size.store(pos, Ordering::Release);
        self.next_offset
            .store(offset.max(self.base_offset), Ordering::Release);
        let mut idx = self.index.write();
        idx.truncate_from((offset - self.base_offset).max(0) as u32);
        w.file.set_len(0)?;
        w.file.write_all_at(&idx.to_bytes(), 0)?;
        w.bytes_since_entry = pos - idx.entries().last().map_or(0, |e| u64::from(e.1));
        Ok(())
    }

    /// Validates every entry (size, magic, CRC), truncates the log at the first bad one, and
    /// rebuilds the index. `cut_tail` false only rebuilds the index (a bad index alone).
    pub fn recover(&self, cut_tail: bool) -> io::Result<Recovered> {
        let size = self.size();
        let mut data = vec![0u8; size as usize];
        self.log.read_exact_at(&mut data, 0)?;
        let mut index = OffsetIndex::default();
        let mut pos = 0usize;
        let mut since = u64::MAX;
        let mut messages = 0;
        let mut next = self.base_offset;
        let interval = u64::from(self.index_interval);
        while pos < data.len() {
            match message::parse_entry(&data[pos..]) {
                Ok(m) => {
                    if since >= interval {
                        index.push((m.offset - self.base_offset) as u32, pos as u32);
                        since = 0;
                    }
                    since += m.entry_len as u64;
                    pos += m.entry_len;
                    next = m.offset + 1;
                    messages += 1;
                }
                Err(e) => {
                    if !cut_tail {
                        break;
                    }
                    log::warn!(
                        "{}: {e} at byte {pos}; cutting {} bytes of tail",
                        self.log_path.display(),
                        data.len() - pos
                    );
                    break;
                }
            }
        }
        let truncated = (data.len() - pos) as u64;
        if cut_tail && truncated > 0 {
            self.log.set_len(pos as u64)?;
            self.log.sync_all()?;
            self.size.store(pos as u64, Ordering::Release);
        }
        let mut w = self.writer.lock();
        w.file.set_len(0)?;
        w.file.write_all_at(&index.to_bytes(), 0)?;
        w.bytes_since_entry = since.min(pos as u64);
        *self.index.write() = index;
        self.next_offset.store(next, Ordering::Release);
        Ok(Recovered {
            messages,
            truncated_bytes: if cut_tail { truncated } else { 0 },
        })
    }

    pub fn flush(&self) -> io::Result<()> {
        self.log.sync_data()?;
        self.writer.lock().file.sync_data()
    }

    pub fn delete_files(&self) -> io::Result<()> {
        std::fs::remove_file(&self.log_path)?;
        match std::fs::remove_file(&self.index_path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

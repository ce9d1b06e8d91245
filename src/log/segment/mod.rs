//! One segment: a `.log` file of entries (magic 0/1 messages and format v2 batches, side by
//! side), its `.index`, its `.timeindex` and, once it holds an ABORT marker, its `.txnindex`
//! (`txn_index`), all named by the base offset zero-padded to 20
//! digits so `ls` sorts them.
//!
//! Threading: only the partition's appender (holding the `Log`'s append lock) calls the `&self`
//! methods that write; readers use positional reads (`pread`) below `size`, which the appender
//! publishes after the bytes are written, so a reader never waits for an append and never sees
//! a half-written message.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use byteorder::{BigEndian, ByteOrder};
use parking_lot::{Mutex, RwLock};

mod staged;
pub(super) use staged::finish_interrupted_swaps;
pub use staged::{CLEANED_SUFFIX, SWAP_SUFFIX};

use super::index::OffsetIndex;
use super::read_limits::{FirstEntry, slice_len};
use super::time_index::{self, TimeIndex};
use super::txn_index::TxnIndex;
use crate::protocol::message::LOG_OVERHEAD;
use crate::protocol::records::{self, HEADER_PEEK};

/// Bytes read per `pread` while scanning entry headers for an offset.
const SCAN_CHUNK: usize = 16 * 1024;
/// Bytes read per `pread` while searching entries for a timestamp.
const SEARCH_CHUNK: usize = 1 << 20;

pub struct Segment {
    pub base_offset: i64,
    log_path: PathBuf,
    index_path: PathBuf,
    time_index_path: PathBuf,
    log: File,
    /// Bytes of complete entries; readers never look past it.
    size: AtomicU64,
    /// Offset the next appended message gets.
    next_offset: AtomicI64,
    index: RwLock<OffsetIndex>,
    time_index: RwLock<TimeIndex>,
    /// Largest timestamp in the segment (-1 when none has one) and the offset of the entry
    /// holding it.
    max_timestamp: RwLock<(i64, i64)>,
    /// Appender-only state: the index files and bytes since the last index entry.
    writer: Mutex<IndexWriter>,
    /// `log.index.interval.bytes`: log bytes between two index entries.
    index_interval: u32,
    /// When this broker opened it: `segment.ms` rolls the active segment that much later.
    opened_at: std::time::Instant,
    /// The transactions whose ABORT marker is in this segment.
    pub txn_index: TxnIndex,
}

/// The extensions of a segment's files; the log file is first.
pub const FILE_EXTENSIONS: [&str; 4] = ["log", "index", "timeindex", "txnindex"];

/// The log file, for `sendfile`.
impl std::os::fd::AsRawFd for Segment {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.log.as_raw_fd()
    }
}

/// The index files, opened on first write: a partition that has never been written holds
/// one open file (its log), not three — what lets a broker hold thousands of partitions
/// under the usual open files limits. Entries are written at the position their number
/// gives, never at a file cursor, so an index reopened, cut or rebuilt stays whole.
struct IndexWriter {
    file: Option<File>,
    time_file: Option<File>,
    bytes_since_entry: u64,
}

impl IndexWriter {
    /// Opens both files if they are not open yet: a segment written to has both on disk (one
    /// without a time index is taken for a segment from before time indexes, and rebuilt).
    fn open(&mut self, paths: (&Path, &Path)) -> io::Result<(&File, &File)> {
        if self.file.is_none() {
            self.file = Some(open_rw(paths.0)?);
        }
        if self.time_file.is_none() {
            self.time_file = Some(open_rw(paths.1)?);
        }
        match (&self.file, &self.time_file) {
            (Some(f), Some(t)) => Ok((f, t)),
            _ => unreachable!("both opened above"),
        }
    }

    /// Replaces both files' contents (nothing to do for empty indexes of a segment that has
    /// none on disk: recovering a new log opens no file).
    fn rewrite(&mut self, paths: (&Path, &Path), index: &[u8], times: &[u8]) -> io::Result<()> {
        let none_yet = self.file.is_none()
            && self.time_file.is_none()
            && !std::fs::exists(paths.0)?
            && !std::fs::exists(paths.1)?;
        if index.is_empty() && times.is_empty() && none_yet {
            return Ok(());
        }
        let (f, t) = self.open(paths)?;
        f.set_len(0)?;
        f.write_all_at(index, 0)?;
        t.set_len(0)?;
        t.write_all_at(times, 0)
    }
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// What recovery found in a segment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    pub messages: u64,
    /// Bytes cut from a torn or corrupt tail.
    pub truncated_bytes: u64,
}

fn deleted_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(super::deferred::DELETED_SUFFIX);
    PathBuf::from(name)
}

pub fn file_stem(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

impl Segment {
    /// Creates an empty segment, or opens an existing one trusting its indexes when they are
    /// consistent (older segments were closed cleanly when their successor was rolled). A
    /// segment written before time indexes existed has none: it is built here, once.
    pub fn open(dir: &Path, base_offset: i64, index_interval: u32) -> io::Result<Segment> {
        Self::open_named(dir, base_offset, index_interval, "")
    }

    /// `open` of the files whose names end with `suffix` after the usual ones (`staged`).
    fn open_named(
        dir: &Path,
        base_offset: i64,
        index_interval: u32,
        suffix: &str,
    ) -> io::Result<Segment> {
        let stem = file_stem(base_offset);
        let log_path = dir.join(format!("{stem}.log{suffix}"));
        let index_path = dir.join(format!("{stem}.index{suffix}"));
        let time_index_path = dir.join(format!("{stem}.timeindex{suffix}"));
        let txn_index = TxnIndex::open(dir.join(format!("{stem}.txnindex{suffix}")))?;
        let log = open_rw(&log_path)?;
        let size = log.metadata()?.len();
        let had_time_index = time_index_path.exists();
        let index_bytes = std::fs::read(&index_path).unwrap_or_default();
        let time_bytes = std::fs::read(&time_index_path).unwrap_or_default();
        let seg = Segment {
            base_offset,
            writer: Mutex::new(IndexWriter {
                file: None,
                time_file: None,
                bytes_since_entry: 0,
            }),
            log_path,
            index_path,
            time_index_path,
            log,
            size: AtomicU64::new(size),
            next_offset: AtomicI64::new(base_offset),
            index: RwLock::new(OffsetIndex::default()),
            time_index: RwLock::new(TimeIndex::default()),
            max_timestamp: RwLock::new((-1, -1)),
            index_interval,
            opened_at: std::time::Instant::now(),
            txn_index,
        };
        if size == 0 {
            return Ok(seg);
        }
        // A segment with data and no index file lost it: rebuilt like an inconsistent one.
        let index = std::fs::exists(&seg.index_path)
            .unwrap_or(false)
            .then(|| OffsetIndex::from_bytes(&index_bytes, size))
            .flatten();
        match index {
            Some(idx) => *seg.index.write() = idx,
            None => {
                log::warn!(
                    "{}: index is missing or inconsistent with the log; rebuilding",
                    seg.index_path.display()
                );
                seg.recover(false)?;
                return Ok(seg);
            }
        }
        seg.load_next_offset()?;
        let next_rel = (seg.next_offset() - base_offset) as u32;
        match TimeIndex::from_bytes(&time_bytes, next_rel) {
            Some(t) if had_time_index => {
                if let Some((ts, rel)) = t.last() {
                    *seg.max_timestamp.write() = (ts, base_offset + i64::from(rel));
                }
                *seg.time_index.write() = t;
            }
            _ => {
                if had_time_index {
                    log::warn!(
                        "{}: time index is inconsistent with the log; rebuilding",
                        seg.time_index_path.display()
                    );
                }
                seg.recover(false)?;
            }
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

    /// Largest timestamp in the segment and the offset of the entry holding it; (-1, -1) when
    /// none has a timestamp.
    pub fn max_timestamp(&self) -> (i64, i64) {
        *self.max_timestamp.read()
    }

    /// Finds the next offset by scanning from the last index entry to the end.
    fn load_next_offset(&self) -> io::Result<()> {
        let (rel, pos) = self.index.read().lookup(u32::MAX);
        let mut next = self.base_offset + i64::from(rel);
        self.scan_headers(
            u64::from(pos),
            self.size(),
            |h, _| match records::last_offset_from_header(h) {
                Some(last) => {
                    next = last + 1;
                    true
                }
                None => false,
            },
        )?;
        self.next_offset.store(next, Ordering::Release);
        Ok(())
    }

    /// Appends entries whose offsets are already assigned (`first..=last`).
    pub fn append(&self, entries: &[u8], first: i64, last: i64) -> io::Result<()> {
        let pos = self.size();
        let mut w = self.writer.lock();
        let (ts, ts_offset) = records::max_timestamp_of(entries);
        let max = {
            let mut m = self.max_timestamp.write();
            if ts > m.0 {
                *m = (ts, ts_offset);
            }
            *m
        };
        if w.bytes_since_entry >= u64::from(self.index_interval) || pos == 0 {
            // The rel offset fits in 32 bits because segments roll long before 4G messages.
            let rel = (first - self.base_offset) as u32;
            let last_pos = self.index.read().entries().last().map(|e| e.1);
            if pos == 0 || last_pos.is_none_or(|p| p < pos as u32) {
                let mut idx = self.index.write();
                let at = (idx.entries().len() * 8) as u64;
                w.open(self.index_paths())?
                    .0
                    .write_all_at(&OffsetIndex::entry_bytes(rel, pos as u32), at)?;
                idx.push(rel, pos as u32);
            }
            self.maybe_index_time(&mut w, max)?;
            w.bytes_since_entry = 0;
        }
        self.log.write_all_at(entries, pos)?;
        w.bytes_since_entry += entries.len() as u64;
        self.size
            .store(pos + entries.len() as u64, Ordering::Release);
        self.next_offset.store(last + 1, Ordering::Release);
        Ok(())
    }

    /// Adds a time index entry for (largest timestamp, its offset) when it grew.
    fn maybe_index_time(&self, w: &mut IndexWriter, max: (i64, i64)) -> io::Result<()> {
        let rel = (max.1 - self.base_offset).max(0) as u32;
        let mut times = self.time_index.write();
        if let Some(entry) = times.maybe_push(max.0, rel) {
            let at = ((times.len() - 1) * time_index::ENTRY_SIZE) as u64;
            w.open(self.index_paths())?.1.write_all_at(&entry, at)?;
        }
        Ok(())
    }

    /// Closes the time index when the segment stops being the active one: its last entry
    /// then covers every message, so a reopened segment knows its largest timestamp.
    pub fn seal(&self) -> io::Result<()> {
        let mut w = self.writer.lock();
        let max = self.max_timestamp();
        self.maybe_index_time(&mut w, max)
    }

    /// The offset after the last entry that ends at or before byte `end`.
    fn next_offset_before(&self, end: u64) -> io::Result<i64> {
        let mut next = self.base_offset;
        self.scan_headers(0, end, |h, _| {
            if let Some(last) = records::last_offset_from_header(h) {
                next = last + 1;
            }
            true
        })?;
        Ok(next)
    }

    /// Calls `f(header, position)` for each entry from byte `from` until `end` or until `f`
    /// returns false; `header` is the entry's first `HEADER_PEEK` bytes (fewer for a smaller
    /// entry). Reads in chunks so a scan costs a few syscalls, not one per message.
    fn scan_headers(
        &self,
        from: u64,
        end: u64,
        mut f: impl FnMut(&[u8], u64) -> bool,
    ) -> io::Result<()> {
        let mut buf = vec![0u8; SCAN_CHUNK];
        let mut pos = from;
        while pos + LOG_OVERHEAD as u64 <= end {
            let want = ((end - pos) as usize).min(SCAN_CHUNK);
            self.log.read_exact_at(&mut buf[..want], pos)?;
            let mut i = 0;
            while i + LOG_OVERHEAD <= want {
                let size = BigEndian::read_i32(&buf[i + 8..]).max(0) as usize;
                let peek = HEADER_PEEK.min(LOG_OVERHEAD + size);
                if i + peek > want {
                    break; // the header runs past this chunk: read again from it
                }
                if !f(&buf[i..i + peek], pos + i as u64) {
                    return Ok(());
                }
                i += LOG_OVERHEAD + size;
            }
            if i == 0 {
                break;
            }
            pos += i as u64;
        }
        Ok(())
    }

    /// The first `HEADER_PEEK` bytes of the entry holding `offset`; `None` past the end.
    pub fn header_at(&self, offset: i64) -> io::Result<Option<Vec<u8>>> {
        let mut found = None;
        self.scan_headers(self.position_of(offset)?, self.size(), |h, _| {
            found = Some(h.to_vec());
            false
        })?;
        Ok(found)
    }

    /// Byte position of the first entry with offset >= `offset`, or `size` if none.
    pub fn position_of(&self, offset: i64) -> io::Result<u64> {
        Ok(self.entry_at(offset)?.0)
    }

    /// The first entry with offset >= `offset`: its byte position and its whole length
    /// (`(size, 0)` if none).
    fn entry_at(&self, offset: i64) -> io::Result<(u64, usize)> {
        let end = self.size();
        if offset >= self.next_offset() {
            return Ok((end, 0));
        }
        let rel = (offset - self.base_offset).max(0) as u32;
        let (_, start) = self.index.read().lookup(rel);
        let mut found = (end, 0);
        self.scan_headers(u64::from(start), end, |h, p| {
            if records::last_offset_from_header(h).is_none_or(|o| o >= offset) {
                let size = BigEndian::read_i32(&h[8..]).max(0) as usize;
                found = (p, LOG_OVERHEAD + size);
                false
            } else {
                true
            }
        })?;
        Ok(found)
    }

    /// Calls `f` with the header (first `HEADER_PEEK` bytes) of every entry from the one
    /// holding `offset` to the end.
    pub fn for_each_header_from(&self, offset: i64, mut f: impl FnMut(&[u8])) -> io::Result<()> {
        let start = self.position_of(offset)?;
        self.scan_headers(start, self.size(), |h, _| {
            f(h);
            true
        })
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
        let Some((start, len)) = self.range(offset, max_offset, max_bytes, FirstEntry::Cut)? else {
            return Ok(0);
        };
        let at = out.len();
        out.resize(at + len, 0);
        self.log.read_exact_at(&mut out[at..], start)?;
        Ok(len)
    }

    fn index_paths(&self) -> (&Path, &Path) {
        (&self.index_path, &self.time_index_path)
    }

    /// Where `read_into` would read: (file position, length), `None` when empty. The length
    /// is `max_bytes` or less, except where `first` asks for a whole first entry (KIP-74).
    pub fn range(
        &self,
        offset: i64,
        max_offset: Option<i64>,
        max_bytes: usize,
        first: FirstEntry,
    ) -> io::Result<Option<(u64, usize)>> {
        let (start, first_len) = self.entry_at(offset)?;
        let end = match max_offset {
            Some(m) => self.position_of(m)?,
            None => self.size(),
        };
        let available = end.saturating_sub(start) as usize;
        let len = slice_len(available, first_len, max_bytes, first);
        Ok((len > 0).then_some((start, len)))
    }

    /// Cuts the segment so that `offset` is the next offset to be appended.
    /// An entry is never cut in two: when `offset` falls inside a batch (or a compressed
    /// wrapper) the whole entry goes, and the segment then ends before `offset`, at the end
    /// of the entry before it (`next_offset` tells where).
    pub fn truncate_to(&self, offset: i64) -> io::Result<()> {
        let pos = self.position_of(offset)?;
        // The end of the last entry kept: scan from the index entry below it.
        let (_, from) = self
            .index
            .read()
            .lookup((offset - self.base_offset).max(0) as u32);
        let mut next = self.base_offset;
        self.scan_headers(u64::from(from), pos, |h, _| {
            if let Some(last) = records::last_offset_from_header(h) {
                next = last + 1;
            }
            true
        })?;
        if from > 0 && next == self.base_offset {
            // Nothing between the index entry and the cut: the index entry starts the cut.
            next = self.next_offset_before(u64::from(from))?;
        }
        let mut w = self.writer.lock();
        self.log.set_len(pos)?;
        self.size.store(pos, Ordering::Release);
        let offset = next.min(offset).max(self.base_offset);
        self.next_offset.store(offset, Ordering::Release);
        let rel = (offset - self.base_offset).max(0) as u32;
        let mut idx = self.index.write();
        idx.truncate_from(rel);
        w.bytes_since_entry = pos - idx.entries().last().map_or(0, |e| u64::from(e.1));
        let mut times = self.time_index.write();
        times.truncate_from(rel);
        w.rewrite(self.index_paths(), &idx.to_bytes(), &times.to_bytes())?;
        // The largest timestamp left: the last time entry's, or a later message's.
        let mut max = times
            .last()
            .map_or((-1, -1), |(t, r)| (t, self.base_offset + i64::from(r)));
        drop((idx, times));
        let from = self.position_of(max.1.max(self.base_offset))?;
        let mut tail = vec![0u8; (pos - from.min(pos)) as usize];
        self.log.read_exact_at(&mut tail, from.min(pos))?;
        for e in records::entries(&tail).map_while(Result::ok) {
            if e.max_timestamp > max.0 {
                max = (e.max_timestamp, e.last_offset);
            }
        }
        *self.max_timestamp.write() = max;
        Ok(())
    }

    /// Validates every entry (size, magic, CRC), truncates the log at the first bad one, and
    /// rebuilds both indexes. `cut_tail` false only rebuilds the indexes (a bad index alone).
    pub fn recover(&self, cut_tail: bool) -> io::Result<Recovered> {
        let size = self.size();
        let mut data = vec![0u8; size as usize];
        self.log.read_exact_at(&mut data, 0)?;
        let mut index = OffsetIndex::default();
        let mut times = TimeIndex::default();
        let mut max = (-1i64, -1i64);
        let mut pos = 0usize;
        let mut since = u64::MAX;
        let mut messages = 0;
        let mut next = self.base_offset;
        let interval = u64::from(self.index_interval);
        while pos < data.len() {
            match records::parse_entry(&data[pos..]) {
                Ok(e) => {
                    if e.max_timestamp > max.0 {
                        max = (e.max_timestamp, e.last_offset);
                    }
                    if since >= interval {
                        index.push((e.first_offset - self.base_offset) as u32, pos as u32);
                        times.maybe_push(max.0, (max.1 - self.base_offset).max(0) as u32);
                        since = 0;
                    }
                    since += e.bytes.len() as u64;
                    pos += e.bytes.len();
                    next = e.last_offset + 1;
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
        w.rewrite(self.index_paths(), &index.to_bytes(), &times.to_bytes())?;
        w.bytes_since_entry = since.min(pos as u64);
        *self.index.write() = index;
        *self.time_index.write() = times;
        *self.max_timestamp.write() = max;
        self.next_offset.store(next, Ordering::Release);
        Ok(Recovered {
            messages,
            truncated_bytes: if cut_tail { truncated } else { 0 },
        })
    }

    pub fn flush(&self) -> io::Result<()> {
        self.log.sync_data()?;
        let w = self.writer.lock();
        for f in [&w.file, &w.time_file].into_iter().flatten() {
            f.sync_data()?;
        }
        self.txn_index.flush()
    }

    /// Its files' paths, in `FILE_EXTENSIONS`' order (some may not exist).
    fn paths(&self) -> [PathBuf; 4] {
        [
            self.log_path.clone(),
            self.index_path.clone(),
            self.time_index_path.clone(),
            self.txn_index.path(),
        ]
    }

    /// Renames the segment's files `*.deleted` (`deferred`): out of the log's sight, still
    /// readable through the open file.
    pub fn rename_deleted(&self) -> io::Result<()> {
        for path in &self.paths() {
            match std::fs::rename(path, deleted_path(path)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Unlinks the files `rename_deleted` renamed.
    pub fn delete_renamed_files(&self) -> io::Result<()> {
        for path in &self.paths() {
            match std::fs::remove_file(deleted_path(path)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    pub fn delete_files(&self) -> io::Result<()> {
        std::fs::remove_file(&self.log_path)?;
        for path in &self.paths()[1..] {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// The first message at or after time `target`: (offset, timestamp), or `None` when every
    /// message of the segment is older (or has no timestamp). Starts at the time index's
    /// entry below `target` and reads entries from there, opening only the first entry whose
    /// largest timestamp reaches it.
    pub fn find_by_timestamp(&self, target: i64) -> io::Result<Option<(i64, i64)>> {
        if self.max_timestamp().0 < target {
            return Ok(None);
        }
        let rel = self.time_index.read().lookup(target);
        let mut pos = self.position_of(self.base_offset + i64::from(rel))?;
        let end = self.size();
        let mut buf = Vec::new();
        while pos < end {
            let want = ((end - pos) as usize).min(SEARCH_CHUNK.max(buf.len()));
            buf.resize(want, 0);
            self.log.read_exact_at(&mut buf, pos)?;
            let mut used = 0;
            for e in records::entries(&buf) {
                let Ok(e) = e else { return Ok(None) };
                used += e.bytes.len();
                if e.max_timestamp < target {
                    continue;
                }
                let mut found = None;
                let _ = records::for_each_message(e.bytes, |offset, ts, _, _, _| {
                    if found.is_none() && ts >= target {
                        found = Some((offset, ts));
                    }
                });
                if found.is_some() {
                    return Ok(found);
                }
            }
            if used == 0 {
                // One entry larger than the chunk: read it whole.
                let size = BigEndian::read_i32(&buf[8..12]).max(0) as usize;
                buf.resize(LOG_OVERHEAD + size, 0);
                if pos + buf.len() as u64 > end {
                    return Ok(None);
                }
                continue;
            }
            buf.clear();
            pos += used as u64;
        }
        Ok(None)
    }
}

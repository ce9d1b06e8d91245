//! The `Log`'s reads: bytes copied out (down-conversion, the follower's comparison) or a
//! slice of the segment file for the socket to send as it is (every other Fetch).
//!
//! A compacted log has holes: the offsets the cleaner removed, up to the end of a segment.
//! A read from a hole gets the next record after it, in a later segment if need be.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::partition_log::{Log, LogError};
use super::read_limits::FirstEntry;
use super::segment::Segment;
use crate::protocol::FileSlice;

/// The segment holding the offset, and the offset to stop before.
type Located = (Arc<Segment>, Option<i64>);

impl Log {
    /// Appends to `out` the bytes from `offset` (up to `max_bytes`, and below `max_offset` when
    /// given: the high watermark for consumers) of the one segment that holds `offset`.
    /// `offset == LEO` reads nothing; outside `[start, LEO]` is `OffsetOutOfRange`.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: Option<i64>,
        out: &mut Vec<u8>,
    ) -> Result<usize, LogError> {
        let Some((mut seg, max_offset)) = self.locate(offset, max_offset)? else {
            return Ok(0);
        };
        loop {
            let n = seg.read_into(offset, max_offset, max_bytes, out)?;
            if n > 0 {
                return Ok(n);
            }
            match self.segment_after(&seg, max_offset) {
                Some(next) => seg = next,
                None => return Ok(0),
            }
        }
    }

    /// What `read` would copy, as a slice of the segment file (`None`: nothing to read),
    /// except that `first` says what becomes of a first entry longer than `max_bytes`.
    pub fn read_slice(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: Option<i64>,
        first: FirstEntry,
    ) -> Result<Option<FileSlice>, LogError> {
        let Some((mut seg, max_offset)) = self.locate(offset, max_offset)? else {
            return Ok(None);
        };
        loop {
            if let Some((pos, len)) = seg.range(offset, max_offset, max_bytes, first)? {
                return Ok(Some(FileSlice {
                    file: seg,
                    pos,
                    len,
                }));
            }
            match self.segment_after(&seg, max_offset) {
                Some(next) => seg = next,
                None => return Ok(None),
            }
        }
    }

    /// The segment after `seg` when it starts below `max_offset`: where a read that found
    /// nothing from its offset to the end of `seg` (a hole the cleaner left) goes on.
    fn segment_after(&self, seg: &Segment, max_offset: Option<i64>) -> Option<Arc<Segment>> {
        let segs = self.segments.read();
        let i = segs.partition_point(|s| s.base_offset <= seg.base_offset);
        segs.get(i)
            .filter(|s| max_offset.is_none_or(|m| s.base_offset < m))
            .cloned()
    }

    /// The segment holding `offset` and the bound to read below, or `None` when there is
    /// nothing to read (at the log end, or at or past `max_offset`).
    fn locate(&self, offset: i64, max_offset: Option<i64>) -> Result<Option<Located>, LogError> {
        let leo = self.log_end_offset();
        let (seg, start) = {
            let segs = self.segments.read();
            let start = segs[0]
                .base_offset
                .max(self.log_start.load(Ordering::Acquire));
            let i = segs.partition_point(|s| s.base_offset <= offset);
            (i.checked_sub(1).map(|i| segs[i].clone()), start)
        };
        if offset < start || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                start,
                end: leo,
            });
        }
        let max_offset = max_offset.map(|m| m.min(leo));
        if offset == leo || max_offset.is_some_and(|m| offset >= m) {
            return Ok(None);
        }
        Ok(Some((
            seg.expect("offset >= start has a segment"),
            max_offset,
        )))
    }
}

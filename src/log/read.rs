//! The `Log`'s reads: bytes copied out (down-conversion, the follower's comparison) or a
//! slice of the segment file for the socket to send as it is (every other Fetch).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::partition_log::{Log, LogError};
use super::read_limits::FirstEntry;
use super::segment::Segment;
use crate::protocol::FileSlice;

/// The segment to read and the offset to stop before.
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
        match self.locate(offset, max_offset)? {
            None => Ok(0),
            Some((seg, max_offset)) => Ok(seg.read_into(offset, max_offset, max_bytes, out)?),
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
        let Some((seg, max_offset)) = self.locate(offset, max_offset)? else {
            return Ok(None);
        };
        let Some((pos, len)) = seg.range(offset, max_offset, max_bytes, first)? else {
            return Ok(None);
        };
        Ok(Some(FileSlice {
            file: seg,
            pos,
            len,
        }))
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

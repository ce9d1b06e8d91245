//! Fetch (key 1). Served without fetch sessions (KIP-227): every
//! answer has session id 0, the sessionless mode a client falls back to.
//!
//! The broker writes fetch responses piece by piece (`write_partition_head`, then the bytes
//! straight from the segment file, then `finish_partition`), so record sets are never decoded
//! or re-encoded on the way out. The owned `FetchResponse` is for clients and tests.

use super::{Decode, DecodeResult, Encode, Out, Reader, Writer, read_array, read_topics};

/// The version gregor's own fetchers (followers, consumers, tools) send: format v2 as stored
/// (v4+) and the leader's log start offset (v5+, how a follower learns of DeleteRecords),
/// still in the classic encoding.
pub const CLIENT_VERSION: i16 = 5;

/// replica_id of an ordinary consumer.
pub const CONSUMER_REPLICA_ID: i32 = -1;
/// replica_id of a debugging consumer, which may read from a follower.
pub const DEBUGGING_REPLICA_ID: i32 = -2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    pub partition: i32,
    /// v9+; -1 unknown.
    pub current_leader_epoch: i32,
    pub fetch_offset: i64,
    /// v5+: a follower's log start offset; -1 from a consumer.
    pub log_start_offset: i64,
    pub max_bytes: i32,
}

impl FetchPartition {
    pub fn new(partition: i32, fetch_offset: i64, max_bytes: i32) -> Self {
        FetchPartition {
            partition,
            current_leader_epoch: -1,
            fetch_offset,
            log_start_offset: -1,
            max_bytes,
        }
    }
}

/// `isolation_level` of Fetch and ListOffsets: only what transactions committed, below the
/// last stable offset (0 is read uncommitted).
pub const READ_COMMITTED: i8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub replica_id: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    /// v3+: a bound on the whole response (at least one batch is still returned).
    pub max_bytes: i32,
    /// v4+: 0 read uncommitted, 1 read committed (up to the last stable offset, aborted
    /// transactions listed).
    pub isolation_level: i8,
    /// v7+: 0 and -1 ask for no session.
    pub session_id: i32,
    pub session_epoch: i32,
    pub topics: Vec<(String, Vec<FetchPartition>)>,
}

impl FetchRequest {
    /// A sessionless request with no response-wide byte bound.
    pub fn new(
        replica_id: i32,
        max_wait_ms: i32,
        min_bytes: i32,
        topics: Vec<(String, Vec<FetchPartition>)>,
    ) -> Self {
        FetchRequest {
            replica_id,
            max_wait_ms,
            min_bytes,
            max_bytes: i32::MAX,
            isolation_level: 0,
            session_id: 0,
            session_epoch: -1,
            topics,
        }
    }
}

impl Encode for FetchRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_i32(self.replica_id);
        out.put_i32(self.max_wait_ms);
        out.put_i32(self.min_bytes);
        out.since(3, |o| o.put_i32(self.max_bytes));
        out.since(4, |o| o.put_i8(self.isolation_level));
        if version >= 7 {
            out.put_i32(self.session_id);
            out.put_i32(self.session_epoch);
        }
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.since(9, |o| o.put_i32(p.current_leader_epoch));
            o.put_i64(p.fetch_offset);
            o.since(12, |o| o.put_i32(-1)); // last_fetched_epoch
            o.since(5, |o| o.put_i64(p.log_start_offset));
            o.put_i32(p.max_bytes);
            o.put_tags();
        });
        out.since(7, |o| o.put_len(Some(0))); // forgotten_topics_data
        out.since(11, |o| o.put_str(""));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for FetchRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let replica_id = r.i32("replica_id")?;
        let max_wait_ms = r.i32("max_wait_ms")?;
        let min_bytes = r.i32("min_bytes")?;
        let max_bytes = r.since(3, i32::MAX, |r| r.i32("max_bytes"))?;
        let isolation_level = r.since(4, 0, |r| r.i8("isolation_level"))?;
        let (session_id, session_epoch) = if version >= 7 {
            (r.i32("session_id")?, r.i32("session_epoch")?)
        } else {
            (0, -1)
        };
        let topics = read_topics(r, 16, |r| {
            let partition = r.i32("partition")?;
            let current_leader_epoch = r.since(9, -1, |r| r.i32("current_leader_epoch"))?;
            let fetch_offset = r.i64("fetch_offset")?;
            r.skip_since(12, |r| r.i32("last_fetched_epoch"))?;
            let log_start_offset = r.since(5, -1, |r| r.i64("log_start_offset"))?;
            let max_bytes = r.i32("partition_max_bytes")?;
            r.tags()?;
            Ok(FetchPartition {
                partition,
                current_leader_epoch,
                fetch_offset,
                log_start_offset,
                max_bytes,
            })
        })?;
        if version >= 7 {
            // Forgotten topics only matter to a session; without sessions they are read and
            // dropped.
            read_array(r, "forgotten_topics_data", 2, |r| {
                r.string("topic")?;
                read_array(r, "partitions", 4, |r| r.i32("partition"))?;
                r.tags()
            })?;
        }
        r.skip_since(11, |r| r.string("rack_id"))?;
        r.tags()?;
        Ok(FetchRequest {
            replica_id,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation_level,
            session_id,
            session_epoch,
            topics,
        })
    }
}

/// The message format a fetcher at `version` can read: 0 before v2, 1 before v4, 2 after.
pub fn readable_magic(version: i16) -> i8 {
    match version {
        0 | 1 => 0,
        2 | 3 => 1,
        _ => 2,
    }
}

/// Writes the fields before the top-level topics array: throttle, and (v7+) the error code
/// and session id.
pub fn write_response_head<B: AsMut<Vec<u8>>>(out: &mut Out<'_, B>, error_code: i16) {
    let version = out.version();
    out.since(1, |o| o.put_i32(0));
    if version >= 7 {
        out.put_i16(error_code);
        out.put_i32(0);
    }
}

/// A partition's answer fields before its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionHead<'a> {
    pub partition: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    /// v4+.
    pub last_stable_offset: i64,
    /// v5+.
    pub log_start_offset: i64,
    /// v4+: (producer id, first offset) of the aborted transactions a `read_committed`
    /// consumer must drop; `None` (null) for a `read_uncommitted` one.
    pub aborted: Option<&'a [(i64, i64)]>,
}

/// Writes a partition's fields up to the records. For a classic version it ends with a size
/// placeholder and returns its position; for a flexible one the compact length is inserted
/// by `finish_partition` once the records are written, and the returned position is where
/// they start.
pub fn write_partition_head<B: AsMut<Vec<u8>>>(
    out: &mut Out<'_, B>,
    h: &PartitionHead<'_>,
) -> usize {
    out.put_i32(h.partition);
    out.put_i16(h.error_code);
    out.put_i64(h.high_watermark);
    out.since(4, |o| o.put_i64(h.last_stable_offset));
    out.since(5, |o| o.put_i64(h.log_start_offset));
    out.since(4, |o| {
        o.put_len(h.aborted.map(<[_]>::len));
        for (producer_id, first_offset) in h.aborted.unwrap_or_default() {
            o.put_i64(*producer_id);
            o.put_i64(*first_offset);
            o.put_tags();
        }
    });
    out.since(11, |o| o.put_i32(-1)); // preferred_read_replica: none
    if out.is_flexible() {
        out.bytes().len()
    } else {
        out.bytes().reserve_size()
    }
}

/// Writes one partition's answer that is only an error: no high watermark, no records.
pub fn write_error_partition<B: AsMut<Vec<u8>>>(
    out: &mut Out<'_, B>,
    partition: i32,
    error_code: i16,
) {
    let head = PartitionHead {
        partition,
        error_code,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        aborted: None,
    };
    let at = write_partition_head(out, &head);
    finish_partition(out, at);
}

/// Writes the length of the records that follow a partition head begun at `at` (by
/// `write_partition_head`) when the records themselves are sent from elsewhere (a file
/// slice); `finish_records` closes the entry after them.
pub fn put_records_len<B: AsMut<Vec<u8>>>(out: &mut Out<'_, B>, at: usize, len: usize) {
    if out.is_flexible() {
        out.put_len(Some(len));
    } else {
        out.bytes()[at..at + 4].copy_from_slice(&(len as i32).to_be_bytes());
    }
}

/// Closes a partition entry whose records' length `put_records_len` wrote.
pub fn finish_records<B: AsMut<Vec<u8>>>(out: &mut Out<'_, B>) {
    out.put_tags();
}

/// Closes a partition entry begun by `write_partition_head` after its records.
pub fn finish_partition<B: AsMut<Vec<u8>>>(out: &mut Out<'_, B>, at: usize) {
    if out.is_flexible() {
        out.bytes().insert_compact_len(at);
        out.put_tags();
    } else {
        out.bytes().patch_size(at);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    /// v4+; -1 before.
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub message_set: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// v7+.
    pub error_code: i16,
    pub topics: Vec<(String, Vec<FetchPartitionResponse>)>,
}

impl Encode for FetchResponse {
    fn encode(&self, out: &mut Out<'_>) {
        write_response_head(out, self.error_code);
        out.put_topics(&self.topics, |o, p| {
            let head = PartitionHead {
                partition: p.partition,
                error_code: p.error_code,
                high_watermark: p.high_watermark,
                last_stable_offset: p.last_stable_offset,
                log_start_offset: p.log_start_offset,
                aborted: None,
            };
            let at = write_partition_head(o, &head);
            o.extend_from_slice(&p.message_set);
            finish_partition(o, at);
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for FetchResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let mut error_code = 0;
        if version >= 7 {
            error_code = r.i16("error_code")?;
            r.i32("session_id")?;
        }
        let topics = read_topics(r, 18, |r| {
            let partition = r.i32("partition")?;
            let error_code = r.i16("error_code")?;
            let high_watermark = r.i64("high_watermark")?;
            let last_stable_offset = r.since(4, -1, |r| r.i64("last_stable_offset"))?;
            let log_start_offset = r.since(5, -1, |r| r.i64("log_start_offset"))?;
            if version >= 4
                && let Some(n) = r.nullable_array_len("aborted_transactions", 16)?
            {
                for _ in 0..n {
                    r.i64("producer_id")?;
                    r.i64("first_offset")?;
                    r.tags()?;
                }
            }
            r.skip_since(11, |r| r.i32("preferred_read_replica"))?;
            let message_set = r.nullable_bytes("records")?.unwrap_or_default().to_vec();
            r.tags()?;
            Ok(FetchPartitionResponse {
                partition,
                error_code,
                high_watermark,
                last_stable_offset,
                log_start_offset,
                message_set,
            })
        })?;
        r.tags()?;
        Ok(FetchResponse { error_code, topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::round_trip_at;

    #[test]
    fn round_trips_at_every_version() {
        for version in 0..=12 {
            let mut req = FetchRequest::new(
                -1,
                500,
                1,
                vec![("t".into(), vec![FetchPartition::new(2, 7, 1 << 20)])],
            );
            if version >= 3 {
                req.max_bytes = 50 << 20;
            }
            if version >= 5 {
                req.topics[0].1[0].log_start_offset = 3;
            }
            if version >= 9 {
                req.topics[0].1[0].current_leader_epoch = 4;
            }
            round_trip_at(&req, FETCH, version);
            let resp = FetchResponse {
                error_code: 0,
                topics: vec![(
                    "t".into(),
                    vec![FetchPartitionResponse {
                        partition: 2,
                        error_code: 0,
                        high_watermark: 9,
                        last_stable_offset: if version >= 4 { 8 } else { -1 },
                        log_start_offset: if version >= 5 { 1 } else { -1 },
                        message_set: vec![1, 2, 3],
                    }],
                )],
            };
            round_trip_at(&resp, FETCH, version);
        }
    }

    #[test]
    fn v12_partition_matches_the_schema_byte_for_byte() {
        // FetchResponse v12 partition from Kafka's FetchResponse.json: index, error, HW, LSO,
        // log start, aborted (compact null = 0), preferred replica -1, records (compact bytes:
        // length + 1), tags.
        let mut out = Vec::new();
        let head = PartitionHead {
            partition: 1,
            error_code: 0,
            high_watermark: 2,
            last_stable_offset: 2,
            log_start_offset: 0,
            aborted: None,
        };
        let o = &mut Out::body(&mut out, FETCH, 12);
        let at = write_partition_head(o, &head);
        o.extend_from_slice(&[0xaa, 0xbb]);
        finish_partition(o, at);
        let mut want = vec![0, 0, 0, 1, 0, 0];
        want.extend_from_slice(&2i64.to_be_bytes());
        want.extend_from_slice(&2i64.to_be_bytes());
        want.extend_from_slice(&0i64.to_be_bytes());
        want.push(0);
        want.extend_from_slice(&(-1i32).to_be_bytes());
        want.extend_from_slice(&[3, 0xaa, 0xbb, 0]);
        assert_eq!(out, want);
    }
}

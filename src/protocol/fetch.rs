//! Fetch (key 1) v0.
//!
//! The broker writes fetch responses piece by piece (`write_partition_head`, then the bytes
//! straight from the segment file), so the message sets are never decoded or re-encoded on the
//! way out. The owned `FetchResponse` is for clients and tests.

use super::{Decode, DecodeResult, Encode, Reader, Writer, read_topics, write_topics};

/// replica_id of an ordinary consumer.
pub const CONSUMER_REPLICA_ID: i32 = -1;
/// replica_id of a debugging consumer, which may read from a follower.
pub const DEBUGGING_REPLICA_ID: i32 = -2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_bytes: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub replica_id: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub topics: Vec<(String, Vec<FetchPartition>)>,
}

impl Encode for FetchRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.replica_id);
        out.put_i32(self.max_wait_ms);
        out.put_i32(self.min_bytes);
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.fetch_offset);
            o.put_i32(p.max_bytes);
        });
    }
}

impl<'a> Decode<'a> for FetchRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(FetchRequest {
            replica_id: r.i32("replica_id")?,
            max_wait_ms: r.i32("max_wait_ms")?,
            min_bytes: r.i32("min_bytes")?,
            topics: read_topics(r, 16, |r| {
                Ok(FetchPartition {
                    partition: r.i32("partition")?,
                    fetch_offset: r.i64("fetch_offset")?,
                    max_bytes: r.i32("max_bytes")?,
                })
            })?,
        })
    }
}

/// Writes a partition's fields up to and including a placeholder for the set size; returns the
/// placeholder's position for `patch_size` once the set bytes are appended.
pub fn write_partition_head(
    out: &mut Vec<u8>,
    partition: i32,
    error_code: i16,
    high_watermark: i64,
) -> usize {
    out.put_i32(partition);
    out.put_i16(error_code);
    out.put_i64(high_watermark);
    out.reserve_size()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    pub message_set: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    pub topics: Vec<(String, Vec<FetchPartitionResponse>)>,
}

impl Encode for FetchResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_topics(out, &self.topics, |o, p| {
            let at = write_partition_head(o, p.partition, p.error_code, p.high_watermark);
            o.extend_from_slice(&p.message_set);
            o.patch_size(at);
        });
    }
}

impl<'a> Decode<'a> for FetchResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(FetchResponse {
            topics: read_topics(r, 18, |r| {
                Ok(FetchPartitionResponse {
                    partition: r.i32("partition")?,
                    error_code: r.i16("error_code")?,
                    high_watermark: r.i64("high_watermark")?,
                    message_set: r
                        .nullable_bytes("message_set")?
                        .unwrap_or_default()
                        .to_vec(),
                })
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::round_trip;

    #[test]
    fn round_trips() {
        round_trip(&FetchRequest {
            replica_id: -1,
            max_wait_ms: 500,
            min_bytes: 1,
            topics: vec![(
                "t".into(),
                vec![FetchPartition {
                    partition: 2,
                    fetch_offset: 7,
                    max_bytes: 1 << 20,
                }],
            )],
        });
        round_trip(&FetchResponse {
            topics: vec![(
                "t".into(),
                vec![FetchPartitionResponse {
                    partition: 2,
                    error_code: 0,
                    high_watermark: 9,
                    message_set: vec![1, 2, 3],
                }],
            )],
        });
    }
}

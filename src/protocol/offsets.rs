//! ListOffsets ("Offsets", key 2). v0 answers with offsets before a
//! time, newest first (0.8's segment-granular rule); v1+ with the one offset of the first
//! message at or after a timestamp, found through the time index.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array, read_topics};

/// `time` asking for the log end offset (the high watermark for a consumer).
pub const LATEST_TIME: i64 = -1;
/// `time` asking for the log start offset.
pub const EARLIEST_TIME: i64 = -2;
/// `time` (v7+) asking for the message with the largest timestamp (KIP-734).
pub const MAX_TIMESTAMP: i64 = -3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsPartition {
    pub partition: i32,
    pub time: i64,
    /// v0 only.
    pub max_num_offsets: i32,
    /// v4+: the leader epoch the asker believes current (-1: no fencing).
    pub current_leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsRequest {
    pub replica_id: i32,
    /// v2+: `READ_COMMITTED` (1) answers the latest offset with the last stable offset.
    pub isolation_level: i8,
    pub topics: Vec<(String, Vec<OffsetsPartition>)>,
}

impl Encode for ListOffsetsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_i32(self.replica_id);
        out.since(2, |o| o.put_i8(self.isolation_level));
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.since(4, |o| o.put_i32(p.current_leader_epoch));
            o.put_i64(p.time);
            if version == 0 {
                o.put_i32(p.max_num_offsets);
            }
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListOffsetsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let replica_id = r.i32("replica_id")?;
        let isolation_level = r.since(2, 0, |r| r.i8("isolation_level"))?;
        let topics = read_topics(r, 12, |r| {
            let partition = r.i32("partition")?;
            let current_leader_epoch = r.since(4, -1, |r| r.i32("current_leader_epoch"))?;
            let time = r.i64("timestamp")?;
            let max_num_offsets = if version == 0 {
                r.i32("max_num_offsets")?
            } else {
                1
            };
            r.tags()?;
            Ok(OffsetsPartition {
                partition,
                time,
                max_num_offsets,
                current_leader_epoch,
            })
        })?;
        r.tags()?;
        Ok(ListOffsetsRequest {
            replica_id,
            isolation_level,
            topics,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsPartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    /// v0: descending.
    pub offsets: Vec<i64>,
    /// v1+: the timestamp of the message found (-1 for latest/earliest or none found).
    pub timestamp: i64,
    /// v1+: its offset, -1 when none.
    pub offset: i64,
    /// v4+: the leader epoch of the message at `offset` (-1: unknown).
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsResponse {
    pub topics: Vec<(String, Vec<OffsetsPartitionResponse>)>,
}

impl Encode for ListOffsetsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.since(2, |o| o.put_i32(0)); // throttle_time_ms
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i16(p.error_code);
            if version == 0 {
                o.put_len(Some(p.offsets.len()));
                for x in &p.offsets {
                    o.put_i64(*x);
                }
            } else {
                o.put_i64(p.timestamp);
                o.put_i64(p.offset);
            }
            o.since(4, |o| o.put_i32(p.leader_epoch));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListOffsetsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(2, |r| r.i32("throttle_time_ms"))?;
        let topics = read_topics(r, 10, |r| {
            let partition = r.i32("partition")?;
            let error_code = r.i16("error_code")?;
            let (mut offsets, mut timestamp, mut offset) = (Vec::new(), -1, -1);
            if version == 0 {
                offsets = read_array(r, "offsets", 8, |r| r.i64("offset"))?;
            } else {
                timestamp = r.i64("timestamp")?;
                offset = r.i64("offset")?;
            }
            let leader_epoch = r.since(4, -1, |r| r.i32("leader_epoch"))?;
            r.tags()?;
            Ok(OffsetsPartitionResponse {
                partition,
                error_code,
                offsets,
                timestamp,
                offset,
                leader_epoch,
            })
        })?;
        r.tags()?;
        Ok(ListOffsetsResponse { topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::{encode_body, round_trip_at};

    #[test]
    fn round_trips_at_every_version() {
        for version in 0..=7 {
            let req = ListOffsetsRequest {
                replica_id: -1,
                isolation_level: 0,
                topics: vec![(
                    "t".into(),
                    vec![OffsetsPartition {
                        partition: 0,
                        time: if version >= 7 {
                            MAX_TIMESTAMP
                        } else {
                            EARLIEST_TIME
                        },
                        max_num_offsets: 1,
                        current_leader_epoch: -1,
                    }],
                )],
            };
            round_trip_at(&req, LIST_OFFSETS, version);
            let v0 = version == 0;
            let resp = ListOffsetsResponse {
                topics: vec![(
                    "t".into(),
                    vec![OffsetsPartitionResponse {
                        partition: 0,
                        error_code: 0,
                        offsets: if v0 { vec![10, 0] } else { Vec::new() },
                        timestamp: if v0 { -1 } else { 1_700_000_000_000 },
                        offset: if v0 { -1 } else { 10 },
                        leader_epoch: -1,
                    }],
                )],
            };
            round_trip_at(&resp, LIST_OFFSETS, version);
        }
    }

    #[test]
    fn v6_request_matches_the_schema_byte_for_byte() {
        // ListOffsetsRequest v6 from Kafka's ListOffsetsRequest.json: replica -1, isolation 0,
        // compact topics (2 = one), "t", compact partitions (2), partition 3, current leader
        // epoch -1, timestamp -1, partition tags, topic tags, top-level tags.
        let req = ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![(
                "t".into(),
                vec![OffsetsPartition {
                    partition: 3,
                    time: LATEST_TIME,
                    max_num_offsets: 1,
                    current_leader_epoch: -1,
                }],
            )],
        };
        let mut buf = Vec::new();
        encode_body(&req, &mut buf, LIST_OFFSETS, 6);
        let mut want = vec![0xff, 0xff, 0xff, 0xff, 0, 2, 2, b't', 2, 0, 0, 0, 3];
        want.extend_from_slice(&[0xff; 4]);
        want.extend_from_slice(&[0xff; 8]);
        want.extend_from_slice(&[0, 0, 0]);
        assert_eq!(buf, want);
    }
}

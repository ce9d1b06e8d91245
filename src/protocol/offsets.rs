//! ListOffsets ("Offsets", key 2) v0: offsets before a time, newest first.

use super::{
    Decode, DecodeResult, Encode, Reader, Writer, read_array, read_topics, write_array,
    write_topics,
};

/// `time` asking for the log end offset.
pub const LATEST_TIME: i64 = -1;
/// `time` asking for the log start offset.
pub const EARLIEST_TIME: i64 = -2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsPartition {
    pub partition: i32,
    pub time: i64,
    pub max_num_offsets: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsRequest {
    pub replica_id: i32,
    pub topics: Vec<(String, Vec<OffsetsPartition>)>,
}

impl Encode for ListOffsetsRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.replica_id);
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.time);
            o.put_i32(p.max_num_offsets);
        });
    }
}

impl<'a> Decode<'a> for ListOffsetsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ListOffsetsRequest {
            replica_id: r.i32("replica_id")?,
            topics: read_topics(r, 16, |r| {
                Ok(OffsetsPartition {
                    partition: r.i32("partition")?,
                    time: r.i64("time")?,
                    max_num_offsets: r.i32("max_num_offsets")?,
                })
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsPartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    /// Descending.
    pub offsets: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsResponse {
    pub topics: Vec<(String, Vec<OffsetsPartitionResponse>)>,
}

impl Encode for ListOffsetsResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i16(p.error_code);
            write_array(o, &p.offsets, |o, x| o.put_i64(*x));
        });
    }
}

impl<'a> Decode<'a> for ListOffsetsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ListOffsetsResponse {
            topics: read_topics(r, 10, |r| {
                Ok(OffsetsPartitionResponse {
                    partition: r.i32("partition")?,
                    error_code: r.i16("error_code")?,
                    offsets: read_array(r, "offsets", 8, |r| r.i64("offset"))?,
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
        round_trip(&ListOffsetsRequest {
            replica_id: -1,
            topics: vec![(
                "t".into(),
                vec![OffsetsPartition {
                    partition: 0,
                    time: EARLIEST_TIME,
                    max_num_offsets: 1,
                }],
            )],
        });
        round_trip(&ListOffsetsResponse {
            topics: vec![(
                "t".into(),
                vec![OffsetsPartitionResponse {
                    partition: 0,
                    error_code: 0,
                    offsets: vec![10, 0],
                }],
            )],
        });
    }
}

//! Produce (key 0) v0.
//!
//! The request decoder does not copy message sets: each partition entry records where its set
//! lies in the frame, so the broker can validate it and write offsets into it in place.

use std::ops::Range;

use super::{Decode, DecodeResult, Encode, Reader, Writer, read_topics, write_array, write_topics};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartition {
    pub partition: i32,
    /// Where this partition's message set lies in the buffer the request was decoded from.
    pub set: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    pub acks: i16,
    pub timeout_ms: i32,
    pub topics: Vec<(String, Vec<ProducePartition>)>,
}

impl<'a> Decode<'a> for ProduceRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ProduceRequest {
            acks: r.i16("acks")?,
            timeout_ms: r.i32("timeout_ms")?,
            topics: read_topics(r, 8, |r| {
                Ok(ProducePartition {
                    partition: r.i32("partition")?,
                    set: r.sized_region("message_set")?,
                })
            })?,
        })
    }
}

/// A topic's partitions with their message sets, as a client sends them.
pub type TopicSets<'a> = (&'a str, Vec<(i32, &'a [u8])>);

/// Writes a produce request body from borrowed message sets (the client side).
pub fn encode_request(out: &mut Vec<u8>, acks: i16, timeout_ms: i32, topics: &[TopicSets<'_>]) {
    out.put_i16(acks);
    out.put_i32(timeout_ms);
    write_array(out, topics, |o, (t, parts)| {
        o.put_string(t);
        write_array(o, parts, |o, (p, set)| {
            o.put_i32(*p);
            o.put_i32(set.len() as i32);
            o.extend_from_slice(set);
        });
    });
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    /// Offset of the first message appended; -1 on error.
    pub base_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResponse {
    pub topics: Vec<(String, Vec<ProducePartitionResponse>)>,
}

impl Encode for ProduceResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i16(p.error_code);
            o.put_i64(p.base_offset);
        });
    }
}

impl<'a> Decode<'a> for ProduceResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ProduceResponse {
            topics: read_topics(r, 14, |r| {
                Ok(ProducePartitionResponse {
                    partition: r.i32("partition")?,
                    error_code: r.i16("error_code")?,
                    base_offset: r.i64("base_offset")?,
                })
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode_all, round_trip};

    #[test]
    fn request_records_set_ranges() {
        let mut buf = Vec::new();
        encode_request(&mut buf, -1, 500, &[("t", vec![(3, &b"xyz"[..])])]);
        let req: ProduceRequest = decode_all(&buf).unwrap();
        assert_eq!(req.acks, -1);
        let p = &req.topics[0].1[0];
        assert_eq!((p.partition, &buf[p.set.clone()]), (3, &b"xyz"[..]));
        for cut in 0..buf.len() {
            assert!(decode_all::<ProduceRequest>(&buf[..cut]).is_err());
        }
    }

    #[test]
    fn response_round_trips() {
        round_trip(&ProduceResponse {
            topics: vec![(
                "t".into(),
                vec![ProducePartitionResponse {
                    partition: 0,
                    error_code: 0,
                    base_offset: 42,
                }],
            )],
        });
    }
}

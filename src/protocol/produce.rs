//! Produce (key 0).
//!
//! The request decoder does not copy record sets: each partition entry records where its set
//! lies in the frame, so the broker can validate it and write offsets into it in place. v3 and
//! later carry format v2 batches, earlier versions magic 0/1 message sets (the broker checks
//! which, `handle_produce`).

use std::ops::Range;

use super::{Decode, DecodeResult, Encode, Out, Reader, read_topics};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartition {
    pub partition: i32,
    /// Where this partition's record set lies in the buffer the request was decoded from.
    pub set: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    /// v3+: set only by a transactional producer.
    pub transactional_id: Option<String>,
    pub acks: i16,
    pub timeout_ms: i32,
    pub topics: Vec<(String, Vec<ProducePartition>)>,
}

impl<'a> Decode<'a> for ProduceRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let transactional_id = r.since(3, None, |r| r.nullable_owned("transactional_id"))?;
        let acks = r.i16("acks")?;
        let timeout_ms = r.i32("timeout_ms")?;
        let topics = read_topics(r, 8, |r| {
            let p = ProducePartition {
                partition: r.i32("partition")?,
                set: r.sized_region("records")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(ProduceRequest {
            transactional_id,
            acks,
            timeout_ms,
            topics,
        })
    }
}

/// A topic's partitions with their record sets, as a client sends them.
pub type TopicSets<'a> = (&'a str, Vec<(i32, &'a [u8])>);

/// A produce request as a client writes it, from borrowed record sets: the broker's side
/// reads a `ProduceRequest`, whose sets stay in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceSets<'a> {
    pub acks: i16,
    pub timeout_ms: i32,
    pub topics: &'a [TopicSets<'a>],
}

impl Encode for ProduceSets<'_> {
    fn encode(&self, out: &mut Out<'_>) {
        if out.version() >= 3 {
            out.put_nstr(None); // transactional_id
        }
        out.put_i16(self.acks);
        out.put_i32(self.timeout_ms);
        out.put_len(Some(self.topics.len()));
        for (t, parts) in self.topics {
            out.put_str(t);
            out.put_len(Some(parts.len()));
            for (p, set) in parts {
                out.put_i32(*p);
                out.put_bytes(Some(set));
                out.put_tags();
            }
            out.put_tags();
        }
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartitionResponse {
    pub partition: i32,
    pub error_code: i16,
    /// Offset of the first message appended; -1 on error.
    pub base_offset: i64,
    /// v2+: the broker's append time when the topic uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    /// v5+.
    pub log_start_offset: i64,
    /// v8+: what went wrong, for a person to read.
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResponse {
    pub topics: Vec<(String, Vec<ProducePartitionResponse>)>,
}

impl Encode for ProduceResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i16(p.error_code);
            o.put_i64(p.base_offset);
            o.since(2, |o| o.put_i64(p.log_append_time_ms));
            o.since(5, |o| o.put_i64(p.log_start_offset));
            if version >= 8 {
                o.put_len(Some(0)); // record_errors: none singled out
                o.put_nstr(p.error_message.as_deref());
            }
            o.put_tags();
        });
        out.since(1, |o| o.put_i32(0)); // throttle_time_ms: gregor does not throttle
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ProduceResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let topics = read_topics(r, 14, |r| {
            let partition = r.i32("partition")?;
            let error_code = r.i16("error_code")?;
            let base_offset = r.i64("base_offset")?;
            let log_append_time_ms = r.since(2, -1, |r| r.i64("log_append_time"))?;
            let log_start_offset = r.since(5, -1, |r| r.i64("log_start_offset"))?;
            let mut error_message = None;
            if version >= 8 {
                let n = r.array_len("record_errors", 3)?;
                for _ in 0..n {
                    r.i32("batch_index")?;
                    r.nullable_string("batch_index_error_message")?;
                    r.tags()?;
                }
                error_message = r.nullable_owned("error_message")?;
            }
            r.tags()?;
            Ok(ProducePartitionResponse {
                partition,
                error_code,
                base_offset,
                log_append_time_ms,
                log_start_offset,
                error_message,
            })
        })?;
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        r.tags()?;
        Ok(ProduceResponse { topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::{decode_body, encode_body, round_trip_at};

    #[test]
    fn request_records_set_ranges_at_every_version() {
        for version in 0..=9 {
            let mut buf = Vec::new();
            let sets = ProduceSets {
                acks: -1,
                timeout_ms: 500,
                topics: &[("t", vec![(3, &b"xyz"[..])])],
            };
            encode_body(&sets, &mut buf, PRODUCE, version);
            let dec = |buf: &[u8]| decode_body::<ProduceRequest>(buf, PRODUCE, version);
            let req = dec(&buf).unwrap();
            assert_eq!((req.acks, req.transactional_id.as_deref()), (-1, None));
            let p = &req.topics[0].1[0];
            assert_eq!((p.partition, &buf[p.set.clone()]), (3, &b"xyz"[..]));
            for cut in 0..buf.len() {
                assert!(dec(&buf[..cut]).is_err(), "v{version} prefix {cut}");
            }
        }
    }

    #[test]
    fn response_round_trips_at_every_version() {
        for version in 0..=9 {
            let resp = ProduceResponse {
                topics: vec![(
                    "t".into(),
                    vec![ProducePartitionResponse {
                        partition: 0,
                        error_code: 0,
                        base_offset: 42,
                        log_append_time_ms: if version >= 2 { 1_700_000_000_000 } else { -1 },
                        log_start_offset: if version >= 5 { 7 } else { -1 },
                        error_message: (version >= 8).then(|| "why".to_owned()),
                    }],
                )],
            };
            round_trip_at(&resp, PRODUCE, version);
        }
    }

    #[test]
    fn v9_response_matches_the_schema_byte_for_byte() {
        // ProduceResponse v9 from Kafka's ProduceResponse.json: compact topic array (2 = one),
        // compact name "t", compact partitions (2), index 0, error 0, base offset 5,
        // log_append_time -1, log_start_offset 0, record_errors empty (1), error_message null
        // (0), partition tags, topic tags, throttle 0, top-level tags.
        let resp = ProduceResponse {
            topics: vec![(
                "t".into(),
                vec![ProducePartitionResponse {
                    partition: 0,
                    error_code: 0,
                    base_offset: 5,
                    log_append_time_ms: -1,
                    log_start_offset: 0,
                    error_message: None,
                }],
            )],
        };
        let mut buf = Vec::new();
        encode_body(&resp, &mut buf, PRODUCE, 9);
        let mut want = vec![2, 2, b't', 2, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(&5i64.to_be_bytes());
        want.extend_from_slice(&(-1i64).to_be_bytes());
        want.extend_from_slice(&0i64.to_be_bytes());
        want.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(buf, want);
    }
}

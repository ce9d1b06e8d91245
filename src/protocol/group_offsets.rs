//! Committed consumer offsets: OffsetCommit (key 8) v0/v1, OffsetFetch (key 9) v0/v1, and
//! GroupCoordinator (key 10) v0, which clients ask first to learn where to send them.

use super::{Decode, DecodeResult, Encode, Reader, Writer, read_topics, write_topics};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPartition {
    pub partition: i32,
    pub offset: i64,
    /// v1 only; -1 means "now".
    pub timestamp: i64,
    pub metadata: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    /// v1: -1 without group management.
    pub generation_id: i32,
    pub member_id: String,
    pub topics: Vec<(String, Vec<CommitPartition>)>,
}

impl OffsetCommitRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id")?.to_owned();
        let (generation_id, member_id) = if version >= 1 {
            (r.i32("generation_id")?, r.string("member_id")?.to_owned())
        } else {
            (-1, String::new())
        };
        let min = if version >= 1 { 22 } else { 14 };
        let topics = read_topics(r, min, |r| {
            let partition = r.i32("partition")?;
            let offset = r.i64("offset")?;
            let timestamp = if version >= 1 {
                r.i64("timestamp")?
            } else {
                -1
            };
            let metadata = r.nullable_string("metadata")?.map(str::to_owned);
            Ok(CommitPartition {
                partition,
                offset,
                timestamp,
                metadata,
            })
        })?;
        Ok(OffsetCommitRequest {
            group_id,
            generation_id,
            member_id,
            topics,
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        out.put_string(&self.group_id);
        if version >= 1 {
            out.put_i32(self.generation_id);
            out.put_string(&self.member_id);
        }
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.offset);
            if version >= 1 {
                o.put_i64(p.timestamp);
            }
            o.put_nullable_string(p.metadata.as_deref());
        });
    }
}

/// OffsetCommit's response, v0 and v1: an error code per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    pub topics: Vec<(String, Vec<(i32, i16)>)>,
}

impl Encode for OffsetCommitResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_topics(out, &self.topics, |o, (p, e)| {
            o.put_i32(*p);
            o.put_i16(*e);
        });
    }
}

impl<'a> Decode<'a> for OffsetCommitResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(OffsetCommitResponse {
            topics: read_topics(r, 6, |r| Ok((r.i32("partition")?, r.i16("error_code")?)))?,
        })
    }
}

/// OffsetFetch v0 and v1 share a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    pub group_id: String,
    pub topics: Vec<(String, Vec<i32>)>,
}

impl Encode for OffsetFetchRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_string(&self.group_id);
        write_topics(out, &self.topics, |o, p| o.put_i32(*p));
    }
}

impl<'a> Decode<'a> for OffsetFetchRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(OffsetFetchRequest {
            group_id: r.string("group_id")?.to_owned(),
            topics: read_topics(r, 4, |r| r.i32("partition"))?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition: i32,
    /// -1: nothing committed.
    pub offset: i64,
    pub metadata: String,
    pub error_code: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    pub topics: Vec<(String, Vec<FetchedOffset>)>,
}

impl Encode for OffsetFetchResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_topics(out, &self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.offset);
            o.put_string(&p.metadata);
            o.put_i16(p.error_code);
        });
    }
}

impl<'a> Decode<'a> for OffsetFetchResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(OffsetFetchResponse {
            topics: read_topics(r, 16, |r| {
                Ok(FetchedOffset {
                    partition: r.i32("partition")?,
                    offset: r.i64("offset")?,
                    metadata: r.string("metadata")?.to_owned(),
                    error_code: r.i16("error_code")?,
                })
            })?,
        })
    }
}

/// GroupCoordinator (ConsumerMetadata) v0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCoordinatorRequest {
    pub group_id: String,
}

impl Encode for GroupCoordinatorRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_string(&self.group_id);
    }
}

impl<'a> Decode<'a> for GroupCoordinatorRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(GroupCoordinatorRequest {
            group_id: r.string("group_id")?.to_owned(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCoordinatorResponse {
    pub error_code: i16,
    pub coordinator_id: i32,
    pub host: String,
    pub port: i32,
}

impl Encode for GroupCoordinatorResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i16(self.error_code);
        out.put_i32(self.coordinator_id);
        out.put_string(&self.host);
        out.put_i32(self.port);
    }
}

impl<'a> Decode<'a> for GroupCoordinatorResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(GroupCoordinatorResponse {
            error_code: r.i16("error_code")?,
            coordinator_id: r.i32("coordinator_id")?,
            host: r.string("host")?.to_owned(),
            port: r.i32("port")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::round_trip;

    #[test]
    fn commit_request_v0_and_v1_round_trip() {
        for v in [0, 1] {
            let req = OffsetCommitRequest {
                group_id: "g".into(),
                generation_id: -1,
                member_id: String::new(),
                topics: vec![(
                    "t".into(),
                    vec![CommitPartition {
                        partition: 1,
                        offset: 42,
                        timestamp: -1,
                        metadata: Some("m".into()),
                    }],
                )],
            };
            let mut buf = Vec::new();
            req.encode(&mut buf, v);
            let mut r = Reader::new(&buf);
            assert_eq!(OffsetCommitRequest::decode(&mut r, v).unwrap(), req);
            r.finish().unwrap();
            for cut in 0..buf.len() {
                let mut r = Reader::new(&buf[..cut]);
                assert!(
                    OffsetCommitRequest::decode(&mut r, v)
                        .and_then(|_| r.finish())
                        .is_err()
                );
            }
        }
    }

    #[test]
    fn the_rest_round_trips() {
        round_trip(&OffsetCommitResponse {
            topics: vec![("t".into(), vec![(0, 3)])],
        });
        round_trip(&OffsetFetchRequest {
            group_id: "g".into(),
            topics: vec![("t".into(), vec![0, 1])],
        });
        round_trip(&OffsetFetchResponse {
            topics: vec![(
                "t".into(),
                vec![FetchedOffset {
                    partition: 0,
                    offset: -1,
                    metadata: String::new(),
                    error_code: 0,
                }],
            )],
        });
        round_trip(&GroupCoordinatorRequest {
            group_id: "g".into(),
        });
        round_trip(&GroupCoordinatorResponse {
            error_code: 0,
            coordinator_id: 1,
            host: "127.0.0.1".into(),
            port: 9092,
        });
    }
}

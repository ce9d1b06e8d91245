//! OffsetForLeaderEpoch (23) (KIP-101, KIP-320): where a leader epoch ends in the
//! leader's log. Followers ask it when they start following (v3+ names them by
//! `replica_id`); consumers ask it to check that the log they read was not cut. The oldest
//! version served is the oldest Kafka 4 serves.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_topics};

/// The version our replica fetchers send: the first to carry `replica_id`.
pub const CLIENT_VERSION: i16 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochQuery {
    pub partition: i32,
    /// The leader epoch the asker believes current (-1: no fencing).
    pub current_leader_epoch: i32,
    /// The epoch whose end offset is asked for.
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderEpochRequest {
    /// The follower's broker id; -1 for a consumer, -2 (the default) before v3.
    pub replica_id: i32,
    pub topics: Vec<(String, Vec<EpochQuery>)>,
}

impl<'a> Decode<'a> for OffsetForLeaderEpochRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let replica_id = r.since(3, -2, |r| r.i32("replica_id"))?;
        let topics = read_topics(r, 12, |r| {
            let q = EpochQuery {
                partition: r.i32("partition")?,
                current_leader_epoch: r.i32("current_leader_epoch")?,
                leader_epoch: r.i32("leader_epoch")?,
            };
            r.tags()?;
            Ok(q)
        })?;
        r.tags()?;
        Ok(OffsetForLeaderEpochRequest { replica_id, topics })
    }
}

impl Encode for OffsetForLeaderEpochRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(3, |o| o.put_i32(self.replica_id));
        out.put_topics(&self.topics, |o, q| {
            o.put_i32(q.partition);
            o.put_i32(q.current_leader_epoch);
            o.put_i32(q.leader_epoch);
            o.put_tags();
        });
        out.put_tags();
    }
}

/// One partition's answer: the largest epoch ≤ the one asked that the leader knows, and the
/// offset where it ends (both -1 when undefined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub error_code: i16,
    pub partition: i32,
    pub leader_epoch: i32,
    pub end_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderEpochResponse {
    pub topics: Vec<(String, Vec<EpochEndOffset>)>,
}

impl Encode for OffsetForLeaderEpochResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let topics = &self.topics;
        out.put_i32(0);
        out.put_topics(topics, |o, p| {
            o.put_i16(p.error_code);
            o.put_i32(p.partition);
            o.put_i32(p.leader_epoch);
            o.put_i64(p.end_offset);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for OffsetForLeaderEpochResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let topics = read_topics(r, 18, |r| {
            let p = EpochEndOffset {
                error_code: r.i16("error_code")?,
                partition: r.i32("partition")?,
                leader_epoch: r.i32("leader_epoch")?,
                end_offset: r.i64("end_offset")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(OffsetForLeaderEpochResponse { topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::{decode_body, encode_body, round_trip_at};

    #[test]
    fn requests_and_responses_round_trip_at_every_version() {
        let req = OffsetForLeaderEpochRequest {
            replica_id: 2,
            topics: vec![(
                "t".into(),
                vec![EpochQuery {
                    partition: 1,
                    current_leader_epoch: 4,
                    leader_epoch: 3,
                }],
            )],
        };
        let resp = vec![(
            "t".to_owned(),
            vec![EpochEndOffset {
                error_code: 0,
                partition: 1,
                leader_epoch: 3,
                end_offset: 77,
            }],
        )];
        for v in 2..=4 {
            let mut b = Vec::new();
            encode_body(&req, &mut b, OFFSET_FOR_LEADER_EPOCH, v);
            let back: OffsetForLeaderEpochRequest =
                decode_body(&b, OFFSET_FOR_LEADER_EPOCH, v).unwrap();
            assert_eq!(back.topics, req.topics, "v{v}");
            assert_eq!(back.replica_id, if v >= 3 { 2 } else { -2 });
            let topics = resp.clone();
            round_trip_at(
                &OffsetForLeaderEpochResponse { topics },
                OFFSET_FOR_LEADER_EPOCH,
                v,
            );
        }
    }
}

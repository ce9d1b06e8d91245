//! The requests a transactional producer sends its transaction coordinator (Kafka's
//! `AddPartitionsToTxn`, `AddOffsetsToTxn`, `EndTxn` schemas) and its group coordinator
//! (`TxnOffsetCommit`): v0–3 each, flexible from v3.
//! AddPartitionsToTxn v4+ (a broker asking on behalf of many producers, KIP-890) is not
//! served, nor EndTxn v4+ (TRANSACTION_ABORTABLE and per-transaction epoch bumps, which come
//! with `transaction.version` 2).

use super::{Decode, DecodeResult, Encode, Out, Reader, read_topics};

/// TxnOffsetCommit's answer has AddPartitionsToTxn's layout: (topic, [(partition, error)]).
pub type TxnOffsetCommitResponse = AddPartitionsToTxnResponse;

/// AddPartitionsToTxn (24): the partitions a transaction is about to write to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// (topic, partitions).
    pub topics: Vec<(String, Vec<i32>)>,
}

impl Encode for AddPartitionsToTxnRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.transactional_id);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_topics(&self.topics, |o, p| o.put_i32(*p));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AddPartitionsToTxnRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let transactional_id = r.string("transactional_id")?.to_owned();
        let producer_id = r.i64("producer_id")?;
        let producer_epoch = r.i16("producer_epoch")?;
        let topics = read_topics(r, 4, |r| r.i32("partition"))?;
        r.tags()?;
        Ok(AddPartitionsToTxnRequest {
            transactional_id,
            producer_id,
            producer_epoch,
            topics,
        })
    }
}

/// (topic, [(partition, error code)]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnResponse {
    pub results: Vec<(String, Vec<(i32, i16)>)>,
}

impl Encode for AddPartitionsToTxnResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0); // throttle_time_ms
        out.put_topics(&self.results, |o, (p, e)| {
            o.put_i32(*p);
            o.put_i16(*e);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AddPartitionsToTxnResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_topics(r, 6, |r| {
            let p = (r.i32("partition_index")?, r.i16("partition_error_code")?);
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(AddPartitionsToTxnResponse { results })
    }
}

/// AddOffsetsToTxn (25): the transaction will commit offsets of this group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOffsetsToTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub group_id: String,
}

impl Encode for AddOffsetsToTxnRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.transactional_id);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_str(&self.group_id);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AddOffsetsToTxnRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let req = AddOffsetsToTxnRequest {
            transactional_id: r.string("transactional_id")?.to_owned(),
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
            group_id: r.string("group_id")?.to_owned(),
        };
        r.tags()?;
        Ok(req)
    }
}

/// EndTxn (26): commit or abort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub committed: bool,
}

impl Encode for EndTxnRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.transactional_id);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_i8(i8::from(self.committed));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for EndTxnRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let req = EndTxnRequest {
            transactional_id: r.string("transactional_id")?.to_owned(),
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
            committed: r.bool("committed")?,
        };
        r.tags()?;
        Ok(req)
    }
}

/// The answer of AddOffsetsToTxn and of EndTxn (v0–3): one error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnErrorResponse {
    pub error_code: i16,
}

impl Encode for TxnErrorResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0); // throttle_time_ms
        out.put_i16(self.error_code);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for TxnErrorResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        r.tags()?;
        Ok(TxnErrorResponse { error_code })
    }
}

/// One offset of a TxnOffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffset {
    pub partition: i32,
    pub offset: i64,
    /// v2+; -1 unknown.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// TxnOffsetCommit (28): offsets of `group_id` that commit with the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    pub transactional_id: String,
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v3+ (KIP-447): the consumer's generation and member, checked as OffsetCommit's are.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub topics: Vec<(String, Vec<TxnOffset>)>,
}

impl Encode for TxnOffsetCommitRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.transactional_id);
        out.put_str(&self.group_id);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.since(3, |o| {
            o.put_i32(self.generation_id);
            o.put_str(&self.member_id);
            o.put_nstr(self.group_instance_id.as_deref());
        });
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.offset);
            o.since(2, |o| o.put_i32(p.leader_epoch));
            o.put_nstr(p.metadata.as_deref());
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for TxnOffsetCommitRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let transactional_id = r.string("transactional_id")?.to_owned();
        let group_id = r.string("group_id")?.to_owned();
        let producer_id = r.i64("producer_id")?;
        let producer_epoch = r.i16("producer_epoch")?;
        let generation_id = r.since(3, -1, |r| r.i32("generation_id"))?;
        let member_id = r.since(3, String::new(), |r| Ok(r.string("member_id")?.to_owned()))?;
        let group_instance_id = r.since(3, None, |r| r.nullable_owned("group_instance_id"))?;
        let topics = read_topics(r, 14, |r| {
            let p = TxnOffset {
                partition: r.i32("partition_index")?,
                offset: r.i64("committed_offset")?,
                leader_epoch: r.since(2, -1, |r| r.i32("committed_leader_epoch"))?,
                metadata: r.nullable_owned("committed_metadata")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(TxnOffsetCommitRequest {
            transactional_id,
            group_id,
            producer_id,
            producer_epoch,
            generation_id,
            member_id,
            group_instance_id,
            topics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::{
        ADD_OFFSETS_TO_TXN, ADD_PARTITIONS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT,
    };
    use crate::protocol::round_trip_at;

    #[test]
    fn every_version_round_trips() {
        for v in 0..=3 {
            let add = AddPartitionsToTxnRequest {
                transactional_id: "t".into(),
                producer_id: 7,
                producer_epoch: 2,
                topics: vec![("a".into(), vec![0, 3]), ("b".into(), vec![1])],
            };
            assert_eq!(round_trip_at(&add, ADD_PARTITIONS_TO_TXN, v), add);
            let added = AddPartitionsToTxnResponse {
                results: vec![("a".into(), vec![(0, 0), (3, 51)])],
            };
            assert_eq!(round_trip_at(&added, ADD_PARTITIONS_TO_TXN, v), added);
            let offsets = AddOffsetsToTxnRequest {
                transactional_id: "t".into(),
                producer_id: 7,
                producer_epoch: 2,
                group_id: "g".into(),
            };
            assert_eq!(round_trip_at(&offsets, ADD_OFFSETS_TO_TXN, v), offsets);
            let end = EndTxnRequest {
                transactional_id: "t".into(),
                producer_id: 7,
                producer_epoch: 2,
                committed: true,
            };
            assert_eq!(round_trip_at(&end, END_TXN, v), end);
            let commit = TxnOffsetCommitRequest {
                transactional_id: "t".into(),
                group_id: "g".into(),
                producer_id: 7,
                producer_epoch: 2,
                generation_id: if v >= 3 { 4 } else { -1 },
                member_id: if v >= 3 { "m".into() } else { String::new() },
                group_instance_id: None,
                topics: vec![(
                    "a".into(),
                    vec![TxnOffset {
                        partition: 1,
                        offset: 99,
                        leader_epoch: if v >= 2 { 3 } else { -1 },
                        metadata: Some("x".into()),
                    }],
                )],
            };
            assert_eq!(round_trip_at(&commit, TXN_OFFSET_COMMIT, v), commit);
            let e = TxnErrorResponse { error_code: 51 };
            assert_eq!(round_trip_at(&e, END_TXN, v), e);
        }
    }
}

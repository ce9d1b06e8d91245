//! DescribeProducers (61, KIP-664): the idempotent and transactional producers a partition's
//! leader knows of, with their epochs, last sequences and open transactions — what
//! `kafka-transactions.sh describe-producers` shows to find a hanging transaction. v0 only,
//! flexible.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array, read_topics};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeProducersRequest {
    /// (topic, partitions).
    pub topics: Vec<(String, Vec<i32>)>,
}

impl Encode for DescribeProducersRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_topics(&self.topics, |o, p| o.put_i32(*p));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeProducersRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let topics = read_topics(r, 4, |r| r.i32("partition_index"))?;
        r.tags()?;
        Ok(DescribeProducersRequest { topics })
    }
}

/// One producer's state in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub last_sequence: i32,
    pub last_timestamp: i64,
    /// -1 when no marker was written for it.
    pub coordinator_epoch: i32,
    /// First offset of its open transaction; -1 when none is open.
    pub current_txn_start_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducersOfPartition {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub active_producers: Vec<ActiveProducer>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeProducersResponse {
    pub topics: Vec<(String, Vec<ProducersOfPartition>)>,
}

impl Encode for DescribeProducersResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i16(p.error_code);
            o.put_nstr(p.error_message.as_deref());
            o.put_array(&p.active_producers, |o, a| {
                o.put_i64(a.producer_id);
                o.put_i32(a.producer_epoch);
                o.put_i32(a.last_sequence);
                o.put_i64(a.last_timestamp);
                o.put_i32(a.coordinator_epoch);
                o.put_i64(a.current_txn_start_offset);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeProducersResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let topics = read_topics(r, 8, |r| {
            let partition = r.i32("partition_index")?;
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_owned("error_message")?;
            let active_producers = read_array(r, "active_producers", 36, |r| {
                let a = ActiveProducer {
                    producer_id: r.i64("producer_id")?,
                    producer_epoch: r.i32("producer_epoch")?,
                    last_sequence: r.i32("last_sequence")?,
                    last_timestamp: r.i64("last_timestamp")?,
                    coordinator_epoch: r.i32("coordinator_epoch")?,
                    current_txn_start_offset: r.i64("current_txn_start_offset")?,
                };
                r.tags()?;
                Ok(a)
            })?;
            r.tags()?;
            Ok(ProducersOfPartition {
                partition,
                error_code,
                error_message,
                active_producers,
            })
        })?;
        r.tags()?;
        Ok(DescribeProducersResponse { topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::DESCRIBE_PRODUCERS;
    use crate::protocol::round_trip_at;

    #[test]
    fn v0_round_trips() {
        let req = DescribeProducersRequest {
            topics: vec![("t".into(), vec![0, 2])],
        };
        assert_eq!(round_trip_at(&req, DESCRIBE_PRODUCERS, 0), req);
        let resp = DescribeProducersResponse {
            topics: vec![(
                "t".into(),
                vec![
                    ProducersOfPartition {
                        partition: 0,
                        error_code: 0,
                        error_message: None,
                        active_producers: vec![ActiveProducer {
                            producer_id: 4,
                            producer_epoch: 1,
                            last_sequence: 9,
                            last_timestamp: 1_700_000_000_000,
                            coordinator_epoch: -1,
                            current_txn_start_offset: 12,
                        }],
                    },
                    ProducersOfPartition {
                        partition: 2,
                        error_code: 6,
                        error_message: Some("not the leader".into()),
                        active_producers: vec![],
                    },
                ],
            )],
        };
        assert_eq!(round_trip_at(&resp, DESCRIBE_PRODUCERS, 0), resp);
    }
}

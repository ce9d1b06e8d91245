//! The consumer ↔ coordinator requests of `consumer-coordinator.txt`: Consult, Register, Ping,
//! Stop and Start, plus gregor's DescribeGroups for the `groups` tool.
//!
//! A frame is `size: int32`, `request_type_id: int16`, then the fields. The type ids sit in a
//! range no Kafka api key uses, so one listener serves both protocols. After a Register the
//! connection turns around: the coordinator sends Ping/Stop/Start and the consumer answers.
//! Deviations from the spec's layouts (recorded in doc/protocol.md): every answer a consumer
//! sends starts with the type id it answers (the turned-around connection has no correlation
//! id, and a late PingResponse must not pass for a StartResponse); partitions are int32, not
//! "brokerId-partition" strings; coordinator ids are int32 like every broker id; Register
//! carries the subscription and gets a RegisterResponse; StopResponse carries the offsets to
//! commit when auto-commit is on, so that a rebalance loses no progress.

use std::collections::BTreeMap;

use super::{Decode, DecodeError, DecodeResult, Encode, Out, Reader, Writer};
use crate::protocol::BrokerInfo;

pub const CONSULT: i16 = 1000;
pub const REGISTER: i16 = 1001;
pub const PING: i16 = 1002;
pub const STOP: i16 = 1003;
pub const START: i16 = 1004;

/// Whether an int16 that opens a frame names a coordinator request.
pub fn is_coordinator_request(type_id: i16) -> bool {
    (CONSULT..=START).contains(&type_id)
}

/// Frames a body: size, type id, then what `body` writes.
pub fn frame(type_id: i16, body: &impl Encode) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let at = out.reserve_size();
    out.put_i16(type_id);
    body.encode(&mut Out::classic(&mut out));
    out.patch_size(at);
    out
}

/// Reads the int16 count the spec uses for its partition lists.
fn read_short_array<'a, T>(
    r: &mut Reader<'a>,
    field: &'static str,
    min_elem: usize,
    mut f: impl FnMut(&mut Reader<'a>) -> DecodeResult<T>,
) -> DecodeResult<Vec<T>> {
    let n = r.i16(field)?;
    if n < 0 {
        return Err(DecodeError::Invalid(field));
    }
    if (n as usize) * min_elem > r.remaining() {
        return Err(DecodeError::Truncated(field));
    }
    (0..n).map(|_| f(r)).collect()
}

/// Writes an int16-counted list. More than i16::MAX entries cannot be expressed; the coordinator
/// never assigns that many partitions to one consumer (`MAX_PARTITIONS_PER_CONSUMER`).
fn write_short_array<T>(out: &mut Out<'_>, items: &[T], mut f: impl FnMut(&mut Out<'_>, &T)) {
    let n = items.len().min(i16::MAX as usize);
    out.put_i16(n as i16);
    for it in &items[..n] {
        f(out, it);
    }
}

pub const MAX_PARTITIONS_PER_CONSUMER: usize = i16::MAX as usize;

/// An empty body: ConsultRequest, StopRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Empty;

impl Encode for Empty {
    fn encode(&self, _: &mut Out<'_>) {}
}

impl<'a> Decode<'a> for Empty {
    fn decode(_: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(Empty)
    }
}

/// A broker in a ConsultResponse. `creator_id` names the ZooKeeper session that registered it,
/// so a consumer can tell a restarted broker from the one it knew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsultBroker {
    pub creator_id: String,
    pub broker: BrokerInfo,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsultResponse {
    pub error_code: i16,
    /// -1 when no coordinator is elected.
    pub coordinator_id: i32,
    pub brokers: Vec<ConsultBroker>,
}

impl Encode for ConsultResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_i32(self.coordinator_id);
        out.put_array(&self.brokers, |o, b| {
            o.put_str(&b.creator_id);
            b.broker.encode(o);
        });
    }
}

impl<'a> Decode<'a> for ConsultResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ConsultResponse {
            error_code: r.i16("error_code")?,
            coordinator_id: r.i32("coordinator_id")?,
            brokers: super::read_array(r, "brokers_info", 12, |r| {
                Ok(ConsultBroker {
                    creator_id: r.string("creator_id")?.to_owned(),
                    broker: BrokerInfo::decode(r)?,
                })
            })?,
        })
    }
}

/// What a consumer reads: topics with a stream count each, or every topic matching a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    Static(BTreeMap<String, i32>),
    Whitelist { pattern: String, streams: i32 },
}

const SUB_STATIC: i8 = 0;
const SUB_WHITELIST: i8 = 1;

impl Encode for Subscription {
    fn encode(&self, out: &mut Out<'_>) {
        match self {
            Subscription::Static(topics) => {
                out.put_i8(SUB_STATIC);
                out.put_len(Some(topics.len()));
                for (t, n) in topics {
                    out.put_str(t);
                    out.put_i32(*n);
                }
            }
            Subscription::Whitelist { pattern, streams } => {
                out.put_i8(SUB_WHITELIST);
                out.put_str(pattern);
                out.put_i32(*streams);
            }
        }
    }
}

impl<'a> Decode<'a> for Subscription {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        match r.i8("subscription_kind")? {
            SUB_STATIC => {
                let pairs = super::read_array(r, "topic_counts", 6, |r| {
                    Ok((r.string("topic")?.to_owned(), r.i32("streams")?))
                })?;
                Ok(Subscription::Static(pairs.into_iter().collect()))
            }
            SUB_WHITELIST => Ok(Subscription::Whitelist {
                pattern: r.string("pattern")?.to_owned(),
                streams: r.i32("streams")?,
            }),
            _ => Err(DecodeError::Invalid("subscription_kind")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterRequest {
    pub group_id: String,
    pub consumer_id: String,
    pub auto_commit: bool,
    /// "smallest" or "largest".
    pub auto_offset_reset: String,
    pub ping_interval_ms: i32,
    pub max_ping_retries: i16,
    /// Added at the end (deviation): the spec's register carries no topics.
    pub subscription: Subscription,
}

impl Encode for RegisterRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.group_id);
        out.put_str(&self.consumer_id);
        out.put_i8(self.auto_commit as i8);
        out.put_str(&self.auto_offset_reset);
        out.put_i32(self.ping_interval_ms);
        out.put_i16(self.max_ping_retries);
        self.subscription.encode(out);
    }
}

impl<'a> Decode<'a> for RegisterRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(RegisterRequest {
            group_id: r.string("group_id")?.to_owned(),
            consumer_id: r.string("consumer_id")?.to_owned(),
            auto_commit: r.bool("auto_commit")?,
            auto_offset_reset: r.string("auto_offset_reset")?.to_owned(),
            ping_interval_ms: r.i32("ping_interval_ms")?,
            max_ping_retries: r.i16("max_ping_retries")?,
            subscription: Subscription::decode(r)?,
        })
    }
}

/// RegisterResponse (a deviation: the spec shows none). `rebalance_timeout_ms` tells the
/// consumer how long a rebalance may keep the coordinator silent, so it does not take that
/// silence for the coordinator's death.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterResponse {
    pub error_code: i16,
    pub rebalance_timeout_ms: i32,
}

impl Encode for RegisterResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_i32(self.rebalance_timeout_ms);
    }
}

impl<'a> Decode<'a> for RegisterResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(RegisterResponse {
            error_code: r.i16("error_code")?,
            rebalance_timeout_ms: r.i32("rebalance_timeout_ms")?,
        })
    }
}

/// StopResponse without offsets, StartResponse, and the answer to a refused request: a global
/// error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    pub error_code: i16,
}

impl Encode for ErrorResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
    }
}

impl<'a> Decode<'a> for ErrorResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ErrorResponse {
            error_code: r.i16("error_code")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingRequest {
    /// The spec's num_retries: how many pings in a row went unanswered before this one.
    pub num_retries: i16,
}

impl Encode for PingRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.num_retries);
    }
}

impl<'a> Decode<'a> for PingRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(PingRequest {
            num_retries: r.i16("num_retries")?,
        })
    }
}

/// A topic-partition with an offset: offset_struct and partition_struct of the spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartitionOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

fn write_offsets(out: &mut Out<'_>, offsets: &[PartitionOffset]) {
    write_short_array(out, offsets, |o, p| {
        o.put_str(&p.topic);
        o.put_i32(p.partition);
        o.put_i64(p.offset);
    });
}

fn read_offsets(r: &mut Reader<'_>, field: &'static str) -> DecodeResult<Vec<PartitionOffset>> {
    read_short_array(r, field, 14, |r| {
        Ok(PartitionOffset {
            topic: r.string("topic")?.to_owned(),
            partition: r.i32("partition")?,
            offset: r.i64("offset")?,
        })
    })
}

/// Offsets to commit, present only when the consumer registered with auto_commit — the spec's
/// "the last two fields should not exist" otherwise. Used by PingResponse and StopResponse.
fn write_optional_offsets(out: &mut Out<'_>, offsets: &Option<Vec<PartitionOffset>>) {
    if let Some(o) = offsets {
        write_offsets(out, o);
    }
}

fn read_optional_offsets(r: &mut Reader<'_>) -> DecodeResult<Option<Vec<PartitionOffset>>> {
    if r.remaining() == 0 {
        Ok(None)
    } else {
        read_offsets(r, "offset_info").map(Some)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingResponse {
    pub offsets: Option<Vec<PartitionOffset>>,
}

impl Encode for PingResponse {
    fn encode(&self, out: &mut Out<'_>) {
        write_optional_offsets(out, &self.offsets);
    }
}

impl<'a> Decode<'a> for PingResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(PingResponse {
            offsets: read_optional_offsets(r)?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopResponse {
    pub error_code: i16,
    pub offsets: Option<Vec<PartitionOffset>>,
}

impl Encode for StopResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        write_optional_offsets(out, &self.offsets);
    }
}

impl<'a> Decode<'a> for StopResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(StopResponse {
            error_code: r.i16("error_code")?,
            offsets: read_optional_offsets(r)?,
        })
    }
}

/// The partitions a consumer now owns, each with the offset to start from: a committed offset,
/// or -2 (earliest) / -1 (latest) when the group has none, as ListOffsets spells them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRequest {
    pub assigned: Vec<PartitionOffset>,
}

impl Encode for StartRequest {
    fn encode(&self, out: &mut Out<'_>) {
        write_offsets(out, &self.assigned);
    }
}

impl<'a> Decode<'a> for StartRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(StartRequest {
            assigned: read_offsets(r, "assigned_parts")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode_classic, encode_classic};

    fn round_trip<T: Encode + for<'a> Decode<'a> + PartialEq + std::fmt::Debug>(v: T) {
        let mut b = Vec::new();
        encode_classic(&v, &mut b);
        assert_eq!(decode_classic::<T>(&b).unwrap(), v);
        // Every strict prefix of a body with a non-optional tail must fail, never panic.
        for n in 0..b.len() {
            let _ = decode_classic::<T>(&b[..n]);
        }
    }

    fn offsets() -> Vec<PartitionOffset> {
        vec![
            PartitionOffset {
                topic: "a".into(),
                partition: 3,
                offset: 42,
            },
            PartitionOffset {
                topic: "b".into(),
                partition: 0,
                offset: -2,
            },
        ]
    }

    #[test]
    fn every_coordinator_message_round_trips() {
        round_trip(ConsultResponse {
            error_code: 0,
            coordinator_id: 2,
            brokers: vec![ConsultBroker {
                creator_id: "1a2b".into(),
                broker: BrokerInfo {
                    id: 2,
                    host: "127.0.0.1".into(),
                    port: 9092,
                },
            }],
        });
        round_trip(RegisterRequest {
            group_id: "g".into(),
            consumer_id: "c1".into(),
            auto_commit: true,
            auto_offset_reset: "smallest".into(),
            ping_interval_ms: 500,
            max_ping_retries: 3,
            subscription: Subscription::Static([("t".to_owned(), 2)].into()),
        });
        round_trip(Subscription::Whitelist {
            pattern: "logs-.*".into(),
            streams: 1,
        });
        round_trip(PingRequest { num_retries: 2 });
        round_trip(RegisterResponse {
            error_code: 16,
            rebalance_timeout_ms: 10_000,
        });
        round_trip(PingResponse { offsets: None });
        round_trip(PingResponse {
            offsets: Some(offsets()),
        });
        round_trip(StopResponse {
            error_code: 0,
            offsets: Some(offsets()),
        });
        round_trip(StartRequest {
            assigned: offsets(),
        });
    }

    #[test]
    fn bad_counts_and_kinds_are_errors() {
        // A StartRequest claiming 1000 partitions in 3 bytes.
        assert!(decode_classic::<StartRequest>(&[0x03, 0xe8, 0, 0, 0]).is_err());
        assert!(decode_classic::<StartRequest>(&[0xff, 0xff]).is_err());
        // Subscription kind 7 does not exist.
        assert!(decode_classic::<Subscription>(&[7]).is_err());
    }

    #[test]
    fn frames_carry_size_and_type() {
        let f = frame(PING, &PingRequest { num_retries: 1 });
        assert_eq!(f, vec![0, 0, 0, 4, 0x03, 0xea, 0, 1]);
    }
}

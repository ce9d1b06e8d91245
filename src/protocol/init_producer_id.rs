//! InitProducerId (key 22). Gives an idempotent producer its id and
//! epoch; from v3 a producer may ask for its epoch to be bumped (KIP-360).

use super::{Decode, DecodeResult, Encode, Out, Reader};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    pub transactional_id: Option<String>,
    pub transaction_timeout_ms: i32,
    /// v3+: the id and epoch held, or -1 for a new producer.
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl<'a> Decode<'a> for InitProducerIdRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let transactional_id = r.nullable_owned("transactional_id")?;
        let transaction_timeout_ms = r.i32("transaction_timeout_ms")?;
        let (producer_id, producer_epoch) = if version >= 3 {
            (r.i64("producer_id")?, r.i16("producer_epoch")?)
        } else {
            (-1, -1)
        };
        r.tags()?;
        Ok(InitProducerIdRequest {
            transactional_id,
            transaction_timeout_ms,
            producer_id,
            producer_epoch,
        })
    }
}

impl Encode for InitProducerIdRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_nstr(self.transactional_id.as_deref());
        out.put_i32(self.transaction_timeout_ms);
        if version >= 3 {
            out.put_i64(self.producer_id);
            out.put_i16(self.producer_epoch);
        }
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdResponse {
    pub error_code: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Encode for InitProducerIdResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0); // throttle_time_ms
        out.put_i16(self.error_code);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for InitProducerIdResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let resp = InitProducerIdResponse {
            error_code: r.i16("error_code")?,
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
        };
        r.tags()?;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::{encode_body, round_trip_at};

    #[test]
    fn round_trips_at_every_version() {
        for version in 0..=4 {
            let req = InitProducerIdRequest {
                transactional_id: None,
                transaction_timeout_ms: 60_000,
                producer_id: if version >= 3 { 5 } else { -1 },
                producer_epoch: if version >= 3 { 2 } else { -1 },
            };
            round_trip_at(&req, INIT_PRODUCER_ID, version);
            let resp = InitProducerIdResponse {
                error_code: 0,
                producer_id: 1000,
                producer_epoch: 0,
            };
            round_trip_at(&resp, INIT_PRODUCER_ID, version);
        }
    }

    #[test]
    fn v4_request_matches_the_schema_byte_for_byte() {
        // InitProducerIdRequest v4 as the Java client sends it for an idempotent producer:
        // null transactional id (compact 0), timeout, producer id -1, epoch -1, tags.
        let mut buf = Vec::new();
        let req = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        encode_body(&req, &mut buf, INIT_PRODUCER_ID, 4);
        let mut want = vec![0];
        want.extend_from_slice(&60_000i32.to_be_bytes());
        want.extend_from_slice(&[0xff; 10]);
        want.push(0);
        assert_eq!(buf, want);
    }
}

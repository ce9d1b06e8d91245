//! What `kafka-transactions.sh` asks of transaction coordinators (KIP-664):
//! DescribeTransactions (65, v0) and ListTransactions (66, v0–2). Flexible at every version.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array, read_topics};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeTransactionsRequest {
    pub transactional_ids: Vec<String>,
}

impl Encode for DescribeTransactionsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_strs(&self.transactional_ids);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeTransactionsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let transactional_ids = r.string_array("transactional_ids")?;
        r.tags()?;
        Ok(DescribeTransactionsRequest { transactional_ids })
    }
}

/// One transactional id as its coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTransaction {
    pub error_code: i16,
    pub transactional_id: String,
    /// Kafka's state name (`Ongoing`, `CompleteCommit`, ...).
    pub state: String,
    pub timeout_ms: i32,
    /// -1 when none is open.
    pub start_time_ms: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub topics: Vec<(String, Vec<i32>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeTransactionsResponse {
    pub states: Vec<DescribedTransaction>,
}

impl Encode for DescribeTransactionsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0); // throttle_time_ms
        out.put_array(&self.states, |o, t| {
            o.put_i16(t.error_code);
            o.put_str(&t.transactional_id);
            o.put_str(&t.state);
            o.put_i32(t.timeout_ms);
            o.put_i64(t.start_time_ms);
            o.put_i64(t.producer_id);
            o.put_i16(t.producer_epoch);
            o.put_topics(&t.topics, |o, p| o.put_i32(*p));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeTransactionsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let states = read_array(r, "transaction_states", 30, |r| {
            let t = DescribedTransaction {
                error_code: r.i16("error_code")?,
                transactional_id: r.string("transactional_id")?.to_owned(),
                state: r.string("transaction_state")?.to_owned(),
                timeout_ms: r.i32("transaction_timeout_ms")?,
                start_time_ms: r.i64("transaction_start_time_ms")?,
                producer_id: r.i64("producer_id")?,
                producer_epoch: r.i16("producer_epoch")?,
                topics: read_topics(r, 4, |r| r.i32("partition"))?,
            };
            r.tags()?;
            Ok(t)
        })?;
        r.tags()?;
        Ok(DescribeTransactionsResponse { states })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListTransactionsRequest {
    /// State names; empty: every state.
    pub state_filters: Vec<String>,
    /// Empty: every producer.
    pub producer_id_filters: Vec<i64>,
    /// v1+: only transactions open longer than this (ms); -1 none.
    pub duration_filter_ms: i64,
    /// v2+ (KIP-1152): only transactional ids this regular expression matches whole; null
    /// or empty: every id.
    pub transactional_id_pattern: Option<String>,
}

impl Encode for ListTransactionsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_strs(&self.state_filters);
        out.put_array(&self.producer_id_filters, |o, p| o.put_i64(*p));
        out.since(1, |o| o.put_i64(self.duration_filter_ms));
        out.since(2, |o| o.put_nstr(self.transactional_id_pattern.as_deref()));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListTransactionsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let state_filters = r.string_array("state_filters")?;
        let producer_id_filters =
            read_array(r, "producer_id_filters", 8, |r| r.i64("producer_id"))?;
        let duration_filter_ms = r.since(1, -1, |r| r.i64("duration_filter"))?;
        let transactional_id_pattern =
            r.since(2, None, |r| r.nullable_owned("transactional_id_pattern"))?;
        r.tags()?;
        Ok(ListTransactionsRequest {
            state_filters,
            producer_id_filters,
            duration_filter_ms,
            transactional_id_pattern,
        })
    }
}

/// (transactional id, producer id, state name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListTransactionsResponse {
    pub error_code: i16,
    pub unknown_state_filters: Vec<String>,
    pub states: Vec<(String, i64, String)>,
}

impl Encode for ListTransactionsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0); // throttle_time_ms
        out.put_i16(self.error_code);
        out.put_strs(&self.unknown_state_filters);
        out.put_array(&self.states, |o, (id, pid, state)| {
            o.put_str(id);
            o.put_i64(*pid);
            o.put_str(state);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListTransactionsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let unknown_state_filters = r.string_array("unknown_state_filters")?;
        let states = read_array(r, "transaction_states", 12, |r| {
            let s = (
                r.string("transactional_id")?.to_owned(),
                r.i64("producer_id")?,
                r.string("transaction_state")?.to_owned(),
            );
            r.tags()?;
            Ok(s)
        })?;
        r.tags()?;
        Ok(ListTransactionsResponse {
            error_code,
            unknown_state_filters,
            states,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::{DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS};
    use crate::protocol::round_trip_at;

    #[test]
    fn every_version_round_trips() {
        let d = DescribeTransactionsRequest {
            transactional_ids: vec!["a".into(), "b".into()],
        };
        assert_eq!(round_trip_at(&d, DESCRIBE_TRANSACTIONS, 0), d);
        let described = DescribeTransactionsResponse {
            states: vec![DescribedTransaction {
                error_code: 0,
                transactional_id: "a".into(),
                state: "Ongoing".into(),
                timeout_ms: 60_000,
                start_time_ms: 17,
                producer_id: 4,
                producer_epoch: 2,
                topics: vec![("t".into(), vec![0, 1])],
            }],
        };
        assert_eq!(
            round_trip_at(&described, DESCRIBE_TRANSACTIONS, 0),
            described
        );
        for v in 0..=2 {
            let l = ListTransactionsRequest {
                state_filters: vec!["Ongoing".into()],
                producer_id_filters: vec![4],
                duration_filter_ms: if v >= 1 { 1000 } else { -1 },
                transactional_id_pattern: (v >= 2).then(|| "a.*".into()),
            };
            assert_eq!(round_trip_at(&l, LIST_TRANSACTIONS, v), l);
            let listed = ListTransactionsResponse {
                error_code: 0,
                unknown_state_filters: vec!["Bogus".into()],
                states: vec![("a".into(), 4, "Ongoing".into())],
            };
            assert_eq!(round_trip_at(&listed, LIST_TRANSACTIONS, v), listed);
        }
    }
}

//! ElectLeaders (43): elect the preferred replica, or any live replica of a partition without
//! a leader, now — what `kafka-leader-election.sh` and the admin clients' `electLeaders` send
//! (KIP-183, KIP-460). Served by the controller.

use super::{Decode, DecodeResult, Encode, Out, PartitionResult, Reader, read_topics_n};

/// `election_type`: the first assigned replica, if it is live and in the ISR.
pub const PREFERRED: i8 = 0;
/// `election_type`: for a partition whose leader is gone, a live replica even outside the ISR.
pub const UNCLEAN: i8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectLeadersRequest {
    /// `PREFERRED` or `UNCLEAN` (v0 has no field: preferred).
    pub election_type: i8,
    /// (topic, partitions); `None`: every partition of the cluster.
    pub topic_partitions: Option<Vec<(String, Vec<i32>)>>,
    pub timeout_ms: i32,
}

impl<'a> Decode<'a> for ElectLeadersRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let election_type = r.since(1, PREFERRED, |r| r.i8("election_type"))?;
        let topic_partitions = match r.nullable_array_len("topic_partitions", 6)? {
            None => None,
            Some(n) => Some(read_topics_n(r, n, 4, |r| r.i32("partition"))?),
        };
        let timeout_ms = r.i32("timeout_ms")?;
        r.tags()?;
        Ok(ElectLeadersRequest {
            election_type,
            topic_partitions,
            timeout_ms,
        })
    }
}

impl Encode for ElectLeadersRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(1, |o| o.put_i8(self.election_type));
        match &self.topic_partitions {
            None => out.put_len(None),
            Some(t) => out.put_topics(t, |o, p| o.put_i32(*p)),
        }
        out.put_i32(self.timeout_ms);
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectLeadersResponse {
    /// The whole request's error (v1+; v0 carries it on every partition instead).
    pub error_code: i16,
    pub results: Vec<(String, Vec<PartitionResult>)>,
}

impl Encode for ElectLeadersResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.since(1, |o| o.put_i16(self.error_code));
        out.put_topics(&self.results, |o, p| o.put(p));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ElectLeadersResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.since(1, 0, |r| r.i16("error_code"))?;
        let n = r.array_len("replica_election_results", 6)?;
        let results = read_topics_n(r, n, 8, PartitionResult::decode)?;
        r.tags()?;
        Ok(ElectLeadersResponse {
            error_code,
            results,
        })
    }
}

//! AlterPartitionReassignments (45) and ListPartitionReassignments (46): start, change or
//! cancel moving partitions to other brokers, and list the moves in progress — what
//! `kafka-reassign-partitions.sh --bootstrap-server` and the admin clients send (KIP-455).
//! Served by the controller; every version is flexible.

use super::{
    Decode, DecodeResult, Encode, Out, PartitionResult, Reader, read_array, read_topics_n,
};

/// A topic's partitions with their target replicas (`None`: cancel the partition's move).
pub type TopicTargets = (String, Vec<(i32, Option<Vec<i32>>)>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsRequest {
    pub timeout_ms: i32,
    /// v1 (KIP-860): false refuses a target with another replica count.
    pub allow_replication_factor_change: bool,
    pub topics: Vec<TopicTargets>,
}

impl<'a> Decode<'a> for AlterPartitionReassignmentsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let timeout_ms = r.i32("timeout_ms")?;
        let allow_replication_factor_change =
            r.since(1, true, |r| r.bool("allow_replication_factor_change"))?;
        let n = r.array_len("topics", 4)?;
        let topics = read_topics_n(r, n, 3, |r| {
            let partition = r.i32("partition_index")?;
            let replicas = match r.nullable_array_len("replicas", 4)? {
                None => None,
                Some(k) => Some(
                    (0..k)
                        .map(|_| r.i32("replica"))
                        .collect::<DecodeResult<_>>()?,
                ),
            };
            r.tags()?;
            Ok((partition, replicas))
        })?;
        r.tags()?;
        Ok(AlterPartitionReassignmentsRequest {
            timeout_ms,
            allow_replication_factor_change,
            topics,
        })
    }
}

impl Encode for AlterPartitionReassignmentsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.timeout_ms);
        out.since(1, |o| o.put_i8(self.allow_replication_factor_change as i8));
        out.put_topics(&self.topics, |o, (p, replicas)| {
            o.put_i32(*p);
            match replicas {
                None => o.put_len(None),
                Some(r) => o.put_i32s(r),
            }
            o.put_tags();
        });
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsResponse {
    /// v1: whether the request allowed a change of replica count.
    pub allow_replication_factor_change: bool,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub results: Vec<(String, Vec<PartitionResult>)>,
}

impl Encode for AlterPartitionReassignmentsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.since(1, |o| o.put_i8(self.allow_replication_factor_change as i8));
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_topics(&self.results, |o, p| o.put(p));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AlterPartitionReassignmentsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let allow_replication_factor_change =
            r.since(1, true, |r| r.bool("allow_replication_factor_change"))?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let n = r.array_len("responses", 4)?;
        let results = read_topics_n(r, n, 8, PartitionResult::decode)?;
        r.tags()?;
        Ok(AlterPartitionReassignmentsResponse {
            allow_replication_factor_change,
            error_code,
            error_message,
            results,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartitionReassignmentsRequest {
    pub timeout_ms: i32,
    /// (topic, partitions); `None`: every move in progress.
    pub topics: Option<Vec<(String, Vec<i32>)>>,
}

impl<'a> Decode<'a> for ListPartitionReassignmentsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let timeout_ms = r.i32("timeout_ms")?;
        let topics = match r.nullable_array_len("topics", 3)? {
            None => None,
            Some(n) => Some(read_topics_n(r, n, 4, |r| r.i32("partition_index"))?),
        };
        r.tags()?;
        Ok(ListPartitionReassignmentsRequest { timeout_ms, topics })
    }
}

impl Encode for ListPartitionReassignmentsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.timeout_ms);
        match &self.topics {
            None => out.put_len(None),
            Some(t) => out.put_topics(t, |o, p| o.put_i32(*p)),
        }
        out.put_tags();
    }
}

/// A partition moving: its replicas now (the original and the target together), and which of
/// them it adds and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OngoingReassignment {
    pub partition: i32,
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartitionReassignmentsResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub topics: Vec<(String, Vec<OngoingReassignment>)>,
}

impl Encode for ListPartitionReassignmentsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i32s(&p.replicas);
            o.put_i32s(&p.adding);
            o.put_i32s(&p.removing);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListPartitionReassignmentsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let n = r.array_len("topics", 3)?;
        let topics = read_topics_n(r, n, 8, |r| {
            let partition = r.i32("partition_index")?;
            let mut ids = |f| read_array(r, f, 4, |r| r.i32(f));
            let p = OngoingReassignment {
                partition,
                replicas: ids("replicas")?,
                adding: ids("adding_replicas")?,
                removing: ids("removing_replicas")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(ListPartitionReassignmentsResponse {
            error_code,
            error_message,
            topics,
        })
    }
}

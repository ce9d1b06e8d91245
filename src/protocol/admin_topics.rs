//! The topic admin APIs: CreateTopics (19), DeleteTopics (20) and
//! CreatePartitions (37), what `kafka-topics.sh --bootstrap-server` and the admin
//! clients send. Field versions follow Kafka's JSON schemas.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

/// One topic to create. `num_partitions` and `replication_factor` are -1 when `assignment`
/// is given, or (v4+) to take the broker's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    pub num_partitions: i32,
    pub replication_factor: i16,
    /// (partition, brokers); empty when the broker is to place the replicas.
    pub assignment: Vec<(i32, Vec<i32>)>,
    pub configs: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsRequest {
    pub topics: Vec<CreatableTopic>,
    pub timeout_ms: i32,
    /// v1+: check only, create nothing.
    pub validate_only: bool,
}

fn read_i32s(r: &mut Reader<'_>, field: &'static str) -> DecodeResult<Vec<i32>> {
    read_array(r, field, 4, |r| r.i32(field))
}

impl<'a> Decode<'a> for CreateTopicsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let topics = read_array(r, "topics", 12, |r| {
            let name = r.string("name")?.to_owned();
            let num_partitions = r.i32("num_partitions")?;
            let replication_factor = r.i16("replication_factor")?;
            let assignment = read_array(r, "assignments", 8, |r| {
                let a = (r.i32("partition_index")?, read_i32s(r, "broker_ids")?);
                r.tags()?;
                Ok(a)
            })?;
            let configs = read_array(r, "configs", 4, |r| {
                let c = (r.string("name")?.to_owned(), r.nullable_owned("value")?);
                r.tags()?;
                Ok(c)
            })?;
            r.tags()?;
            Ok(CreatableTopic {
                name,
                num_partitions,
                replication_factor,
                assignment,
                configs,
            })
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        let validate_only = version >= 1 && r.bool("validate_only")?;
        r.tags()?;
        Ok(CreateTopicsRequest {
            topics,
            timeout_ms,
            validate_only,
        })
    }
}

impl Encode for CreateTopicsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.topics, |o, t| {
            o.put_str(&t.name);
            o.put_i32(t.num_partitions);
            o.put_i16(t.replication_factor);
            o.put_array(&t.assignment, |o, (p, brokers)| {
                o.put_i32(*p);
                o.put_i32s(brokers);
                o.put_tags();
            });
            o.put_array(&t.configs, |o, (k, v)| {
                o.put_str(k);
                o.put_nstr(v.as_deref());
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_i32(self.timeout_ms);
        out.since(1, |o| o.put_i8(self.validate_only as i8));
        out.put_tags();
    }
}

/// A topic configuration as CreateTopics v5+ reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    /// Kafka's ConfigSource: 1 set on the topic, 5 the default.
    pub source: i8,
    pub sensitive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicResult {
    pub name: String,
    /// v7+.
    pub topic_id: [u8; 16],
    pub error_code: i16,
    /// v1+.
    pub error_message: Option<String>,
    /// v5+: what was (or would be) created; -1 on error.
    pub num_partitions: i32,
    pub replication_factor: i16,
    /// v5+: `None` on error.
    pub configs: Option<Vec<TopicConfigEntry>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsResponse {
    pub topics: Vec<CreatableTopicResult>,
}

impl Encode for CreateTopicsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        let topics = &self.topics;
        out.since(2, |o| o.put_i32(0));
        out.put_array(topics, |o, t| {
            o.put_str(&t.name);
            o.since(7, |o| o.extend_from_slice(&t.topic_id));
            o.put_i16(t.error_code);
            o.since(1, |o| o.put_nstr(t.error_message.as_deref()));
            if version >= 5 {
                o.put_i32(t.num_partitions);
                o.put_i16(t.replication_factor);
                o.put_len(t.configs.as_ref().map(Vec::len));
                for c in t.configs.iter().flatten() {
                    o.put_str(&c.name);
                    o.put_nstr(c.value.as_deref());
                    o.put_i8(c.read_only as i8);
                    o.put_i8(c.source);
                    o.put_i8(c.sensitive as i8);
                    o.put_tags();
                }
            }
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for CreateTopicsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(2, |r| r.i32("throttle_time_ms"))?;
        let topics = read_array(r, "topics", 4, |r| {
            let name = r.string("name")?.to_owned();
            let mut topic_id = [0; 16];
            if version >= 7 {
                topic_id.copy_from_slice(r.bytes_exact(16, "topic_id")?);
            }
            let error_code = r.i16("error_code")?;
            let error_message = r.since(1, None, |r| r.nullable_owned("error_message"))?;
            let (mut num_partitions, mut replication_factor, mut configs) = (-1, -1, None);
            if version >= 5 {
                num_partitions = r.i32("num_partitions")?;
                replication_factor = r.i16("replication_factor")?;
                if let Some(n) = r.nullable_array_len("configs", 5)? {
                    let mut v = Vec::with_capacity(n);
                    for _ in 0..n {
                        v.push(TopicConfigEntry {
                            name: r.string("name")?.to_owned(),
                            value: r.nullable_owned("value")?,
                            read_only: r.bool("read_only")?,
                            source: r.i8("config_source")?,
                            sensitive: r.bool("is_sensitive")?,
                        });
                        r.tags()?;
                    }
                    configs = Some(v);
                }
            }
            r.tags()?;
            Ok(CreatableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
                num_partitions,
                replication_factor,
                configs,
            })
        })?;
        r.tags()?;
        Ok(CreateTopicsResponse { topics })
    }
}

/// A topic to delete: by name, or (v6+) by id with a null name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicsRequest {
    pub topics: Vec<(Option<String>, [u8; 16])>,
    pub timeout_ms: i32,
}

impl<'a> Decode<'a> for DeleteTopicsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let topics = if version >= 6 {
            read_array(r, "topics", 17, |r| {
                let name = r.nullable_owned("name")?;
                let mut id = [0; 16];
                id.copy_from_slice(r.bytes_exact(16, "topic_id")?);
                r.tags()?;
                Ok((name, id))
            })?
        } else {
            r.string_array("topic_names")?
                .into_iter()
                .map(|n| (Some(n), [0; 16]))
                .collect()
        };
        let timeout_ms = r.i32("timeout_ms")?;
        r.tags()?;
        Ok(DeleteTopicsRequest { topics, timeout_ms })
    }
}

impl Encode for DeleteTopicsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_array(&self.topics, |o, (name, id)| {
            if version >= 6 {
                o.put_nstr(name.as_deref());
                o.extend_from_slice(id);
                o.put_tags();
            } else {
                o.put_str(name.as_deref().unwrap_or(""));
            }
        });
        out.put_i32(self.timeout_ms);
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletableTopicResult {
    /// `None` (v6+) for an id that names no topic.
    pub name: Option<String>,
    /// v6+.
    pub topic_id: [u8; 16],
    pub error_code: i16,
    /// v5+.
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicsResponse {
    pub results: Vec<DeletableTopicResult>,
}

impl Encode for DeleteTopicsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        let results = &self.results;
        out.since(1, |o| o.put_i32(0));
        out.put_array(results, |o, t| {
            if version >= 6 {
                o.put_nstr(t.name.as_deref());
                o.extend_from_slice(&t.topic_id);
            } else {
                o.put_str(t.name.as_deref().unwrap_or(""));
            }
            o.put_i16(t.error_code);
            o.since(5, |o| o.put_nstr(t.error_message.as_deref()));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DeleteTopicsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let results = read_array(r, "responses", 3, |r| {
            let mut topic_id = [0; 16];
            let name = if version >= 6 {
                let n = r.nullable_owned("name")?;
                topic_id.copy_from_slice(r.bytes_exact(16, "topic_id")?);
                n
            } else {
                Some(r.string("name")?.to_owned())
            };
            let error_code = r.i16("error_code")?;
            let error_message = r.since(5, None, |r| r.nullable_owned("error_message"))?;
            r.tags()?;
            Ok(DeletableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
            })
        })?;
        r.tags()?;
        Ok(DeleteTopicsResponse { results })
    }
}

/// Raise a topic's partition count to `count`; `assignment` (one broker list per new
/// partition) or `None` to let the broker place them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsTopic {
    pub name: String,
    pub count: i32,
    pub assignment: Option<Vec<Vec<i32>>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsRequest {
    pub topics: Vec<CreatePartitionsTopic>,
    pub timeout_ms: i32,
    pub validate_only: bool,
}

impl<'a> Decode<'a> for CreatePartitionsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let topics = read_array(r, "topics", 7, |r| {
            let name = r.string("name")?.to_owned();
            let count = r.i32("count")?;
            let assignment = match r.nullable_array_len("assignments", 1)? {
                None => None,
                Some(n) => {
                    let mut v = Vec::with_capacity(n);
                    for _ in 0..n {
                        v.push(read_i32s(r, "broker_ids")?);
                        r.tags()?;
                    }
                    Some(v)
                }
            };
            r.tags()?;
            Ok(CreatePartitionsTopic {
                name,
                count,
                assignment,
            })
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        let validate_only = r.bool("validate_only")?;
        r.tags()?;
        Ok(CreatePartitionsRequest {
            topics,
            timeout_ms,
            validate_only,
        })
    }
}

impl Encode for CreatePartitionsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.topics, |o, t| {
            o.put_str(&t.name);
            o.put_i32(t.count);
            o.put_len(t.assignment.as_ref().map(Vec::len));
            for brokers in t.assignment.iter().flatten() {
                o.put_i32s(brokers);
                o.put_tags();
            }
            o.put_tags();
        });
        out.put_i32(self.timeout_ms);
        out.put_i8(self.validate_only as i8);
        out.put_tags();
    }
}

/// CreatePartitions' answer: (topic, error code, error message) per topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsResponse {
    pub results: Vec<(String, i16, Option<String>)>,
}

impl Encode for CreatePartitionsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let results = &self.results;
        out.put_i32(0);
        out.put_array(results, |o, (name, code, msg)| {
            o.put_str(name);
            o.put_i16(*code);
            o.put_nstr(msg.as_deref());
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for CreatePartitionsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "results", 4, |r| {
            let t = (
                r.string("name")?.to_owned(),
                r.i16("error_code")?,
                r.nullable_owned("error_message")?,
            );
            r.tags()?;
            Ok(t)
        })?;
        r.tags()?;
        Ok(CreatePartitionsResponse { results })
    }
}

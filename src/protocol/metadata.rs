//! Metadata (key 3). v0 takes an empty topic list to mean "all
//! topics"; from v1 a null list means all and an empty one none.

use super::{BROKER_MIN, BrokerInfo, Decode, DecodeResult, Encode, Out, Reader, read_array};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRequest {
    /// `None`: every topic.
    pub topics: Option<Vec<String>>,
    /// v4+: whether a missing topic may be created (when the broker allows it).
    pub allow_auto_topic_creation: bool,
}

impl Encode for MetadataRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        let topics = match (&self.topics, version) {
            (None, 0) => Some(&[][..]),
            (t, _) => t.as_deref(),
        };
        out.put_len(topics.map(<[String]>::len));
        for t in topics.unwrap_or_default() {
            out.since(10, |o| o.extend_from_slice(&[0; 16])); // topic_id: asked by name
            out.put_str(t);
            out.put_tags();
        }
        out.since(4, |o| o.put_i8(i8::from(self.allow_auto_topic_creation)));
        if (8..=10).contains(&version) {
            out.put_i8(0); // include_cluster_authorized_operations
        }
        out.since(8, |o| o.put_i8(0)); // include_topic_authorized_operations
        out.put_tags();
    }
}

impl<'a> Decode<'a> for MetadataRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let topics = match r.nullable_array_len("topics", 2)? {
            None if version >= 1 => None,
            None => return Err(super::DecodeError::Invalid("topics")),
            Some(0) if version == 0 => None,
            Some(n) => {
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    if version >= 10 {
                        r.bytes_exact(16, "topic_id")?;
                    }
                    // v12 allows a null name (a topic asked by id); gregor asks by name only.
                    let name = if version >= 12 {
                        r.nullable_string("name")?
                            .ok_or(super::DecodeError::Invalid("name"))?
                    } else {
                        r.string("name")?
                    };
                    names.push(name.to_owned());
                    r.tags()?;
                }
                Some(names)
            }
        };
        let allow_auto_topic_creation =
            r.since(4, true, |r| r.bool("allow_auto_topic_creation"))?;
        if (8..=10).contains(&version) {
            r.bool("include_cluster_authorized_operations")?;
        }
        r.skip_since(8, |r| r.bool("include_topic_authorized_operations"))?;
        r.tags()?;
        Ok(MetadataRequest {
            topics,
            allow_auto_topic_creation,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub error_code: i16,
    pub partition: i32,
    pub leader: i32,
    /// v7+.
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// v5+: replicas on brokers that are not live.
    pub offline_replicas: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub error_code: i16,
    pub topic: String,
    /// v10+: the topic's UUID (all zero when unknown).
    pub topic_id: [u8; 16],
    /// v1+: a topic of the brokers' own (`__transaction_state`).
    pub is_internal: bool,
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    pub brokers: Vec<BrokerInfo>,
    /// v2+.
    pub cluster_id: Option<String>,
    /// v1+: -1 when unknown.
    pub controller_id: i32,
    pub topics: Vec<TopicMetadata>,
    /// v13+: an error for the whole answer (KIP-1102); gregor answers 0.
    pub error_code: i16,
}

/// `topic_authorized_operations` when not asked for (v8+).
const OPERATIONS_NOT_ASKED: i32 = i32::MIN;

impl Encode for MetadataResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.since(3, |o| o.put_i32(0)); // throttle_time_ms
        out.put_len(Some(self.brokers.len()));
        for b in &self.brokers {
            out.put_i32(b.id);
            out.put_str(&b.host);
            out.put_i32(b.port);
            out.since(1, |o| o.put_nstr(None)); // rack
            out.put_tags();
        }
        out.since(2, |o| o.put_nstr(self.cluster_id.as_deref()));
        out.since(1, |o| o.put_i32(self.controller_id));
        out.put_len(Some(self.topics.len()));
        for t in &self.topics {
            out.put_i16(t.error_code);
            out.put_str(&t.topic);
            out.since(10, |o| o.extend_from_slice(&t.topic_id));
            out.since(1, |o| o.put_i8(i8::from(t.is_internal)));
            out.put_len(Some(t.partitions.len()));
            for p in &t.partitions {
                out.put_i16(p.error_code);
                out.put_i32(p.partition);
                out.put_i32(p.leader);
                out.since(7, |o| o.put_i32(p.leader_epoch));
                out.put_i32s(&p.replicas);
                out.put_i32s(&p.isr);
                out.since(5, |o| o.put_i32s(&p.offline_replicas));
                out.put_tags();
            }
            out.since(8, |o| o.put_i32(OPERATIONS_NOT_ASKED));
            out.put_tags();
        }
        if (8..=10).contains(&version) {
            out.put_i32(OPERATIONS_NOT_ASKED);
        }
        out.since(13, |o| o.put_i16(self.error_code));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for MetadataResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(3, |r| r.i32("throttle_time_ms"))?;
        let brokers = read_array(r, "brokers", BROKER_MIN, |r| {
            let b = BrokerInfo {
                id: r.i32("broker.id")?,
                host: r.string("broker.host")?.to_owned(),
                port: r.i32("broker.port")?,
            };
            r.skip_since(1, |r| r.nullable_string("rack"))?;
            r.tags()?;
            Ok(b)
        })?;
        let cluster_id = r.since(2, None, |r| r.nullable_owned("cluster_id"))?;
        let controller_id = r.since(1, -1, |r| r.i32("controller_id"))?;
        let topics = read_array(r, "topic_metadata", 8, |r| {
            let error_code = r.i16("topic.error_code")?;
            let topic = r.nullable_string("topic")?.unwrap_or_default().to_owned();
            let mut topic_id = [0; 16];
            if version >= 10 {
                topic_id.copy_from_slice(r.bytes_exact(16, "topic_id")?);
            }
            let is_internal = r.since(1, false, |r| r.bool("is_internal"))?;
            let partitions = read_array(r, "partition_metadata", 18, |r| {
                let error_code = r.i16("partition.error_code")?;
                let partition = r.i32("partition")?;
                let leader = r.i32("leader")?;
                let leader_epoch = r.since(7, -1, |r| r.i32("leader_epoch"))?;
                let replicas = r.i32_array("replicas")?;
                let isr = r.i32_array("isr")?;
                let offline_replicas =
                    r.since(5, Vec::new(), |r| r.i32_array("offline_replicas"))?;
                r.tags()?;
                Ok(PartitionMetadata {
                    error_code,
                    partition,
                    leader,
                    leader_epoch,
                    replicas,
                    isr,
                    offline_replicas,
                })
            })?;
            r.skip_since(8, |r| r.i32("topic_authorized_operations"))?;
            r.tags()?;
            Ok(TopicMetadata {
                error_code,
                topic,
                topic_id,
                is_internal,
                partitions,
            })
        })?;
        if (8..=10).contains(&version) {
            r.i32("cluster_authorized_operations")?;
        }
        let error_code = r.since(13, 0, |r| r.i16("error_code"))?;
        r.tags()?;
        Ok(MetadataResponse {
            brokers,
            cluster_id,
            controller_id,
            topics,
            error_code,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::*;
    use crate::protocol::{decode_body, encode_body, round_trip_at};

    fn response(version: i16) -> MetadataResponse {
        MetadataResponse {
            brokers: vec![BrokerInfo {
                id: 1,
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            cluster_id: (version >= 2).then(|| "c-id".into()),
            controller_id: if version >= 1 { 1 } else { -1 },
            topics: vec![TopicMetadata {
                error_code: 0,
                topic: "t".into(),
                topic_id: if version >= 10 { [7; 16] } else { [0; 16] },
                is_internal: version >= 1,
                partitions: vec![PartitionMetadata {
                    error_code: 9,
                    partition: 0,
                    leader: 1,
                    leader_epoch: if version >= 7 { 3 } else { -1 },
                    replicas: vec![1, 2],
                    isr: vec![1],
                    offline_replicas: if version >= 5 { vec![2] } else { Vec::new() },
                }],
            }],
            error_code: if version >= 13 { 56 } else { 0 },
        }
    }

    #[test]
    fn round_trips_at_every_version() {
        for version in 0..=13 {
            for topics in [None, Some(vec!["a".to_owned(), "bb".to_owned()])] {
                let req = MetadataRequest {
                    topics,
                    allow_auto_topic_creation: true,
                };
                round_trip_at(&req, METADATA, version);
            }
            round_trip_at(&response(version), METADATA, version);
        }
    }

    #[test]
    fn null_empty_and_all_topics() {
        let read = |bytes: &[u8], version| {
            decode_body::<MetadataRequest>(bytes, METADATA, version)
                .unwrap()
                .topics
        };
        assert_eq!(read(&[0, 0, 0, 0], 0), None, "v0: empty is all");
        assert_eq!(read(&[0, 0, 0, 0], 1), Some(vec![]), "v1: empty is none");
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff], 1), None, "v1: null is all");
        assert!(decode_body::<MetadataRequest>(&[0xff; 4], METADATA, 0).is_err());
    }

    #[test]
    fn v9_request_matches_the_schema_byte_for_byte() {
        // MetadataRequest v9 from Kafka's MetadataRequest.json: compact topics (2 = one),
        // compact name "t", topic tags, allow_auto_topic_creation, include_cluster_authorized
        // _operations, include_topic_authorized_operations, top-level tags.
        let mut buf = Vec::new();
        let req = MetadataRequest {
            topics: Some(vec!["t".into()]),
            allow_auto_topic_creation: true,
        };
        encode_body(&req, &mut buf, METADATA, 9);
        assert_eq!(buf, [2, 2, b't', 0, 1, 0, 0, 0]);
    }
}

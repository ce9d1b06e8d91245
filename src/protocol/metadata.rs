//! Metadata (key 3) v0: an empty topic list means "all topics".

use super::{
    BROKER_MIN, BrokerInfo, Decode, DecodeResult, Encode, Reader, Writer, read_array, write_array,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRequest {
    pub topics: Vec<String>,
}

impl Encode for MetadataRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_array(out, &self.topics, |o, t| o.put_string(t));
    }
}

impl<'a> Decode<'a> for MetadataRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(MetadataRequest {
            topics: r.string_array("topics")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub error_code: i16,
    pub partition: i32,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub error_code: i16,
    pub topic: String,
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicMetadata>,
}

impl Encode for MetadataResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        write_array(out, &self.brokers, |o, b| b.encode(o));
        write_array(out, &self.topics, |o, t| {
            o.put_i16(t.error_code);
            o.put_string(&t.topic);
            write_array(o, &t.partitions, |o, p| {
                o.put_i16(p.error_code);
                o.put_i32(p.partition);
                o.put_i32(p.leader);
                o.put_i32_array(&p.replicas);
                o.put_i32_array(&p.isr);
            });
        });
    }
}

impl<'a> Decode<'a> for MetadataResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let brokers = read_array(r, "brokers", BROKER_MIN, BrokerInfo::decode)?;
        let topics = read_array(r, "topic_metadata", 8, |r| {
            Ok(TopicMetadata {
                error_code: r.i16("topic.error_code")?,
                topic: r.string("topic")?.to_owned(),
                partitions: read_array(r, "partition_metadata", 18, |r| {
                    Ok(PartitionMetadata {
                        error_code: r.i16("partition.error_code")?,
                        partition: r.i32("partition")?,
                        leader: r.i32("leader")?,
                        replicas: r.i32_array("replicas")?,
                        isr: r.i32_array("isr")?,
                    })
                })?,
            })
        })?;
        Ok(MetadataResponse { brokers, topics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::round_trip;

    #[test]
    fn round_trips() {
        round_trip(&MetadataRequest {
            topics: vec!["a".into(), "bb".into()],
        });
        round_trip(&MetadataResponse {
            brokers: vec![BrokerInfo {
                id: 1,
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            topics: vec![TopicMetadata {
                error_code: 0,
                topic: "t".into(),
                partitions: vec![PartitionMetadata {
                    error_code: 9,
                    partition: 0,
                    leader: 1,
                    replicas: vec![1, 2],
                    isr: vec![1],
                }],
            }],
        });
    }
}

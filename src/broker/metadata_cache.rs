//! The metadata cache: live brokers and every partition's leader, replicas and ISR, as the
//! controller last sent them in UpdateMetadata. Metadata requests are answered from here
//! without touching ZooKeeper.

use std::collections::BTreeMap;

use parking_lot::RwLock;

use crate::protocol::controller::{PartitionState, UpdateMetadataRequest};
use crate::protocol::metadata::{MetadataResponse, PartitionMetadata, TopicMetadata};
use crate::protocol::{BrokerInfo, ErrorCode};

/// Leader value the controller sends for a partition of a topic being deleted (0.8.2's
/// LeaderDuringDelete): the cache drops the partition.
pub const LEADER_DURING_DELETE: i32 = -2;

#[derive(Default)]
struct Cache {
    brokers: Vec<BrokerInfo>,
    topics: BTreeMap<String, BTreeMap<i32, PartitionState>>,
}

#[derive(Default)]
pub struct MetadataCache {
    inner: RwLock<Cache>,
}

impl MetadataCache {
    pub fn update(&self, req: &UpdateMetadataRequest) {
        let mut c = self.inner.write();
        c.brokers = req.live_brokers.clone();
        for s in &req.partition_states {
            if s.state.leader == LEADER_DURING_DELETE {
                if let Some(t) = c.topics.get_mut(&s.topic) {
                    t.remove(&s.partition);
                    if t.is_empty() {
                        c.topics.remove(&s.topic);
                    }
                }
            } else {
                c.topics
                    .entry(s.topic.clone())
                    .or_default()
                    .insert(s.partition, s.state.clone());
            }
        }
    }

    pub fn contains_partition(&self, topic: &str, partition: i32) -> bool {
        self.inner
            .read()
            .topics
            .get(topic)
            .is_some_and(|t| t.contains_key(&partition))
    }

    pub fn contains_topic(&self, topic: &str) -> bool {
        self.inner.read().topics.contains_key(topic)
    }

    pub fn live_brokers(&self) -> Vec<BrokerInfo> {
        self.inner.read().brokers.clone()
    }

    /// Metadata v0: all topics when `topics` is empty; unknown topics get
    /// UNKNOWN_TOPIC_OR_PARTITION. Per partition: no live leader → LEADER_NOT_AVAILABLE with
    /// leader -1; a replica or ISR member not live → REPLICA_NOT_AVAILABLE, lists cut to live
    /// brokers (as 0.8.2 answered).
    pub fn metadata(&self, topics: &[String]) -> MetadataResponse {
        let c = self.inner.read();
        let live = |id: &i32| c.brokers.iter().any(|b| b.id == *id);
        let names: Vec<String> = if topics.is_empty() {
            c.topics.keys().cloned().collect()
        } else {
            topics.to_vec()
        };
        let topics = names
            .into_iter()
            .map(|name| match c.topics.get(&name) {
                None => TopicMetadata {
                    error_code: ErrorCode::UnknownTopicOrPartition.code(),
                    topic: name,
                    partitions: Vec::new(),
                },
                Some(parts) => TopicMetadata {
                    error_code: 0,
                    topic: name,
                    partitions: parts
                        .iter()
                        .map(|(p, s)| {
                            let replicas: Vec<i32> =
                                s.replicas.iter().copied().filter(live).collect();
                            let isr: Vec<i32> = s.isr.iter().copied().filter(live).collect();
                            let (error, leader) = if !live(&s.leader) {
                                (ErrorCode::LeaderNotAvailable, -1)
                            } else if replicas.len() < s.replicas.len() || isr.len() < s.isr.len() {
                                (ErrorCode::ReplicaNotAvailable, s.leader)
                            } else {
                                (ErrorCode::None, s.leader)
                            };
                            PartitionMetadata {
                                error_code: error.code(),
                                partition: *p,
                                leader,
                                replicas,
                                isr,
                            }
                        })
                        .collect(),
                },
            })
            .collect();
        MetadataResponse {
            brokers: c.brokers.clone(),
            topics,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::controller::TopicPartitionState;

    fn state(leader: i32, isr: Vec<i32>) -> PartitionState {
        PartitionState {
            controller_epoch: 1,
            leader,
            leader_epoch: 0,
            isr,
            zk_version: 0,
            replicas: vec![1, 2],
        }
    }

    #[test]
    fn partition_errors_follow_liveness() {
        let cache = MetadataCache::default();
        let b = |id| BrokerInfo {
            id,
            host: "h".into(),
            port: 1,
        };
        cache.update(&UpdateMetadataRequest {
            controller_id: 1,
            controller_epoch: 1,
            partition_states: vec![
                TopicPartitionState {
                    topic: "t".into(),
                    partition: 0,
                    state: state(1, vec![1, 2]),
                },
                TopicPartitionState {
                    topic: "t".into(),
                    partition: 1,
                    state: state(2, vec![2]),
                },
            ],
            live_brokers: vec![b(1)],
        });
        let m = cache.metadata(&[]);
        let p = &m.topics[0].partitions;
        assert_eq!(
            (p[0].error_code, p[0].leader, p[0].isr.clone()),
            (9, 1, vec![1])
        );
        assert_eq!((p[1].error_code, p[1].leader), (5, -1));
        assert_eq!(cache.metadata(&["nope".into()]).topics[0].error_code, 3);
    }
}

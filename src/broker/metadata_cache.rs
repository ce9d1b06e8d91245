//! The metadata cache: live brokers and every partition's leader, replicas and ISR, as the
//! controller last sent them in UpdateMetadata. Metadata requests are answered from here
//! without touching ZooKeeper, each with the brokers' endpoints on the listener it arrived on
//! (Kafka's rule: a client on the REPLICATION listener is told REPLICATION addresses).

use std::collections::BTreeMap;

use std::time::Instant;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::protocol::controller::{PartitionState, UpdateMetadataRequest};
use crate::protocol::metadata::{MetadataResponse, PartitionMetadata, TopicMetadata};
use crate::protocol::{BrokerEndPoints, BrokerInfo, ErrorCode};

pub use crate::protocol::controller::LEADER_DURING_DELETE;

struct Cache {
    brokers: Vec<BrokerEndPoints>,
    topics: BTreeMap<String, BTreeMap<i32, PartitionState>>,
    /// Learned from ZooKeeper the first time a Metadata v10+ answer needs them.
    topic_ids: BTreeMap<String, [u8; 16]>,
    cluster_id: Option<String>,
    controller_id: i32,
    /// A controller has sent UpdateMetadata since this broker started: until then an empty
    /// cache says nothing about which topics exist.
    informed: bool,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            brokers: Vec::new(),
            topics: BTreeMap::new(),
            topic_ids: BTreeMap::new(),
            cluster_id: None,
            controller_id: -1,
            informed: false,
        }
    }
}

#[derive(Default)]
pub struct MetadataCache {
    inner: RwLock<Cache>,
    /// Counts updates, so admin requests can wait for their topics to appear or leave.
    updates: Mutex<u64>,
    updated: Condvar,
}

impl MetadataCache {
    /// Waits until `done` holds (looked at after each update) or `deadline` passes; whether
    /// it holds.
    pub fn wait_until(&self, deadline: Instant, done: impl Fn() -> bool) -> bool {
        let mut updates = self.updates.lock();
        loop {
            let seen = *updates;
            if done() {
                return true;
            }
            while *updates == seen {
                if self.updated.wait_until(&mut updates, deadline).timed_out() {
                    return done();
                }
            }
        }
    }

    pub fn update(&self, req: &UpdateMetadataRequest) {
        self.apply(req);
        *self.updates.lock() += 1;
        self.updated.notify_all();
    }

    fn apply(&self, req: &UpdateMetadataRequest) {
        let mut c = self.inner.write();
        c.informed = true;
        c.brokers = req.live_brokers.clone();
        c.controller_id = req.controller_id;
        for s in &req.partition_states {
            if s.state.leader == LEADER_DURING_DELETE {
                if let Some(t) = c.topics.get_mut(&s.topic) {
                    t.remove(&s.partition);
                    if t.is_empty() {
                        c.topics.remove(&s.topic);
                        // A topic created again under this name gets a new id.
                        c.topic_ids.remove(&s.topic);
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

    /// The leader of `topic`-`partition` as last announced (-1: none), if the cache knows it.
    pub fn leader_of(&self, topic: &str, partition: i32) -> Option<i32> {
        let c = self.inner.read();
        c.topics.get(topic)?.get(&partition).map(|s| s.leader)
    }

    /// Partitions of `topic` the cache knows (0 for a topic it does not).
    pub fn partition_count(&self, topic: &str) -> usize {
        self.inner.read().topics.get(topic).map_or(0, |t| t.len())
    }

    pub fn contains_topic(&self, topic: &str) -> bool {
        self.inner.read().topics.contains_key(topic)
    }

    /// The live brokers as reached on `listener` (those without it left out).
    pub fn live_brokers(&self, listener: &str) -> Vec<BrokerInfo> {
        let c = self.inner.read();
        c.brokers.iter().filter_map(|b| b.on(listener)).collect()
    }

    pub fn live_broker_count(&self) -> usize {
        self.inner.read().brokers.len()
    }

    /// Whether a controller has sent this broker the cluster's metadata yet.
    pub fn informed(&self) -> bool {
        self.inner.read().informed
    }

    /// The answer to Metadata at `version` for `topics` (`None`: all). Unknown topics get
    /// UNKNOWN_TOPIC_OR_PARTITION; a partition without a live leader LEADER_NOT_AVAILABLE with
    /// leader -1. v0 answers as 0.8.2 did: a replica or ISR member not live is cut from the
    /// lists and flagged REPLICA_NOT_AVAILABLE. From v1 on the lists are whole and the dead
    /// replicas are named in `offline_replicas` (v5+), as Kafka answers. Brokers are listed
    /// with their `listener` endpoint; a leader without one is not available to this client.
    pub fn metadata(
        &self,
        topics: Option<&[String]>,
        version: i16,
        listener: &str,
    ) -> MetadataResponse {
        let c = self.inner.read();
        let brokers: Vec<BrokerInfo> = c.brokers.iter().filter_map(|b| b.on(listener)).collect();
        let live = |id: &i32| c.brokers.iter().any(|b| b.id == *id);
        let reachable = |id: &i32| brokers.iter().any(|b| b.id == *id);
        let names: Vec<String> = match topics {
            None => c.topics.keys().cloned().collect(),
            Some(t) => t.to_vec(),
        };
        let topics = names
            .into_iter()
            .map(|name| match c.topics.get(&name) {
                None => TopicMetadata {
                    error_code: ErrorCode::UnknownTopicOrPartition.code(),
                    topic: name,
                    topic_id: [0; 16],
                    is_internal: false,
                    partitions: Vec::new(),
                },
                Some(parts) => TopicMetadata {
                    error_code: 0,
                    topic_id: c.topic_ids.get(&name).copied().unwrap_or_default(),
                    // The transaction coordinators' topic (group offsets are in ZooKeeper).
                    is_internal: name == crate::config::transactions::TRANSACTION_STATE_TOPIC,
                    topic: name,
                    partitions: parts
                        .iter()
                        .map(|(p, s)| partition_metadata(*p, s, version, &live, &reachable))
                        .collect(),
                },
            })
            .collect();
        MetadataResponse {
            brokers,
            cluster_id: c.cluster_id.clone(),
            controller_id: c.controller_id,
            topics,
            error_code: 0,
        }
    }

    /// Topics of the cache whose id is not known yet.
    pub fn topics_without_id(&self, topics: Option<&[String]>) -> Vec<String> {
        let c = self.inner.read();
        let known = |t: &&String| c.topics.contains_key(*t) && !c.topic_ids.contains_key(*t);
        match topics {
            None => c.topics.keys().filter(known).cloned().collect(),
            Some(t) => t.iter().filter(known).cloned().collect(),
        }
    }

    pub fn set_topic_id(&self, topic: &str, id: [u8; 16]) {
        self.inner.write().topic_ids.insert(topic.to_owned(), id);
    }

    pub fn set_cluster_id(&self, id: String) {
        self.inner.write().cluster_id = Some(id);
    }
}

fn partition_metadata(
    partition: i32,
    s: &PartitionState,
    version: i16,
    live: &impl Fn(&i32) -> bool,
    reachable: &impl Fn(&i32) -> bool,
) -> PartitionMetadata {
    let offline: Vec<i32> = s.replicas.iter().copied().filter(|r| !live(r)).collect();
    let (mut replicas, mut isr) = (s.replicas.clone(), s.isr.clone());
    let mut error = ErrorCode::None;
    if version == 0 {
        replicas.retain(live);
        isr.retain(live);
        if replicas.len() < s.replicas.len() || isr.len() < s.isr.len() {
            error = ErrorCode::ReplicaNotAvailable;
        }
    }
    let leader = if reachable(&s.leader) {
        s.leader
    } else {
        error = ErrorCode::LeaderNotAvailable;
        -1
    };
    PartitionMetadata {
        error_code: error.code(),
        partition,
        leader,
        // The controller's epoch for this leader: a client that sees it grow validates its
        // position with OffsetForLeaderEpoch (KIP-320) and fences its fetches with it.
        leader_epoch: s.leader_epoch,
        replicas,
        isr,
        offline_replicas: offline,
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
        let b = |id| BrokerEndPoints {
            id,
            endpoints: vec![crate::protocol::EndPoint {
                listener: "PLAINTEXT".into(),
                host: "h".into(),
                port: 1,
            }],
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
        let m = cache.metadata(None, 0, "PLAINTEXT");
        let p = &m.topics[0].partitions;
        assert_eq!(
            (p[0].error_code, p[0].leader, p[0].isr.clone()),
            (9, 1, vec![1])
        );
        assert_eq!((p[1].error_code, p[1].leader), (5, -1));
        assert_eq!(
            cache
                .metadata(Some(&["nope".into()]), 0, "PLAINTEXT")
                .topics[0]
                .error_code,
            3
        );
        // v1+: whole lists, the dead replica named offline, no REPLICA_NOT_AVAILABLE.
        let m = cache.metadata(None, 5, "PLAINTEXT");
        let p = &m.topics[0].partitions;
        assert_eq!(
            (p[0].error_code, p[0].replicas.clone(), p[0].isr.clone()),
            (0, vec![1, 2], vec![1, 2])
        );
        assert_eq!(p[0].offline_replicas, vec![2]);
        assert_eq!(m.controller_id, 1);
        // Another listener's client sees no broker that lacks it, and no leader there.
        let m = cache.metadata(None, 5, "REPLICATION");
        assert!(m.brokers.is_empty());
        assert_eq!(m.topics[0].partitions[0].leader, -1);
        assert_eq!(m.brokers.len(), cache.live_brokers("REPLICATION").len());
    }
}

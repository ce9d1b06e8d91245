//! `/brokers/topics/[topic]` (TopicPath): each partition's assigned replicas (AR), the topic's
//! id, and — while partitions move — KIP-455's `adding_replicas` and `removing_replicas`, so
//! that the reassignments in progress can be listed and cancelled, by this controller or the
//! next.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::paths::{from_json, to_json, topic_path};
use super::{ZkClient, ZkError, ZkResult};

/// The node's JSON, as Kafka writes it (partition ids as strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicAssignment {
    pub version: i32,
    pub partitions: BTreeMap<String, Vec<i32>>,
    /// Replicas a reassignment in progress adds (in `partitions` already), by partition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub adding_replicas: BTreeMap<String, Vec<i32>>,
    /// Replicas it will remove once the added ones are in sync, by partition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub removing_replicas: BTreeMap<String, Vec<i32>>,
    /// The topic's UUID (`ids::topic_id`), as Kafka keeps it in this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
}

/// A partition's reassignment in progress: the original replicas are AR − `adding`, the
/// target AR − `removing`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moving {
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

/// A topic's assignment and the reassignments in progress, by partition id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicReplicas {
    pub assignment: BTreeMap<i32, Vec<i32>>,
    pub moving: BTreeMap<i32, Moving>,
}

fn partition_ids<T>(m: BTreeMap<String, T>) -> ZkResult<BTreeMap<i32, T>> {
    m.into_iter()
        .map(|(p, v)| Ok((p.parse().map_err(|_| ZkError::MarshallingError)?, v)))
        .collect()
}

impl TopicReplicas {
    /// Reads the node's body (`path` names it in an error).
    pub fn parse(path: &str, data: &[u8]) -> ZkResult<TopicReplicas> {
        let a: TopicAssignment = from_json(path, data)?;
        let mut adding = partition_ids(a.adding_replicas)?;
        let mut removing = partition_ids(a.removing_replicas)?;
        let ids: Vec<i32> = adding.keys().chain(removing.keys()).copied().collect();
        let moving = ids
            .into_iter()
            .map(|p| {
                let m = Moving {
                    adding: adding.remove(&p).unwrap_or_default(),
                    removing: removing.remove(&p).unwrap_or_default(),
                };
                (p, m)
            })
            .filter(|(_, m)| !m.adding.is_empty() || !m.removing.is_empty())
            .collect();
        Ok(TopicReplicas {
            assignment: partition_ids(a.partitions)?,
            moving,
        })
    }
}

/// The replica assignment of a topic by partition id, or `None` when the topic does not exist.
pub fn topic_assignment(zk: &ZkClient, topic: &str) -> ZkResult<Option<BTreeMap<i32, Vec<i32>>>> {
    Ok(topic_replicas(zk, topic)?.map(|r| r.assignment))
}

/// The assignment with the reassignments in progress, or `None` when the topic does not exist.
pub fn topic_replicas(zk: &ZkClient, topic: &str) -> ZkResult<Option<TopicReplicas>> {
    let path = topic_path(topic);
    match zk.get_data(&path) {
        Ok((data, _)) => TopicReplicas::parse(&path, &data).map(Some),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The JSON body of the node.
fn node_json(replicas: &TopicReplicas, topic_id: Option<String>) -> Vec<u8> {
    let by_id = |f: &dyn Fn(&Moving) -> &Vec<i32>| -> BTreeMap<String, Vec<i32>> {
        replicas
            .moving
            .iter()
            .filter(|(_, m)| !f(m).is_empty())
            .map(|(p, m)| (p.to_string(), f(m).clone()))
            .collect()
    };
    to_json(&TopicAssignment {
        version: 1,
        partitions: replicas
            .assignment
            .iter()
            .map(|(p, r)| (p.to_string(), r.clone()))
            .collect(),
        adding_replicas: by_id(&|m| &m.adding),
        removing_replicas: by_id(&|m| &m.removing),
        topic_id,
    })
}

/// Writes a new topic's assignment; `NodeExists` when the topic exists.
pub fn create_topic(
    zk: &ZkClient,
    topic: &str,
    assignment: &BTreeMap<i32, Vec<i32>>,
) -> ZkResult<()> {
    let id = Some(super::ids::new_id());
    let replicas = TopicReplicas {
        assignment: assignment.clone(),
        moving: BTreeMap::new(),
    };
    zk.create_persistent(&topic_path(topic), node_json(&replicas, id))
}

/// Replaces a topic's whole assignment (added partitions), keeping its id and the
/// reassignments in progress. The write is conditional on the node read, so an id or a
/// reassignment written concurrently is not lost.
pub fn write_topic_assignment(
    zk: &ZkClient,
    topic: &str,
    assignment: &BTreeMap<i32, Vec<i32>>,
) -> ZkResult<()> {
    rewrite(zk, topic, |current| TopicReplicas {
        assignment: assignment.clone(),
        moving: current.moving,
    })
}

/// Replaces a topic's assignment and its reassignments in progress (the controller's steps of
/// a reassignment), keeping its id.
pub fn write_topic_replicas(zk: &ZkClient, topic: &str, replicas: &TopicReplicas) -> ZkResult<()> {
    rewrite(zk, topic, |_| replicas.clone())
}

fn rewrite(
    zk: &ZkClient,
    topic: &str,
    new: impl Fn(TopicReplicas) -> TopicReplicas,
) -> ZkResult<()> {
    let path = topic_path(topic);
    loop {
        let (data, stat) = zk.get_data(&path)?;
        let id = from_json::<TopicAssignment>(&path, &data)?.topic_id;
        let body = node_json(&new(TopicReplicas::parse(&path, &data)?), id);
        match zk.set_data(&path, body, Some(stat.version)) {
            Ok(_) => return Ok(()),
            Err(ZkError::BadVersion) => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_reassignment_fields_are_read_and_written() {
        let json = br#"{"version":2,"partitions":{"0":[1,2,3],"1":[2,3]},
            "adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}"#;
        let r = TopicReplicas::parse("/brokers/topics/t", json).unwrap();
        assert_eq!(r.assignment[&0], [1, 2, 3]);
        let m = Moving {
            adding: vec![3],
            removing: vec![1],
        };
        assert_eq!(r.moving, BTreeMap::from([(0, m)]));
        let back = TopicReplicas::parse("p", &node_json(&r, Some("id".into()))).unwrap();
        assert_eq!(back, r);
        // Without a reassignment the node is what it was before KIP-455.
        let plain = TopicReplicas {
            assignment: r.assignment.clone(),
            moving: BTreeMap::new(),
        };
        let body = String::from_utf8(node_json(&plain, None)).unwrap();
        assert!(!body.contains("adding_replicas"), "{body}");
    }
}

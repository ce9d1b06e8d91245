//! The ZooKeeper layout (Kafka 0.8's, listed in `doc/protocol.md`), as typed functions. JSON
//! bodies use `serde_json`; every reader treats a malformed body as an error naming the path.

use std::collections::BTreeMap;

use crate::zk::{ZkError, ZkResult};
use serde::{Deserialize, Serialize};

use super::ZkClient;
use crate::protocol::{BrokerEndPoints, EndPoint};

pub use super::topic_node::{
    Moving, TopicAssignment, TopicReplicas, create_topic, topic_assignment, topic_replicas,
    write_topic_assignment, write_topic_replicas,
};

pub const BROKER_IDS: &str = "/brokers/ids";
pub const BROKER_TOPICS: &str = "/brokers/topics";
pub const CONTROLLER: &str = "/controller";
pub const CONTROLLER_EPOCH: &str = "/controller_epoch";
/// The consumer coordinator's election node (consumer-coordinator spec).
pub const COORDINATOR: &str = "/consumers/coordinator";
pub const REASSIGN_PARTITIONS: &str = "/admin/reassign_partitions";
pub const PREFERRED_REPLICA_ELECTION: &str = "/admin/preferred_replica_election";
/// Leaders announce their ISR changes here (one sequential node per change) so the controller
/// can refresh every broker's metadata, as Kafka 0.9 did (KAFKA-1367).
pub const ISR_CHANGE_NOTIFICATION: &str = "/isr_change_notification";

pub fn broker_path(id: i32) -> String {
    format!("{BROKER_IDS}/{id}")
}

pub fn topic_path(topic: &str) -> String {
    format!("{BROKER_TOPICS}/{topic}")
}

pub fn leader_and_isr_path(topic: &str, partition: i32) -> String {
    format!("{BROKER_TOPICS}/{topic}/{partition}/leaderAndISR")
}

/// `/brokers/ids/[id]` (the spec's BrokerPath), in Kafka's version 4 layout: every listener's
/// endpoint as `NAME://host:port`, and `host`/`port` of the first for readers of version 1
/// (which had only those, and is still read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_security_protocol_map: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub endpoints: Vec<String>,
    pub jmx_port: i32,
    pub host: String,
    pub timestamp: String,
    pub port: i32,
    pub version: i32,
}

impl BrokerRegistration {
    /// Every endpoint; a version 1 registration has the one PLAINTEXT listener.
    pub fn endpoints(&self, id: i32) -> BrokerEndPoints {
        let mut endpoints: Vec<EndPoint> = self
            .endpoints
            .iter()
            .filter_map(|e| {
                let (name, rest) = e.split_once("://")?;
                let (host, port) = rest.rsplit_once(':')?;
                Some(EndPoint {
                    listener: name.to_owned(),
                    host: host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_owned(),
                    port: port.parse().ok()?,
                })
            })
            .collect();
        if endpoints.is_empty() {
            endpoints.push(EndPoint {
                listener: "PLAINTEXT".into(),
                host: self.host.clone(),
                port: self.port,
            });
        }
        BrokerEndPoints { id, endpoints }
    }
}

/// `/brokers/topics/[topic]/[partition]/leaderAndISR`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderAndIsr {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub controller_epoch: i32,
}

/// `/controller` and `/consumers/coordinator`: who won the election.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElectedBroker {
    pub version: i32,
    pub brokerid: i32,
    pub timestamp: String,
}

pub(crate) fn now_millis() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
        .to_string()
}

pub fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising these plain structs cannot fail.
    serde_json::to_vec(v).expect("serialisable")
}

pub fn from_json<T: for<'de> Deserialize<'de>>(path: &str, data: &[u8]) -> ZkResult<T> {
    serde_json::from_slice(data).map_err(|e| {
        log::error!("malformed JSON at {path}: {e}");
        ZkError::MarshallingError
    })
}

/// The registration of a broker with these advertised endpoints (the first is also `host`
/// and `port`) and each listener's security protocol.
pub fn broker_registration(
    endpoints: &[EndPoint],
    protocols: &BTreeMap<String, String>,
) -> Vec<u8> {
    let first = &endpoints[0];
    to_json(&BrokerRegistration {
        listener_security_protocol_map: Some(protocols.clone()),
        endpoints: endpoints
            .iter()
            .map(|e| format!("{}://{}:{}", e.listener, e.host, e.port))
            .collect(),
        jmx_port: -1,
        host: first.host.clone(),
        timestamp: now_millis(),
        port: first.port,
        version: 4,
    })
}

pub fn elected_broker(id: i32) -> Vec<u8> {
    to_json(&ElectedBroker {
        version: 1,
        brokerid: id,
        timestamp: now_millis(),
    })
}

/// The live brokers under `/brokers/ids`, sorted by id.
pub fn live_brokers(zk: &ZkClient) -> ZkResult<Vec<BrokerEndPoints>> {
    Ok(live_broker_registrations(zk)?
        .into_iter()
        .map(|(b, _)| b)
        .collect())
}

/// The live brokers with the session that registered each (`ephemeral_owner`): a broker that
/// restarted between two reads keeps its id but not its session.
pub fn live_broker_registrations(zk: &ZkClient) -> ZkResult<Vec<(BrokerEndPoints, i64)>> {
    let mut out = Vec::new();
    for child in zk.get_children(BROKER_IDS).or_else(no_node_empty)? {
        let Ok(id) = child.parse::<i32>() else {
            continue;
        };
        let path = broker_path(id);
        match zk.get_data(&path) {
            Ok((data, stat)) => {
                let r: BrokerRegistration = from_json(&path, &data)?;
                out.push((r.endpoints(id), stat.ephemeral_owner));
            }
            Err(ZkError::NoNode) => {} // died between the list and the read
            Err(e) => return Err(e),
        }
    }
    out.sort_by_key(|b| b.0.id);
    Ok(out)
}

pub(crate) fn no_node_empty(e: ZkError) -> ZkResult<Vec<String>> {
    match e {
        ZkError::NoNode => Ok(Vec::new()),
        e => Err(e),
    }
}

pub fn all_topics(zk: &ZkClient) -> ZkResult<Vec<String>> {
    let mut t = zk.get_children(BROKER_TOPICS).or_else(no_node_empty)?;
    t.sort();
    Ok(t)
}

/// The leader and ISR of a partition with the zk version of the node.
pub fn leader_and_isr(
    zk: &ZkClient,
    topic: &str,
    partition: i32,
) -> ZkResult<Option<(LeaderAndIsr, i32)>> {
    let path = leader_and_isr_path(topic, partition);
    match zk.get_data(&path) {
        Ok((data, stat)) => Ok(Some((from_json(&path, &data)?, stat.version))),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the leader and ISR, conditionally on `version` when given (spec A step 3.3); returns
/// the node's new version. Creates the node when `version` is `None` and it does not exist —
/// but only under a topic node that exists: a topic deleted meanwhile gets NoNode, never a
/// resurrected, empty `/brokers/topics/[topic]` (which hid the deletion from the controller).
pub fn write_leader_and_isr(
    zk: &ZkClient,
    topic: &str,
    partition: i32,
    v: &LeaderAndIsr,
    version: Option<i32>,
) -> ZkResult<i32> {
    let path = leader_and_isr_path(topic, partition);
    let body = leader_and_isr_json(v);
    match zk.set_data(&path, body.clone(), version) {
        Ok(stat) => Ok(stat.version),
        Err(ZkError::NoNode) if version.is_none() => {
            match zk.create_child(&format!("{}/{partition}", topic_path(topic)), Vec::new()) {
                Ok(()) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e),
            }
            zk.create_child(&path, body)?;
            Ok(0)
        }
        Err(e) => Err(e),
    }
}

/// Writes many partitions' leader and ISR, each conditionally on its version, in one
/// transaction (`zk::multi`): every node's new version, or the position and error of the first
/// write that failed, when none was made.
pub fn write_leader_and_isr_all(
    zk: &ZkClient,
    writes: &[(&str, i32, &LeaderAndIsr, i32)],
) -> ZkResult<Result<Vec<i32>, (usize, ZkError)>> {
    let ops: Vec<(String, Vec<u8>, i32)> = writes
        .iter()
        .map(|(t, p, v, version)| (leader_and_isr_path(t, *p), leader_and_isr_json(v), *version))
        .collect();
    Ok(zk
        .set_data_all(&ops)?
        .map(|stats| stats.into_iter().map(|s| s.version).collect()))
}

/// The leaderAndISR node's body in Kafka's layout, which carries `"version":1` besides the
/// fields (readers ignore it).
pub fn leader_and_isr_json(v: &LeaderAndIsr) -> Vec<u8> {
    #[derive(Serialize)]
    struct Node<'a> {
        version: i32,
        #[serde(flatten)]
        state: &'a LeaderAndIsr,
    }
    to_json(&Node {
        version: 1,
        state: v,
    })
}

/// One partition of `/admin/reassign_partitions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionReassignment {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
}

/// `/admin/reassign_partitions` (and the file `gregor reassign` reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassignmentRequest {
    pub version: i32,
    pub partitions: Vec<PartitionReassignment>,
}

/// One partition of `/admin/preferred_replica_election`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRef {
    pub topic: String,
    pub partition: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionList {
    pub version: i32,
    pub partitions: Vec<PartitionRef>,
}

/// `/consumers/groups/[group]/offsets/[topic]/[partition]`: a group's committed offset.
pub fn consumer_offset_path(group: &str, topic: &str, partition: i32) -> String {
    format!("/consumers/groups/{group}/offsets/{topic}/{partition}")
}

/// The committed offset (stored as a decimal string, as Kafka 0.8 did), `None` if none.
/// A group's committed offset for a partition, without its metadata.
pub fn committed_offset(
    zk: &ZkClient,
    group: &str,
    topic: &str,
    partition: i32,
) -> ZkResult<Option<i64>> {
    Ok(committed(zk, group, topic, partition)?.map(|(o, _)| o))
}

/// A group's committed offset and the commit's metadata. The node holds the offset in
/// Kafka 0.8's form (its decimal digits), followed by a newline and the metadata when a
/// commit carried any, so 0.8-era readers of the first line still see the offset.
pub fn committed(
    zk: &ZkClient,
    group: &str,
    topic: &str,
    partition: i32,
) -> ZkResult<Option<(i64, String)>> {
    let path = consumer_offset_path(group, topic, partition);
    match zk.get_data(&path) {
        Ok((data, _)) => {
            let text = std::str::from_utf8(&data).map_err(|_| ZkError::MarshallingError)?;
            let (offset, metadata) = text.split_once('\n').unwrap_or((text, ""));
            let offset = offset
                .trim()
                .parse()
                .map_err(|_| ZkError::MarshallingError)?;
            Ok(Some((offset, metadata.to_owned())))
        }
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn commit_offset(
    zk: &ZkClient,
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    metadata: &str,
) -> ZkResult<()> {
    let path = consumer_offset_path(group, topic, partition);
    let mut data = offset.to_string().into_bytes();
    if !metadata.is_empty() {
        data.push(b'\n');
        data.extend_from_slice(metadata.as_bytes());
    }
    write_persistent(zk, &path, data)
}

/// Removes a group's committed offset for a partition (none there is no error).
pub fn delete_committed(zk: &ZkClient, group: &str, topic: &str, partition: i32) -> ZkResult<()> {
    match zk.delete(&consumer_offset_path(group, topic, partition), None) {
        Err(ZkError::NoNode) => Ok(()),
        r => r,
    }
}

/// Sets a persistent node's data, creating the node (and its parents) when it is missing.
pub fn write_persistent(zk: &ZkClient, path: &str, data: Vec<u8>) -> ZkResult<()> {
    match zk.set_data(path, data.clone(), None) {
        Ok(_) => Ok(()),
        Err(ZkError::NoNode) => match zk.create_persistent(path, data.clone()) {
            Err(ZkError::NodeExists) => zk.set_data(path, data, None).map(|_| ()),
            r => r,
        },
        Err(e) => Err(e),
    }
}

/// Announces that the leader changed the ISR of these partitions.
pub fn notify_isr_change(zk: &ZkClient, partitions: Vec<PartitionRef>) -> ZkResult<()> {
    let body = to_json(&PartitionList {
        version: 1,
        partitions,
    });
    zk.create_sequential(&format!("{ISR_CHANGE_NOTIFICATION}/isr_change_"), body)
        .map(|_| ())
}

/// `/controller_epoch`, `None` before the first controller.
pub fn controller_epoch(zk: &ZkClient) -> ZkResult<Option<i32>> {
    match zk.get_data(CONTROLLER_EPOCH) {
        Ok((data, _)) => std::str::from_utf8(&data)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| {
                log::error!("malformed {CONTROLLER_EPOCH}: {data:?}");
                ZkError::MarshallingError
            }),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a JSON node, `None` when it does not exist.
pub fn read_json<T: for<'de> Deserialize<'de>>(zk: &ZkClient, path: &str) -> ZkResult<Option<T>> {
    match zk.get_data(path) {
        Ok((data, _)) => Ok(Some(from_json(path, &data)?)),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaderAndISR node as Kafka documents it (its example, compared as JSON values:
    /// key order is not part of the format), read back; and a malformed body is an error.
    #[test]
    fn leader_and_isr_is_kafkas_layout() {
        let v = LeaderAndIsr {
            leader: 1,
            leader_epoch: 4,
            isr: vec![1, 2],
            controller_epoch: 7,
        };
        let ours: serde_json::Value = serde_json::from_slice(&leader_and_isr_json(&v)).unwrap();
        let kafka: serde_json::Value = serde_json::from_str(
            r#"{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":4,"isr":[1,2]}"#,
        )
        .unwrap();
        assert_eq!(ours, kafka);
        assert_eq!(
            from_json::<LeaderAndIsr>("/x", &leader_and_isr_json(&v)).unwrap(),
            v
        );
        assert!(from_json::<LeaderAndIsr>("/x", b"{bad").is_err());
    }

    /// The registration as Kafka documents `/brokers/ids/[id]` (version 4), compared as JSON
    /// values (key order is not part of the format); and a version 1 node still reads.
    #[test]
    fn broker_registration_is_kafkas_version_4() {
        let endpoints = [
            EndPoint {
                listener: "CLIENT".into(),
                host: "198.18.0.5".into(),
                port: 9092,
            },
            EndPoint {
                listener: "REPLICATION".into(),
                host: "198.18.0.5".into(),
                port: 9093,
            },
        ];
        let protocols: BTreeMap<String, String> =
            [("CLIENT", "PLAINTEXT"), ("REPLICATION", "PLAINTEXT")]
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
        let ours: serde_json::Value =
            serde_json::from_slice(&broker_registration(&endpoints, &protocols)).unwrap();
        let mut kafka: serde_json::Value = serde_json::from_str(
            r#"{"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"PLAINTEXT"},
                "endpoints":["CLIENT://198.18.0.5:9092","REPLICATION://198.18.0.5:9093"],
                "jmx_port":-1,"host":"198.18.0.5","timestamp":"0","port":9092,"version":4}"#,
        )
        .unwrap();
        kafka["timestamp"] = ours["timestamp"].clone();
        assert_eq!(ours, kafka);
        let v1: BrokerRegistration = from_json(
            "/brokers/ids/3",
            br#"{"jmx_port":-1,"timestamp":"1","host":"h","version":1,"port":9092}"#,
        )
        .unwrap();
        assert_eq!(v1.endpoints(3).on("PLAINTEXT").unwrap().port, 9092);
        let v4: BrokerRegistration =
            from_json("/b", &broker_registration(&endpoints, &protocols)).unwrap();
        assert_eq!(v4.endpoints(1).endpoints, endpoints);
    }
}

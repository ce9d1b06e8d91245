//! The cluster id (`/cluster/id`) and topic ids (`topic_id` in `/brokers/topics/[topic]`),
//! kept where Kafka keeps them: UUIDs, written as Kafka writes them (URL-safe base64 without
//! padding, 22 characters). Whoever first needs one creates it; the write is conditional, so
//! brokers racing to create it all end up with the one that won.

use crate::zk::ZkError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::paths::{TopicAssignment, from_json, to_json, topic_path};

type ZkResult<T> = Result<T, ZkError>;

pub const CLUSTER_ID_PATH: &str = "/cluster/id";

#[derive(Serialize, Deserialize)]
struct ClusterId {
    version: String,
    id: String,
}

/// A new random (version 4) UUID in Kafka's text form.
pub fn new_id() -> String {
    URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

/// The 16 bytes of an id in Kafka's text form; `None` when it is not one.
pub fn id_bytes(text: &str) -> Option<[u8; 16]> {
    URL_SAFE_NO_PAD.decode(text).ok()?.try_into().ok()
}

/// The cluster id, created on first use.
pub fn cluster_id(zk: &ZkClient) -> ZkResult<String> {
    loop {
        match zk.get_data(CLUSTER_ID_PATH) {
            Ok((data, _)) => return Ok(from_json::<ClusterId>(CLUSTER_ID_PATH, &data)?.id),
            Err(ZkError::NoNode) => {
                let body = to_json(&ClusterId {
                    version: "1".into(),
                    id: new_id(),
                });
                match zk.create_persistent(CLUSTER_ID_PATH, body) {
                    Ok(()) | Err(ZkError::NodeExists) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// A topic's id, given to it here when its node has none yet (a topic created before ids
/// existed); `None` when the topic does not exist.
pub fn topic_id(zk: &ZkClient, topic: &str) -> ZkResult<Option<[u8; 16]>> {
    let path = topic_path(topic);
    loop {
        let (data, stat) = match zk.get_data(&path) {
            Ok(d) => d,
            Err(ZkError::NoNode) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut a: TopicAssignment = from_json(&path, &data)?;
        if let Some(id) = a.topic_id.as_deref().and_then(id_bytes) {
            return Ok(Some(id));
        }
        a.topic_id = Some(new_id());
        match zk.set_data(&path, to_json(&a), Some(stat.version)) {
            Ok(_) | Err(ZkError::BadVersion) => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kafka_text_uuids() {
        let id = new_id();
        assert_eq!(id.len(), 22);
        assert!(!id.contains('=') && !id.contains('+') && !id.contains('/'));
        let bytes = id_bytes(&id).unwrap();
        assert_eq!(bytes[6] >> 4, 4, "version 4");
        assert_eq!(id_bytes("short"), None);
    }
}

//! Per-topic configuration at `/config/topics/[topic]`, in Kafka's shape
//! (`{"version":1,"config":{"key":"value"}}`), the keys and values checked when the node is
//! written; and Kafka's change notifications (`/config/changes/config_change_NNNNNNNNNN`,
//! `{"version":2,"entity_path":"topics/[topic]"}`) by which every broker learns of a change.

use std::collections::BTreeMap;

use crate::config::keys;
use crate::config::replication_throttle::{self, ThrottledReplicas};
use crate::protocol::record_batch::CompressionType;
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::paths::{from_json, to_json};

pub const CHANGES: &str = "/config/changes";
const CHANGE_PREFIX: &str = "config_change_";

#[derive(Debug, Default, Serialize, Deserialize)]
struct TopicConfig {
    version: i32,
    config: BTreeMap<String, String>,
}

fn path(topic: &str) -> String {
    format!("/config/topics/{topic}")
}

/// Checks `key=value` pairs against the keys gregor serves; the error names the problem.
pub fn parse(pairs: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| format!("--config expects key=value, got `{p}`"))?;
        check(k, v)?;
        out.insert(k.to_owned(), v.to_owned());
    }
    Ok(out)
}

/// Checks one setting against the topic-level keys gregor serves, by the rule of the broker
/// key it overrides (`config::keys`); the error names the problem.
pub fn check(k: &str, v: &str) -> Result<(), String> {
    match keys::for_topic(k) {
        Some(broker_key) => broker_key.check_as(k, v),
        None => Err(format!("unknown topic configuration key `{k}`")),
    }
}

/// Writes (replacing) a topic's configuration.
pub fn write(zk: &ZkClient, topic: &str, config: &BTreeMap<String, String>) -> Result<(), ZkError> {
    let body = to_json(&TopicConfig {
        version: 1,
        config: config.clone(),
    });
    match zk.create_persistent(&path(topic), body.clone()) {
        Err(ZkError::NodeExists) => zk.set_data(&path(topic), body, None).map(|_| ()),
        r => r,
    }
}

/// A topic's configuration; empty when it has none.
pub fn read(zk: &ZkClient, topic: &str) -> Result<BTreeMap<String, String>, ZkError> {
    match zk.get_data(&path(topic)) {
        Ok((data, _)) => Ok(from_json::<TopicConfig>(&path(topic), &data)?.config),
        Err(ZkError::NoNode) => Ok(BTreeMap::new()),
        Err(e) => Err(e),
    }
}

/// A topic's settings over the broker's, typed; `None` where the topic sets nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicOverrides {
    /// `message.timestamp.type`: true for LogAppendTime.
    pub log_append_time: Option<bool>,
    pub max_message_bytes: Option<usize>,
    pub min_insync_replicas: Option<usize>,
    pub retention_ms: Option<i64>,
    pub retention_bytes: Option<i64>,
    pub segment_bytes: Option<u64>,
    pub segment_ms: Option<i64>,
    pub file_delete_delay_ms: Option<i64>,
    pub cleanup_policy: Option<crate::config::CleanupPolicy>,
    pub min_cleanable_ratio: Option<f64>,
    pub delete_retention_ms: Option<i64>,
    pub min_compaction_lag_ms: Option<i64>,
    pub max_compaction_lag_ms: Option<i64>,
    /// KIP-73: the replicas held to the leader's and the follower's throttled rates.
    pub leader_throttled: ThrottledReplicas,
    pub follower_throttled: ThrottledReplicas,
    pub compression_type: Option<CompressionType>,
}

impl TopicOverrides {
    /// From a stored configuration (checked when it was written; a value that does not parse
    /// is treated as unset).
    pub fn from_config(config: &BTreeMap<String, String>) -> Self {
        let num = |k: &str| config.get(k).and_then(|v| v.parse::<i64>().ok());
        let throttled = |k: &str| {
            config
                .get(k)
                .and_then(|v| replication_throttle::parse(v).ok())
                .unwrap_or_default()
        };
        TopicOverrides {
            log_append_time: config
                .get("message.timestamp.type")
                .map(|v| v == "LogAppendTime"),
            max_message_bytes: num("max.message.bytes").map(|n| n as usize),
            min_insync_replicas: num("min.insync.replicas").map(|n| n as usize),
            retention_ms: num("retention.ms"),
            retention_bytes: num("retention.bytes"),
            segment_bytes: num("segment.bytes").map(|n| n as u64),
            segment_ms: num("segment.ms"),
            file_delete_delay_ms: num("file.delete.delay.ms"),
            cleanup_policy: config
                .get("cleanup.policy")
                .map(|v| crate::config::CleanupPolicy::parse(v)),
            min_cleanable_ratio: config
                .get("min.cleanable.dirty.ratio")
                .and_then(|v| v.parse().ok()),
            delete_retention_ms: num("delete.retention.ms"),
            min_compaction_lag_ms: num("min.compaction.lag.ms"),
            max_compaction_lag_ms: num("max.compaction.lag.ms"),
            leader_throttled: throttled("leader.replication.throttled.replicas"),
            follower_throttled: throttled("follower.replication.throttled.replicas"),
            compression_type: config
                .get("compression.type")
                .and_then(|v| CompressionType::parse(v)),
        }
    }
}

/// Tells every broker that `topic`'s configuration changed (Kafka's change notification).
pub fn notify_change(zk: &ZkClient, topic: &str) -> Result<(), ZkError> {
    notify(zk, &format!("topics/{topic}"))
}

/// Tells every broker that the configuration at `/config/<entity_path>` changed.
pub fn notify(zk: &ZkClient, entity_path: &str) -> Result<(), ZkError> {
    let body = serde_json::json!({"version": 2, "entity_path": entity_path})
        .to_string()
        .into_bytes();
    zk.create_sequential(&format!("{CHANGES}/{CHANGE_PREFIX}"), body)
        .map(|_| ())
}

/// The change notifications after `after` (a sequence number; -1 for all), oldest first:
/// (sequence, entity path: `topics/t`, `clients/c`, `users/u/clients/c`, `ips/a`).
pub fn changes_after(zk: &ZkClient, after: i64) -> Result<Vec<(i64, String)>, ZkError> {
    let mut out = Vec::new();
    for name in zk.get_children(CHANGES)? {
        let Some(seq) = name
            .strip_prefix(CHANGE_PREFIX)
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        if seq <= after {
            continue;
        }
        let path = format!("{CHANGES}/{name}");
        let (data, _) = match zk.get_data(&path) {
            Ok(d) => d,
            Err(ZkError::NoNode) => continue,
            Err(e) => return Err(e),
        };
        let v: serde_json::Value = from_json(&path, &data)?;
        if let Some(p) = v["entity_path"].as_str() {
            out.push((seq, p.to_owned()));
        }
    }
    out.sort();
    Ok(out)
}

/// Deletes notifications older than `age` (every broker has read them by then); another
/// broker deleting the same one first is fine.
pub fn purge_changes(zk: &ZkClient, age: std::time::Duration) -> Result<(), ZkError> {
    purge_older_children(zk, CHANGES, age)
}

/// Deletes the children of `dir` created more than `age` ago (change notices of any kind).
pub fn purge_older_children(
    zk: &ZkClient,
    dir: &str,
    age: std::time::Duration,
) -> Result<(), ZkError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    for name in super::entity_config::children(zk, dir)? {
        let path = format!("{dir}/{name}");
        match zk.get_data(&path) {
            Ok((_, stat)) if now - stat.ctime > age.as_millis() as i64 => {
                match zk.delete(&path, None) {
                    Ok(()) | Err(ZkError::NoNode) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(_) | Err(ZkError::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_checked() {
        let ok = parse(&[
            "message.timestamp.type=LogAppendTime".into(),
            "retention.ms=-1".into(),
            "segment.bytes=1024".into(),
        ])
        .unwrap();
        let o = TopicOverrides::from_config(&ok);
        assert_eq!(o.log_append_time, Some(true));
        assert_eq!((o.retention_ms, o.segment_bytes), (Some(-1), Some(1024)));
        assert!(
            parse(&["retention.mss=5".into()])
                .unwrap_err()
                .contains("retention.mss")
        );
        assert!(
            parse(&["segment.bytes=10".into()])
                .unwrap_err()
                .contains("at least 14")
        );
        assert!(
            parse(&["cleanup.policy=archive".into()])
                .unwrap_err()
                .contains("delete, compact")
        );
        assert!(parse(&["cleanup.policy=compact,delete".into()]).is_ok());
        assert!(
            parse(&["message.timestamp.type=Now".into()])
                .unwrap_err()
                .contains("Now")
        );
        assert!(parse(&["novalue".into()]).is_err());
    }
}

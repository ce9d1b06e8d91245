//! Per-topic configuration at `/config/topics/[topic]`, in Kafka's shape
//! (`{"version":1,"config":{"key":"value"}}`). gregor reads one key there,
//! `message.timestamp.type`; the key names and values are checked when the node is written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zookeeper::ZkError;

use super::ZkClient;
use super::paths::{from_json, to_json};

/// The topic-level keys gregor knows, with the values each allows.
const KNOWN: &[(&str, &[&str])] = &[("message.timestamp.type", &["CreateTime", "LogAppendTime"])];

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

/// Checks one setting against the keys gregor serves; the error names the problem.
pub fn check(k: &str, v: &str) -> Result<(), String> {
    let Some((_, allowed)) = KNOWN.iter().find(|(name, _)| *name == k) else {
        return Err(format!("unknown topic configuration key `{k}`"));
    };
    if !allowed.contains(&v) {
        return Err(format!(
            "`{k}` must be one of {}, got `{v}`",
            allowed.join(", ")
        ));
    }
    Ok(())
}

/// The topic-level keys gregor serves.
pub fn known_keys() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|(k, _)| *k)
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

/// Whether a topic overrides the broker's `log.message.timestamp.type`: `Some(true)` for
/// LogAppendTime, `Some(false)` for CreateTime.
pub fn log_append_time(config: &BTreeMap<String, String>) -> Option<bool> {
    config
        .get("message.timestamp.type")
        .map(|v| v == "LogAppendTime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_checked() {
        let ok = parse(&["message.timestamp.type=LogAppendTime".into()]).unwrap();
        assert_eq!(log_append_time(&ok), Some(true));
        assert!(
            parse(&["retention.ms=5".into()])
                .unwrap_err()
                .contains("retention.ms")
        );
        assert!(
            parse(&["message.timestamp.type=Now".into()])
                .unwrap_err()
                .contains("Now")
        );
        assert!(parse(&["novalue".into()]).is_err());
    }
}

//! Consumer groups in ZooKeeper, as the architecture lays them out:
//! `/consumers/groups/[group]/ids/[consumer]` (ephemeral, created by the coordinator, holding
//! the subscription in Kafka 0.8's JSON), `/consumers/groups/[group]/owners/[topic]/[partition]`
//! (the owning consumer stream) and `.../offsets/...` (see `paths::commit_offset`).

use std::collections::BTreeMap;

use crate::zk::{ZkError, ZkResult};
use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::paths::{from_json, no_node_empty, now_millis, to_json};
use crate::protocol::coordinator::Subscription;

pub const GROUPS: &str = "/consumers/groups";

pub fn group_path(group: &str) -> String {
    format!("{GROUPS}/{group}")
}

pub fn ids_path(group: &str) -> String {
    format!("{GROUPS}/{group}/ids")
}

pub fn consumer_path(group: &str, consumer: &str) -> String {
    format!("{GROUPS}/{group}/ids/{consumer}")
}

pub fn owners_path(group: &str) -> String {
    format!("{GROUPS}/{group}/owners")
}

pub fn owner_path(group: &str, topic: &str, partition: i32) -> String {
    format!("{GROUPS}/{group}/owners/{topic}/{partition}")
}

/// A member's node, in Kafka 0.8's format: `subscription` maps topics (or, for a whitelist, the
/// pattern) to stream counts; `pattern` is "static" or "white_list".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerRegistration {
    pub version: i32,
    pub subscription: BTreeMap<String, i32>,
    pub pattern: String,
    pub timestamp: String,
}

const STATIC: &str = "static";
const WHITE_LIST: &str = "white_list";

impl ConsumerRegistration {
    pub fn new(s: &Subscription) -> Self {
        let (subscription, pattern) = match s {
            Subscription::Static(t) => (t.clone(), STATIC),
            Subscription::Whitelist { pattern, streams } => {
                ([(pattern.clone(), *streams)].into(), WHITE_LIST)
            }
        };
        ConsumerRegistration {
            version: 1,
            subscription,
            pattern: pattern.to_owned(),
            timestamp: now_millis(),
        }
    }

    /// The subscription back; `None` for a pattern kind gregor does not know.
    pub fn subscription(&self) -> Option<Subscription> {
        match self.pattern.as_str() {
            STATIC => Some(Subscription::Static(self.subscription.clone())),
            WHITE_LIST => {
                let (pattern, streams) = self.subscription.iter().next()?;
                Some(Subscription::Whitelist {
                    pattern: pattern.clone(),
                    streams: *streams,
                })
            }
            _ => None,
        }
    }
}

/// Every group that ever registered (group nodes are persistent).
pub fn all_groups(zk: &ZkClient) -> ZkResult<Vec<String>> {
    let mut g = zk.get_children(GROUPS).or_else(no_node_empty)?;
    g.sort();
    Ok(g)
}

/// A member as read from ZooKeeper, with the session that owns its node.
#[derive(Debug, Clone)]
pub struct Member {
    pub consumer_id: String,
    pub registration: ConsumerRegistration,
    pub owner_session: i64,
}

/// The group's members, sorted by consumer id. A node with a body we cannot read is skipped
/// with a warning rather than failing the whole group.
pub fn members(zk: &ZkClient, group: &str) -> ZkResult<Vec<Member>> {
    let mut ids = zk.get_children(&ids_path(group)).or_else(no_node_empty)?;
    ids.sort();
    let mut out = Vec::with_capacity(ids.len());
    for consumer_id in ids {
        let path = consumer_path(group, &consumer_id);
        match zk.get_data(&path) {
            Ok((data, stat)) => match from_json::<ConsumerRegistration>(&path, &data) {
                Ok(registration) => out.push(Member {
                    consumer_id,
                    registration,
                    owner_session: stat.ephemeral_owner,
                }),
                Err(_) => log::warn!("{path}: unreadable consumer registration, ignored"),
            },
            Err(ZkError::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Creates a member's ephemeral node in our session. A node left by another session (a
/// coordinator that died) is deleted first: only the coordinator writes these, and we are it.
pub fn register_member(
    zk: &ZkClient,
    group: &str,
    consumer: &str,
    reg: &ConsumerRegistration,
) -> ZkResult<()> {
    let path = consumer_path(group, consumer);
    let data = to_json(reg);
    match zk.create_ephemeral_once(&path, &data, std::time::Duration::ZERO) {
        Err(ZkError::NodeExists) => {
            zk.delete_if_exists(&path)?;
            zk.create_ephemeral_once(&path, &data, std::time::Duration::ZERO)
        }
        r => r,
    }
}

/// `(topic, partition) → owning stream`, as written by the last rebalance.
pub type Ownership = BTreeMap<(String, i32), String>;

pub fn owners(zk: &ZkClient, group: &str) -> ZkResult<Ownership> {
    let mut out = Ownership::new();
    for topic in zk
        .get_children(&owners_path(group))
        .or_else(no_node_empty)?
    {
        let topic_path = format!("{}/{topic}", owners_path(group));
        for p in zk.get_children(&topic_path).or_else(no_node_empty)? {
            let Ok(partition) = p.parse::<i32>() else {
                continue;
            };
            match zk.get_data(&owner_path(group, &topic, partition)) {
                Ok((data, _)) => {
                    out.insert(
                        (topic.clone(), partition),
                        String::from_utf8_lossy(&data).into_owned(),
                    );
                }
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// Makes the owners in ZooKeeper equal `new`: entries that are gone are deleted first, so no
/// partition is ever listed under two streams.
pub fn write_owners(zk: &ZkClient, group: &str, old: &Ownership, new: &Ownership) -> ZkResult<()> {
    for (t, p) in old.keys().filter(|k| !new.contains_key(*k)) {
        zk.delete_if_exists(&owner_path(group, t, *p))?;
    }
    for ((t, p), stream) in new {
        if old.get(&(t.clone(), *p)) == Some(stream) {
            continue;
        }
        let path = owner_path(group, t, *p);
        match zk.set_data(&path, stream.clone().into_bytes(), None) {
            Err(ZkError::NoNode) => zk.create_persistent(&path, stream.clone().into_bytes())?,
            r => {
                r?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_use_kafkas_json_and_round_trip() {
        let s = Subscription::Whitelist {
            pattern: "logs-.*".into(),
            streams: 2,
        };
        let r = ConsumerRegistration::new(&s);
        let json = String::from_utf8(to_json(&r)).unwrap();
        assert!(
            json.starts_with(r#"{"version":1,"subscription":{"logs-.*":2},"pattern":"white_list""#)
        );
        assert_eq!(r.subscription(), Some(s));
        let st = Subscription::Static([("a".to_owned(), 1), ("b".to_owned(), 3)].into());
        assert_eq!(ConsumerRegistration::new(&st).subscription(), Some(st));
    }
}

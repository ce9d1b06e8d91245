//! The configuration nodes of Kafka's `/config/<kind>/<name>` layout, as text:
//! `{"version":1,"config":{"key":"value",…}}`. One node can hold keys of several owners —
//! a user's node holds its client quotas and its SCRAM credentials — so a change rewrites only
//! its own keys, compare-and-set on the node's version, and keeps everyone else's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::paths::{from_json, to_json};
use crate::zk::ZkError;

#[derive(Debug, Default, Serialize, Deserialize)]
struct EntityConfig {
    version: i32,
    config: BTreeMap<String, String>,
}

/// A node's children, sorted; none when it does not exist.
pub fn children(zk: &ZkClient, path: &str) -> Result<Vec<String>, ZkError> {
    match zk.get_children(path) {
        Ok(mut c) => {
            c.sort();
            Ok(c)
        }
        Err(ZkError::NoNode) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// A node's keys; empty when it has none (or does not exist).
pub fn read(zk: &ZkClient, path: &str) -> Result<BTreeMap<String, String>, ZkError> {
    read_versioned(zk, path).map(|(c, _)| c)
}

fn read_versioned(
    zk: &ZkClient,
    path: &str,
) -> Result<(BTreeMap<String, String>, Option<i32>), ZkError> {
    match zk.get_data(path) {
        // A user node with only client children may hold no configuration at all.
        Ok((data, stat)) if data.is_empty() => Ok((BTreeMap::new(), Some(stat.version))),
        Ok((data, stat)) => Ok((
            from_json::<EntityConfig>(path, &data)?.config,
            Some(stat.version),
        )),
        Err(ZkError::NoNode) => Ok((BTreeMap::new(), None)),
        Err(e) => Err(e),
    }
}

/// Rewrites the node's keys with `change` (which sees all of them and should touch only its
/// own), retrying when another writer got there first. Returns what `change` returned on
/// the attempt that was written.
pub fn update<T>(
    zk: &ZkClient,
    path: &str,
    mut change: impl FnMut(&mut BTreeMap<String, String>) -> T,
) -> Result<T, ZkError> {
    loop {
        let (mut config, version) = read_versioned(zk, path)?;
        let result = change(&mut config);
        let body = to_json(&EntityConfig { version: 1, config });
        let written = match version {
            None => zk.create_persistent(path, body),
            Some(v) => zk.set_data(path, body, Some(v)).map(|_| ()),
        };
        match written {
            Ok(()) => return Ok(result),
            // Someone else changed or created it between the read and the write.
            Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => continue,
            Err(e) => return Err(e),
        }
    }
}

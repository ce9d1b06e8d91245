//! ACLs where Kafka's `AclAuthorizer` keeps them in ZooKeeper: one node per resource pattern,
//!
//! - `/kafka-acl/<ResourceType>/<name>` for LITERAL patterns (`*` is the wildcard name),
//! - `/kafka-acl-extended/prefixed/<ResourceType>/<name>` for PREFIXED ones,
//!
//! holding `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
//! "operation":"Read","host":"*"}]}`; a change is announced under `/kafka-acl-changes`
//! (`Topic:orders`) or `/kafka-acl-extended-changes` (a JSON pattern), the notices every
//! broker's authorizer follows. A pattern left with no entry loses its node.

use serde::{Deserialize, Serialize};

use super::entity_config::children;
use super::paths::{from_json, to_json};
use super::{ZkClient, ZkError};
use crate::security::acl::{
    AclEntry, Operation, PatternType, Permission, ResourcePattern, ResourceType,
};

pub const LITERAL_ROOT: &str = "/kafka-acl";
pub const PREFIXED_ROOT: &str = "/kafka-acl-extended/prefixed";
pub const LITERAL_CHANGES: &str = "/kafka-acl-changes";
pub const EXTENDED_CHANGES: &str = "/kafka-acl-extended-changes";
const CHANGE_PREFIX: &str = "acl_changes_";

#[derive(Debug, Serialize, Deserialize)]
struct AclJson {
    principal: String,
    #[serde(rename = "permissionType")]
    permission_type: String,
    operation: String,
    host: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct AclNode {
    version: i32,
    acls: Vec<AclJson>,
}

fn root(pattern: PatternType) -> &'static str {
    match pattern {
        PatternType::Prefixed => PREFIXED_ROOT,
        _ => LITERAL_ROOT,
    }
}

fn node(p: &ResourcePattern) -> String {
    format!("{}/{}/{}", root(p.pattern), p.resource_type.name(), p.name)
}

fn entries(path: &str, data: &[u8]) -> Result<Vec<AclEntry>, ZkError> {
    if data.is_empty() {
        return Ok(Vec::new());
    }
    let n: AclNode = from_json(path, data)?;
    Ok(n.acls
        .into_iter()
        .filter_map(|a| {
            let entry = AclEntry {
                operation: Operation::from_name(&a.operation)?,
                permission: Permission::from_name(&a.permission_type)?,
                principal: a.principal,
                host: a.host,
            };
            Some(entry)
        })
        .collect())
}

fn body(acls: &[AclEntry]) -> Vec<u8> {
    to_json(&AclNode {
        version: 1,
        acls: acls
            .iter()
            .map(|e| AclJson {
                principal: e.principal.clone(),
                permission_type: e.permission.name().to_owned(),
                operation: e.operation.name().to_owned(),
                host: e.host.clone(),
            })
            .collect(),
    })
}

/// Every pattern with its entries.
pub fn read_all(zk: &ZkClient) -> Result<Vec<(ResourcePattern, Vec<AclEntry>)>, ZkError> {
    let mut out = Vec::new();
    for pattern in [PatternType::Literal, PatternType::Prefixed] {
        for kind in children(zk, root(pattern))? {
            let Some(resource_type) = ResourceType::from_name(&kind) else {
                continue;
            };
            for name in children(zk, &format!("{}/{kind}", root(pattern)))? {
                let p = ResourcePattern {
                    resource_type,
                    name,
                    pattern,
                };
                let path = node(&p);
                let acls = match zk.get_data(&path) {
                    Ok((data, _)) => entries(&path, &data)?,
                    Err(ZkError::NoNode) => continue,
                    Err(e) => return Err(e),
                };
                if !acls.is_empty() {
                    out.push((p, acls));
                }
            }
        }
    }
    Ok(out)
}

/// Changes one pattern's entries with `change` (compare-and-set on the node's version,
/// again when another writer got there first), and announces the change.
pub fn update<T>(
    zk: &ZkClient,
    p: &ResourcePattern,
    mut change: impl FnMut(&mut Vec<AclEntry>) -> T,
) -> Result<T, ZkError> {
    let path = node(p);
    let result = loop {
        let (mut acls, version) = match zk.get_data(&path) {
            Ok((data, stat)) => (entries(&path, &data)?, Some(stat.version)),
            Err(ZkError::NoNode) => (Vec::new(), None),
            Err(e) => return Err(e),
        };
        let before = acls.clone();
        let result = change(&mut acls);
        if acls == before {
            return Ok(result);
        }
        let written = match (version, acls.is_empty()) {
            (None, true) => Ok(()),
            (None, false) => zk.create_persistent(&path, body(&acls)),
            (Some(v), true) => zk.delete(&path, Some(v)),
            (Some(v), false) => zk.set_data(&path, body(&acls), Some(v)).map(|_| ()),
        };
        match written {
            Ok(()) => break result,
            Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => continue,
            Err(e) => return Err(e),
        }
    };
    notify(zk, p)?;
    Ok(result)
}

fn notify(zk: &ZkClient, p: &ResourcePattern) -> Result<(), ZkError> {
    let (dir, data) = match p.pattern {
        PatternType::Literal => (
            LITERAL_CHANGES,
            format!("{}:{}", p.resource_type.name(), p.name).into_bytes(),
        ),
        _ => (
            EXTENDED_CHANGES,
            serde_json::json!({
                "version": 1,
                "resourceType": p.resource_type.name(),
                "name": p.name,
                "patternType": "PREFIXED",
            })
            .to_string()
            .into_bytes(),
        ),
    };
    zk.ensure_path(dir)?;
    zk.create_sequential(&format!("{dir}/{CHANGE_PREFIX}"), data)
        .map(|_| ())
}

/// Deletes the notices of both kinds older than `age`.
pub fn purge_changes(zk: &ZkClient, age: std::time::Duration) -> Result<(), ZkError> {
    for dir in [LITERAL_CHANGES, EXTENDED_CHANGES] {
        super::topic_config::purge_older_children(zk, dir, age)?;
    }
    Ok(())
}

//! Offsets committed inside a transaction (TxnOffsetCommit), pending until the transaction
//! ends: `/consumers/groups/[group]/txn_offsets/[producer id]`, one node per producer with an
//! open transaction, beside the group's committed offsets. The transaction coordinator
//! applies them to `offsets/` when the transaction commits and deletes the node either way;
//! OffsetFetch with `require_stable` answers UNSTABLE_OFFSET_COMMIT for a partition that has
//! one pending. One ZooKeeper write per TxnOffsetCommit (once per transaction), none per
//! produced batch.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::paths::{self, from_json, to_json};
use super::{ZkClient, ZkError, ZkResult};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingOffsets {
    pub version: i32,
    pub producer_epoch: i16,
    /// topic → partition → (offset, metadata).
    pub offsets: BTreeMap<String, BTreeMap<i32, (i64, String)>>,
}

fn group_pending(group: &str) -> String {
    format!("/consumers/groups/{group}/txn_offsets")
}

fn pending_path(group: &str, producer_id: i64) -> String {
    format!("{}/{producer_id}", group_pending(group))
}

/// Adds offsets to a producer's pending ones (a later commit of a partition replaces an
/// earlier one), with a conditional write so two commits at once both count.
pub fn add_pending(
    zk: &ZkClient,
    group: &str,
    producer_id: i64,
    producer_epoch: i16,
    offsets: &[(String, i32, i64, String)],
) -> ZkResult<()> {
    let path = pending_path(group, producer_id);
    loop {
        let (mut pending, version) = match zk.get_data(&path) {
            Ok((data, stat)) => (
                from_json::<PendingOffsets>(&path, &data)?,
                Some(stat.version),
            ),
            Err(ZkError::NoNode) => (PendingOffsets::default(), None),
            Err(e) => return Err(e),
        };
        pending.version = 1;
        pending.producer_epoch = producer_epoch;
        for (t, p, o, m) in offsets {
            pending
                .offsets
                .entry(t.clone())
                .or_default()
                .insert(*p, (*o, m.clone()));
        }
        let written = match version {
            Some(v) => zk.set_data(&path, to_json(&pending), Some(v)).map(|_| ()),
            None => zk.create_persistent(&path, to_json(&pending)),
        };
        match written {
            Ok(()) => return Ok(()),
            Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Ends a producer's pending offsets: applied to the group's committed offsets when
/// `commit`, then deleted. Carried out again after a crash, it finds nothing or applies the
/// same offsets again.
pub fn end_pending(zk: &ZkClient, group: &str, producer_id: i64, commit: bool) -> ZkResult<()> {
    let path = pending_path(group, producer_id);
    let pending: PendingOffsets = match paths::read_json(zk, &path)? {
        Some(p) => p,
        None => return Ok(()),
    };
    if commit {
        for (topic, partitions) in &pending.offsets {
            for (p, (offset, metadata)) in partitions {
                paths::commit_offset(zk, group, topic, *p, *offset, metadata)?;
            }
        }
    }
    match zk.delete(&path, None) {
        Ok(()) | Err(ZkError::NoNode) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The partitions of a group with offsets pending in some open transaction.
pub fn pending_partitions(zk: &ZkClient, group: &str) -> ZkResult<BTreeSet<(String, i32)>> {
    let producers = match zk.get_children(&group_pending(group)) {
        Ok(c) => c,
        Err(ZkError::NoNode) => return Ok(BTreeSet::new()),
        Err(e) => return Err(e),
    };
    let mut out = BTreeSet::new();
    for producer in producers {
        let path = format!("{}/{producer}", group_pending(group));
        if let Some(p) = paths::read_json::<PendingOffsets>(zk, &path)? {
            for (t, ps) in p.offsets {
                out.extend(ps.into_keys().map(|p| (t.clone(), p)));
            }
        }
    }
    Ok(out)
}

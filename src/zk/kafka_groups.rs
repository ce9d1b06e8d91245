//! Kafka-protocol groups in ZooKeeper: `/consumers/groups/[group]/kafka` holds what a newly
//! elected coordinator needs to carry a group on — its state, protocol, generation, leader and
//! every member with its metadata and assignment (bytes as hex). The coordinator writes it
//! when a generation gets its assignment (Stable), when a static member's id is replaced and
//! when the group empties; committed offsets stay where they always were (`.../offsets/...`).

use crate::zk::{ZkError, ZkResult};
use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::groups::group_path;
use super::paths::{from_json, to_json};

pub fn kafka_group_path(group: &str) -> String {
    format!("{}/kafka", group_path(group))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredProtocol {
    pub name: String,
    pub metadata: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: u64,
    pub rebalance_timeout_ms: u64,
    pub protocols: Vec<StoredProtocol>,
    pub assignment: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGroup {
    pub version: i32,
    pub state: String,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: Vec<StoredMember>,
}

pub fn read(zk: &ZkClient, group: &str) -> ZkResult<Option<StoredGroup>> {
    let path = kafka_group_path(group);
    match zk.get_data(&path) {
        Ok((data, _)) => from_json(&path, &data).map(Some),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn write(zk: &ZkClient, group: &str, g: &StoredGroup) -> ZkResult<()> {
    super::paths::write_persistent(zk, &kafka_group_path(group), to_json(g))
}

pub fn to_hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(DIGITS[(x >> 4) as usize] as char);
        s.push(DIGITS[(x & 15) as usize] as char);
    }
    s
}

/// `None` for text that is not an even number of hex digits.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        let b = vec![0, 1, 0xab, 0xff];
        assert_eq!(to_hex(&b), "0001abff");
        assert_eq!(from_hex("0001abff"), Some(b));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }
}

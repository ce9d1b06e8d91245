//! `/latest_producer_id_block`: the last block of producer ids handed to a broker, as Kafka
//! keeps it. A broker takes the next block with a conditional write, so no two brokers ever
//! hand out the same id, across restarts too.

use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

use super::ZkClient;
use super::paths::{from_json, to_json};

pub const PRODUCER_ID_BLOCK_PATH: &str = "/latest_producer_id_block";
/// Ids per block (Kafka's `PRODUCER_ID_BLOCK_SIZE`).
pub const BLOCK_SIZE: i64 = 1000;

#[derive(Debug, Serialize, Deserialize)]
struct Block {
    version: i32,
    broker: i32,
    block_start: i64,
    block_end: i64,
}

/// Reserves the next block for `broker`: its first and last id.
pub fn reserve_block(zk: &ZkClient, broker: i32) -> Result<(i64, i64), ZkError> {
    loop {
        let (start, version) = match zk.get_data(PRODUCER_ID_BLOCK_PATH) {
            Ok((data, stat)) => {
                let b: Block = from_json(PRODUCER_ID_BLOCK_PATH, &data)?;
                (b.block_end + 1, Some(stat.version))
            }
            Err(ZkError::NoNode) => (0, None),
            Err(e) => return Err(e),
        };
        let block = Block {
            version: 1,
            broker,
            block_start: start,
            block_end: start + BLOCK_SIZE - 1,
        };
        let written = match version {
            Some(v) => zk
                .set_data(PRODUCER_ID_BLOCK_PATH, to_json(&block), Some(v))
                .map(|_| ()),
            None => zk.create_persistent(PRODUCER_ID_BLOCK_PATH, to_json(&block)),
        };
        match written {
            Ok(()) => return Ok((block.block_start, block.block_end)),
            // Another broker took this block first: read the node again.
            Err(ZkError::BadVersion) | Err(ZkError::NodeExists) => continue,
            Err(e) => return Err(e),
        }
    }
}

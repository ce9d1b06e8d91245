//! Producer ids for idempotent producers, from blocks reserved in ZooKeeper
//! (`zk::producer_ids`); `apis::producer_ids` serves InitProducerId with them.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::zk::{ZkClient, producer_ids};

/// Hands out producer ids from the broker's current block.
pub struct ProducerIdManager {
    broker_id: i32,
    zk: Arc<ZkClient>,
    /// Next id to give and the last id of the block (next > last: none left).
    block: Mutex<(i64, i64)>,
}

impl ProducerIdManager {
    pub fn new(broker_id: i32, zk: Arc<ZkClient>) -> Self {
        ProducerIdManager {
            broker_id,
            zk,
            block: Mutex::new((0, -1)),
        }
    }

    /// A producer id never given before, reserving a new block when this one is used up.
    pub fn next_id(&self) -> Result<i64, crate::zk::ZkError> {
        let mut b = self.block.lock();
        if b.0 > b.1 {
            *b = producer_ids::reserve_block(&self.zk, self.broker_id)?;
            log::info!(
                "[Broker {}] reserved producer ids {}..={}",
                self.broker_id,
                b.0,
                b.1
            );
        }
        let id = b.0;
        b.0 += 1;
        Ok(id)
    }
}

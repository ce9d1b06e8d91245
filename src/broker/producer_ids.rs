//! InitProducerId (key 22) for idempotent producers: ids from blocks reserved in ZooKeeper
//! (`zk::producer_ids`), epochs bumped when a producer re-initialises. Transactions are not
//! served: a transactional id gets INVALID_REQUEST.

use std::sync::Arc;

use parking_lot::Mutex;

use super::apis::KafkaApis;
use crate::network::Action;
use crate::protocol::ErrorCode;
use crate::protocol::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
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

impl KafkaApis {
    pub(super) fn handle_init_producer_id(
        &self,
        req: &InitProducerIdRequest,
        version: i16,
        out: &mut Vec<u8>,
    ) -> Action {
        let answer = |error: ErrorCode, producer_id, producer_epoch| InitProducerIdResponse {
            error_code: error.code(),
            producer_id,
            producer_epoch,
        };
        let resp = if req.transactional_id.is_some() {
            log::info!(
                "[Broker {}] refused InitProducerId for transactional id {:?}: transactions are not supported",
                self.broker_id,
                req.transactional_id
            );
            answer(ErrorCode::InvalidRequest, -1, -1)
        } else if req.producer_id >= 0
            && req.producer_epoch >= 0
            && req.producer_epoch < i16::MAX - 1
        {
            // KIP-360: the producer keeps its id with the next epoch, which fences its older
            // batches and restarts its sequences.
            answer(ErrorCode::None, req.producer_id, req.producer_epoch + 1)
        } else {
            match self.producer_ids.next_id() {
                Ok(id) => answer(ErrorCode::None, id, 0),
                Err(e) => {
                    log::warn!(
                        "[Broker {}] cannot reserve producer ids: {e:?}",
                        self.broker_id
                    );
                    answer(ErrorCode::CoordinatorNotAvailable, -1, -1)
                }
            }
        };
        resp.encode(out, version);
        Action::Respond
    }
}

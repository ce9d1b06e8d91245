//! InitProducerId (key 22) for idempotent producers: an id from the broker's
//! `ProducerIdManager`, or the same id with the next epoch when a producer re-initialises
//! (KIP-360); with a transactional id, the transaction coordinator's (`transactions`).
//! DescribeProducers (61): what a partition's leader knows of its producers.

use super::{KafkaApis, RequestContext};
use crate::broker::partition::Role;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::describe_producers::{
    ActiveProducer, DescribeProducersRequest, DescribeProducersResponse, ProducersOfPartition,
};
use crate::protocol::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::security::acl::{Operation, ResourceType};

impl KafkaApis {
    pub(super) fn handle_init_producer_id(
        &self,
        req: &InitProducerIdRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let answer = |error: ErrorCode, producer_id, producer_epoch| InitProducerIdResponse {
            error_code: error.code(),
            producer_id,
            producer_epoch,
        };
        // IdempotentWrite on the cluster, or (KIP-679) Write on any topic.
        let may = || {
            self.cluster_allowed(cx, Operation::IdempotentWrite)
                || self
                    .authorizer
                    .allowed_any(cx.conn, Operation::Write, ResourceType::Topic)
        };
        let resp = if req.transactional_id.is_none() && !may() {
            answer(ErrorCode::ClusterAuthorizationFailed, -1, -1)
        } else if let Some(id) = &req.transactional_id {
            let expected = (req.producer_id >= 0).then_some((req.producer_id, req.producer_epoch));
            match self.init_transactional_producer(id, req.transaction_timeout_ms, expected, cx) {
                Ok((producer_id, epoch)) => answer(ErrorCode::None, producer_id, epoch),
                Err(e) => answer(e, -1, -1),
            }
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
        cx.answer(out, &resp);
        Action::Respond
    }

    /// Each partition's producers from its leader; Read on the topic needed.
    pub(super) fn handle_describe_producers(
        &self,
        req: &DescribeProducersRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let topics = req
            .topics
            .iter()
            .map(|(topic, partitions)| {
                let allowed = self.allowed(cx, Operation::Read, ResourceType::Topic, topic);
                let answers = partitions
                    .iter()
                    .map(|p| {
                        let found = if allowed {
                            self.producers_of(topic, *p)
                        } else {
                            Err(ErrorCode::TopicAuthorizationFailed)
                        };
                        let (error, active_producers) = match found {
                            Ok(a) => (ErrorCode::None, a),
                            Err(e) => (e, Vec::new()),
                        };
                        ProducersOfPartition {
                            partition: *p,
                            error_code: error.code(),
                            error_message: None,
                            active_producers,
                        }
                    })
                    .collect();
                (topic.clone(), answers)
            })
            .collect();
        cx.answer(out, &DescribeProducersResponse { topics });
        Action::Respond
    }

    fn producers_of(&self, topic: &str, partition: i32) -> Result<Vec<ActiveProducer>, ErrorCode> {
        let part = self.partition(topic, partition)?;
        if part.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        Ok(part.log.active_producers())
    }
}

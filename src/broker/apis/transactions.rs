//! The transactional producer's requests as a broker receives them: FindCoordinator with key
//! type 1 (any broker: the leader of the id's `__transaction_state` partition, the topic
//! created on first use), and InitProducerId with a transactional id, AddPartitionsToTxn,
//! AddOffsetsToTxn and EndTxn, which `txn_coordinator` carries out where it leads that
//! partition (elsewhere: NOT_COORDINATOR); and TxnOffsetCommit, which the group coordinator
//! keeps pending (`zk::txn_offsets`) until the transaction coordinator ends the transaction.
//! ACLs as Kafka's: Describe (FindCoordinator) or Write on the TransactionalId, Write on each
//! topic added, Read on the group and its topics.

use std::collections::BTreeMap;

use super::{KafkaApis, RequestContext};
use crate::config::transactions::TRANSACTION_STATE_TOPIC;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::group_offsets::Coordinator;
use crate::protocol::txn_requests::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, EndTxnRequest,
    TxnErrorResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use crate::security::acl::{Operation, ResourceType};
use crate::zk::{admin, paths, topic_config, txn_offsets};

impl KafkaApis {
    /// FindCoordinator for a transactional id.
    pub(super) fn find_transaction_coordinator(
        &self,
        transactional_id: &str,
        cx: &RequestContext<'_>,
    ) -> Coordinator {
        let fail =
            |e: ErrorCode, why: String| Coordinator::refused(transactional_id, e.code(), why);
        if !self.allowed(
            cx,
            Operation::Describe,
            ResourceType::TransactionalId,
            transactional_id,
        ) {
            return fail(
                ErrorCode::TransactionalIdAuthorizationFailed,
                format!("not authorized to describe transactional id {transactional_id}"),
            );
        }
        if transactional_id.is_empty() {
            return fail(ErrorCode::InvalidRequest, "empty transactional id".into());
        }
        if !self.metadata_cache.contains_topic(TRANSACTION_STATE_TOPIC) {
            return match self.create_transaction_state_topic() {
                Ok(()) => fail(
                    ErrorCode::CoordinatorNotAvailable,
                    format!("{TRANSACTION_STATE_TOPIC} is being created"),
                ),
                Err(why) => fail(ErrorCode::CoordinatorNotAvailable, why),
            };
        }
        let partition = self.txn_coordinator.partition_for(transactional_id);
        let leader = self
            .metadata_cache
            .leader_of(TRANSACTION_STATE_TOPIC, partition)
            .unwrap_or(-1);
        self.coordinator_at(
            transactional_id,
            leader,
            &cx.conn.listener,
            &format!("{TRANSACTION_STATE_TOPIC}-{partition} has no leader yet"),
        )
    }

    /// Creates `__transaction_state` (compacted, `transaction.state.log.*`) once enough
    /// brokers are alive for its replication factor, as Kafka does.
    fn create_transaction_state_topic(&self) -> Result<(), String> {
        if matches!(
            paths::topic_assignment(&self.zk, TRANSACTION_STATE_TOPIC),
            Ok(Some(_))
        ) {
            return Ok(());
        }
        let cfg = self.txn_coordinator.config();
        let rf = cfg.state_log_replication_factor;
        let live = self.metadata_cache.live_broker_count() as i32;
        if live < rf {
            return Err(format!(
                "{TRANSACTION_STATE_TOPIC} needs {rf} live brokers (transaction.state.log.replication.factor), {live} are"
            ));
        }
        let configs: BTreeMap<String, String> = [
            ("cleanup.policy", "compact".to_owned()),
            (
                "min.insync.replicas",
                cfg.state_log_min_isr.min(rf).to_string(),
            ),
            ("segment.bytes", cfg.state_log_segment_bytes.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let why = |e: String| format!("cannot create {TRANSACTION_STATE_TOPIC}: {e}");
        topic_config::write(&self.zk, TRANSACTION_STATE_TOPIC, &configs)
            .map_err(|e| why(format!("{e:?}")))?;
        let partitions = cfg.state_log_partitions;
        match admin::create_topic(&self.zk, TRANSACTION_STATE_TOPIC, partitions, rf, None) {
            Ok(_) | Err(admin::AdminError::TopicExists(_)) => {
                log::info!(
                    "[Broker {}] created {TRANSACTION_STATE_TOPIC} ({partitions} partitions, replication {rf})",
                    self.broker_id
                );
                Ok(())
            }
            Err(e) => Err(why(e.to_string())),
        }
    }

    /// InitProducerId's transactional branch: `Err` is the error to answer.
    pub(super) fn init_transactional_producer(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
        cx: &RequestContext<'_>,
    ) -> Result<(i64, i16), ErrorCode> {
        if !self.allowed(
            cx,
            Operation::Write,
            ResourceType::TransactionalId,
            transactional_id,
        ) {
            return Err(ErrorCode::TransactionalIdAuthorizationFailed);
        }
        let outcome = self
            .txn_coordinator
            .init_producer_id(transactional_id, timeout_ms, expected)
            .map_err(|e| fenced_as(e, cx.version < 4));
        let (pid, epoch) = expected.unwrap_or((-1, -1));
        self.note_refusal("InitProducerId", transactional_id, pid, epoch, &outcome);
        outcome
    }

    /// A transactional request refused, at info: rare, and what explains a client that
    /// stops making progress (a refusal it retries forever).
    fn note_refusal<T>(
        &self,
        api: &str,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        outcome: &Result<T, ErrorCode>,
    ) {
        if let Err(e) = outcome {
            log::info!(
                "[Broker {}] {api} of {transactional_id} (producer {producer_id} epoch {epoch}) answered {e:?}",
                self.broker_id
            );
        }
    }

    pub(super) fn handle_add_partitions_to_txn(
        &self,
        req: &AddPartitionsToTxnRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let id = &req.transactional_id;
        let mut refused: BTreeMap<(String, i32), ErrorCode> = BTreeMap::new();
        let all = req
            .topics
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)));
        for (t, p) in all.clone() {
            if !self.allowed(cx, Operation::Write, ResourceType::Topic, &t) {
                refused.insert((t, p), ErrorCode::TopicAuthorizationFailed);
            } else if t == TRANSACTION_STATE_TOPIC || !self.metadata_cache.contains_partition(&t, p)
            {
                refused.insert((t, p), ErrorCode::UnknownTopicOrPartition);
            }
        }
        let outcome = if !self.allowed(cx, Operation::Write, ResourceType::TransactionalId, id) {
            Err(ErrorCode::TransactionalIdAuthorizationFailed)
        } else if !refused.is_empty() {
            Err(ErrorCode::OperationNotAttempted)
        } else {
            let partitions: Vec<(String, i32)> = all.clone().collect();
            self.txn_coordinator
                .add_partitions(id, (req.producer_id, req.producer_epoch), &partitions)
                .map_err(|e| fenced_as(e, cx.version < 2))
        };
        self.note_refusal(
            "AddPartitionsToTxn",
            id,
            req.producer_id,
            req.producer_epoch,
            &outcome,
        );
        let code_of = |t: &str, p: i32| match (&outcome, refused.get(&(t.to_owned(), p))) {
            (_, Some(e)) => e.code(),
            (Ok(()), None) => 0,
            (Err(e), None) => e.code(),
        };
        let results = req
            .topics
            .iter()
            .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (*p, code_of(t, *p))).collect()))
            .collect();
        cx.answer(out, &AddPartitionsToTxnResponse { results });
        Action::Respond
    }

    pub(super) fn handle_add_offsets_to_txn(
        &self,
        req: &AddOffsetsToTxnRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let producer = (req.producer_id, req.producer_epoch);
        let group_allowed = self.allowed(cx, Operation::Read, ResourceType::Group, &req.group_id);
        self.answer_txn_request(
            "AddOffsetsToTxn",
            &req.transactional_id,
            producer,
            cx,
            out,
            || {
                if !group_allowed {
                    return Err(ErrorCode::GroupAuthorizationFailed);
                }
                let group = &req.group_id;
                self.txn_coordinator
                    .add_offsets(&req.transactional_id, producer, group)
            },
        )
    }

    pub(super) fn handle_end_txn(
        &self,
        req: &EndTxnRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let producer = (req.producer_id, req.producer_epoch);
        self.answer_txn_request("EndTxn", &req.transactional_id, producer, cx, out, || {
            self.txn_coordinator
                .end_txn(&req.transactional_id, producer, req.committed)
        })
    }

    /// AddOffsetsToTxn and EndTxn: Write on the TransactionalId, then `act`; one error code
    /// answered (PRODUCER_FENCED as the version knows it), a refusal logged.
    fn answer_txn_request(
        &self,
        api: &str,
        id: &str,
        (producer_id, epoch): (i64, i16),
        cx: &RequestContext<'_>,
        out: &mut Response,
        act: impl FnOnce() -> Result<(), ErrorCode>,
    ) -> Action {
        let outcome = if !self.allowed(cx, Operation::Write, ResourceType::TransactionalId, id) {
            Err(ErrorCode::TransactionalIdAuthorizationFailed)
        } else {
            act().map_err(|e| fenced_as(e, cx.version < 2))
        };
        self.note_refusal(api, id, producer_id, epoch, &outcome);
        let error_code = outcome.err().unwrap_or(ErrorCode::None).code();
        cx.answer(out, &TxnErrorResponse { error_code });
        Action::Respond
    }
}

impl KafkaApis {
    /// TxnOffsetCommit, at the group coordinator: the offsets wait, pending, for the
    /// transaction's end.
    pub(super) fn handle_txn_offset_commit(
        &self,
        req: &TxnOffsetCommitRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let group = &req.group_id;
        let group_error = if !self.allowed(
            cx,
            Operation::Write,
            ResourceType::TransactionalId,
            &req.transactional_id,
        ) {
            Some(ErrorCode::TransactionalIdAuthorizationFailed)
        } else if !self.allowed(cx, Operation::Read, ResourceType::Group, group) {
            Some(ErrorCode::GroupAuthorizationFailed)
        } else if !self.coordinator.is_coordinator() {
            Some(ErrorCode::NotCoordinator)
        } else {
            self.group_commit_error(
                group,
                req.generation_id,
                &req.member_id,
                req.group_instance_id.as_deref(),
            )
        };
        let mut codes: BTreeMap<(String, i32), ErrorCode> = BTreeMap::new();
        let mut pending = Vec::new();
        for (topic, partitions) in &req.topics {
            let topic_allowed = self.allowed(cx, Operation::Read, ResourceType::Topic, topic);
            for p in partitions {
                let code = if let Some(e) = group_error {
                    e
                } else if !topic_allowed {
                    ErrorCode::TopicAuthorizationFailed
                } else if let Some(e) = self.offset_target_error(group, topic, p.partition) {
                    e
                } else if p
                    .metadata
                    .as_ref()
                    .is_some_and(|m| m.len() > super::group_offsets::OFFSET_METADATA_MAX_BYTES)
                {
                    ErrorCode::OffsetMetadataTooLarge
                } else {
                    let meta = p.metadata.clone().unwrap_or_default();
                    pending.push((topic.clone(), p.partition, p.offset, meta));
                    ErrorCode::None
                };
                codes.insert((topic.clone(), p.partition), code);
            }
        }
        if !pending.is_empty()
            && let Err(e) = txn_offsets::add_pending(
                &self.zk,
                group,
                req.producer_id,
                req.producer_epoch,
                &pending,
            )
        {
            log::error!(
                "[Broker {}] keeping {group}'s offsets of transaction {} pending: {e:?}",
                self.broker_id,
                req.transactional_id
            );
            for (t, p, _, _) in &pending {
                codes.insert((t.clone(), *p), ErrorCode::UnknownServerError);
            }
        }
        if let Some(e) = codes.values().find(|c| **c != ErrorCode::None) {
            log::info!(
                "[Broker {}] TxnOffsetCommit of {} for group {group} (producer {} epoch {}) answered {e:?}",
                self.broker_id,
                req.transactional_id,
                req.producer_id,
                req.producer_epoch
            );
        }
        let results = req
            .topics
            .iter()
            .map(|(t, ps)| {
                let answers = ps
                    .iter()
                    .map(|p| (p.partition, codes[&(t.clone(), p.partition)].code()))
                    .collect();
                (t.clone(), answers)
            })
            .collect();
        cx.answer(out, &TxnOffsetCommitResponse { results });
        Action::Respond
    }
}

/// PRODUCER_FENCED (KIP-588) to the versions that predate it, which know
/// INVALID_PRODUCER_EPOCH instead.
fn fenced_as(e: ErrorCode, old_version: bool) -> ErrorCode {
    if e == ErrorCode::ProducerFenced && old_version {
        ErrorCode::InvalidProducerEpoch
    } else {
        e
    }
}

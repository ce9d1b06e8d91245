//! CreateTopics, DeleteTopics and CreatePartitions: the topic admin APIs. Each writes the
//! same ZooKeeper nodes `gregor topics --zookeeper` writes (`zk::admin`), so the
//! controller's watches stay the one path that creates and deletes partitions
//! (`on_topic_change` and topic deletion in the spec). The answer waits, up to the request's
//! `timeout_ms`, until this broker's metadata shows the change, so a client may use a topic
//! as soon as it is told it exists; past the timeout the change still goes on and the answer
//! is REQUEST_TIMED_OUT, as Kafka answers.

use crate::security::acl::{Operation, ResourceType};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{KafkaApis, RequestContext};
use crate::broker::partition::Role;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::admin_topics::{
    CreatableTopic, CreatableTopicResult, CreatePartitionsRequest, CreatePartitionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DeletableTopicResult, DeleteTopicsRequest,
    DeleteTopicsResponse, TopicConfigEntry,
};
use crate::protocol::delete_records::{
    DeleteRecordsRequest, DeleteRecordsResponse, DeletedRecords, HIGH_WATERMARK,
};
use crate::protocol::map_topics;
use crate::zk::admin::{self, AdminError};
use crate::zk::{ids, paths, topic_config};

/// Kafka's error code for each admin failure, with the message to show.
fn admin_error(e: &AdminError) -> (ErrorCode, Option<String>) {
    let code = match e {
        AdminError::InvalidTopic(_) => ErrorCode::InvalidTopic,
        AdminError::TopicExists(_) => ErrorCode::TopicAlreadyExists,
        AdminError::UnknownTopic(_) => ErrorCode::UnknownTopicOrPartition,
        AdminError::InvalidReplicationFactor { .. } => ErrorCode::InvalidReplicationFactor,
        AdminError::InvalidPartitions(_) | AdminError::PartitionsNotRaised(..) => {
            ErrorCode::InvalidPartitions
        }
        AdminError::InvalidAssignment(_) => ErrorCode::InvalidReplicaAssignment,
        AdminError::Zk(_) => ErrorCode::UnknownServerError,
    };
    (code, Some(e.to_string()))
}

impl KafkaApis {
    /// Waits until `done` holds or `timeout_ms` passes; re-checked whenever the metadata
    /// cache changes.
    fn wait_for_metadata(&self, timeout_ms: i32, done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
        self.metadata_cache.wait_until(deadline, done)
    }

    pub(super) fn handle_create_topics(
        &self,
        req: &CreateTopicsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let version = cx.version;
        let mut results = Vec::with_capacity(req.topics.len());
        let mut created = Vec::new();
        for t in &req.topics {
            let partitions = if !t.assignment.is_empty() {
                t.assignment.len()
            } else if t.num_partitions > 0 {
                t.num_partitions as usize
            } else {
                self.config.num_partitions as usize
            };
            let r = if req.topics.iter().filter(|o| o.name == t.name).count() > 1 {
                Err((
                    ErrorCode::InvalidRequest,
                    Some(format!("topic `{}` is named more than once", t.name)),
                ))
            } else if !self.cluster_allowed(cx, Operation::Create)
                && !self.allowed(cx, Operation::Create, ResourceType::Topic, &t.name)
            {
                Err((
                    ErrorCode::TopicAuthorizationFailed,
                    Some("not authorized to create this topic".into()),
                ))
            } else if !self.may_mutate(cx, partitions, version >= 6) {
                Err(throttled())
            } else {
                self.create_topic(t, req.validate_only)
            };
            results.push(match r {
                Ok((assignment, configs)) => {
                    if !req.validate_only {
                        created.push((t.name.clone(), assignment.len()));
                        log::info!(
                            "[Broker {}] created topic {} ({} partitions) for CreateTopics",
                            self.broker_id,
                            t.name,
                            assignment.len()
                        );
                    }
                    CreatableTopicResult {
                        name: t.name.clone(),
                        topic_id: [0; 16],
                        error_code: 0,
                        error_message: None,
                        num_partitions: assignment.len() as i32,
                        replication_factor: assignment.values().next().map_or(0, |r| r.len())
                            as i16,
                        configs: Some(self.config_entries(&configs)),
                    }
                }
                Err((code, msg)) => CreatableTopicResult {
                    name: t.name.clone(),
                    topic_id: [0; 16],
                    error_code: code.code(),
                    error_message: msg,
                    num_partitions: -1,
                    replication_factor: -1,
                    configs: None,
                },
            });
        }
        let all_there = self.wait_for_metadata(req.timeout_ms, || {
            created
                .iter()
                .all(|(t, n)| self.metadata_cache.partition_count(t) == *n)
        });
        for r in results.iter_mut().filter(|r| r.error_code == 0) {
            if !req.validate_only && !all_there {
                r.error_code = ErrorCode::RequestTimedOut.code();
                r.error_message = Some("created, but not yet led everywhere".into());
            }
            if version >= 7 && !req.validate_only {
                r.topic_id = ids::topic_id(&self.zk, &r.name)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
            }
        }
        cx.answer(out, &CreateTopicsResponse { topics: results });
        Action::Respond
    }

    /// Checks one topic of a CreateTopics request and, unless `validate_only`, writes it
    /// (its configuration first: leaders read it when they take the partitions).
    #[allow(clippy::type_complexity)]
    fn create_topic(
        &self,
        t: &CreatableTopic,
        validate_only: bool,
    ) -> Result<(BTreeMap<i32, Vec<i32>>, BTreeMap<String, String>), (ErrorCode, Option<String>)>
    {
        let mut configs = BTreeMap::new();
        for (k, v) in &t.configs {
            let Some(v) = v else {
                continue; // null: the default
            };
            topic_config::check(k, v).map_err(|e| (ErrorCode::InvalidConfig, Some(e)))?;
            configs.insert(k.clone(), v.clone());
        }
        let given = if t.assignment.is_empty() {
            None
        } else {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                return Err((
                    ErrorCode::InvalidRequest,
                    Some(
                        "with a replica assignment, partitions and replication factor must be -1"
                            .into(),
                    ),
                ));
            }
            let mut parts: Vec<&(i32, Vec<i32>)> = t.assignment.iter().collect();
            parts.sort_by_key(|(p, _)| *p);
            if parts.iter().enumerate().any(|(i, (p, _))| *p != i as i32) {
                return Err((
                    ErrorCode::InvalidReplicaAssignment,
                    Some("the assignment must name partitions 0, 1, 2, ... once each".into()),
                ));
            }
            Some(
                parts
                    .into_iter()
                    .map(|(_, b)| b.clone())
                    .collect::<Vec<_>>(),
            )
        };
        let or_default = |n: i32, d: i32| if n == -1 { d } else { n };
        let partitions = or_default(t.num_partitions, self.config.num_partitions);
        let rf = or_default(
            i32::from(t.replication_factor),
            self.config.default_replication_factor,
        );
        let err = |e: AdminError| admin_error(&e);
        let assignment =
            admin::plan_topic(&self.zk, &t.name, partitions, rf, given.as_deref()).map_err(err)?;
        if !validate_only {
            if !configs.is_empty() {
                topic_config::write(&self.zk, &t.name, &configs)
                    .map_err(|e| err(AdminError::Zk(format!("{e:?}"))))?;
            }
            admin::write_topic(&self.zk, &t.name, &assignment).map_err(err)?;
        }
        Ok((assignment, configs))
    }

    /// Every topic-level key gregor serves, with the topic's value or the broker default.
    fn config_entries(&self, set: &BTreeMap<String, String>) -> Vec<TopicConfigEntry> {
        crate::config::keys::topic_keys()
            .map(|k| {
                let (value, source) = self.topic_value(set, k);
                TopicConfigEntry {
                    name: k.to_owned(),
                    value: Some(value),
                    read_only: false,
                    source,
                    sensitive: false,
                }
            })
            .collect()
    }

    pub(super) fn handle_delete_topics(
        &self,
        req: &DeleteTopicsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let mut results = Vec::with_capacity(req.topics.len());
        let mut deleted = Vec::new();
        for (name, id) in &req.topics {
            let name = match name {
                Some(n) => Some(n.clone()),
                None => self.topic_named_by(id),
            };
            let (code, msg) = match &name {
                None => (
                    ErrorCode::UnknownTopicId,
                    Some("no topic has this id".into()),
                ),
                Some(n) if !self.allowed(cx, Operation::Delete, ResourceType::Topic, n) => (
                    ErrorCode::TopicAuthorizationFailed,
                    Some("not authorized to delete this topic".into()),
                ),
                Some(_) if !self.config.delete_topic_enable => (
                    ErrorCode::TopicDeletionDisabled,
                    Some("topic deletion is disabled (delete.topic.enable=false)".into()),
                ),
                Some(n)
                    if !self.may_mutate(
                        cx,
                        self.metadata_cache.partition_count(n),
                        cx.version >= 5,
                    ) =>
                {
                    throttled()
                }
                Some(n) => match admin::delete_topic(&self.zk, n) {
                    Ok(()) => {
                        log::info!(
                            "[Broker {}] deleting topic {n} for DeleteTopics",
                            self.broker_id
                        );
                        deleted.push(n.clone());
                        (ErrorCode::None, None)
                    }
                    Err(e) => admin_error(&e),
                },
            };
            results.push(DeletableTopicResult {
                name,
                topic_id: *id,
                error_code: code.code(),
                error_message: msg,
            });
        }
        let gone = self.wait_for_metadata(req.timeout_ms, || {
            deleted
                .iter()
                .all(|t| !self.metadata_cache.contains_topic(t))
        });
        if !gone {
            for r in results.iter_mut().filter(|r| r.error_code == 0) {
                r.error_code = ErrorCode::RequestTimedOut.code();
            }
        }
        cx.answer(out, &DeleteTopicsResponse { results });
        Action::Respond
    }

    /// The topic whose id (DeleteTopics v6) is `id`, read from ZooKeeper.
    fn topic_named_by(&self, id: &[u8; 16]) -> Option<String> {
        paths::all_topics(&self.zk)
            .ok()?
            .into_iter()
            .find(|t| ids::topic_id(&self.zk, t).ok().flatten().as_ref() == Some(id))
    }

    pub(super) fn handle_create_partitions(
        &self,
        req: &CreatePartitionsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let mut results = Vec::with_capacity(req.topics.len());
        let mut raised = Vec::new();
        for t in &req.topics {
            let adding = (t.count.max(0) as usize)
                .saturating_sub(self.metadata_cache.partition_count(&t.name));
            if !self.allowed(cx, Operation::Alter, ResourceType::Topic, &t.name) {
                let msg = Some("not authorized to alter this topic".into());
                results.push((
                    t.name.clone(),
                    ErrorCode::TopicAuthorizationFailed.code(),
                    msg,
                ));
                continue;
            }
            if !self.may_mutate(cx, adding, cx.version >= 3) {
                let (code, msg) = throttled();
                results.push((t.name.clone(), code.code(), msg));
                continue;
            }
            let planned =
                admin::plan_partitions(&self.zk, &t.name, t.count, t.assignment.as_deref());
            let written = planned.and_then(|a| {
                if !req.validate_only {
                    paths::write_topic_assignment(&self.zk, &t.name, &a)?;
                    raised.push((t.name.clone(), a.len()));
                }
                Ok(())
            });
            let (code, msg) = match written {
                Ok(()) => (ErrorCode::None, None),
                Err(e) => admin_error(&e),
            };
            results.push((t.name.clone(), code.code(), msg));
        }
        let all_there = self.wait_for_metadata(req.timeout_ms, || {
            raised
                .iter()
                .all(|(t, n)| self.metadata_cache.partition_count(t) == *n)
        });
        if !all_there {
            for r in results.iter_mut().filter(|r| r.1 == 0) {
                r.1 = ErrorCode::RequestTimedOut.code();
            }
        }
        cx.answer(out, &CreatePartitionsResponse { results });
        Action::Respond
    }

    /// DeleteRecords: on each partition's leader, records before the offset (-1: the high
    /// watermark) are deleted; followers follow the leader's log start (Fetch v5+). Answered
    /// once the leader has moved it, with the leader's log start as the low watermark.
    pub(super) fn handle_delete_records(
        &self,
        req: &DeleteRecordsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let topics = map_topics(&req.topics, |topic, &(partition, offset)| {
            let deleted = if self.allowed(cx, Operation::Delete, ResourceType::Topic, topic) {
                self.delete_records(topic, partition, offset)
            } else {
                Err(ErrorCode::TopicAuthorizationFailed)
            };
            let (low_watermark, code) = match deleted {
                Ok(low) => (low, ErrorCode::None),
                Err(e) => (-1, e),
            };
            DeletedRecords {
                partition,
                low_watermark,
                error_code: code.code(),
            }
        });
        cx.answer(out, &DeleteRecordsResponse { topics });
        Action::Respond
    }

    fn delete_records(&self, topic: &str, partition: i32, offset: i64) -> Result<i64, ErrorCode> {
        let part = self.partition(topic, partition)?;
        if part.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        let hw = part.high_watermark();
        let offset = if offset == HIGH_WATERMARK { hw } else { offset };
        if !(0..=hw).contains(&offset) {
            return Err(ErrorCode::OffsetOutOfRange);
        }
        let start = part.log.delete_records_before(offset).map_err(|e| {
            log::error!(
                "[Broker {}] {topic}-{partition}: DeleteRecords failed: {e}",
                self.broker_id
            );
            ErrorCode::UnknownServerError
        })?;
        // A fetch parked below the new start is answered now (OFFSET_OUT_OF_RANGE).
        part.watchers.wake_all();
        Ok(start)
    }
}

impl KafkaApis {
    /// KIP-599: whether `partitions` created or deleted may go ahead under the client's
    /// `controller_mutation_rate`; `strict` versions are refused when it is used up, older
    /// ones go ahead and are throttled.
    fn may_mutate(&self, cx: &RequestContext<'_>, partitions: usize, strict: bool) -> bool {
        if !self.quotas.active() {
            return true;
        }
        let (allowed, t) =
            self.quotas
                .take_mutations(cx.user(), cx.client_id(), partitions as f64, strict);
        cx.throttle_ms.set(cx.throttle_ms.get().max(t));
        allowed
    }
}

/// The refusal of a topic whose mutations the client's quota does not allow now.
fn throttled() -> (ErrorCode, Option<String>) {
    (
        ErrorCode::ThrottlingQuotaExceeded,
        Some("the controller mutation quota (controller_mutation_rate) is used up: retry after the throttle time".into()),
    )
}

//! OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47): committed offsets kept in ZooKeeper at
//! `/consumers/groups/[group]/offsets/[topic]/[partition]`, as Kafka 0.8 kept them, with the
//! commit's metadata beside the offset.
//!
//! A commit from a group member (generation ≥ 0, or a member id) is checked by the
//! coordinator against the group's current generation, so only the coordinator takes it
//! (NOT_COORDINATOR elsewhere). A commit outside group management and every fetch can be
//! served by any broker, as in 0.8: the offsets are in ZooKeeper, not in the coordinator.

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::group_offsets::{
    FetchedOffset, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse,
};
use crate::protocol::{ErrorCode, map_topics};
use crate::security::acl::{Operation, ResourceType};
use crate::zk::{ZkClient, paths, txn_offsets};

/// Kafka's `offset.metadata.max.bytes`.
pub(super) const OFFSET_METADATA_MAX_BYTES: usize = 4096;

impl KafkaApis {
    /// Why a group's offset for `topic`-`partition` cannot be read or written, if it cannot.
    pub(super) fn offset_target_error(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<ErrorCode> {
        if !crate::coordinator::valid_name(group) {
            Some(ErrorCode::InvalidGroupId)
        } else if !self.metadata_cache.contains_partition(topic, partition) {
            Some(ErrorCode::UnknownTopicOrPartition)
        } else {
            None
        }
    }

    /// The error every partition of a commit gets from the group check, if any.
    fn commit_group_error(&self, req: &OffsetCommitRequest) -> Option<ErrorCode> {
        self.group_commit_error(
            &req.group_id,
            req.generation_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
        )
    }

    /// A commit's group check (OffsetCommit, TxnOffsetCommit): the generation and member,
    /// when given, must be the group's.
    pub(super) fn group_commit_error(
        &self,
        group: &str,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<ErrorCode> {
        if !crate::coordinator::valid_name(group) {
            return Some(ErrorCode::InvalidGroupId);
        }
        let managed = generation_id >= 0 || !member_id.is_empty();
        if !managed && !self.coordinator.is_coordinator() {
            return None;
        }
        match self.coordinator.check_offset_commit(
            group,
            generation_id,
            member_id,
            group_instance_id,
        ) {
            ErrorCode::None => None,
            // Outside group management, a broker that is not (yet) the coordinator still
            // stores the commit, as every broker did before groups.
            ErrorCode::NotCoordinator | ErrorCode::CoordinatorLoadInProgress if !managed => None,
            e => Some(e),
        }
    }

    pub(super) fn handle_offset_commit(
        &self,
        req: &OffsetCommitRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let group_error = if self.allowed(cx, Operation::Read, ResourceType::Group, &req.group_id) {
            self.commit_group_error(req)
        } else {
            Some(ErrorCode::GroupAuthorizationFailed)
        };
        let topics = map_topics(&req.topics, |topic, p| {
            let code = if let Some(e) = group_error {
                e
            } else if !self.allowed(cx, Operation::Read, ResourceType::Topic, topic) {
                ErrorCode::TopicAuthorizationFailed
            } else if let Some(e) = self.offset_target_error(&req.group_id, topic, p.partition) {
                e
            } else if p
                .metadata
                .as_ref()
                .is_some_and(|m| m.len() > OFFSET_METADATA_MAX_BYTES)
            {
                ErrorCode::OffsetMetadataTooLarge
            } else {
                let meta = p.metadata.as_deref().unwrap_or("");
                match paths::commit_offset(
                    &self.zk,
                    &req.group_id,
                    topic,
                    p.partition,
                    p.offset,
                    meta,
                ) {
                    Ok(()) => ErrorCode::None,
                    Err(e) => {
                        log::error!(
                            "[Broker {}] committing {}/{topic}-{}: {e:?}",
                            self.broker_id,
                            req.group_id,
                            p.partition
                        );
                        ErrorCode::UnknownServerError
                    }
                }
            };
            (p.partition, code.code())
        });
        cx.answer(out, &OffsetCommitResponse { topics });
        Action::Respond
    }

    /// OffsetDelete (47): the group's committed offsets of these partitions removed from
    /// ZooKeeper, on the coordinator; a partition of a topic the group still uses gets
    /// GROUP_SUBSCRIBED_TO_TOPIC, as in Kafka.
    pub(super) fn handle_offset_delete(
        &self,
        req: &OffsetDeleteRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let in_use = if !self.allowed(cx, Operation::Delete, ResourceType::Group, &req.group_id) {
            Err(ErrorCode::GroupAuthorizationFailed)
        } else {
            self.coordinator.topics_in_use(&req.group_id)
        };
        let in_use = match in_use {
            Ok(t) => t,
            Err(e) => {
                let resp = OffsetDeleteResponse {
                    error_code: e.code(),
                    topics: Vec::new(),
                };
                cx.answer(out, &resp);
                return Action::Respond;
            }
        };
        let topics = map_topics(&req.topics, |topic, &partition| {
            let code = if !self.allowed(cx, Operation::Read, ResourceType::Topic, topic) {
                ErrorCode::TopicAuthorizationFailed
            } else if in_use.contains(topic) {
                ErrorCode::GroupSubscribedToTopic
            } else if let Some(e) = self.offset_target_error(&req.group_id, topic, partition) {
                e
            } else {
                match paths::delete_committed(&self.zk, &req.group_id, topic, partition) {
                    Ok(()) => ErrorCode::None,
                    Err(e) => {
                        log::error!(
                            "[Broker {}] deleting the offset of {}/{topic}-{partition}: {e:?}",
                            self.broker_id,
                            req.group_id
                        );
                        ErrorCode::UnknownServerError
                    }
                }
            };
            (partition, code.code())
        });
        let resp = OffsetDeleteResponse {
            error_code: 0,
            topics,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    /// Nothing committed: v0 answers offset -1 with UNKNOWN_TOPIC_OR_PARTITION (0.8's ZooKeeper
    /// path), v1+ offset -1 with no error; clients then apply their reset policy. v2+ with no
    /// topics asks for every partition the group has committed.
    pub(super) fn handle_offset_fetch(
        &self,
        req: &OffsetFetchRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let version = cx.version;
        let mut error_code = ErrorCode::None;
        let group_allowed =
            self.allowed(cx, Operation::Describe, ResourceType::Group, &req.group_id);
        if !group_allowed {
            error_code = ErrorCode::GroupAuthorizationFailed;
        }
        let topics = match &req.topics {
            _ if !group_allowed => req.topics.clone().unwrap_or_default(),
            Some(t) => t.clone(),
            None if !crate::coordinator::valid_name(&req.group_id) => {
                error_code = ErrorCode::InvalidGroupId;
                Vec::new()
            }
            None => committed_partitions(&self.zk, &req.group_id).unwrap_or_else(|e| {
                log::error!(
                    "[Broker {}] listing {}'s offsets: {e:?}",
                    self.broker_id,
                    req.group_id
                );
                error_code = ErrorCode::UnknownServerError;
                Vec::new()
            }),
        };
        // Asked for every committed partition: those of topics the principal may not
        // Describe are left out; asked for by name, they are refused.
        let topics = if req.topics.is_none() && self.authorizer.enabled() {
            topics
                .into_iter()
                .filter(|(t, _)| self.allowed(cx, Operation::Describe, ResourceType::Topic, t))
                .collect()
        } else {
            topics
        };
        // Partitions with an offset pending in an open transaction, for `require_stable`.
        let unstable = if req.require_stable && group_allowed {
            txn_offsets::pending_partitions(&self.zk, &req.group_id).unwrap_or_else(|e| {
                log::error!(
                    "[Broker {}] reading {}'s pending offsets: {e:?}",
                    self.broker_id,
                    req.group_id
                );
                error_code = ErrorCode::UnknownServerError;
                Default::default()
            })
        } else {
            Default::default()
        };
        let topics = map_topics(&topics, |topic, &partition| {
            let (offset, metadata, code) = if !group_allowed {
                (-1, String::new(), ErrorCode::GroupAuthorizationFailed)
            } else if !self.allowed(cx, Operation::Describe, ResourceType::Topic, topic) {
                (-1, String::new(), ErrorCode::TopicAuthorizationFailed)
            } else if let Some(e) = self.offset_target_error(&req.group_id, topic, partition) {
                (-1, String::new(), e)
            } else if unstable.contains(&(topic.to_owned(), partition)) {
                (-1, String::new(), ErrorCode::UnstableOffsetCommit)
            } else {
                match paths::committed(&self.zk, &req.group_id, topic, partition) {
                    Ok(Some((o, m))) => (o, m, ErrorCode::None),
                    Ok(None) if version == 0 => {
                        (-1, String::new(), ErrorCode::UnknownTopicOrPartition)
                    }
                    Ok(None) => (-1, String::new(), ErrorCode::None),
                    Err(e) => {
                        log::error!(
                            "[Broker {}] reading {}/{topic}-{partition}: {e:?}",
                            self.broker_id,
                            req.group_id
                        );
                        (-1, String::new(), ErrorCode::UnknownServerError)
                    }
                }
            };
            FetchedOffset {
                partition,
                offset,
                leader_epoch: -1,
                metadata,
                error_code: code.code(),
            }
        });
        let resp = OffsetFetchResponse {
            topics,
            error_code: error_code.code(),
        };
        cx.answer(out, &resp);
        Action::Respond
    }
}

/// Every `(topic, [partition])` the group has an offset for.
pub fn committed_partitions(
    zk: &ZkClient,
    group: &str,
) -> crate::zk::ZkResult<Vec<(String, Vec<i32>)>> {
    let root = format!("{}/offsets", crate::zk::groups::group_path(group));
    let mut out = Vec::new();
    let mut topics = zk.get_children(&root).or_else(paths::no_node_empty)?;
    topics.sort();
    for t in topics {
        let mut parts: Vec<i32> = zk
            .get_children(&format!("{root}/{t}"))
            .or_else(paths::no_node_empty)?
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        parts.sort_unstable();
        out.push((t, parts));
    }
    Ok(out)
}

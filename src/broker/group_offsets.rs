//! OffsetCommit (8), OffsetFetch (9) and GroupCoordinator (10): committed offsets kept in
//! ZooKeeper at `/consumers/groups/[group]/offsets/[topic]/[partition]`, as Kafka 0.8's v0 did.
//! Every broker can serve them, so GroupCoordinator names the broker that was asked. v1 is
//! accepted too (what kcat and kafka-python send), stored the same way; its generation and
//! member id are ignored, as 0.8.2 did without group management.

use super::apis::KafkaApis;
use crate::network::Action;
use crate::protocol::group_offsets::{
    FetchedOffset, GroupCoordinatorRequest, GroupCoordinatorResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
};
use crate::protocol::{Encode, ErrorCode, map_topics};
use crate::zk::paths;

/// Kafka's `offset.metadata.max.bytes`.
const OFFSET_METADATA_MAX_BYTES: usize = 4096;

impl KafkaApis {
    /// Why a group's offset for `topic`-`partition` cannot be read or written, if it cannot.
    fn offset_target_error(&self, group: &str, topic: &str, partition: i32) -> Option<ErrorCode> {
        if !crate::coordinator::valid_name(group) {
            Some(ErrorCode::InvalidGroupId)
        } else if !self.metadata_cache.contains_partition(topic, partition) {
            Some(ErrorCode::UnknownTopicOrPartition)
        } else {
            None
        }
    }

    pub(super) fn handle_offset_commit(
        &self,
        req: &OffsetCommitRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        let topics = map_topics(&req.topics, |topic, p| {
            let code = if let Some(e) = self.offset_target_error(&req.group_id, topic, p.partition)
            {
                e
            } else if p
                .metadata
                .as_ref()
                .is_some_and(|m| m.len() > OFFSET_METADATA_MAX_BYTES)
            {
                ErrorCode::OffsetMetadataTooLarge
            } else {
                match paths::commit_offset(&self.zk, &req.group_id, topic, p.partition, p.offset) {
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
        OffsetCommitResponse { topics }.encode(out);
        Action::Respond
    }

    /// Nothing committed: v0 answers offset -1 with UNKNOWN_TOPIC_OR_PARTITION (0.8's ZooKeeper
    /// path), v1 offset -1 with no error; both clients then apply their reset policy.
    pub(super) fn handle_offset_fetch(
        &self,
        req: &OffsetFetchRequest,
        version: i16,
        out: &mut Vec<u8>,
    ) -> Action {
        let topics = map_topics(&req.topics, |topic, &partition| {
            let (offset, code) =
                if let Some(e) = self.offset_target_error(&req.group_id, topic, partition) {
                    (-1, e)
                } else {
                    match paths::committed_offset(&self.zk, &req.group_id, topic, partition) {
                        Ok(Some(o)) => (o, ErrorCode::None),
                        Ok(None) if version == 0 => (-1, ErrorCode::UnknownTopicOrPartition),
                        Ok(None) => (-1, ErrorCode::None),
                        Err(e) => {
                            log::error!(
                                "[Broker {}] reading {}/{topic}-{partition}: {e:?}",
                                self.broker_id,
                                req.group_id
                            );
                            (-1, ErrorCode::UnknownServerError)
                        }
                    }
                };
            FetchedOffset {
                partition,
                offset,
                metadata: String::new(),
                error_code: code.code(),
            }
        });
        OffsetFetchResponse { topics }.encode(out);
        Action::Respond
    }

    /// Any broker serves a group's offsets: the answer is this broker, once it knows its own
    /// advertised address from the controller's metadata.
    pub(super) fn handle_group_coordinator(
        &self,
        req: &GroupCoordinatorRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        let me = self
            .metadata_cache
            .live_brokers()
            .into_iter()
            .find(|b| b.id == self.broker_id);
        let resp = match me {
            _ if !crate::coordinator::valid_name(&req.group_id) => GroupCoordinatorResponse {
                error_code: ErrorCode::InvalidGroupId.code(),
                coordinator_id: -1,
                host: String::new(),
                port: -1,
            },
            Some(b) => GroupCoordinatorResponse {
                error_code: 0,
                coordinator_id: b.id,
                host: b.host,
                port: b.port,
            },
            None => GroupCoordinatorResponse {
                error_code: ErrorCode::CoordinatorNotAvailable.code(),
                coordinator_id: -1,
                host: String::new(),
                port: -1,
            },
        };
        resp.encode(out);
        Action::Respond
    }
}

//! OffsetForLeaderEpoch (key 23): where an epoch ends in this leader's log, from the
//! partition's leader-epoch cache (`log::leader_epochs`).

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::map_topics;
use crate::protocol::offset_for_leader_epoch::{
    EpochEndOffset, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use crate::security::acl::{Operation, ResourceType};

/// `replica_id` of a request that may be answered by a follower (Kafka's DEBUGGING id, and
/// what a v2 request, which has no `replica_id`, is read as).
const ANY_REPLICA: i32 = -2;

impl KafkaApis {
    /// Each partition: fenced by `current_leader_epoch` (KIP-320), answered by the leader
    /// only (unless the asker is the debugging id), then the largest epoch ≤ the one asked and
    /// where it ends (-1, -1 when undefined; the latest epoch ends at the log end offset).
    pub(super) fn handle_offset_for_leader_epoch(
        &self,
        req: &OffsetForLeaderEpochRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        // A follower needs ClusterAction, a consumer Describe on the topic.
        let follower_allowed =
            req.replica_id < 0 || self.cluster_allowed(cx, Operation::ClusterAction);
        let topics = map_topics(&req.topics, |t, q| {
            let allowed = if req.replica_id >= 0 {
                follower_allowed
            } else {
                self.allowed(cx, Operation::Describe, ResourceType::Topic, t)
            };
            let part = if allowed {
                self.partition(t, q.partition)
            } else {
                Err(ErrorCode::TopicAuthorizationFailed)
            };
            let answer = part.and_then(|part| {
                part.check_leader(q.current_leader_epoch, req.replica_id != ANY_REPLICA)?;
                Ok(part.log.end_offset_for_epoch(q.leader_epoch))
            });
            let (error_code, (leader_epoch, end_offset)) = match answer {
                Ok(found) => (0, found),
                Err(e) => (e.code(), crate::log::leader_epochs::UNDEFINED),
            };
            EpochEndOffset {
                error_code,
                partition: q.partition,
                leader_epoch,
                end_offset,
            }
        });
        cx.answer(out, &OffsetForLeaderEpochResponse { topics });
        Action::Respond
    }
}

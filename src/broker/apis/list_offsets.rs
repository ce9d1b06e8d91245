//! ListOffsets (key 2): v0 by segment times (0.8's rule), v1+ by message timestamps
//! through each segment's time index.

use super::{KafkaApis, RequestContext};
use crate::broker::partition::Partition;
use crate::network::{Action, Response};
use crate::protocol::fetch;
use crate::protocol::offsets::{
    EARLIEST_TIME, LATEST_TIME, ListOffsetsRequest, ListOffsetsResponse, MAX_TIMESTAMP,
    OffsetsPartitionResponse,
};
use crate::protocol::{ErrorCode, map_topics};
use crate::security::acl::{Operation, ResourceType};

impl KafkaApis {
    /// Answers each partition; offsets above the high watermark are not shown to consumers.
    pub(super) fn handle_list_offsets(
        &self,
        req: &ListOffsetsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let version = cx.version;
        let topics = map_topics(&req.topics, |t, p| {
            let mut answer = OffsetsPartitionResponse {
                partition: p.partition,
                error_code: 0,
                offsets: Vec::new(),
                timestamp: -1,
                offset: -1,
                leader_epoch: -1,
            };
            let found = if self.allowed(cx, Operation::Describe, ResourceType::Topic, t) {
                self.leader_for_list_offsets(t, p.partition, req.replica_id, p.current_leader_epoch)
            } else {
                Err(ErrorCode::TopicAuthorizationFailed)
            };
            let found = found.and_then(|part| {
                if version == 0 {
                    answer.offsets =
                        offsets_before(&part, p.time, p.max_num_offsets, req.replica_id);
                    Ok(())
                } else {
                    let reader = (req.replica_id, req.isolation_level);
                    let (offset, ts) = self.offset_at_time(&part, p.time, version, reader)?;
                    (answer.offset, answer.timestamp) = (offset, ts);
                    // The epoch that wrote the message found, or for the end the
                    // latest (Kafka's answers; a consumer validates its position with it).
                    answer.leader_epoch = match (offset, p.time) {
                        (-1, _) => -1,
                        (_, LATEST_TIME) => part.log.latest_epoch().unwrap_or(-1),
                        _ => part.log.epoch_of(offset),
                    };
                    Ok(())
                }
            });
            if let Err(e) = found {
                answer.error_code = e.code();
            }
            answer
        });
        cx.answer(out, &ListOffsetsResponse { topics });
        Action::Respond
    }

    fn leader_for_list_offsets(
        &self,
        topic: &str,
        partition: i32,
        replica_id: i32,
        current_leader_epoch: i32,
    ) -> Result<std::sync::Arc<Partition>, ErrorCode> {
        let part = self.partition(topic, partition)?;
        part.check_leader(
            current_leader_epoch,
            replica_id == fetch::CONSUMER_REPLICA_ID,
        )?;
        Ok(part)
    }

    /// v1+: (offset, timestamp) for -1 latest, -2 earliest, -3 the largest timestamp (v7+),
    /// or the first message at or after a time; (-1, -1) when no message qualifies. A
    /// consumer's end is the high watermark, or the last stable offset for a `read_committed`
    /// one (`reader`: replica id, isolation level).
    fn offset_at_time(
        &self,
        part: &Partition,
        time: i64,
        version: i16,
        (replica_id, isolation_level): (i32, i8),
    ) -> Result<(i64, i64), ErrorCode> {
        let end = match (replica_id < 0, isolation_level) {
            (true, fetch::READ_COMMITTED) => part.log.last_stable_offset(),
            (true, _) => part.high_watermark(),
            (false, _) => part.log.log_end_offset(),
        };
        let found = match time {
            LATEST_TIME => return Ok((end, -1)),
            EARLIEST_TIME => return Ok((part.log.log_start_offset(), -1)),
            MAX_TIMESTAMP if version >= 7 => part.log.max_timestamp_offset(),
            t if t < 0 => return Err(ErrorCode::InvalidRequest),
            t => part.log.offset_for_timestamp(t),
        };
        match found {
            Ok(Some((offset, ts))) if offset < end => Ok((offset, ts)),
            Ok(_) => Ok((-1, -1)),
            Err(e) => {
                log::error!(
                    "[Broker {} {}-{}] timestamp search failed: {e}",
                    self.broker_id,
                    part.topic,
                    part.partition
                );
                Err(ErrorCode::UnknownServerError)
            }
        }
    }
}

/// v0: offsets before `time` by segment, newest first; above the high watermark a consumer
/// sees the high watermark instead.
fn offsets_before(part: &Partition, time: i64, max: i32, replica_id: i32) -> Vec<i64> {
    let max = max.max(0) as usize;
    let mut offsets = part.log.offsets_before(time, max);
    if replica_id < 0 {
        let hw = part.high_watermark();
        if offsets.first().is_some_and(|o| *o > hw) {
            offsets.retain(|o| *o < hw);
            offsets.insert(0, hw);
            offsets.truncate(max);
        }
    }
    offsets
}

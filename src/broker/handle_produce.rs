//! Produce (key 0) v0: validate each set, append it as leader, and answer per `acks`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::apis::KafkaApis;
use super::partition::{Partition, Role};
use super::replica_manager::{Payload, ReplicaManager};
use crate::network::Action;
use crate::protocol::header::RequestHeader;
use crate::protocol::message::{self, SetError};
use crate::protocol::produce::{ProducePartitionResponse, ProduceRequest, ProduceResponse};
use crate::protocol::{Decode, DecodeResult, Encode, ErrorCode, Reader, map_topics};

impl KafkaApis {
    /// Produce v0: validate each set (CRC, size, magic), append under the partition lock with
    /// dense offsets, and answer per `acks`: 0 no response, 1 after the append, -1 after the
    /// high watermark passes the last message (or REQUEST_TIMED_OUT).
    pub(super) fn handle_produce(
        &self,
        frame: &mut [u8],
        body_at: usize,
        out: &mut Vec<u8>,
    ) -> DecodeResult<Action> {
        let req: ProduceRequest = {
            let mut r = Reader::new(frame);
            let _ = RequestHeader::decode(&mut r)?;
            debug_assert_eq!(r.position(), body_at);
            let req = ProduceRequest::decode(&mut r)?;
            r.finish()?;
            req
        };
        let mut results: Vec<Appended> = Vec::new();
        if !matches!(req.acks, -1..=1) {
            for (_, ps) in &req.topics {
                results.extend(
                    ps.iter()
                        .map(|_| (None, ErrorCode::InvalidRequiredAcks, -1, -1)),
                );
            }
            answer_produce(&req.topics, |p| p.partition, &results, out);
            return Ok(Action::Respond);
        }
        for t in &req.topics {
            for p in &t.1 {
                let r = self.append_one(&t.0, p.partition, &mut frame[p.set.clone()], req.acks);
                results.push(match r {
                    Ok((part, first, last)) => (Some(part), ErrorCode::None, first, last),
                    Err(e) => (None, e, -1, -1),
                });
            }
        }
        if req.acks == 0 {
            if let Some((_, e, _, _)) = results.iter().find(|r| r.1 != ErrorCode::None) {
                log::warn!(
                    "[Broker {}] closing acks=0 producer connection after error {e:?}",
                    self.broker_id
                );
                return Ok(Action::Close);
            }
            return Ok(Action::NoResponse);
        }
        if req.acks == -1 {
            // Parked: the connection may append the produces queued behind this one while
            // this waits for the followers (see `network::server`).
            let rm = self.replica_manager.clone();
            let deadline = Instant::now() + Duration::from_millis(req.timeout_ms.max(0) as u64);
            // The answer outlives the request's buffer: keep just its topics and partitions.
            let shape: Vec<(String, Vec<i32>)> = req
                .topics
                .iter()
                .map(|(t, ps)| (t.clone(), ps.iter().map(|p| p.partition).collect()))
                .collect();
            return Ok(Action::Park(Box::new(move |out| {
                wait_for_acks_all(&rm, &mut results, deadline);
                answer_produce(&shape, |p| *p, &results, out);
            })));
        }
        answer_produce(&req.topics, |p| p.partition, &results, out);
        Ok(Action::Respond)
    }

    fn append_one(
        &self,
        topic: &str,
        partition: i32,
        set: &mut [u8],
        acks: i16,
    ) -> Result<(Arc<Partition>, i64, i64), ErrorCode> {
        let part = self.partition(topic, partition)?;
        let valid =
            message::validate_for_append(set, self.config.message_max_bytes).map_err(|e| {
                log::warn!(
                    "[Broker {} {topic}-{partition}] rejected produce: {e:?}",
                    self.broker_id
                );
                match e {
                    SetError::MessageTooLarge => ErrorCode::MessageTooLarge,
                    SetError::Corrupt(_) | SetError::BadCompression(_) => ErrorCode::CorruptMessage,
                }
            })?;
        if valid.count == 0 {
            // Nothing to append, but the answer must still say whether we lead.
            if part.role() != Role::Leader {
                return Err(ErrorCode::NotLeaderForPartition);
            }
            return Ok((
                part.clone(),
                part.log.log_end_offset(),
                part.log.log_end_offset() - 1,
            ));
        }
        if valid.valid_len as u64 > self.config.log_segment_bytes {
            return Err(ErrorCode::RecordListTooLarge);
        }
        let payload = match valid.compressed {
            None => Payload::Plain(&mut set[..valid.valid_len]),
            Some(r) => Payload::Compressed(r),
        };
        let (first, last) =
            self.replica_manager
                .append_as_leader(&part, payload, valid.count, acks)?;
        Ok((part, first, last))
    }
}

/// One appended partition: where it lives, its error, its first and last offsets.
type Appended = (Option<Arc<Partition>>, ErrorCode, i64, i64);

/// Parks until every appended partition's high watermark passes its last offset, the
/// partition stops being led here, or the deadline passes.
fn wait_for_acks_all(rm: &ReplicaManager, results: &mut [Appended], deadline: Instant) {
    loop {
        let seen = rm.notifier.seq();
        let mut pending = false;
        for r in results.iter_mut() {
            if let (Some(p), ErrorCode::None) = (&r.0, r.1)
                && r.3 >= r.2
            {
                match rm.acks_all_status(p, r.3 + 1) {
                    Some(ErrorCode::None) => r.0 = None,
                    Some(e) => {
                        r.0 = None;
                        r.1 = e;
                        r.2 = -1;
                    }
                    None => pending = true,
                }
            }
        }
        if !pending {
            return;
        }
        if Instant::now() >= deadline {
            for r in results.iter_mut() {
                if r.0.take().is_some() && r.1 == ErrorCode::None && r.3 >= r.2 {
                    r.1 = ErrorCode::RequestTimedOut;
                    r.2 = -1;
                }
            }
            return;
        }
        rm.notifier.wait_after(seen, deadline);
    }
}

/// The response, partition by partition in the request's order (`topics`).
fn answer_produce<T>(
    topics: &[(String, Vec<T>)],
    partition_of: impl Fn(&T) -> i32,
    results: &[Appended],
    out: &mut Vec<u8>,
) {
    let mut i = 0;
    ProduceResponse {
        topics: map_topics(topics, |_, p| {
            let partition = partition_of(p);
            let (e, off) = results
                .get(i)
                .map_or((ErrorCode::UnknownServerError, -1), |r| (r.1, r.2));
            i += 1;
            ProducePartitionResponse {
                partition,
                error_code: e.code(),
                base_offset: off,
            }
        }),
    }
    .encode(out);
}

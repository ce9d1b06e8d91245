//! Produce (key 0) v0–v9: validate each set, append it as leader, and answer per `acks`.
//! v3+ carries one format v2 batch per partition, v0–v2 magic 0/1 message sets.

use crate::security::acl::{Operation, ResourceType};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{KafkaApis, RequestContext};
use crate::broker::client_quotas::QuotaKind;
use crate::broker::inflation;
use crate::broker::partition::{Partition, Role};
use crate::broker::purgatory::{Parked, Watch};
use crate::broker::replica_manager::{Payload, ReplicaManager};
use crate::config::BrokerConfig;
use crate::network::{Action, Response};
use crate::protocol::header::PRODUCE;
use crate::protocol::message::{self, SetError};
use crate::protocol::produce::{ProducePartitionResponse, ProduceRequest, ProduceResponse};
use crate::protocol::record_batch;
use crate::protocol::{DecodeResult, Encode, ErrorCode, Out, map_topics};

impl KafkaApis {
    /// Produce: validate each set (CRC, sizes, format for the version), append under the
    /// partition lock with dense offsets, and answer per `acks`: 0 no response, 1 after the
    /// append, -1 after the high watermark passes the last message (or REQUEST_TIMED_OUT).
    pub(super) fn handle_produce(
        &self,
        body: &mut [u8],
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> DecodeResult<Action> {
        let version = cx.version;
        // The record sets are ranges of the body, so they can be modified in place below.
        let req: ProduceRequest = cx.read(body)?;
        let mut results: Vec<Appended> = Vec::new();
        let refuse_all = if !matches!(req.acks, -1..=1) {
            Some(Appended::failed(ErrorCode::InvalidRequiredAcks, None))
        } else if let Some(id) = &req.transactional_id
            && !self.allowed(cx, Operation::Write, ResourceType::TransactionalId, id)
        {
            // A transactional producer writes under its id (Kafka's ACL rule).
            Some(Appended::failed(
                ErrorCode::TransactionalIdAuthorizationFailed,
                None,
            ))
        } else {
            None
        };
        if let Some(refusal) = refuse_all {
            for (_, ps) in &req.topics {
                results.extend(ps.iter().map(|_| refusal.clone()));
            }
            answer_produce(&req.topics, |p| p.partition, &results, version, out);
            return Ok(Action::Respond);
        }
        let mut appended_bytes = 0;
        // The topic defaults are dynamic broker keys: read as they are now, once a request.
        let cfg = self.dynamic.current();
        for t in &req.topics {
            let may_write = self.allowed(cx, Operation::Write, ResourceType::Topic, &t.0);
            for p in &t.1 {
                if !may_write {
                    results.push(Appended::failed(ErrorCode::TopicAuthorizationFailed, None));
                    continue;
                }
                let set = &mut body[p.set.clone()];
                let r = self.append_one(&cfg, &t.0, p.partition, set, req.acks, version);
                if r.error == ErrorCode::None {
                    appended_bytes += set.len();
                }
                results.push(r);
            }
        }
        cx.charge(&self.quotas, QuotaKind::Produce, appended_bytes as f64);
        if req.acks == 0 {
            if let Some(Appended { error: e, .. }) =
                results.iter().find(|r| r.error != ErrorCode::None)
            {
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
                answer_produce(&shape, |p| *p, &results, version, out);
            })));
        }
        answer_produce(&req.topics, |p| p.partition, &results, version, out);
        Ok(Action::Respond)
    }

    /// Validates and appends one partition's set; the outcome, error or not.
    fn append_one(
        &self,
        cfg: &BrokerConfig,
        topic: &str,
        partition: i32,
        set: &mut [u8],
        acks: i16,
        version: i16,
    ) -> Appended {
        match self.try_append(cfg, topic, partition, set, acks, version) {
            Ok(a) => a,
            Err((e, why)) => {
                if e != ErrorCode::NotLeaderForPartition && e != ErrorCode::UnknownTopicOrPartition
                {
                    log::warn!(
                        "[Broker {} {topic}-{partition}] rejected produce v{version}: {e:?} ({})",
                        self.broker_id,
                        why.unwrap_or("-")
                    );
                }
                Appended::failed(e, why)
            }
        }
    }

    fn try_append(
        &self,
        cfg: &BrokerConfig,
        topic: &str,
        partition: i32,
        set: &mut [u8],
        acks: i16,
        version: i16,
    ) -> Result<Appended, (ErrorCode, Option<&'static str>)> {
        let part = self.partition(topic, partition).map_err(|e| (e, None))?;
        let set_len = set.len() as u64;
        if set_len > cfg.log_segment_bytes {
            return Err((ErrorCode::RecordListTooLarge, None));
        }
        let is_batch = set.get(record_batch::MAGIC_AT) == Some(&(record_batch::MAGIC as u8));
        if part.is_compacted(cfg.log_cleaner.policy) && !all_keyed(set) {
            // Kafka's answer: the cleaner keeps each key's latest record, and these have none.
            return Err((
                ErrorCode::InvalidRecord,
                Some("Compacted topic cannot accept message without key"),
            ));
        }
        // A batch compressed anew for `compression.type` lives here, for the append.
        let mut recompressed: Vec<u8>;
        let mut set: &mut [u8] = set;
        // Held through validation and append: the inflated data lives that long.
        let _slot = inflation::needs_inflating(set, is_batch).then(|| self.inflation.acquire());
        let payload = if version >= 3 {
            if !is_batch {
                return Err((
                    ErrorCode::InvalidRecord,
                    Some("produce v3 and later carry one record batch of format v2"),
                ));
            }
            let valid = record_batch::validate_for_append(
                set,
                part.max_message_bytes(cfg.message_max_bytes),
            )
            .map_err(set_error)?;
            if valid.count == 0 {
                return Err((ErrorCode::InvalidRecord, Some("empty batch")));
            }
            // `compression.type` other than the producer's codec: stored compressed anew.
            let codec = record_batch::codec_of(set).unwrap_or(0);
            if let Some(to) = part.compression_type(cfg.compression_type).converts(codec) {
                recompressed = record_batch::recompress(set, to).map_err(set_error)?;
                set = &mut recompressed[..];
            }
            let append_time = part.log_append_time(cfg.log_append_time).then(now_ms);
            Payload::Batch {
                batch: set,
                count: valid.count,
                append_time,
            }
        } else {
            if is_batch {
                return Err((
                    ErrorCode::InvalidRecord,
                    Some("format v2 batches need produce v3 or later"),
                ));
            }
            let valid =
                message::validate_for_append(set, part.max_message_bytes(cfg.message_max_bytes))
                    .map_err(set_error)?;
            if valid.count == 0 {
                // Nothing to append, but the answer must still say whether we lead.
                if part.role() != Role::Leader {
                    return Err((ErrorCode::NotLeaderForPartition, None));
                }
                let end = part.log.log_end_offset();
                return Ok(Appended::ok(part, end, end - 1, None));
            }
            match valid.compressed {
                None => Payload::Plain(&mut set[..valid.valid_len], valid.count),
                Some(r) => Payload::Compressed(r, valid.count),
            }
        };
        // An idempotent producer's batch, by what identifies it in the log.
        let batch = match &payload {
            Payload::Batch { batch, .. } => record_batch::producer_meta(batch)
                .map(|m| (m.producer_id, m.epoch, m.base_sequence)),
            _ => None,
        };
        let (append_time, count) = match &payload {
            Payload::Batch {
                append_time, count, ..
            } => (*append_time, *count),
            Payload::Plain(_, count) | Payload::Compressed(_, count) => (None, *count),
        };
        let (first, last) = self
            .replica_manager
            .append_as_leader(&part, payload, acks)
            .map_err(|e| (e, None))?;
        part.metrics.produced(u64::from(count), set_len);
        Ok(Appended {
            batch,
            ..Appended::ok(part, first, last, append_time)
        })
    }
}

/// Whether every record of a produced set has a key (a set that does not decode is left to
/// validation to refuse).
fn all_keyed(set: &[u8]) -> bool {
    let mut keyed = true;
    let _ = crate::protocol::records::for_each_message(set, |_, _, key, _, _| {
        keyed &= key.is_some();
    });
    keyed
}

/// The protocol's answer to a set that does not validate.
fn set_error(e: SetError) -> (ErrorCode, Option<&'static str>) {
    match e {
        SetError::MessageTooLarge => (ErrorCode::MessageTooLarge, None),
        SetError::RecordListTooLarge => (
            ErrorCode::RecordListTooLarge,
            Some("compressed messages inflating past 64 MiB in one set"),
        ),
        SetError::Corrupt(_) => (ErrorCode::CorruptMessage, Some("corrupt record set")),
        SetError::BadCompression(_) => (ErrorCode::CorruptMessage, Some("bad compression")),
        SetError::NotOneBatch => (
            ErrorCode::InvalidRecord,
            Some("a produce of format v2 holds exactly one batch per partition"),
        ),
        SetError::Unsupported(why) if why.starts_with("zstd") => {
            (ErrorCode::UnsupportedCompressionType, Some(why))
        }
        SetError::Unsupported(why) => (ErrorCode::InvalidRecord, Some(why)),
    }
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One partition's outcome: where it lives (while an acks=all answer waits on it), its error,
/// its first and last offsets, and the append time it was given.
#[derive(Clone)]
pub(super) struct Appended {
    part: Option<Arc<Partition>>,
    pub(super) error: ErrorCode,
    first: i64,
    last: i64,
    append_time: Option<i64>,
    /// The log start offset after the append (v5+ answers carry it).
    log_start: i64,
    why: Option<&'static str>,
    /// (producer id, producer epoch, first sequence) of an idempotent producer's batch.
    batch: Option<(i64, i16, i32)>,
}

impl Appended {
    pub(super) fn ok(
        part: Arc<Partition>,
        first: i64,
        last: i64,
        append_time: Option<i64>,
    ) -> Self {
        Appended {
            log_start: part.log.log_start_offset(),
            part: Some(part),
            error: ErrorCode::None,
            first,
            last,
            append_time,
            why: None,
            batch: None,
        }
    }

    pub(super) fn failed(error: ErrorCode, why: Option<&'static str>) -> Self {
        Appended {
            part: None,
            error,
            first: -1,
            last: -1,
            append_time: None,
            log_start: -1,
            why,
            batch: None,
        }
    }
}

/// Waits until `first..=last`, appended to `part` as its leader, is replicated to the ISR
/// (an acks=all produce's wait), or the deadline passes: the transaction coordinator's
/// state writes.
pub(crate) fn wait_replicated(
    rm: &ReplicaManager,
    part: Arc<Partition>,
    first: i64,
    last: i64,
    deadline: Instant,
) -> ErrorCode {
    let mut results = [Appended::ok(part, first, last, None)];
    wait_for_acks_all(rm, &mut results, deadline);
    results[0].error
}

/// Parks until every appended partition's high watermark passes its last offset, the
/// partition stops being led here, or the deadline passes: listed in the watchers of the
/// partitions still pending, it looks again only when one of their high watermarks moves or
/// their role changes (a partition no longer led here learns its high watermark from its new
/// leader through the replica fetcher, which wakes it too).
pub(super) fn wait_for_acks_all(rm: &ReplicaManager, results: &mut [Appended], deadline: Instant) {
    let mut parked = None;
    loop {
        let mut pending = false;
        for r in results.iter_mut() {
            if let (Some(p), ErrorCode::None) = (&r.part, r.error)
                && r.last >= r.first
            {
                match rm.acks_all_status(p, r.first, r.last + 1, r.batch) {
                    Some(ErrorCode::None) => r.part = None,
                    Some(e) => {
                        r.part = None;
                        r.error = e;
                        r.first = -1;
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
                if r.part.take().is_some() && r.error == ErrorCode::None && r.last >= r.first {
                    r.error = ErrorCode::RequestTimedOut;
                    r.first = -1;
                }
            }
            return;
        }
        match &parked {
            // Listed first, then looked at once more before sleeping (`purgatory`).
            None => {
                let waiting = results
                    .iter()
                    .filter(|r| r.error == ErrorCode::None && r.last >= r.first)
                    .filter_map(|r| r.part.clone())
                    .map(|p| (p, Watch::HighWatermark));
                parked = Some(Parked::watch(&rm.purgatory.produce, waiting));
            }
            Some(p) => {
                p.sleep_until(deadline);
            }
        }
    }
}

/// The response at `version`, partition by partition in the request's order (`topics`).
fn answer_produce<T>(
    topics: &[(String, Vec<T>)],
    partition_of: impl Fn(&T) -> i32,
    results: &[Appended],
    version: i16,
    out: &mut Vec<u8>,
) {
    let mut i = 0;
    let resp = ProduceResponse {
        topics: map_topics(topics, |_, p| {
            let partition = partition_of(p);
            let r = results.get(i);
            i += 1;
            ProducePartitionResponse {
                partition,
                error_code: r.map_or(ErrorCode::UnknownServerError, |r| r.error).code(),
                base_offset: r.map_or(-1, |r| r.first),
                log_append_time_ms: r.and_then(|r| r.append_time).unwrap_or(-1),
                log_start_offset: r.map_or(-1, |r| r.log_start),
                error_message: r.and_then(|r| r.why).map(str::to_owned),
            }
        }),
    };
    resp.encode(&mut Out::body(out, PRODUCE, version));
}

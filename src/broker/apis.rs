//! `KafkaApis`: decodes each request, calls the part of the broker that serves it, and writes
//! the response. One `handle_*` function per api key.
//!
//! A request that does not decode, or an api key/version we do not serve, closes the
//! connection with a log line naming the peer and the problem (the protocol has no error
//! response for an unparseable request); ApiVersions always gets an answer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::metadata_cache::MetadataCache;
use super::partition::{Partition, Role};
use super::replica_manager::{Payload, ReplicaManager};
use crate::client::admin;
use crate::config::BrokerConfig;
use crate::controller::KafkaController;
use crate::log::LogError;
use crate::network::{Action, RequestHandler};
use crate::protocol::api_versions::ApiVersionsResponse;
use crate::protocol::controller::{
    ControlledShutdownRequest, ControlledShutdownResponse, ErrorOnlyResponse, LeaderAndIsrRequest,
    StopReplicaRequest, UpdateMetadataRequest,
};
use crate::protocol::fetch::{self, FetchRequest};
use crate::protocol::group_offsets::OffsetCommitRequest;
use crate::protocol::header::{self, RequestHeader};
use crate::protocol::message::{self, SetError};
use crate::protocol::metadata::MetadataRequest;
use crate::protocol::offsets::{ListOffsetsRequest, ListOffsetsResponse, OffsetsPartitionResponse};
use crate::protocol::produce::{ProducePartitionResponse, ProduceRequest, ProduceResponse};
use crate::protocol::{Decode, DecodeResult, Encode, ErrorCode, Reader, Writer, write_array};
use crate::zk::{ZkClient, paths};

pub struct KafkaApis {
    pub broker_id: i32,
    pub config: Arc<BrokerConfig>,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    /// For auto-creating topics on Metadata requests.
    pub zk: Arc<ZkClient>,
    /// Serves ControlledShutdown when this broker is the controller.
    pub controller: Arc<KafkaController>,
}

impl RequestHandler for KafkaApis {
    fn handle(&self, frame: &mut [u8], out: &mut Vec<u8>, peer: &SocketAddr) -> Action {
        let mut r = Reader::new(frame);
        let h = match RequestHeader::decode(&mut r) {
            Ok(h) => h,
            Err(e) => {
                log::warn!(
                    "[Broker {}] closing connection from {peer}: bad request header: {e}",
                    self.broker_id
                );
                return Action::Close;
            }
        };
        let (key, version, corr) = (h.api_key, h.api_version, h.correlation_id);
        let body_at = r.position();
        if key == header::API_VERSIONS {
            out.put_i32(corr);
            ApiVersionsResponse::for_version(version).encode(out);
            return Action::Respond;
        }
        if !header::is_supported(key, version) {
            log::warn!(
                "[Broker {}] closing connection from {peer}: unsupported api key {key} version {version} (client {:?})",
                self.broker_id,
                h.client_id
            );
            return Action::Close;
        }
        out.put_i32(corr);
        let result = match key {
            header::PRODUCE => self.handle_produce(frame, body_at, out),
            header::FETCH => decode(frame, body_at).map(|req| self.handle_fetch(&req, out)),
            header::LIST_OFFSETS => {
                decode(frame, body_at).map(|req| self.handle_list_offsets(&req, out))
            }
            header::METADATA => decode(frame, body_at).map(|req| self.handle_metadata(&req, out)),
            header::LEADER_AND_ISR => {
                decode(frame, body_at).map(|req| self.handle_leader_and_isr(&req, out))
            }
            header::STOP_REPLICA => {
                decode(frame, body_at).map(|req| self.handle_stop_replica(&req, out))
            }
            header::UPDATE_METADATA => {
                decode(frame, body_at).map(|req| self.handle_update_metadata(&req, out))
            }
            header::CONTROLLED_SHUTDOWN => {
                decode(frame, body_at).map(|req| self.handle_controlled_shutdown(&req, out))
            }
            header::OFFSET_COMMIT => {
                let mut r = Reader::new(&frame[body_at..]);
                OffsetCommitRequest::decode(&mut r, version)
                    .and_then(|req| r.finish().map(|_| req))
                    .map(|req| self.handle_offset_commit(&req, out))
            }
            header::OFFSET_FETCH => {
                decode(frame, body_at).map(|req| self.handle_offset_fetch(&req, version, out))
            }
            header::GROUP_COORDINATOR => {
                decode(frame, body_at).map(|req| self.handle_group_coordinator(&req, out))
            }
            _ => unreachable!("is_supported admitted only the keys above"),
        };
        match result {
            Ok(a) => a,
            Err(e) => {
                log::warn!(
                    "[Broker {}] closing connection from {peer}: malformed api {key} request: {e}",
                    self.broker_id
                );
                Action::Close
            }
        }
    }
}

fn decode<'a, T: Decode<'a>>(frame: &'a [u8], body_at: usize) -> DecodeResult<T> {
    crate::protocol::decode_all(&frame[body_at..])
}

impl KafkaApis {
    /// A partition this broker hosts, or the error a client should see: NOT_LEADER when the
    /// topic-partition exists elsewhere, UNKNOWN_TOPIC_OR_PARTITION when it does not exist.
    fn partition(&self, topic: &str, partition: i32) -> Result<Arc<Partition>, ErrorCode> {
        match self.replica_manager.get_partition(topic, partition) {
            Some(p) => Ok(p),
            None if self.metadata_cache.contains_partition(topic, partition) => {
                Err(ErrorCode::NotLeaderForPartition)
            }
            None => Err(ErrorCode::UnknownTopicOrPartition),
        }
    }

    /// Produce v0: validate each set (CRC, size, magic), append under the partition lock with
    /// dense offsets, and answer per `acks`: 0 no response, 1 after the append, -1 after the
    /// high watermark passes the last message (or REQUEST_TIMED_OUT).
    fn handle_produce(
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
        if !matches!(req.acks, -1..=1) {
            return Ok(self.answer_produce(&req, out, |_| (ErrorCode::InvalidRequiredAcks, -1)));
        }
        let mut results: Vec<(Option<Arc<Partition>>, ErrorCode, i64, i64)> = Vec::new();
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
            self.wait_for_acks_all(
                &mut results,
                Duration::from_millis(req.timeout_ms.max(0) as u64),
            );
        }
        let mut i = 0;
        Ok(self.answer_produce(&req, out, |_| {
            let r = &results[i];
            i += 1;
            (r.1, r.2)
        }))
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
        let set = &mut set[..valid.valid_len];
        let payload = match valid.compressed {
            None => Payload::Plain(set),
            Some((codec, magic)) => Payload::Compressed { set, codec, magic },
        };
        let (first, last) =
            self.replica_manager
                .append_as_leader(&part, payload, valid.count, acks)?;
        Ok((part, first, last))
    }

    /// Parks until every appended partition's high watermark passes its last offset, the
    /// partition stops being led here, or the timeout passes.
    fn wait_for_acks_all(
        &self,
        results: &mut [(Option<Arc<Partition>>, ErrorCode, i64, i64)],
        timeout: Duration,
    ) {
        let deadline = Instant::now() + timeout;
        let rm = &self.replica_manager;
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

    fn answer_produce(
        &self,
        req: &ProduceRequest,
        out: &mut Vec<u8>,
        mut f: impl FnMut(i32) -> (ErrorCode, i64),
    ) -> Action {
        ProduceResponse {
            topics: req
                .topics
                .iter()
                .map(|(topic, partitions)| {
                    let parts = partitions
                        .iter()
                        .map(|p| {
                            let (e, off) = f(p.partition);
                            ProducePartitionResponse {
                                partition: p.partition,
                                error_code: e.code(),
                                base_offset: off,
                            }
                        })
                        .collect();
                    (topic.clone(), parts)
                })
                .collect(),
        }
        .encode(out);
        Action::Respond
    }

    /// Fetch v0: bytes straight from the segment files, up to the high watermark for consumers
    /// and the log end offset for followers. Parks (no polling) until `min_bytes` are readable
    /// or `max_wait_ms` passes.
    fn handle_fetch(&self, req: &FetchRequest, out: &mut Vec<u8>) -> Action {
        let from_follower = req.replica_id >= 0;
        if from_follower {
            for (t, parts) in &req.topics {
                for p in parts {
                    if let Some(part) = self.replica_manager.get_partition(t, p.partition) {
                        self.replica_manager.record_follower_position(
                            &part,
                            req.replica_id,
                            p.fetch_offset,
                        );
                    }
                }
            }
        }
        let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
        let start = out.len();
        loop {
            let seen = self.replica_manager.notifier.seq();
            out.truncate(start);
            let (bytes, errors) = self.write_fetch_response(req, out);
            let enough = bytes >= req.min_bytes.max(0) as usize;
            if req.max_wait_ms <= 0
                || errors
                || enough
                || req.topics.is_empty()
                || Instant::now() >= deadline
            {
                return Action::Respond;
            }
            self.replica_manager.notifier.wait_after(seen, deadline);
        }
    }

    /// Writes the whole fetch response; returns the message bytes included and whether any
    /// partition had an error.
    fn write_fetch_response(&self, req: &FetchRequest, out: &mut Vec<u8>) -> (usize, bool) {
        let mut total = 0;
        let mut errors = false;
        write_array(out, &req.topics, |o, (topic, parts)| {
            o.put_string(topic);
            write_array(o, parts, |o, p| {
                match self.read_partition(topic, p, req.replica_id, o) {
                    Ok(n) => total += n,
                    Err(e) => {
                        errors = true;
                        let at = fetch::write_partition_head(o, p.partition, e.code(), -1);
                        o.patch_size(at);
                    }
                }
            });
        });
        (total, errors)
    }

    /// Writes one partition's response (head + set) into `o` and returns the set's size; on
    /// error writes nothing.
    fn read_partition(
        &self,
        topic: &str,
        p: &fetch::FetchPartition,
        replica_id: i32,
        o: &mut Vec<u8>,
    ) -> Result<usize, ErrorCode> {
        let part = self.partition(topic, p.partition)?;
        let hw = part.high_watermark();
        if replica_id != fetch::DEBUGGING_REPLICA_ID && part.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        // Followers read to the log end offset; consumers only what the ISR has.
        let max_offset = (replica_id < 0).then_some(hw);
        if p.max_bytes < 0 {
            return Err(ErrorCode::InvalidFetchSize);
        }
        let at = fetch::write_partition_head(o, p.partition, 0, hw);
        match part
            .log
            .read(p.fetch_offset, p.max_bytes as usize, max_offset, o)
        {
            Ok(n) => {
                o.patch_size(at);
                Ok(n)
            }
            Err(e) => {
                o.truncate(at - 14);
                match e {
                    LogError::OffsetOutOfRange { .. } => {
                        // A consumer between HW and LEO is not out of range: it just waits.
                        if max_offset.is_some()
                            && p.fetch_offset > hw
                            && p.fetch_offset <= part.log.log_end_offset()
                        {
                            let at = fetch::write_partition_head(o, p.partition, 0, hw);
                            o.patch_size(at);
                            return Ok(0);
                        }
                        log::debug!(
                            "[Broker {} {topic}-{}] fetch {e}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::OffsetOutOfRange)
                    }
                    LogError::Io(io) => {
                        log::error!(
                            "[Broker {} {topic}-{}] read failed: {io}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::UnknownServerError)
                    }
                }
            }
        }
    }

    /// ListOffsets v0: -1 latest, -2 earliest, or a time by segment; offsets above the high
    /// watermark are replaced by it for ordinary consumers.
    fn handle_list_offsets(&self, req: &ListOffsetsRequest, out: &mut Vec<u8>) -> Action {
        let topics = req
            .topics
            .iter()
            .map(|(t, parts)| {
                let parts = parts
                    .iter()
                    .map(|p| {
                        let (code, offsets) = match self.list_offsets(
                            t,
                            p.partition,
                            p.time,
                            p.max_num_offsets,
                            req.replica_id,
                        ) {
                            Ok(o) => (ErrorCode::None, o),
                            Err(e) => (e, Vec::new()),
                        };
                        OffsetsPartitionResponse {
                            partition: p.partition,
                            error_code: code.code(),
                            offsets,
                        }
                    })
                    .collect();
                (t.clone(), parts)
            })
            .collect();
        ListOffsetsResponse { topics }.encode(out);
        Action::Respond
    }

    fn list_offsets(
        &self,
        topic: &str,
        partition: i32,
        time: i64,
        max: i32,
        replica_id: i32,
    ) -> Result<Vec<i64>, ErrorCode> {
        let part = self.partition(topic, partition)?;
        if replica_id == fetch::CONSUMER_REPLICA_ID && part.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        let mut offsets = part.log.offsets_before(time, max.max(0) as usize);
        if replica_id < 0 {
            let hw = part.high_watermark();
            if offsets.first().is_some_and(|o| *o > hw) {
                offsets.retain(|o| *o < hw);
                offsets.insert(0, hw);
                offsets.truncate(max.max(0) as usize);
            }
        }
        Ok(offsets)
    }

    /// Metadata v0 from the cache. A requested topic that does not exist is created when
    /// `auto.create.topics.enable` is on (answered LEADER_NOT_AVAILABLE until the controller
    /// has given it leaders; clients retry), and is UNKNOWN_TOPIC_OR_PARTITION otherwise; an
    /// illegal name is INVALID_TOPIC.
    fn handle_metadata(&self, req: &MetadataRequest, out: &mut Vec<u8>) -> Action {
        let mut resp = self.metadata_cache.metadata(&req.topics);
        for t in resp
            .topics
            .iter_mut()
            .filter(|t| t.error_code == ErrorCode::UnknownTopicOrPartition.code())
        {
            if admin::validate_topic_name(&t.topic).is_err() {
                t.error_code = ErrorCode::InvalidTopic.code();
            } else if self.config.auto_create_topics_enable {
                t.error_code = self.auto_create(&t.topic).code();
            }
        }
        resp.encode(out);
        Action::Respond
    }

    fn auto_create(&self, topic: &str) -> ErrorCode {
        if matches!(paths::topic_assignment(&self.zk, topic), Ok(Some(_))) {
            return ErrorCode::LeaderNotAvailable;
        }
        let live = self.metadata_cache.live_brokers().len().max(1) as i32;
        let rf = self.config.default_replication_factor.min(live);
        match admin::create_topic(&self.zk, topic, self.config.num_partitions, rf, None) {
            Ok(_) => {
                log::info!(
                    "[Broker {}] auto-created topic {topic} ({} partitions, replication {rf})",
                    self.broker_id,
                    self.config.num_partitions
                );
                ErrorCode::LeaderNotAvailable
            }
            Err(admin::AdminError::TopicExists(_)) => ErrorCode::LeaderNotAvailable,
            Err(e) => {
                log::warn!(
                    "[Broker {}] auto-creating topic {topic} failed: {e}",
                    self.broker_id
                );
                ErrorCode::LeaderNotAvailable
            }
        }
    }

    fn handle_controlled_shutdown(
        &self,
        req: &ControlledShutdownRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        let (code, remaining) = if !self.controller.is_controller() {
            (ErrorCode::NotController, Vec::new())
        } else {
            match self.controller.controlled_shutdown(req.broker_id) {
                Ok(r) => (ErrorCode::None, r),
                Err(e) => (e, Vec::new()),
            }
        };
        ControlledShutdownResponse {
            error_code: code.code(),
            partitions_remaining: remaining,
        }
        .encode(out);
        Action::Respond
    }

    fn handle_leader_and_isr(&self, req: &LeaderAndIsrRequest, out: &mut Vec<u8>) -> Action {
        self.replica_manager
            .on_leader_and_isr_command(req)
            .encode(out);
        Action::Respond
    }

    fn handle_stop_replica(&self, req: &StopReplicaRequest, out: &mut Vec<u8>) -> Action {
        self.replica_manager
            .on_stop_replica_command(req)
            .encode(out);
        Action::Respond
    }

    /// Epoch-checked like the other commands, then the cache takes the new state.
    fn handle_update_metadata(&self, req: &UpdateMetadataRequest, out: &mut Vec<u8>) -> Action {
        let check = self.replica_manager.check_controller_epoch(
            req.controller_epoch,
            "UpdateMetadata",
            req.controller_id,
        );
        let code = match check {
            Err(e) => e,
            Ok(()) => {
                self.metadata_cache.update(req);
                ErrorCode::None
            }
        };
        ErrorOnlyResponse {
            error_code: code.code(),
        }
        .encode(out);
        Action::Respond
    }
}
